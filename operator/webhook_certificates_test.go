package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/certs"
)

func TestSelfManagedCertificateOptions(t *testing.T) {
	tests := []struct {
		name         string
		configure    func(*configv1alpha1.WebhookCertificatesConfiguration, *configv1alpha1.LeaderElectionConfiguration)
		env          map[string]string
		inCluster    string
		wantNS       string
		wantErrParts []string
	}{
		{
			name: "configured namespace wins",
			configure: func(c *configv1alpha1.WebhookCertificatesConfiguration, le *configv1alpha1.LeaderElectionConfiguration) {
				c.SecretNamespace = "certs"
				le.ResourceNamespace = "leases"
			},
			env: map[string]string{"POD_NAMESPACE": "pod"}, inCluster: "sa", wantNS: "certs",
		},
		{
			name: "then $POD_NAMESPACE",
			configure: func(_ *configv1alpha1.WebhookCertificatesConfiguration, le *configv1alpha1.LeaderElectionConfiguration) {
				le.ResourceNamespace = "leases"
			},
			env: map[string]string{"POD_NAMESPACE": "pod"}, inCluster: "sa", wantNS: "pod",
		},
		{
			name: "then the leader election namespace",
			configure: func(_ *configv1alpha1.WebhookCertificatesConfiguration, le *configv1alpha1.LeaderElectionConfiguration) {
				le.ResourceNamespace = "leases"
			},
			inCluster: "sa", wantNS: "leases",
		},
		{name: "then the service account's namespace", inCluster: "sa\n", wantNS: "sa"},
		{
			name: "out of cluster without a namespace",
			wantErrParts: []string{"webhookServer.certificates.secretNamespace: Required value: the operator's namespace is unknown " +
				"(no $POD_NAMESPACE, no leaderElection.resourceNamespace, not in a pod): set one of them"},
		},
		{
			name: "no subject alternative name",
			configure: func(c *configv1alpha1.WebhookCertificatesConfiguration, _ *configv1alpha1.LeaderElectionConfiguration) {
				c.DNSNames, c.IPAddresses = nil, nil
			},
			inCluster:    "sa",
			wantErrParts: []string{"webhookServer.certificates.dnsNames: Required value: dnsNames or ipAddresses must name the host"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configv1alpha1.NewDefaultOperatorConfiguration()
			cfg.WebhookServer.CertDir = "/certs"
			cfg.WebhookServer.Certificates.DNSNames = []string{"copse-webhook.copse-system.svc"}
			cfg.WebhookServer.Certificates.IPAddresses = []string{"127.0.0.1"}
			if tc.configure != nil {
				tc.configure(&cfg.WebhookServer.Certificates, &cfg.LeaderElection)
			}
			got, err := selfManagedCertificateOptions(cfg, func(name string) string { return tc.env[name] },
				func() string { return tc.inCluster })
			if len(tc.wantErrParts) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErrParts)
				}
				for _, part := range tc.wantErrParts {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not contain %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := certs.Options{
				SecretNamespace:          tc.wantNS,
				SecretName:               "copse-webhook-serving-cert",
				WebhookConfigurationName: "copse",
				CertDir:                  "/certs",
				Policy: certs.Policy{
					Validity:     8760 * time.Hour,
					RotateBefore: 720 * time.Hour,
					SANs:         certs.SANs{DNSNames: []string{"copse-webhook.copse-system.svc"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}},
				},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProvidedCertificateMustBeInCertDir(t *testing.T) {
	dir := t.TempDir()
	cfg := configv1alpha1.NewDefaultOperatorConfiguration()
	cfg.WebhookServer.CertDir = dir
	cfg.WebhookServer.Certificates.Mode = configv1alpha1.WebhookCertificateModeProvided
	// No API server is needed in mode Provided.
	unreachable := &rest.Config{Host: "https://127.0.0.1:1"}

	_, err := prepareWebhookCertificates(context.Background(), unreachable, nil, cfg)
	for _, want := range []string{
		"webhookServer.certificates.mode is Provided, but webhookServer.certDir holds no usable serving certificate",
		filepath.Join(dir, "tls.crt"),
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error = %v, want it to contain %q", err, want)
		}
	}

	data, err := certs.Renew(nil, certs.Decision{Action: certs.RenewAll}, time.Now(),
		certs.Policy{Validity: time.Hour, RotateBefore: time.Minute, SANs: certs.SANs{DNSNames: []string{"localhost"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, name), data[name], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runnable, err := prepareWebhookCertificates(context.Background(), unreachable, nil, cfg)
	if err != nil || runnable != nil {
		t.Errorf("with a key pair in certDir: runnable %v, error %v; want nothing to run and no error", runnable, err)
	}

	cfg.WebhookServer.CertDir = filepath.Join(dir, "absent")
	cfg.WebhookServer.Enabled = ptr.To(false)
	if runnable, err := prepareWebhookCertificates(context.Background(), unreachable, nil, cfg); err != nil || runnable != nil {
		t.Errorf("webhooks disabled: runnable %v, error %v; want neither", runnable, err)
	}
}
