package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// fileWithEveryOverridableField sets every field a flag can override to a
// value that differs from its default.
const fileWithEveryOverridableField = `apiVersion: config.copse.dev/v1alpha1
kind: OperatorConfiguration
leaderElection: {enabled: false}
webhookServer: {port: 7443, certDir: /file/certs}
server:
  healthProbes: {bindAddress: ":7081"}
  metrics: {bindAddress: ":7080"}
scheduler: {backend: none}
logging: {level: error}
`

func TestOperatorConfigurationFromCommandLine(t *testing.T) {
	tests := []struct {
		name        string
		fileContent string // empty: no --config
		args        []string
		want        func(cfg *configv1alpha1.OperatorConfiguration)
		wantErr     string
	}{
		{
			name: "no file and no flags give the defaults",
			want: func(*configv1alpha1.OperatorConfiguration) {},
		},
		{
			name:        "the file wins over flags that are not given",
			fileContent: fileWithEveryOverridableField,
			want: func(cfg *configv1alpha1.OperatorConfiguration) {
				cfg.LeaderElection.Enabled = ptr.To(false)
				cfg.WebhookServer.Port = 7443
				cfg.WebhookServer.CertDir = "/file/certs"
				cfg.Server.HealthProbes.BindAddress = ":7081"
				cfg.Server.Metrics.BindAddress = ":7080"
				cfg.Scheduler.Backend = configv1alpha1.SchedulerBackendNone
				cfg.Logging.Level = configv1alpha1.LogLevelError
			},
		},
		{
			name:        "given flags win over the file, even when they repeat a default",
			fileContent: fileWithEveryOverridableField,
			args: []string{
				"--leader-elect",
				"--webhook-port=9443",
				"--webhook-cert-dir=/flag/certs",
				"--health-probe-bind-address=:8081",
				"--metrics-bind-address=0",
				"--scheduler-backend=workload",
				"--log-level=debug",
			},
			want: func(cfg *configv1alpha1.OperatorConfiguration) {
				cfg.WebhookServer.CertDir = "/flag/certs"
				cfg.Server.Metrics.BindAddress = "0"
				cfg.Scheduler.Backend = configv1alpha1.SchedulerBackendWorkload
				cfg.Logging.Level = configv1alpha1.LogLevelDebug
			},
		},
		{
			name: "flags without a file override the defaults",
			args: []string{"--leader-elect=false", "--log-level=error"},
			want: func(cfg *configv1alpha1.OperatorConfiguration) {
				cfg.LeaderElection.Enabled = ptr.To(false)
				cfg.Logging.Level = configv1alpha1.LogLevelError
			},
		},
		{
			name:    "an invalid flag value names the configuration field",
			args:    []string{"--scheduler-backend=volcano"},
			wantErr: `invalid configuration after applying command-line flags: scheduler.backend: Unsupported value: "volcano"`,
		},
		{
			name:    "flags that collide with the file are caught",
			args:    []string{"--metrics-bind-address=:8081"},
			wantErr: `server.metrics.bindAddress: Invalid value: ":8081": must differ from server.healthProbes.bindAddress`,
		},
		{
			name:    "webhook port beyond int32",
			args:    []string{"--webhook-port=4294967297"},
			wantErr: "--webhook-port=4294967297: must be between 1 and 65535",
		},
		{
			name:    "positional arguments are rejected",
			args:    []string{"run"},
			wantErr: `unexpected arguments ["run"]`,
		},
		{
			name:    "unknown flags are rejected",
			args:    []string{"--leader-election"},
			wantErr: "flag provided but not defined: -leader-election",
		},
		{
			name:        "an invalid file is reported before flags apply",
			fileContent: "apiVersion: config.copse.dev/v1alpha1\nkind: OperatorConfiguration\nlogging: {levle: debug}\n",
			args:        []string{"--log-level=debug"},
			wantErr:     `unknown field "logging.levle"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.fileContent != "" {
				path := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(path, []byte(tc.fileContent), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"--config", path}, args...)
			}
			fs := flag.NewFlagSet("copse-operator", flag.ContinueOnError)
			fs.SetOutput(io.Discard)

			cfg, err := func() (*configv1alpha1.OperatorConfiguration, error) {
				cl, err := parseCommandLine(fs, args)
				if err != nil {
					return nil, err
				}
				return cl.operatorConfiguration()
			}()

			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			want := configv1alpha1.NewDefaultOperatorConfiguration()
			tc.want(want)
			if diff := cmp.Diff(want, cfg); diff != "" {
				t.Errorf("configuration mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionAndHelpFlags(t *testing.T) {
	fs := flag.NewFlagSet("copse-operator", flag.ContinueOnError)
	cl, err := parseCommandLine(fs, []string{"--version"})
	if err != nil || !cl.showVersion {
		t.Fatalf("--version: showVersion=%v, err=%v", cl != nil && cl.showVersion, err)
	}

	var help strings.Builder
	fs = flag.NewFlagSet("copse-operator", flag.ContinueOnError)
	fs.SetOutput(&help)
	if _, err := parseCommandLine(fs, []string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: err = %v, want flag.ErrHelp", err)
	}
	for _, name := range []string{"config", "kubeconfig", "leader-elect", "metrics-bind-address",
		"health-probe-bind-address", "webhook-port", "webhook-cert-dir", "scheduler-backend", "log-level", "version"} {
		if !strings.Contains(help.String(), "-"+name+" ") && !strings.Contains(help.String(), "-"+name+"\n") {
			t.Errorf("--help does not list -%s:\n%s", name, help.String())
		}
	}
}
