package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	configv1alpha1 "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueueconfig "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/process"
)

// Kueue (sigs.k8s.io/kueue, the version hack/tools/kueue pins) runs as a
// local process built by the tools builder (e2e/cluster, row "kueue"); its
// CRDs and webhook configurations are read from the same module's source,
// so nothing of Kueue is copied into copse.
const (
	// kueueCRDDir holds Kueue's CRDs inside the module, one file each.
	kueueCRDDir = "config/components/crd/bases"
	// kueueWebhookComponent is the module's kustomize component of the
	// webhook configurations.
	kueueWebhookComponent = "config/components/webhook"
	// kueueBinary is Kueue's controller manager binary.
	kueueBinary = "kueue"
	// kueueNamePrefix is the prefix Kueue's own install (config/default)
	// gives every object: kueue-mutating-webhook-configuration and
	// kueue-validating-webhook-configuration.
	kueueNamePrefix = "kueue-"
	// KueueNamespace is the namespace of Kueue's configuration, as its own
	// install names it (Kueue keeps its Secrets there).
	KueueNamespace = "kueue-system"
	// kueueServingCertificateName names the test certificate Kueue's
	// webhook server serves.
	kueueServingCertificateName = "kueue-webhook"
	// kueueMetricsCertDir is where Kueue, with its internal certificate
	// management off, reads the certificate of its metrics server: a fixed
	// path in its main package (cmd/kueue/main.go), which it reads at start
	// even when the metrics server is off, and exits without.
	kueueMetricsCertDir = "/etc/kueue/metrics/certs"

	// KueueClusterQueueMutatingWebhook and KueueClusterQueueValidatingWebhook
	// are Kueue's webhooks for ClusterQueues.
	KueueClusterQueueMutatingWebhook   = "mclusterqueue.kb.io"
	KueueClusterQueueValidatingWebhook = "vclusterqueue.kb.io"
	// KueueJobMutatingWebhook is Kueue's webhook that suspends a batch Job
	// submitted to a queue.
	KueueJobMutatingWebhook = "mjob.kb.io"
)

// kueueIntegration is one of Kueue's job integrations that copse's Kueue
// runs: the framework's name in Kueue's configuration, and the resource its
// webhooks admit.
type kueueIntegration struct {
	framework string
	group     string
	resource  string
}

// kueueIntegrations are the integrations StartKueue turns on: batch Jobs,
// JobSets, and TrainJobs (Kueue's TrainJob integration builds each TrainJob's
// JobSet to count its pods, and needs the JobSet integration with it). The
// TrainJob integration needs the trainer.kubeflow.org CRDs, which
// InstallCRDs installs with copse's own; without them Kueue would wait for
// the API before starting that controller.
var kueueIntegrations = []kueueIntegration{
	{framework: "batch/job", group: "batch", resource: "jobs"},
	{framework: "jobset.x-k8s.io/jobset", group: "jobset.x-k8s.io", resource: "jobsets"},
	{framework: "trainer.kubeflow.org/trainjob", group: "trainer.kubeflow.org", resource: "trainjobs"},
}

// KueueOptions configure StartKueue. The zero value is usable.
type KueueOptions struct {
	// QPS and Burst are Kueue's client rate limit; zero means Kueue's
	// defaults (20 and 30).
	QPS   float32
	Burst int32
	// Detach lets Kueue outlive this process (`make demo`, `copse-cluster
	// up --kueue`); otherwise it is killed when this process dies.
	Detach bool
	// Progress receives the build's and the start's progress lines; nil
	// means GinkgoWriter.
	Progress io.Writer
	// WaitForPodsReady replaces the timeouts and requeuing of Kueue's
	// waitForPodsReady, on by default since v0.19 (a 30-minute timeout);
	// nil keeps Kueue's defaults.
	WaitForPodsReady *kueueconfig.WaitForPodsReady
}

// Kueue is Kueue's controller manager run against a cluster, with its
// webhooks served on 127.0.0.1 and registered with the API server.
type Kueue struct {
	*process.Process
	// Version is the pinned sigs.k8s.io/kueue version.
	Version string
}

