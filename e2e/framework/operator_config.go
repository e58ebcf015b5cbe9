package framework

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
)

// OperatorNamespace holds the operator's leader-election Lease in e2e
// clusters, where the operator runs outside any namespace.
const OperatorNamespace = "copse-system"

// operatorPorts are the loopback ports one operator listens on. They stay
// the same across restarts, so that the webhook configurations stay valid.
type operatorPorts struct {
	webhook, metrics, healthProbes int
}

func allocateOperatorPorts() (operatorPorts, error) {
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return operatorPorts{}, fmt.Errorf("find free ports for the operator: %w", err)
	}
	return operatorPorts{webhook: ports[0], metrics: ports[1], healthProbes: ports[2]}, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// operatorConfiguration is the configuration an e2e operator runs with:
// everything on loopback, leader election on (so that restarts hand the
// Lease over as in production), scheduler backend detection, readable logs.
// configure, when set, may change any of it.
func operatorConfiguration(ports operatorPorts, certDir string,
	configure func(*configv1alpha1.OperatorConfiguration)) *configv1alpha1.OperatorConfiguration {
	cfg := configv1alpha1.NewDefaultOperatorConfiguration()
	cfg.LeaderElection.Enabled = ptr.To(true)
	cfg.LeaderElection.ResourceNamespace = OperatorNamespace
	cfg.WebhookServer.Enabled = ptr.To(true)
	cfg.WebhookServer.Host = "127.0.0.1"
	cfg.WebhookServer.Port = int32(ports.webhook)
	cfg.WebhookServer.CertDir = certDir
	// The framework writes the serving certificate itself (see
	// WriteServingCertificate) unless useSelfManagedCertificates
	// applies.
	cfg.WebhookServer.Certificates.Mode = configv1alpha1.WebhookCertificateModeProvided
	cfg.Server.Metrics.BindAddress = loopback(ports.metrics)
	cfg.Server.HealthProbes.BindAddress = loopback(ports.healthProbes)
	cfg.Scheduler.Backend = configv1alpha1.SchedulerBackendAuto
	cfg.Logging.Format = configv1alpha1.LogFormatText
	if configure != nil {
		configure(cfg)
	}
	return cfg
}

// writeOperatorConfiguration writes cfg to path, after loading it back the
// way the operator will, so that a bad configuration fails here with its
// reason rather than as an operator that exits at start.
func writeOperatorConfiguration(path string, cfg *configv1alpha1.OperatorConfiguration) error {
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encode operator configuration: %w", err)
	}
	if _, err := configv1alpha1.Decode(data); err != nil {
		return fmt.Errorf("operator configuration for e2e:\n%s\n%w", data, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write operator configuration: %w", err)
	}
	return nil
}

// WriteOperatorConfiguration is writeOperatorConfiguration for programs
// outside the suites (make demo).
func WriteOperatorConfiguration(path string, cfg *configv1alpha1.OperatorConfiguration) error {
	return writeOperatorConfiguration(path, cfg)
}

// SelfManagedCertificateSecret is the Secret, in OperatorNamespace, that an
// operator started with OperatorOptions.SelfManagedCertificates keeps its
// CA and serving certificate in.
func SelfManagedCertificateSecret(suite string) string {
	return WebhookConfigurationName(suite) + "-serving-cert"
}

// useSelfManagedCertificates makes the operator provision, rotate and inject
// its own certificate for the loopback address it serves on.
func useSelfManagedCertificates(cfg *configv1alpha1.OperatorConfiguration, suite string) {
	cfg.WebhookServer.Certificates = configv1alpha1.WebhookCertificatesConfiguration{
		Mode:                     configv1alpha1.WebhookCertificateModeSelfManaged,
		SecretName:               SelfManagedCertificateSecret(suite),
		SecretNamespace:          OperatorNamespace,
		WebhookConfigurationName: WebhookConfigurationName(suite),
		DNSNames:                 []string{"localhost"},
		IPAddresses:              []string{"127.0.0.1"},
	}
	configv1alpha1.SetDefaults(cfg)
}
