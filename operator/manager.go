package main

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copselabels "github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// Names under which the checks appear in /healthz and /readyz output.
const (
	pingCheckName          = "ping"
	webhookServerCheckName = "webhook-server"
)

// newManager builds the controller-runtime manager that runs every
// controller and webhook of the operator, with its probes in place.
func newManager(restConfig *rest.Config, scheme *runtime.Scheme,
	cfg *configv1alpha1.OperatorConfiguration) (manager.Manager, error) {
	mgr, err := manager.New(restConfig, managerOptions(scheme, cfg))
	if err != nil {
		return nil, fmt.Errorf("creating controller manager: %w", err)
	}
	if err := addProbes(mgr, cfg); err != nil {
		return nil, err
	}
	return mgr, nil
}

// managedByCopse selects the objects copse made.
var managedByCopse = k8slabels.SelectorFromSet(k8slabels.Set{copselabels.ManagedByKey: copselabels.ManagedByValue})

func managerOptions(scheme *runtime.Scheme, cfg *configv1alpha1.OperatorConfiguration) manager.Options {
	le := cfg.LeaderElection
	opts := manager.Options{
		Scheme:                     scheme,
		LeaderElection:             *le.Enabled,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaderElectionID:           le.ResourceName,
		LeaderElectionNamespace:    le.ResourceNamespace,
		LeaseDuration:              ptr.To(le.LeaseDuration.Duration),
		RenewDeadline:              ptr.To(le.RenewDeadline.Duration),
		RetryPeriod:                ptr.To(le.RetryPeriod.Duration),
		// The process exits as soon as the manager stops, so handing the
		// lease over at once is safe and spares the next leader the wait
		// for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
		// Only copse's pods and ConfigMaps are cached: on a shared cluster the
		// operator must not hold every inference and system pod, nor every
		// ConfigMap, in memory. (It never reads Secrets.)
		Cache: cache.Options{ByObject: cachedByObject(cfg)},
		// ComputeDomains (MNNVL) are the only unstructured kind copse
		// reads; they are read from the cache like every other kind.
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		HealthProbeBindAddress: cfg.Server.HealthProbes.BindAddress,
		Metrics:                metricsserver.Options{BindAddress: cfg.Server.Metrics.BindAddress},
	}
	if *cfg.WebhookServer.Enabled {
		opts.WebhookServer = webhook.NewServer(webhook.Options{
			Host:    cfg.WebhookServer.Host,
			Port:    int(cfg.WebhookServer.Port),
			CertDir: cfg.WebhookServer.CertDir,
		})
	}
	return opts
}

// cachedByObject narrows the cache to copse's own objects for the kinds a
// shared cluster has many of.
func cachedByObject(cfg *configv1alpha1.OperatorConfiguration) map[client.Object]cache.ByObject {
	out := map[client.Object]cache.ByObject{
		&corev1.Pod{}:       {Label: managedByCopse},
		&corev1.ConfigMap{}: {Label: managedByCopse},
		// copse's autoscalers only, not every HorizontalPodAutoscaler.
		&autoscalingv2.HorizontalPodAutoscaler{}: {Label: managedByCopse},
		// resourceSharing's claims, not those the claim controller makes
		// for every pod with a ResourceClaimTemplate.
		&resourcev1.ResourceClaim{}: {Label: managedByCopse},
	}
	if cfg.MNNVL.Enabled {
		// Only when enabled: the kind may not be served otherwise.
		out[mnnvl.NewComputeDomain()] = cache.ByObject{Label: managedByCopse}
	}
	if cfg.Kueue.Enabled {
		// copse's Workloads only, not those of every job Kueue manages.
		out[&kueuev1beta2.Workload{}] = cache.ByObject{Label: managedByCopse}
	}
	return out
}

// addProbes registers the liveness and readiness checks. Readiness also waits
// for the webhook server when it is enabled, because the API server sends
// admission requests to every ready replica.
func addProbes(mgr manager.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	if err := mgr.AddHealthzCheck(pingCheckName, healthz.Ping); err != nil {
		return fmt.Errorf("adding liveness check %q: %w", pingCheckName, err)
	}
	if err := mgr.AddReadyzCheck(pingCheckName, healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check %q: %w", pingCheckName, err)
	}
	if *cfg.WebhookServer.Enabled {
		// GetWebhookServer also makes the manager start the server.
		if err := mgr.AddReadyzCheck(webhookServerCheckName, mgr.GetWebhookServer().StartedChecker()); err != nil {
			return fmt.Errorf("adding readiness check %q: %w", webhookServerCheckName, err)
		}
	}
	return nil
}