// InstallKueueCRDs builds (or finds cached) the pinned Kueue tool, installs
// every Kueue CRD from its module's source and waits until each is served.
// The CRDs keep the module's conversion setting (none): every client here,
// Kueue included, speaks v1beta2, the stored version, so the API server
// never converts and Kueue's conversion webhook is not wired.
func InstallKueueCRDs(ctx context.Context, c client.Client, progress io.Writer) (cluster.BuiltTool, error) {
	tool, moduleDir, err := ensureToolModule(ctx, cluster.ToolKueue, progress)
	if err != nil {
		return cluster.BuiltTool{}, err
	}
	return tool, installKueueCRDsFrom(ctx, c, moduleDir)
}

func installKueueCRDsFrom(ctx context.Context, c client.Client, moduleDir string) error {
	dir := filepath.Join(moduleDir, kueueCRDDir)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return fmt.Errorf("list Kueue's CRDs: %w", err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no Kueue CRDs in %s", dir)
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read Kueue's CRD: %w", err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return fmt.Errorf("decode Kueue's CRD %s: %w", filepath.Base(f), err)
		}
		crds = append(crds, crd)
	}
	return installCRDSet(ctx, c, crds)
}

// StartKueue installs Kueue's CRDs, starts Kueue's controller manager against
// env's cluster with the configuration kueueConfiguration writes (webhook
// server on a free loopback port with a test certificate, see
// WriteServingCertificate), waits until it is ready, installs Kueue's
// webhook configurations pointed at that port, and returns once the API
// server calls them (a dry-run ClusterQueue comes back with Kueue's
// finalizer, an invalid one is refused). env.Kueue is set to the result, so
// that env.CheckHealthy reports a crash and env.Teardown stops it; the
// webhook configurations stay, as after a real outage.
func StartKueue(ctx context.Context, env *Env, opts KueueOptions) (*Kueue, error) {
	if env.Kueue != nil {
		return nil, errors.New("start Kueue: the environment already runs Kueue")
	}
	if opts.Progress == nil {
		opts.Progress = ginkgo.GinkgoWriter
	}
	k, err := startKueue(ctx, env, opts)
	if err != nil {
		return nil, fmt.Errorf("start Kueue: %w", err)
	}
	env.Kueue = k
	return k, nil
}

func startKueue(ctx context.Context, env *Env, opts KueueOptions) (*Kueue, error) {
	tool, moduleDir, err := ensureToolModule(ctx, cluster.ToolKueue, opts.Progress)
	if err != nil {
		return nil, err
	}
	if err := installKueueCRDsFrom(ctx, env.Client, moduleDir); err != nil {
		return nil, err
	}
	if err := ensureNamespace(ctx, env.Client, KueueNamespace); err != nil {
		return nil, err
	}
	if err := ensureKueueMetricsCertificate(kueueMetricsCertDir); err != nil {
		return nil, err
	}
	controller := localController{
		product: "Kueue", tool: tool, moduleDir: moduleDir, binary: kueueBinary, dirName: "kueue",
		certificateName: kueueServingCertificateName,
		configuration: func(webhookPort, healthPort int, certDir string) ([]byte, error) {
			return kueueConfiguration(webhookPort, healthPort, certDir, opts)
		},
		webhookComponent: kueueWebhookComponent, namePrefix: kueueNamePrefix,
		selectWebhooks: func(mutating *admissionregistrationv1.MutatingWebhookConfiguration, validating *admissionregistrationv1.ValidatingWebhookConfiguration) error {
			return keepKueueWebhooks(mutating, validating, kueueIntegrations)
		},
		probes: kueueWebhookProbes(),
		detach: opts.Detach, progress: opts.Progress,
	}
	proc, err := controller.start(ctx, env)
	if err != nil {
		return nil, err
	}
	return &Kueue{Process: proc, Version: tool.Version}, nil
}

// StartKueueDetached starts Kueue (StartKueue) so that it outlives this
// process, as a component of env's cluster: `copse-cluster status` lists it,
// and stopping the cluster (`copse-cluster down`, `make demo-down`) stops it.
// For `copse-cluster up --kueue` and `make demo`.
func StartKueueDetached(ctx context.Context, env *Env, progress io.Writer) (*Kueue, error) {
	k, err := StartKueue(ctx, env, KueueOptions{Detach: true, Progress: progress})
	if err != nil {
		return nil, err
	}
	if err := env.Cluster.AddProcess(k.Process); err != nil {
		_ = k.Stop()
		return nil, fmt.Errorf("start Kueue: %w", err)
	}
	return k, nil
}

