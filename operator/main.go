// Command copse-operator runs the copse controllers and admission webhooks.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/version"
)

func main() {
	cl, err := parseCommandLine(flag.CommandLine, os.Args[1:])
	if err != nil {
		exitBeforeLogging(err)
	}
	if cl.showVersion {
		fmt.Println("copse-operator", version.String())
		return
	}
	cfg, err := cl.operatorConfiguration()
	if err != nil {
		exitBeforeLogging(err)
	}

	logger := newLogger(cfg.Logging, os.Stderr)
	ctrl.SetLogger(logger)
	// client-go logs through klog; route it to the same structured output.
	klog.SetLogger(logger)
	setupLog := logger.WithName("setup")
	setupLog.Info("starting copse-operator", "version", version.Version, "configFile", cl.configFile, "configuration", loggableConfiguration(cfg))

	restConfig, err := newRESTConfig(cfg.ClientConnection)
	if err != nil {
		setupLog.Error(err, "cannot find the Kubernetes API server")
		os.Exit(1)
	}
	// The signal handler cancels the context on SIGTERM or SIGINT; a second
	// signal exits at once.
	if err := run(ctrl.SetupSignalHandler(), restConfig, cfg); err != nil {
		setupLog.Error(err, "copse-operator failed")
		os.Exit(1)
	}
	setupLog.Info("copse-operator stopped")
}

// exitBeforeLogging reports a start-up error that happens before the
// configured logger exists.
func exitBeforeLogging(err error) {
	fmt.Fprintf(os.Stderr, "copse-operator: %v\n", err)
	os.Exit(1)
}

// run wires the operator together and blocks until ctx is cancelled or the
// manager fails.
func run(ctx context.Context, restConfig *rest.Config, cfg *configv1alpha1.OperatorConfiguration) error {
	log := ctrl.Log.WithName("setup")

	discoveryClient, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	decision, err := resolveSchedulerBackend(ctx, discoveryClient, cfg.Scheduler.Backend)
	if err != nil {
		return fmt.Errorf("choosing scheduler backend: %w", err)
	}
	log.Info("scheduler backend chosen", "requested", cfg.Scheduler.Backend, "backend", decision.Backend, "reason", decision.Reason)

	// MNNVL's preflight check comes before the manager, as Grove's does:
	// the manager's cache of ComputeDomains would otherwise fail first, on a
	// missing kind, with an error that does not say what to do.
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discoveryClient))
	mnnvlParts, err := newMNNVLParts(mapper, cfg.MNNVL)
	if err != nil {
		return err
	}
	kueueMaxPodSets, err := kueuePreflight(log, mapper, discoveryClient.OpenAPIV3(), cfg.Kueue)
	if err != nil {
		return err
	}

	scheme, err := newScheme()
	if err != nil {
		return err
	}
	// Before the manager starts, so that the webhook server starts with its
	// certificate in place.
	certificates, err := prepareWebhookCertificates(ctx, restConfig, scheme, cfg)
	if err != nil {
		return err
	}
	mgr, err := newManager(restConfig, scheme, cfg)
	if err != nil {
		return err
	}
	if err := registerControllers(mgr, cfg, decision.Backend, mnnvlParts, kueueMaxPodSets); err != nil {
		return fmt.Errorf("registering controllers: %w", err)
	}
	if err := registerStateMetrics(mgr, cfg); err != nil {
		return err
	}
	if certificates != nil {
		// Not leader-gated: every replica serves webhooks.
		if err := mgr.Add(certificates); err != nil {
			return fmt.Errorf("adding the webhook certificate manager: %w", err)
		}
	}

	log.Info("starting manager")
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running controller manager: %w", err)
	}
	return nil
}
