package v1alpha1

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*OperatorConfiguration)
		// wantErrors are the messages in order, each matched as a prefix so
		// that wording owned by apimachinery can be left out; none means valid.
		wantErrors []string
	}{
		{
			name:   "defaults are valid",
			mutate: func(*OperatorConfiguration) {},
		},
		{
			name:       "negative qps",
			mutate:     func(c *OperatorConfiguration) { c.ClientConnection.QPS = -1 },
			wantErrors: []string{"clientConnection.qps: Invalid value: -1: must be greater than 0"},
		},
		{
			name:       "negative burst",
			mutate:     func(c *OperatorConfiguration) { c.ClientConnection.Burst = -5 },
			wantErrors: []string{"clientConnection.burst: Invalid value: -5: must be greater than 0"},
		},
		{
			name:       "lease name that is not a DNS subdomain",
			mutate:     func(c *OperatorConfiguration) { c.LeaderElection.ResourceName = "Copse_Leader" },
			wantErrors: []string{`leaderElection.resourceName: Invalid value: "Copse_Leader": a lowercase RFC 1123 subdomain`},
		},
		{
			name:       "lease namespace that is not a DNS label",
			mutate:     func(c *OperatorConfiguration) { c.LeaderElection.ResourceNamespace = "copse.system" },
			wantErrors: []string{`leaderElection.resourceNamespace: Invalid value: "copse.system": `},
		},
		{
			name:       "negative retry period",
			mutate:     func(c *OperatorConfiguration) { c.LeaderElection.RetryPeriod = metav1.Duration{Duration: -time.Second} },
			wantErrors: []string{`leaderElection.retryPeriod: Invalid value: "-1s": must be greater than 0`},
		},
		{
			name: "renew deadline not shorter than lease duration",
			mutate: func(c *OperatorConfiguration) {
				c.LeaderElection.LeaseDuration = metav1.Duration{Duration: 10 * time.Second}
			},
			wantErrors: []string{`leaderElection.leaseDuration: Invalid value: "10s": must be greater than renewDeadline (10s)`},
		},
		{
			name: "renew deadline too close to retry period",
			mutate: func(c *OperatorConfiguration) {
				c.LeaderElection.RetryPeriod = metav1.Duration{Duration: 9 * time.Second}
			},
			wantErrors: []string{`leaderElection.renewDeadline: Invalid value: "10s": must be greater than 1.2 × retryPeriod (10.8s)`},
		},
		{
			name: "zero concurrent syncs on every controller",
			mutate: func(c *OperatorConfiguration) {
				c.Controllers.PodCliqueSet.ConcurrentSyncs = 0
				c.Controllers.PodClique.ConcurrentSyncs = -1
				c.Controllers.PodCliqueScalingGroup.ConcurrentSyncs = 0
			},
			wantErrors: []string{
				"controllers.podCliqueSet.concurrentSyncs: Invalid value: 0: must be greater than 0",
				"controllers.podClique.concurrentSyncs: Invalid value: -1: must be greater than 0",
				"controllers.podCliqueScalingGroup.concurrentSyncs: Invalid value: 0: must be greater than 0",
			},
		},
		{
			name:       "webhook port out of range",
			mutate:     func(c *OperatorConfiguration) { c.WebhookServer.Port = 70000 },
			wantErrors: []string{"webhookServer.port: Invalid value: 70000: must be between 1 and 65535, inclusive"},
		},
		{
			name:       "webhook without certificate directory",
			mutate:     func(c *OperatorConfiguration) { c.WebhookServer.CertDir = "" },
			wantErrors: []string{"webhookServer.certDir: Required value: must hold the serving certificate (tls.crt, tls.key)"},
		},
		{
			name: "disabled endpoints and kernel-chosen ports are valid",
			mutate: func(c *OperatorConfiguration) {
				c.Server.Metrics.BindAddress = "0"
				c.Server.HealthProbes.BindAddress = "127.0.0.1:0"
			},
		},
		{
			name:       "bind address without port",
			mutate:     func(c *OperatorConfiguration) { c.Server.HealthProbes.BindAddress = "localhost" },
			wantErrors: []string{`server.healthProbes.bindAddress: Invalid value: "localhost": must be a host:port or "0" to disable`},
		},
		{
			name:       "bind address with named port",
			mutate:     func(c *OperatorConfiguration) { c.Server.Metrics.BindAddress = ":http" },
			wantErrors: []string{`server.metrics.bindAddress: Invalid value: ":http": port must be a number`},
		},
		{
			name:       "bind address with port out of range",
			mutate:     func(c *OperatorConfiguration) { c.Server.Metrics.BindAddress = ":99999" },
			wantErrors: []string{`server.metrics.bindAddress: Invalid value: ":99999": must be between 1 and 65535, inclusive`},
		},
		{
			name: "metrics and probes on the same address",
			mutate: func(c *OperatorConfiguration) {
				c.Server.Metrics.BindAddress = ":8081"
			},
			wantErrors: []string{`server.metrics.bindAddress: Invalid value: ":8081": must differ from server.healthProbes.bindAddress`},
		},
		{
			name:       "unknown scheduler backend",
			mutate:     func(c *OperatorConfiguration) { c.Scheduler.Backend = "volcano" },
			wantErrors: []string{`scheduler.backend: Unsupported value: "volcano": supported values: "auto", "workload", "none"`},
		},
		{
			name: "unknown log level and format",
			mutate: func(c *OperatorConfiguration) {
				c.Logging.Level = "warn"
				c.Logging.Format = "xml"
			},
			wantErrors: []string{
				`logging.level: Unsupported value: "warn": supported values: "debug", "info", "error"`,
				`logging.format: Unsupported value: "xml": supported values: "json", "text"`,
			},
		},
		{
			name: "undefaulted booleans",
			mutate: func(c *OperatorConfiguration) {
				c.LeaderElection.Enabled = nil
				c.WebhookServer.Enabled = nil
			},
			wantErrors: []string{
				"leaderElection.enabled: Required value: must be set (call SetDefaults first)",
				"webhookServer.enabled: Required value: must be set (call SetDefaults first)",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewDefaultOperatorConfiguration()
			tc.mutate(cfg)
			errs := Validate(cfg)
			if len(errs) != len(tc.wantErrors) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tc.wantErrors), errs)
			}
			for i, err := range errs {
				if !strings.HasPrefix(err.Error(), tc.wantErrors[i]) {
					t.Errorf("error %d:\n got: %s\nwant: %s", i, err.Error(), tc.wantErrors[i])
				}
			}
		})
	}
}
