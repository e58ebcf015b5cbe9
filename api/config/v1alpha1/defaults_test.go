package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fullyDefaulted is the configuration every empty file must turn into.
func fullyDefaulted() *OperatorConfiguration {
	return &OperatorConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "config.copse.dev/v1alpha1", Kind: "OperatorConfiguration"},
		ClientConnection: ClientConnectionConfiguration{
			QPS:   -1,
			Burst: 150,
		},
		LeaderElection: LeaderElectionConfiguration{
			Enabled:       ptr.To(true),
			ResourceName:  "copse-operator-leader",
			LeaseDuration: metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline: metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:   metav1.Duration{Duration: 2 * time.Second},
		},
		Controllers: ControllersConfiguration{
			PodCliqueSet:          ControllerConfiguration{ConcurrentSyncs: 3},
			PodClique:             ControllerConfiguration{ConcurrentSyncs: 5},
			PodCliqueScalingGroup: ControllerConfiguration{ConcurrentSyncs: 3},
			TrainJob:              OptionalControllerConfiguration{Enabled: ptr.To(true), ConcurrentSyncs: 3},
			MaxWritesPerReconcile: 1000,
		},
		WebhookServer: WebhookServerConfiguration{
			Enabled: ptr.To(true),
			Port:    9443,
			CertDir: "/tmp/k8s-webhook-server/serving-certs",
			Certificates: WebhookCertificatesConfiguration{
				Mode:                     WebhookCertificateModeSelfManaged,
				SecretName:               "copse-webhook-serving-cert",
				WebhookConfigurationName: "copse",
				Validity:                 metav1.Duration{Duration: 8760 * time.Hour},
				RotateBefore:             metav1.Duration{Duration: 720 * time.Hour},
			},
		},
		Server: ServerConfiguration{
			HealthProbes: BindConfiguration{BindAddress: ":8081"},
			Metrics:      BindConfiguration{BindAddress: ":8080"},
		},
		Scheduler: SchedulerConfiguration{Backend: SchedulerBackendAuto, IncompleteGangTimeout: metav1.Duration{Duration: DefaultIncompleteGangTimeout},
			InPlaceRestartTimeout: metav1.Duration{Duration: DefaultInPlaceRestartTimeout}},
		Logging:     LoggingConfiguration{Level: LogLevelInfo, Format: LogFormatJSON},
		Limits:      LimitsConfiguration{MaxPodsPerReplica: 32768, MaxPodsPerPodCliqueSet: 65536},
		StartupGate: StartupGateConfiguration{Image: "docker.io/library/busybox:1.37.0"},
	}
}

func TestSetDefaults(t *testing.T) {
	tests := []struct {
		name   string
		input  *OperatorConfiguration
		expect *OperatorConfiguration
	}{
		{
			name:   "empty configuration gets every default",
			input:  &OperatorConfiguration{},
			expect: fullyDefaulted(),
		},
		{
			name: "explicit false booleans survive defaulting",
			input: &OperatorConfiguration{
				LeaderElection: LeaderElectionConfiguration{Enabled: ptr.To(false)},
				WebhookServer:  WebhookServerConfiguration{Enabled: ptr.To(false)},
			},
			expect: func() *OperatorConfiguration {
				cfg := fullyDefaulted()
				cfg.LeaderElection.Enabled = ptr.To(false)
				cfg.WebhookServer.Enabled = ptr.To(false)
				return cfg
			}(),
		},
		{
			name: "mode Provided still gets the other certificate defaults",
			input: &OperatorConfiguration{
				WebhookServer: WebhookServerConfiguration{Certificates: WebhookCertificatesConfiguration{Mode: WebhookCertificateModeProvided}},
			},
			expect: func() *OperatorConfiguration {
				cfg := fullyDefaulted()
				cfg.WebhookServer.Certificates.Mode = WebhookCertificateModeProvided
				return cfg
			}(),
		},
		{
			name: "set values are kept",
			input: &OperatorConfiguration{
				ClientConnection: ClientConnectionConfiguration{QPS: 20, Burst: 40},
				LeaderElection: LeaderElectionConfiguration{
					ResourceName:      "other-lease",
					ResourceNamespace: "copse-system",
					LeaseDuration:     metav1.Duration{Duration: time.Minute},
				},
				Controllers: ControllersConfiguration{PodClique: ControllerConfiguration{ConcurrentSyncs: 11}},
				WebhookServer: WebhookServerConfiguration{
					Host:    "127.0.0.1",
					Port:    10250,
					CertDir: "/certs",
					Certificates: WebhookCertificatesConfiguration{
						SecretNamespace: "copse-system",
						DNSNames:        []string{"copse-webhook.copse-system.svc"},
						IPAddresses:     []string{"127.0.0.1"},
						RotateBefore:    metav1.Duration{Duration: 48 * time.Hour},
					},
				},
				Server:    ServerConfiguration{Metrics: BindConfiguration{BindAddress: "0"}},
				Scheduler: SchedulerConfiguration{Backend: SchedulerBackendNone},
				Logging:   LoggingConfiguration{Level: LogLevelDebug, Format: LogFormatText},
				Limits:    LimitsConfiguration{MaxPodsPerReplica: 1024},
			},
			expect: func() *OperatorConfiguration {
				cfg := fullyDefaulted()
				cfg.ClientConnection = ClientConnectionConfiguration{QPS: 20, Burst: 40}
				cfg.LeaderElection.ResourceName = "other-lease"
				cfg.LeaderElection.ResourceNamespace = "copse-system"
				cfg.LeaderElection.LeaseDuration = metav1.Duration{Duration: time.Minute}
				cfg.Controllers.PodClique.ConcurrentSyncs = 11
				cfg.WebhookServer.Host = "127.0.0.1"
				cfg.WebhookServer.Port = 10250
				cfg.WebhookServer.CertDir = "/certs"
				cfg.WebhookServer.Certificates.SecretNamespace = "copse-system"
				cfg.WebhookServer.Certificates.DNSNames = []string{"copse-webhook.copse-system.svc"}
				cfg.WebhookServer.Certificates.IPAddresses = []string{"127.0.0.1"}
				cfg.WebhookServer.Certificates.RotateBefore = metav1.Duration{Duration: 48 * time.Hour}
				cfg.Server.Metrics.BindAddress = "0"
				cfg.Scheduler.Backend = SchedulerBackendNone
				cfg.Logging = LoggingConfiguration{Level: LogLevelDebug, Format: LogFormatText}
				cfg.Limits.MaxPodsPerReplica = 1024
				return cfg
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			SetDefaults(tc.input)
			if diff := cmp.Diff(tc.expect, tc.input); diff != "" {
				t.Errorf("SetDefaults mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetDefaultsIsIdempotent(t *testing.T) {
	cfg := NewDefaultOperatorConfiguration()
	again := cfg.DeepCopy()
	SetDefaults(again)
	if diff := cmp.Diff(cfg, again); diff != "" {
		t.Errorf("second SetDefaults changed the configuration (-first +second):\n%s", diff)
	}
}

func TestDefaultConfigurationIsValid(t *testing.T) {
	if errs := Validate(NewDefaultOperatorConfiguration()); len(errs) > 0 {
		t.Errorf("defaults do not validate: %v", errs)
	}
}
