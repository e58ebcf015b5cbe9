package v1alpha1

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const header = "apiVersion: config.copse.dev/v1alpha1\nkind: OperatorConfiguration\n"

func TestLoad(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    *OperatorConfiguration
		// wantErr lists substrings the error must contain; empty means success.
		wantErr []string
	}{
		{
			name:    "header only gives the defaults",
			content: header,
			want:    fullyDefaulted(),
		},
		{
			name: "every section set",
			content: header + `
clientConnection: {qps: 50.5, burst: 80}
leaderElection:
  enabled: false
  resourceName: my-lease
  resourceNamespace: copse-system
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 5s
controllers:
  podCliqueSet: {concurrentSyncs: 1}
  podClique: {concurrentSyncs: 2}
  podCliqueScalingGroup: {concurrentSyncs: 4}
  trainJob: {enabled: false, concurrentSyncs: 6}
webhookServer: {enabled: false, host: 0.0.0.0, port: 8443, certDir: /certs}
server:
  healthProbes: {bindAddress: "127.0.0.1:9081"}
  metrics: {bindAddress: "0"}
scheduler: {backend: workload, incompleteGangTimeout: 90s}
logging: {level: debug, format: text}
limits: {maxPodsPerReplica: 8192, maxPodsPerPodCliqueSet: 16384}
startupGate: {image: registry.example.com/mirror/busybox:1.37.0}
`,
			want: &OperatorConfiguration{
				TypeMeta:         metav1.TypeMeta{APIVersion: "config.copse.dev/v1alpha1", Kind: "OperatorConfiguration"},
				ClientConnection: ClientConnectionConfiguration{QPS: 50.5, Burst: 80},
				LeaderElection: LeaderElectionConfiguration{
					Enabled:           ptr.To(false),
					ResourceName:      "my-lease",
					ResourceNamespace: "copse-system",
					LeaseDuration:     metav1.Duration{Duration: 30 * time.Second},
					RenewDeadline:     metav1.Duration{Duration: 20 * time.Second},
					RetryPeriod:       metav1.Duration{Duration: 5 * time.Second},
				},
				Controllers: ControllersConfiguration{
					PodCliqueSet:          ControllerConfiguration{ConcurrentSyncs: 1},
					PodClique:             ControllerConfiguration{ConcurrentSyncs: 2},
					PodCliqueScalingGroup: ControllerConfiguration{ConcurrentSyncs: 4},
					TrainJob:              OptionalControllerConfiguration{Enabled: ptr.To(false), ConcurrentSyncs: 6},
					MaxWritesPerReconcile: 1000,
				},
				WebhookServer: WebhookServerConfiguration{Enabled: ptr.To(false), Host: "0.0.0.0", Port: 8443, CertDir: "/certs",
					Certificates: fullyDefaulted().WebhookServer.Certificates},
				Server: ServerConfiguration{
					HealthProbes: BindConfiguration{BindAddress: "127.0.0.1:9081"},
					Metrics:      BindConfiguration{BindAddress: "0"},
				},
				Scheduler: SchedulerConfiguration{Backend: SchedulerBackendWorkload, IncompleteGangTimeout: metav1.Duration{Duration: 90 * time.Second},
					InPlaceRestartTimeout: metav1.Duration{Duration: DefaultInPlaceRestartTimeout}},
				Logging:     LoggingConfiguration{Level: LogLevelDebug, Format: LogFormatText},
				Limits:      LimitsConfiguration{MaxPodsPerReplica: 8192, MaxPodsPerPodCliqueSet: 16384},
				StartupGate: StartupGateConfiguration{Image: "registry.example.com/mirror/busybox:1.37.0"},
			},
		},
		{
			// The shape the Helm chart renders.
			name: "webhook certificates",
			content: header + `
webhookServer:
  enabled: true
  host: ""
  port: 9443
  certDir: /tmp/k8s-webhook-server/serving-certs
  certificates:
    mode: SelfManaged
    secretName: copse-webhook-serving-cert
    secretNamespace: ""
    webhookConfigurationName: copse
    dnsNames: [copse-webhook.copse-system.svc, copse-webhook.copse-system.svc.cluster.local]
    ipAddresses: []
    validity: 8760h
    rotateBefore: 720h
`,
			want: func() *OperatorConfiguration {
				cfg := fullyDefaulted()
				cfg.WebhookServer.Certificates.DNSNames = []string{"copse-webhook.copse-system.svc", "copse-webhook.copse-system.svc.cluster.local"}
				cfg.WebhookServer.Certificates.IPAddresses = []string{}
				return cfg
			}(),
		},
		{
			name: "webhook certificates provided",
			content: header + `
webhookServer:
  certificates: {mode: Provided}
`,
			want: func() *OperatorConfiguration {
				cfg := fullyDefaulted()
				cfg.WebhookServer.Certificates.Mode = WebhookCertificateModeProvided
				return cfg
			}(),
		},
		{
			name:    "unknown certificates field",
			content: header + "webhookServer:\n  certificates:\n    secretname: x\n",
			wantErr: []string{`unknown field "webhookServer.certificates.secretname"`},
		},
		{
			name:    "invalid certificate durations are reported by field",
			content: header + "webhookServer:\n  certificates:\n    validity: 24h\n    rotateBefore: 48h\n",
			wantErr: []string{`webhookServer.certificates.rotateBefore: Invalid value: "48h0m0s": must be less than validity (24h0m0s)`},
		},
		{
			name:    "unknown nested field",
			content: header + "clientConnection:\n  qpss: 10\n",
			wantErr: []string{"strict decoding", `unknown field "clientConnection.qpss"`},
		},
		{
			name:    "unknown top-level field",
			content: header + "webhook:\n  port: 1\n",
			wantErr: []string{`unknown field "webhook"`},
		},
		{
			name:    "field spelled with the wrong case",
			content: header + "clientConnection:\n  QPS: 10\n",
			wantErr: []string{`unknown field "clientConnection.QPS"`},
		},
		{
			name:    "duplicate key",
			content: header + "logging:\n  level: debug\n  level: error\n",
			wantErr: []string{"parsing YAML", `key "level" already set in map`},
		},
		{
			name:    "value of the wrong type",
			content: header + "clientConnection:\n  burst: lots\n",
			wantErr: []string{"decoding", "burst"},
		},
		{
			name:    "unparsable duration",
			content: header + "leaderElection:\n  leaseDuration: forever\n",
			wantErr: []string{"decoding", `invalid duration "forever"`},
		},
		{
			name:    "wrong apiVersion",
			content: "apiVersion: config.copse.dev/v1\nkind: OperatorConfiguration\n",
			wantErr: []string{`apiVersion "config.copse.dev/v1", kind "OperatorConfiguration": expected apiVersion "config.copse.dev/v1alpha1", kind "OperatorConfiguration"`},
		},
		{
			name:    "wrong kind",
			content: "apiVersion: config.copse.dev/v1alpha1\nkind: ControllerManagerConfiguration\n",
			wantErr: []string{`kind "ControllerManagerConfiguration"`, `expected apiVersion "config.copse.dev/v1alpha1", kind "OperatorConfiguration"`},
		},
		{
			name:    "missing apiVersion and kind",
			content: "logging:\n  level: debug\n",
			wantErr: []string{`apiVersion "", kind ""`},
		},
		{
			name:    "empty file",
			content: "",
			wantErr: []string{`apiVersion "", kind ""`},
		},
		{
			name:    "invalid values are reported by field",
			content: header + "clientConnection:\n  qps: -3\nscheduler:\n  backend: volcano\n",
			wantErr: []string{
				"invalid configuration",
				"clientConnection.qps: Invalid value: -3: must be greater than 0",
				`scheduler.backend: Unsupported value: "volcano"`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Load(path)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Load succeeded, want an error containing %q", tc.wantErr)
				}
				for _, want := range append(tc.wantErr, path) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Load mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "reading operator configuration") {
		t.Fatalf("Load(%q) error = %v, want a wrapped not-exist error", missing, err)
	}
}