// Stop sends SIGTERM, and SIGKILL if Kueue has not exited after 20 seconds.
func (k *Kueue) Stop() error { return k.Process.Stop(localControllerStopGrace) }

// kueueConfiguration is Kueue's configuration file
// (config.kueue.x-k8s.io/v1beta2). Everything listens on loopback; what a
// local process cannot do or does not need is off:
//   - internal certificate management: it would issue a certificate for an
//     in-cluster Service name and keep it in a Secret; the webhook server
//     serves the test certificate in certDir instead, which the webhook
//     configurations trust.
//   - leader election: one replica.
//   - the metrics server: nothing scrapes it.
//   - the visibility server (feature gate VisibilityOnDemand): an aggregated
//     API server, which needs an APIService routed to a Service, and a
//     certificate at a fixed path when internal certificate management is
//     off.
//   - MultiKueue (feature gate MultiKueue): there are no worker clusters.
//
// Jobs without the queue-name label are left alone
// (manageJobsWithoutQueueName: false), so that Kueue's webhooks change only
// what is submitted to a queue; the integrations are kueueIntegrations.
func kueueConfiguration(webhookPort, healthPort int, certDir string, opts KueueOptions) ([]byte, error) {
	cfg := kueueconfig.Configuration{
		TypeMeta:  metav1.TypeMeta{APIVersion: kueueconfig.SchemeGroupVersion.String(), Kind: "Configuration"},
		Namespace: ptr.To(KueueNamespace),
		ControllerManager: kueueconfig.ControllerManager{
			Webhook:        kueueconfig.ControllerWebhook{Host: "127.0.0.1", Port: ptr.To(webhookPort), CertDir: certDir},
			LeaderElection: &configv1alpha1.LeaderElectionConfiguration{LeaderElect: ptr.To(false)},
			Metrics:        kueueconfig.ControllerMetrics{BindAddress: "0"},
			Health:         kueueconfig.ControllerHealth{HealthProbeBindAddress: loopback(healthPort)},
		},
		ManageJobsWithoutQueueName: false,
		InternalCertManagement:     &kueueconfig.InternalCertManagement{Enable: ptr.To(false)},
		Integrations:               &kueueconfig.Integrations{},
		FeatureGates:               map[string]bool{"VisibilityOnDemand": false, "MultiKueue": false},
		WaitForPodsReady:           opts.WaitForPodsReady,
	}
	for _, integration := range kueueIntegrations {
		cfg.Integrations.Frameworks = append(cfg.Integrations.Frameworks, integration.framework)
	}
	if opts.QPS != 0 || opts.Burst != 0 {
		cfg.ClientConnection = &kueueconfig.ClientConnection{QPS: ptr.To(opts.QPS), Burst: ptr.To(opts.Burst)}
	}
	data, err := yaml.Marshal(&cfg)
	if err != nil {
		return nil, fmt.Errorf("encode Kueue's configuration: %w", err)
	}
	return data, nil
}

