package main

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

func TestManagerOptionsFollowTheConfiguration(t *testing.T) {
	cfg := configv1alpha1.NewDefaultOperatorConfiguration()
	cfg.LeaderElection.ResourceNamespace = "copse-system"
	cfg.LeaderElection.LeaseDuration = metav1.Duration{Duration: 40 * time.Second}
	cfg.WebhookServer.Host = "10.0.0.1"
	cfg.WebhookServer.CertDir = "/certs"
	cfg.Server.Metrics.BindAddress = "0"

	opts := managerOptions(runtime.NewScheme(), cfg)

	if !opts.LeaderElection || opts.LeaderElectionResourceLock != "leases" ||
		opts.LeaderElectionID != "copse-operator-leader" || opts.LeaderElectionNamespace != "copse-system" {
		t.Errorf("leader election options: %+v", opts)
	}
	if *opts.LeaseDuration != 40*time.Second || *opts.RenewDeadline != 10*time.Second || *opts.RetryPeriod != 2*time.Second {
		t.Errorf("leader election timings: %v %v %v", *opts.LeaseDuration, *opts.RenewDeadline, *opts.RetryPeriod)
	}
	if opts.HealthProbeBindAddress != ":8081" || opts.Metrics.BindAddress != "0" {
		t.Errorf("bind addresses: probes %q, metrics %q", opts.HealthProbeBindAddress, opts.Metrics.BindAddress)
	}
	server, ok := opts.WebhookServer.(*webhook.DefaultServer)
	if !ok {
		t.Fatalf("webhook server is %T, want *webhook.DefaultServer", opts.WebhookServer)
	}
	if server.Options.Host != "10.0.0.1" || server.Options.Port != 9443 || server.Options.CertDir != "/certs" {
		t.Errorf("webhook server options: %+v", server.Options)
	}

	cfg.WebhookServer.Enabled = ptr.To(false)
	if opts := managerOptions(runtime.NewScheme(), cfg); opts.WebhookServer != nil {
		t.Errorf("webhook server configured although webhooks are disabled")
	}
}
