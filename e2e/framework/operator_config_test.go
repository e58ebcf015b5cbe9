package framework

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

func TestOperatorConfigurationLoadsAsWritten(t *testing.T) {
	ports := operatorPorts{webhook: 10001, metrics: 10002, healthProbes: 10003}
	cfg := operatorConfiguration(ports, "/certs", func(c *configv1alpha1.OperatorConfiguration) {
		c.LeaderElection.LeaseDuration = metav1.Duration{Duration: 4 * time.Second}
		c.LeaderElection.RenewDeadline = metav1.Duration{Duration: 3 * time.Second}
	})
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := writeOperatorConfiguration(path, cfg); err != nil {
		t.Fatal(err)
	}
	loaded, err := configv1alpha1.Load(path)
	if err != nil {
		t.Fatalf("the operator would not load its configuration: %v", err)
	}
	checks := []struct {
		field     string
		got, want any
	}{
		{"leaderElection.enabled", *loaded.LeaderElection.Enabled, true},
		{"leaderElection.resourceNamespace", loaded.LeaderElection.ResourceNamespace, OperatorNamespace},
		{"leaderElection.leaseDuration", loaded.LeaderElection.LeaseDuration.Duration, 4 * time.Second},
		{"webhookServer.host", loaded.WebhookServer.Host, "127.0.0.1"},
		{"webhookServer.port", loaded.WebhookServer.Port, int32(10001)},
		{"webhookServer.certDir", loaded.WebhookServer.CertDir, "/certs"},
		{"server.metrics.bindAddress", loaded.Server.Metrics.BindAddress, "127.0.0.1:10002"},
		{"server.healthProbes.bindAddress", loaded.Server.HealthProbes.BindAddress, "127.0.0.1:10003"},
		{"scheduler.backend", loaded.Scheduler.Backend, configv1alpha1.SchedulerBackendAuto},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.field, c.got, c.want)
		}
	}
}

func TestInvalidOperatorConfigurationIsRefusedBeforeStart(t *testing.T) {
	cfg := operatorConfiguration(operatorPorts{1, 2, 3}, "/certs", func(c *configv1alpha1.OperatorConfiguration) {
		c.ClientConnection.QPS = -3 // -1 is valid: it turns client-side rate limiting off
	})
	err := writeOperatorConfiguration(filepath.Join(t.TempDir(), "config.yaml"), cfg)
	if err == nil || !strings.Contains(err.Error(), "clientConnection.qps") {
		t.Errorf("writeOperatorConfiguration = %v, want the invalid field named", err)
	}
}

func TestOperatorPortsDiffer(t *testing.T) {
	ports, err := allocateOperatorPorts()
	if err != nil {
		t.Fatal(err)
	}
	if ports.webhook == ports.metrics || ports.webhook == ports.healthProbes || ports.metrics == ports.healthProbes {
		t.Errorf("ports %+v are not distinct", ports)
	}
}

func TestOperatorCertificateModes(t *testing.T) {
	ports := operatorPorts{webhook: 10001, metrics: 10002, healthProbes: 10003}
	if mode := operatorConfiguration(ports, "/certs", nil).WebhookServer.Certificates.Mode; mode != configv1alpha1.WebhookCertificateModeProvided {
		t.Errorf("the framework writes the certificate itself, but the mode is %s", mode)
	}

	cfg := operatorConfiguration(ports, "/certs", func(c *configv1alpha1.OperatorConfiguration) { useSelfManagedCertificates(c, "certs") })
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := writeOperatorConfiguration(path, cfg); err != nil {
		t.Fatal(err)
	}
	loaded, err := configv1alpha1.Load(path)
	if err != nil {
		t.Fatalf("the operator would not load its configuration: %v", err)
	}
	got := loaded.WebhookServer.Certificates
	if got.Mode != configv1alpha1.WebhookCertificateModeSelfManaged || got.SecretNamespace != OperatorNamespace ||
		got.SecretName != "copse-e2e-certs-serving-cert" || got.WebhookConfigurationName != WebhookConfigurationName("certs") ||
		len(got.IPAddresses) != 1 || got.IPAddresses[0] != "127.0.0.1" || got.Validity.Duration != configv1alpha1.DefaultWebhookCertificateValidity {
		t.Errorf("self-managed certificates: %+v", got)
	}
}
