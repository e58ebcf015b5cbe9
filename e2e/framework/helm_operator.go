package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// This file runs copse-operator the way a Helm release installed in local
// mode expects (charts/copse, localMode.enabled): as a local process, with
// the identity of the chart's ServiceAccount and the configuration the chart
// rendered, so that every API request it makes is authorized by the chart's
// RBAC and nothing else.

// LocalOperatorPorts are free loopback ports for one local operator: the
// webhook port goes into the chart's localMode.webhookURL before install,
// the other two replace the chart's bind addresses.
type LocalOperatorPorts struct {
	Webhook, Metrics, HealthProbes int
}

// AllocateLocalOperatorPorts finds three distinct free loopback ports.
func AllocateLocalOperatorPorts() (LocalOperatorPorts, error) {
	p, err := allocateOperatorPorts()
	if err != nil {
		return LocalOperatorPorts{}, err
	}
	return LocalOperatorPorts{Webhook: p.webhook, Metrics: p.metrics, HealthProbes: p.healthProbes}, nil
}

// WebhookURL is https://127.0.0.1:<Webhook>, the chart's localMode.webhookURL.
func (p LocalOperatorPorts) WebhookURL() string { return "https://" + loopback(p.Webhook) }

// WriteServiceAccountKubeconfig asks the TokenRequest API for a token of
// ServiceAccount namespace/name, valid for validity, and writes a kubeconfig
// for the suite's API server that authenticates with it as a bearer token.
func WriteServiceAccountKubeconfig(ctx context.Context, env *Env, namespace, name, path string, validity time.Duration) error {
	tr, err := env.Clientset.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(validity.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	rc := env.Cluster.RESTConfig()
	caPEM := rc.CAData
	if len(caPEM) == 0 && rc.CAFile != "" {
		if caPEM, err = os.ReadFile(rc.CAFile); err != nil {
			return fmt.Errorf("read the API server's CA: %w", err)
		}
	}
	user := "system:serviceaccount:" + namespace + ":" + name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["copse"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["copse"] = &clientcmdapi.Context{Cluster: "copse", AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = "copse"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// ConfigMapOperatorConfiguration reads the operator configuration from key
// of ConfigMap namespace/name (the chart's <fullname>-config, key
// config.yaml) and decodes it as the operator does: strictly, defaulted and
// validated. The raw file is returned too.
func ConfigMapOperatorConfiguration(ctx context.Context, c client.Client, namespace, name, key string) (*configv1alpha1.OperatorConfiguration, []byte, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		return nil, nil, fmt.Errorf("get ConfigMap %s/%s: %w", namespace, name, err)
	}
	data, ok := cm.Data[key]
	if !ok {
		return nil, nil, fmt.Errorf("ConfigMap %s/%s has no key %q", namespace, name, key)
	}
	cfg, err := configv1alpha1.Decode([]byte(data))
	if err != nil {
		return nil, nil, fmt.Errorf("operator configuration in ConfigMap %s/%s:\n%s\n%w", namespace, name, data, err)
	}
	return cfg, []byte(data), nil
}

// ProcessOptions configure StartOperatorProcess.
type ProcessOptions struct {
	// Kubeconfig is the identity the operator runs with (required), e.g.
	// one written by WriteServiceAccountKubeconfig.
	Kubeconfig string
	// Config is written as the operator's --config file as it is (required).
	// The health probes must be enabled on a loopback address.
	Config *configv1alpha1.OperatorConfiguration
	// Dir holds the configuration file; empty means <cluster dir>/operator.
	Dir string
	// StreamLogs copies the log to GinkgoWriter as well.
	StreamLogs bool
	// ReadyTimeout bounds the wait for /readyz; zero means
	// DefaultOperatorReadyTimeout.
	ReadyTimeout time.Duration
}

// StartOperatorProcess runs copse-operator (built as for StartOperator) with
// the given identity and configuration and waits until /readyz answers.
// Unlike StartOperator it writes no certificate and installs no webhook
// configuration: whatever installed the operator (the Helm chart) provides
// them. env.Operator is set, so that env.CheckHealthy reports a crash and
// env.Teardown stops it; Stop, Kill, Restart and the other methods work as
// for StartOperator.
func StartOperatorProcess(ctx context.Context, env *Env, opts ProcessOptions) (*Operator, error) {
	switch {
	case env.Operator != nil:
		return nil, errors.New("start operator: the suite's environment already runs one")
	case opts.Kubeconfig == "" || opts.Config == nil:
		return nil, errors.New("start operator: ProcessOptions needs Kubeconfig and Config")
	case opts.Config.Server.HealthProbes.BindAddress == "0":
		return nil, errors.New("start operator: the health probes must stay enabled, StartOperatorProcess waits on /readyz")
	}
	dir := opts.Dir
	if dir == "" {
		dir = filepath.Join(env.Cluster.Dir(), "operator")
	}
	for _, d := range []string{dir, filepath.Join(env.Cluster.Dir(), "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("start operator: %w", err)
		}
	}
	binary, err := ensureOperatorBinary(ctx, filepath.Join(env.Cluster.Dir(), "bin"))
	if err != nil {
		return nil, fmt.Errorf("start operator: %w", err)
	}
	cfg := opts.Config.DeepCopy()
	configPath := filepath.Join(dir, "config.yaml")
	if err := writeOperatorConfiguration(configPath, cfg); err != nil {
		return nil, fmt.Errorf("start operator: %w", err)
	}
	o := newOperator(env, binary, opts.Kubeconfig, configPath, cfg, opts.ReadyTimeout, opts.StreamLogs)
	fmt.Fprintf(ginkgo.GinkgoWriter, "starting copse-operator as %s (log: %s)\n", opts.Kubeconfig, o.logPath)
	if err := o.start(ctx); err != nil {
		_ = o.Kill()
		return nil, err
	}
	env.Operator = o
	return o, nil
}

// LogLines returns the lines of the operator's log that contain substr (case
// insensitive), e.g. "forbidden" to find requests its RBAC refused.
func (o *Operator) LogLines(substr string) ([]string, error) {
	data, err := os.ReadFile(o.logPath)
	if err != nil {
		return nil, err
	}
	var out []string
	needle := strings.ToLower(substr)
	for _, line := range bytes.Split(data, []byte("\n")) {
		if strings.Contains(strings.ToLower(string(line)), needle) {
			out = append(out, string(line))
		}
	}
	return out, nil
}

// WebhookCABundles returns the caBundle of every webhook of the
// MutatingWebhookConfiguration and the ValidatingWebhookConfiguration called
// name, keyed by "<kind>/<webhook name>".
func WebhookCABundles(ctx context.Context, c client.Client, name string) (map[string][]byte, error) {
	out := map[string][]byte{}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, mutating); err != nil {
		return nil, err
	}
	for _, w := range mutating.Webhooks {
		out["mutating/"+w.Name] = w.ClientConfig.CABundle
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, validating); err != nil {
		return nil, err
	}
	for _, w := range validating.Webhooks {
		out["validating/"+w.Name] = w.ClientConfig.CABundle
	}
	return out, nil
}

// WaitWebhooksActive waits until the API server calls every copse webhook
// (a dry-run create per webhook, in namespace), as StartOperator does after
// installing its configurations; for configurations installed by someone
// else, e.g. the Helm chart with a CA the operator injects itself.
func WaitWebhooksActive(ctx context.Context, c client.Client, namespace string) error {
	return waitWebhooksActive(ctx, c, namespace)
}

// WaitForCABundles waits until every webhook of the two configurations called
// name carries a caBundle, and returns them.
func WaitForCABundles(ctx context.Context, c client.Client, name string, timeout time.Duration) (map[string][]byte, error) {
	var bundles map[string][]byte
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if bundles, err = WebhookCABundles(ctx, c, name); err != nil {
			last = err.Error()
			return false, nil
		}
		for webhook, ca := range bundles {
			if len(ca) == 0 {
				last = webhook + " has no caBundle"
				return false, nil
			}
		}
		return len(bundles) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("webhook configurations %s have no caBundle after %s: %s", name, timeout, last)
	}
	return bundles, nil
}

// InstallLocalRelease installs (or upgrades) charts/copse as release name
// into namespace in local mode, with its webhooks calling ports.Webhook on
// 127.0.0.1, plus any further helm arguments (e.g. "--set", "k=v"), and
// waits for it; it returns helm's output.
func InstallLocalRelease(ctx context.Context, helm *Helm, name, namespace string, ports LocalOperatorPorts, args ...string) (string, error) {
	chart, err := ChartDir()
	if err != nil {
		return "", err
	}
	cmd := append([]string{"upgrade", "--install", name, chart, "--namespace", namespace, "--create-namespace",
		"--set", "localMode.enabled=true", "--set", "localMode.webhookURL=" + ports.WebhookURL(),
		"--wait", "--timeout", "2m"}, args...)
	return helm.Run(ctx, cmd...)
}

// ChartOperatorOptions configure StartChartOperator.
type ChartOperatorOptions struct {
	// Release and Namespace name the Helm release installed in local mode.
	Release, Namespace string
	// Ports are those the release was installed with (localMode.webhookURL).
	Ports LocalOperatorPorts
	// Configure may change the configuration after it was read from the
	// chart and moved to this machine (e.g. the log level).
	Configure func(*configv1alpha1.OperatorConfiguration)
	// TokenValidity of the ServiceAccount token; zero means two hours.
	TokenValidity time.Duration
	// StreamLogs copies the log to GinkgoWriter as well.
	StreamLogs bool
}

// ChartOperator is an operator started by StartChartOperator.
type ChartOperator struct {
	*Operator
	// Config is the configuration it runs with; RawConfig is the file the
	// chart rendered into its ConfigMap.
	Config    *configv1alpha1.OperatorConfiguration
	RawConfig []byte
	// Kubeconfig authenticates as the chart's ServiceAccount.
	Kubeconfig string
	// ServiceAccount is the chart's ServiceAccount, "<namespace>/<name>".
	ServiceAccount string
}

// StartChartOperator runs copse-operator as a release of the chart installed
// in local mode expects (see InstallLocalRelease): with a token of the
// release's ServiceAccount and the configuration in the release's ConfigMap,
// changed only where a local process must differ (the metrics and probe
// ports, the certificate directory). Its requests are therefore authorized
// by the chart's RBAC alone and classified by the chart's FlowSchemas. The
// ServiceAccount and the ConfigMap are found by the release's labels.
func StartChartOperator(ctx context.Context, env *Env, opts ChartOperatorOptions) (*ChartOperator, error) {
	release := client.MatchingLabels{"app.kubernetes.io/instance": opts.Release, "app.kubernetes.io/name": "copse"}
	var accounts corev1.ServiceAccountList
	if err := env.Client.List(ctx, &accounts, client.InNamespace(opts.Namespace), release); err != nil {
		return nil, fmt.Errorf("find the ServiceAccount of release %s: %w", opts.Release, err)
	}
	var configMaps corev1.ConfigMapList
	if err := env.Client.List(ctx, &configMaps, client.InNamespace(opts.Namespace), release); err != nil {
		return nil, fmt.Errorf("find the ConfigMap of release %s: %w", opts.Release, err)
	}
	if len(accounts.Items) != 1 || len(configMaps.Items) != 1 {
		return nil, fmt.Errorf("release %s/%s has %d ServiceAccounts and %d ConfigMaps, want one of each",
			opts.Namespace, opts.Release, len(accounts.Items), len(configMaps.Items))
	}
	cfg, raw, err := ConfigMapOperatorConfiguration(ctx, env.Client, opts.Namespace, configMaps.Items[0].Name, "config.yaml")
	if err != nil {
		return nil, err
	}
	if cfg.WebhookServer.Port != int32(opts.Ports.Webhook) {
		return nil, fmt.Errorf("the release's webhook port is %d, not %d: install it with the same LocalOperatorPorts", cfg.WebhookServer.Port, opts.Ports.Webhook)
	}
	dir := filepath.Join(env.Cluster.Dir(), "operator")
	cfg.Server.Metrics.BindAddress = loopback(opts.Ports.Metrics)
	cfg.Server.HealthProbes.BindAddress = loopback(opts.Ports.HealthProbes)
	cfg.WebhookServer.CertDir = filepath.Join(dir, "certs")
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	validity := opts.TokenValidity
	if validity == 0 {
		validity = 2 * time.Hour
	}
	sa := accounts.Items[0].Name
	kubeconfig := filepath.Join(dir, "serviceaccount.kubeconfig")
	if err := WriteServiceAccountKubeconfig(ctx, env, opts.Namespace, sa, kubeconfig, validity); err != nil {
		return nil, err
	}
	o, err := StartOperatorProcess(ctx, env, ProcessOptions{Kubeconfig: kubeconfig, Config: cfg, Dir: dir, StreamLogs: opts.StreamLogs})
	if err != nil {
		return nil, err
	}
	return &ChartOperator{Operator: o, Config: cfg, RawConfig: raw, Kubeconfig: kubeconfig, ServiceAccount: opts.Namespace + "/" + sa}, nil
}
