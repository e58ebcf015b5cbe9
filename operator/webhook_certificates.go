package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/certs"
)

// podNamespaceEnvVar is set by the Helm chart from the downward API.
const podNamespaceEnvVar = "POD_NAMESPACE"

// inClusterNamespacePath holds the pod's namespace in every pod with a
// service account token, as controller-runtime's leader election reads it.
const inClusterNamespacePath = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// prepareWebhookCertificates makes sure that the webhook server finds its
// serving certificate in webhookServer.certDir when the manager starts it
// (it loads the files at start, and its readiness check only says it
// started). It must run before the manager starts.
//
//   - Mode Provided: the files must already be there (a mounted Secret, or
//     one cert-manager issues); nothing else is touched.
//   - Mode SelfManaged: the certificate is provisioned in its Secret and
//     written into certDir now, with a direct client since the manager's
//     cache does not run yet, and the returned Runnable keeps it current.
//
// It returns nil when there is nothing to run.
func prepareWebhookCertificates(ctx context.Context, restConfig *rest.Config, scheme *runtime.Scheme,
	cfg *configv1alpha1.OperatorConfiguration) (manager.Runnable, error) {
	if !*cfg.WebhookServer.Enabled {
		return nil, nil
	}
	if cfg.WebhookServer.Certificates.Mode == configv1alpha1.WebhookCertificateModeProvided {
		return nil, checkProvidedCertificate(cfg.WebhookServer.CertDir)
	}

	opts, err := selfManagedCertificateOptions(cfg, os.Getenv, readInClusterNamespace)
	if err != nil {
		return nil, fmt.Errorf("webhook serving certificate: %w", err)
	}
	directClient, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the client for the webhook serving certificate: %w", err)
	}
	clientset, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("creating the clientset for the webhook serving certificate: %w", err)
	}
	certManager := &certs.Manager{
		Client:  directClient,
		Options: opts,
		Log:     ctrl.Log.WithName("webhook-certificates"),
		Watch:   certs.WatchObjects(clientset, opts),
	}
	ctrl.Log.WithName("setup").Info("provisioning the webhook serving certificate",
		"mode", configv1alpha1.WebhookCertificateModeSelfManaged,
		"secret", opts.SecretNamespace+"/"+opts.SecretName,
		"webhookConfiguration", opts.WebhookConfigurationName,
		"subjectAlternativeNames", opts.Policy.SANs.String(),
		"certDir", opts.CertDir)
	if err := certManager.Bootstrap(ctx); err != nil {
		return nil, fmt.Errorf("provisioning the webhook serving certificate in Secret %s/%s: %w",
			opts.SecretNamespace, opts.SecretName, err)
	}
	return certManager, nil
}

// checkProvidedCertificate fails, naming the files, unless certDir holds a
// loadable key pair.
func checkProvidedCertificate(certDir string) error {
	certPath, keyPath := filepath.Join(certDir, certs.CertKey), filepath.Join(certDir, certs.KeyKey)
	if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
		return fmt.Errorf("webhookServer.certificates.mode is %s, but webhookServer.certDir holds no usable serving certificate "+
			"(%s and %s, e.g. mounted from a Secret or issued by cert-manager): %w",
			configv1alpha1.WebhookCertificateModeProvided, certPath, keyPath, err)
	}
	return nil
}

// selfManagedCertificateOptions resolves what Validate cannot know: the
// Secret's namespace when none is configured, and whether the certificate
// would name any host at all.
func selfManagedCertificateOptions(cfg *configv1alpha1.OperatorConfiguration, getenv func(string) string,
	inClusterNamespace func() string) (certs.Options, error) {
	c := cfg.WebhookServer.Certificates
	path := field.NewPath("webhookServer", "certificates")
	var errs field.ErrorList

	namespace := c.SecretNamespace
	for _, candidate := range []func() string{
		func() string { return getenv(podNamespaceEnvVar) },
		func() string { return cfg.LeaderElection.ResourceNamespace },
		inClusterNamespace,
	} {
		if namespace != "" {
			break
		}
		namespace = strings.TrimSpace(candidate())
	}
	if namespace == "" {
		errs = append(errs, field.Required(path.Child("secretNamespace"),
			"the operator's namespace is unknown (no $"+podNamespaceEnvVar+", no leaderElection.resourceNamespace, not in a pod): "+
				"set one of them"))
	}
	if len(c.DNSNames) == 0 && len(c.IPAddresses) == 0 {
		errs = append(errs, field.Required(path.Child("dnsNames"),
			"dnsNames or ipAddresses must name the host the API server calls the webhooks at "+
				"(e.g. copse-webhook.copse-system.svc, or 127.0.0.1 for an operator outside the cluster)"))
	}
	sans, err := certs.ParseSANs(c.DNSNames, c.IPAddresses)
	if err != nil {
		errs = append(errs, field.Invalid(path.Child("ipAddresses"), c.IPAddresses, err.Error()))
	}
	if len(errs) > 0 {
		return certs.Options{}, errs.ToAggregate()
	}
	return certs.Options{
		SecretNamespace:          namespace,
		SecretName:               c.SecretName,
		WebhookConfigurationName: c.WebhookConfigurationName,
		CertDir:                  cfg.WebhookServer.CertDir,
		Policy: certs.Policy{
			Validity:     c.Validity.Duration,
			RotateBefore: c.RotateBefore.Duration,
			SANs:         sans,
		},
	}, nil
}

// readInClusterNamespace returns the pod's namespace, or "" out of cluster.
func readInClusterNamespace() string {
	data, err := os.ReadFile(inClusterNamespacePath)
	if err != nil {
		return ""
	}
	return string(data)
}
