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
			name:       "negative qps other than -1",
			mutate:     func(c *OperatorConfiguration) { c.ClientConnection.QPS = -2 },
			wantErrors: []string{"clientConnection.qps: Invalid value: -2: must be greater than 0, or -1 for no client-side limit"},
		},
		{
			name:   "qps -1 turns client-side limiting off",
			mutate: func(c *OperatorConfiguration) { c.ClientConnection.QPS = -1 },
		},
		{
			name:       "no write budget",
			mutate:     func(c *OperatorConfiguration) { c.Controllers.MaxWritesPerReconcile = -3 },
			wantErrors: []string{"controllers.maxWritesPerReconcile: Invalid value: -3: must be greater than 0"},
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
			name: "self-managed certificates with every field set",
			mutate: func(c *OperatorConfiguration) {
				c.WebhookServer.Certificates = WebhookCertificatesConfiguration{
					Mode:                     WebhookCertificateModeSelfManaged,
					SecretName:               "copse-webhook-serving-cert",
					SecretNamespace:          "copse-system",
					WebhookConfigurationName: "copse",
					DNSNames:                 []string{"copse-webhook.copse-system.svc", "copse-webhook.copse-system.svc.cluster.local", "*.copse.example.com"},
					IPAddresses:              []string{"127.0.0.1", "::1"},
					Validity:                 metav1.Duration{Duration: 24 * time.Hour},
					RotateBefore:             metav1.Duration{Duration: 8 * time.Hour},
				}
			},
		},
		{
			name:       "unknown certificate mode",
			mutate:     func(c *OperatorConfiguration) { c.WebhookServer.Certificates.Mode = "CertManager" },
			wantErrors: []string{`webhookServer.certificates.mode: Unsupported value: "CertManager": supported values: "SelfManaged", "Provided"`},
		},
		{
			name: "self-managed without secret and webhook configuration names",
			mutate: func(c *OperatorConfiguration) {
				c.WebhookServer.Certificates.SecretName = ""
				c.WebhookServer.Certificates.WebhookConfigurationName = ""
			},
			wantErrors: []string{
				"webhookServer.certificates.secretName: Required value: names the Secret that holds the CA and the serving certificate",
				"webhookServer.certificates.webhookConfigurationName: Required value: names the webhook configurations that get the CA injected",
			},
		},
		{
			name: "self-managed with invalid object names",
			mutate: func(c *OperatorConfiguration) {
				c.WebhookServer.Certificates.SecretName = "Serving_Cert"
				c.WebhookServer.Certificates.SecretNamespace = "copse.system"
				c.WebhookServer.Certificates.WebhookConfigurationName = "-copse"
			},
			wantErrors: []string{
				`webhookServer.certificates.secretName: Invalid value: "Serving_Cert": a lowercase RFC 1123 subdomain`,
				`webhookServer.certificates.secretNamespace: Invalid value: "copse.system": `,
				`webhookServer.certificates.webhookConfigurationName: Invalid value: "-copse": a lowercase RFC 1123 subdomain`,
			},
		},
		{
			name: "invalid and duplicate subject alternative names",
			mutate: func(c *OperatorConfiguration) {
				c.WebhookServer.Certificates.DNSNames = []string{"copse-webhook.copse-system.svc", "Copse_Webhook", "copse-webhook.copse-system.svc"}
				c.WebhookServer.Certificates.IPAddresses = []string{"127.0.0.1", "localhost", "fe80::1%eth0", "127.0.0.1"}
			},
			wantErrors: []string{
				`webhookServer.certificates.dnsNames[1]: Invalid value: "Copse_Webhook": a lowercase RFC 1123 subdomain`,
				`webhookServer.certificates.dnsNames[2]: Duplicate value: "copse-webhook.copse-system.svc"`,
				`webhookServer.certificates.ipAddresses[1]: Invalid value: "localhost": must be an IPv4 or IPv6 address`,
				`webhookServer.certificates.ipAddresses[2]: Invalid value: "fe80::1%eth0": must be an IPv4 or IPv6 address`,
				`webhookServer.certificates.ipAddresses[3]: Duplicate value: "127.0.0.1"`,
			},
		},
		{
			name: "rotateBefore not less than validity",
			mutate: func(c *OperatorConfiguration) {
				c.WebhookServer.Certificates.Validity = metav1.Duration{Duration: 720 * time.Hour}
			},
			wantErrors: []string{`webhookServer.certificates.rotateBefore: Invalid value: "720h0m0s": must be less than validity (720h0m0s)`},
		},
		{
			name: "non-positive and excessive certificate durations",
			mutate: func(c *OperatorConfiguration) {
				c.WebhookServer.Certificates.Validity = metav1.Duration{Duration: 11 * 365 * 24 * time.Hour}
				c.WebhookServer.Certificates.RotateBefore = metav1.Duration{Duration: -time.Hour}
			},
			wantErrors: []string{
				`webhookServer.certificates.validity: Invalid value: "96360h0m0s": must be at most 87600h0m0s (10 years; the CA lives 10 times as long)`,
				`webhookServer.certificates.rotateBefore: Invalid value: "-1h0m0s": must be greater than 0`,
			},
		},
		{
			name: "zero validity",
			mutate: func(c *OperatorConfiguration) {
				c.WebhookServer.Certificates.Validity = metav1.Duration{}
			},
			wantErrors: []string{`webhookServer.certificates.validity: Invalid value: "0s": must be greater than 0`},
		},
		{
			name: "mode Provided ignores the self-managed fields",
			mutate: func(c *OperatorConfiguration) {
				c.WebhookServer.Certificates = WebhookCertificatesConfiguration{
					Mode:        WebhookCertificateModeProvided,
					DNSNames:    []string{"Not_A_Name"},
					IPAddresses: []string{"nope"},
				}
			},
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
			name:       "a gang timeout that is not positive",
			mutate:     func(c *OperatorConfiguration) { c.Scheduler.IncompleteGangTimeout = metav1.Duration{} },
			wantErrors: []string{`scheduler.incompleteGangTimeout: Invalid value: "0s": must be a positive duration`},
		},
		{
			name: "an in-place restart timeout that is not positive",
			mutate: func(c *OperatorConfiguration) {
				c.Scheduler.InPlaceRestartTimeout = metav1.Duration{Duration: -time.Second}
			},
			wantErrors: []string{`scheduler.inPlaceRestartTimeout: Invalid value: "-1s": must be a positive duration`},
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
			name: "startup gate without an image",
			mutate: func(c *OperatorConfiguration) {
				c.StartupGate.Image = " "
			},
			wantErrors: []string{"startupGate.image: Required value: the startup gate init container needs an image"},
		},
		{
			name:   "an MNNVL default group",
			mutate: func(c *OperatorConfiguration) { c.MNNVL = MNNVLConfiguration{Enabled: true, DefaultGroup: "nvl72"} },
		},
		{
			name:       "an MNNVL default group without MNNVL",
			mutate:     func(c *OperatorConfiguration) { c.MNNVL.DefaultGroup = "nvl72" },
			wantErrors: []string{`mnnvl.defaultGroup: Invalid value: "nvl72": needs mnnvl.enabled: true`},
		},
		{
			name:       "an MNNVL default group that is no DNS label",
			mutate:     func(c *OperatorConfiguration) { c.MNNVL = MNNVLConfiguration{Enabled: true, DefaultGroup: "NVL_72"} },
			wantErrors: []string{`mnnvl.defaultGroup: Invalid value: "NVL_72": must be a DNS-1123 label: a lowercase RFC 1123 label`},
		},
		{
			name:       "the opt-out as the MNNVL default group",
			mutate:     func(c *OperatorConfiguration) { c.MNNVL = MNNVLConfiguration{Enabled: true, DefaultGroup: "none"} },
			wantErrors: []string{`mnnvl.defaultGroup: Invalid value: "none": must be a group name: "none" opts out, leave defaultGroup empty`},
		},
		{
			name: "an MNNVL default group that could take a TrainJob's ComputeDomain name",
			mutate: func(c *OperatorConfiguration) {
				c.MNNVL = MNNVLConfiguration{Enabled: true, DefaultGroup: "rack-mnnvl"}
			},
			wantErrors: []string{`mnnvl.defaultGroup: Invalid value: "rack-mnnvl": must not be "mnnvl" or end in "-mnnvl"`},
		},
		{
			name: "pod limits below 1",
			mutate: func(c *OperatorConfiguration) {
				c.Limits.MaxPodsPerReplica = 0
				c.Limits.MaxPodsPerPodCliqueSet = -1
			},
			wantErrors: []string{
				"limits.maxPodsPerReplica: Invalid value: 0: must be greater than 0",
				"limits.maxPodsPerPodCliqueSet: Invalid value: -1: must be greater than 0",
			},
		},
		{
			name: "a replica may not have more pods than the whole PodCliqueSet",
			mutate: func(c *OperatorConfiguration) {
				c.Limits.MaxPodsPerReplica = 4096
				c.Limits.MaxPodsPerPodCliqueSet = 1024
			},
			wantErrors: []string{"limits.maxPodsPerReplica: Invalid value: 4096: must not be greater than limits.maxPodsPerPodCliqueSet (1024)"},
		},
		{
			name: "a PodCliqueSet of one replica may use the whole limit",
			mutate: func(c *OperatorConfiguration) {
				c.Limits.MaxPodsPerReplica = 1024
				c.Limits.MaxPodsPerPodCliqueSet = 1024
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