// keepKueueWebhooks keeps, of Kueue's webhooks, those for Kueue's own kinds
// and for the kinds of integrations, and drops the rest: Kueue serves the
// webhooks of integrations it does not run as no-ops, and leaving them out
// keeps every pod, Deployment and StatefulSet of the cluster from calling
// Kueue (its own Helm chart sets the failure policy of those to Ignore for
// the same reason). Each integration must keep a mutating and a validating
// webhook, and Kueue's ClusterQueue webhooks must be there, so that a Kueue
// whose manifests changed fails here by name.
func keepKueueWebhooks(mutating *admissionregistrationv1.MutatingWebhookConfiguration,
	validating *admissionregistrationv1.ValidatingWebhookConfiguration, integrations []kueueIntegration) error {
	kept := func(rules []admissionregistrationv1.RuleWithOperations) (string, bool) {
		for _, integration := range integrations {
			if rulesMatch(rules, integration.group, integration.resource) {
				return integration.framework, true
			}
		}
		for _, rule := range rules {
			if !slices.Equal(rule.APIGroups, []string{kueue.SchemeGroupVersion.Group}) {
				return "", false
			}
		}
		return kueue.SchemeGroupVersion.Group, len(rules) > 0
	}
	mutatingOf, validatingOf := map[string]bool{}, map[string]bool{}
	mutating.Webhooks = slices.DeleteFunc(mutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
		owner, keep := kept(w.Rules)
		mutatingOf[owner] = mutatingOf[owner] || keep
		return !keep
	})
	validating.Webhooks = slices.DeleteFunc(validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		owner, keep := kept(w.Rules)
		validatingOf[owner] = validatingOf[owner] || keep
		return !keep
	})
	var missing []string
	for _, integration := range integrations {
		if !mutatingOf[integration.framework] || !validatingOf[integration.framework] {
			missing = append(missing, integration.framework)
		}
	}
	if !slices.ContainsFunc(mutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
		return w.Name == KueueClusterQueueMutatingWebhook
	}) || !slices.ContainsFunc(validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return w.Name == KueueClusterQueueValidatingWebhook
	}) {
		missing = append(missing, "ClusterQueues ("+KueueClusterQueueMutatingWebhook+", "+KueueClusterQueueValidatingWebhook+")")
	}
	if len(missing) > 0 {
		return fmt.Errorf("Kueue's webhook component has no mutating and validating webhook for: %s", strings.Join(missing, ", "))
	}
	return nil
}

// rulesMatch reports whether every rule admits exactly resource of group.
func rulesMatch(rules []admissionregistrationv1.RuleWithOperations, group, resource string) bool {
	for _, rule := range rules {
		if !slices.Equal(rule.APIGroups, []string{group}) || !slices.Equal(rule.Resources, []string{resource}) {
			return false
		}
	}
	return len(rules) > 0
}

// kueueWebhookProbes check that the API server calls Kueue's webhooks: a
// dry-run ClusterQueue comes back with Kueue's resource-in-use finalizer, and
// one whose namespaceSelector is invalid (which the CRD schema accepts) is
// refused. The other webhooks are in the same two configurations, which the
// API server loads whole, so they are active too once these are.
func kueueWebhookProbes() []webhookProbe {
	newClusterQueue := func() *kueue.ClusterQueue {
		return &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe"}}
	}
	return []webhookProbe{
		{webhook: KueueClusterQueueMutatingWebhook, check: func(ctx context.Context, c client.Client) string {
			cq := newClusterQueue()
			if err := c.Create(ctx, cq, client.DryRunAll); err != nil {
				return err.Error()
			}
			if !slices.Contains(cq.Finalizers, kueue.ResourceInUseFinalizerName) {
				return "a ClusterQueue was stored without Kueue's finalizer " + kueue.ResourceInUseFinalizerName
			}
			return ""
		}},
		refusalProbe(KueueClusterQueueValidatingWebhook, func() client.Object {
			cq := newClusterQueue()
			cq.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "probe", Operator: metav1.LabelSelectorOpIn}, // In needs values
			}}
			return cq
		}),
	}
}

// ensureKueueMetricsCertificate makes sure dir holds a certificate and key
// (tls.crt, tls.key), which Kueue reads at start with its internal
// certificate management off (kueueMetricsCertDir). The metrics server is
// off, so any valid pair does: a test certificate is written once, into a
// directory renamed into place, so concurrent suites never see half of it,
// and it stays for later runs.
func ensureKueueMetricsCertificate(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "tls.key")); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	explain := func(err error) error {
		return fmt.Errorf("Kueue with its internal certificate management off reads its metrics certificate from %s "+
			"(a fixed path of its cmd/kueue), and it cannot be written: %w; create it once with "+
			"`sudo mkdir -p %s && sudo chown $(id -u) %s`", dir, err, parent, parent)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return explain(err)
	}
	tmp, err := os.MkdirTemp(parent, ".certs-")
	if err != nil {
		return explain(err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if _, err := WriteServingCertificate(tmp, "kueue-metrics"); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return explain(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process put it there first.
		if _, statErr := os.Stat(filepath.Join(dir, "tls.key")); statErr == nil {
			return nil
		}
		return explain(err)
	}
	return nil
}
