package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/onsi/ginkgo/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
)

// The JobSet controller (sigs.k8s.io/jobset, the version hack/tools/jobset
// pins) is built by the tools builder (e2e/cluster, row "jobset"); its CRD
// and webhook configurations are read from the same module's source, so
// nothing of JobSet is copied into copse.
const (
	// jobSetCRDPath is the JobSet CRD inside the module.
	jobSetCRDPath = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
	// jobSetWebhookComponent is the module's kustomize component of the
	// webhook configurations: manifests.yaml plus JobSet's patches, which
	// limit the pod webhooks to pods labelled with a JobSet name.
	jobSetWebhookComponent = "config/components/webhook"
	// jobSetBinary is the controller binary of the tool.
	jobSetBinary = "jobset-controller"
	// jobSetNamePrefix is the prefix JobSet's own install (config/default)
	// gives every object: the configurations are then called
	// jobset-mutating-webhook-configuration and
	// jobset-validating-webhook-configuration, the names JobSet's
	// certificate manager and Helm chart use too.
	jobSetNamePrefix = "jobset-"
	// jobSetServingCertificateName names the test certificate the
	// controller's webhook server serves.
	jobSetServingCertificateName = "jobset-webhook"
	// jobSetReadyTimeout bounds the wait for /readyz after the start.
	jobSetReadyTimeout = 2 * time.Minute
	// jobSetStopGrace is how long Stop waits after SIGTERM.
	jobSetStopGrace = 20 * time.Second
	// jobSetLogTailLines is how much of the log an error quotes.
	jobSetLogTailLines = 30

	// ConditionJobSetCompleted is the JobSet condition of success.
	ConditionJobSetCompleted = "Completed"
	// JobSetMutatingWebhook and JobSetValidatingWebhook are the names of
	// JobSet's webhooks for JobSets (its pod webhooks are mpod.kb.io and
	// vpod.kb.io).
	JobSetMutatingWebhook   = "mjobset.kb.io"
	JobSetValidatingWebhook = "vjobset.kb.io"
)

// JobSetGVR is the JobSet resource.
var JobSetGVR = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// JobSetOptions configure StartJobSet. The zero value is usable.
type JobSetOptions struct {
	// QPS and Burst are the controller's client rate limit; zero means
	// JobSet's defaults (500 and 500).
	QPS   float32
	Burst int
	// Detach lets the controller outlive this process (`make demo`);
	// otherwise it is killed when this process dies.
	Detach bool
	// Progress receives the build's and the start's progress lines; nil
	// means GinkgoWriter.
	Progress io.Writer
}

// JobSet is a JobSet controller process run against a cluster, with its
// webhooks served on 127.0.0.1 and registered with the API server.
type JobSet struct {
	*cluster.Process
	// Version is the pinned sigs.k8s.io/jobset version.
	Version string
	// LogPath is the controller's log file.
	LogPath string
}

// InstallJobSetCRD builds (or finds cached) the pinned JobSet tool, installs
// the JobSet CRD from its module's source and waits until it is served.
func InstallJobSetCRD(ctx context.Context, c client.Client, progress io.Writer) (cluster.BuiltTool, error) {
	tool, moduleDir, err := ensureJobSetModule(ctx, progress)
	if err != nil {
		return cluster.BuiltTool{}, err
	}
	return tool, installJobSetCRDFrom(ctx, c, moduleDir)
}

// ensureJobSetModule returns the pinned JobSet tool, built, and the
// directory of its module's source.
func ensureJobSetModule(ctx context.Context, progress io.Writer) (cluster.BuiltTool, string, error) {
	tool, err := cluster.EnsureTool(ctx, cluster.ToolJobSet, progress)
	if err != nil {
		return cluster.BuiltTool{}, "", err
	}
	moduleDir, err := tool.ModuleSource(ctx)
	if err != nil {
		return cluster.BuiltTool{}, "", err
	}
	return tool, moduleDir, nil
}

func installJobSetCRDFrom(ctx context.Context, c client.Client, moduleDir string) error {
	data, err := os.ReadFile(filepath.Join(moduleDir, jobSetCRDPath))
	if err != nil {
		return fmt.Errorf("read the JobSet CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return fmt.Errorf("decode the JobSet CRD: %w", err)
	}
	if err := createOrReplaceCRD(ctx, c, crd); err != nil {
		return err
	}
	return waitEstablished(ctx, c, crd.Name)
}

// StartJobSet installs the JobSet CRD, starts the JobSet controller against
// env's cluster with leader election, metrics and its internal certificate
// management off and its webhook server on a free loopback port with a test
// certificate (WriteServingCertificate), waits until it is ready, installs
// JobSet's webhook configurations pointed at that port, and returns once the
// API server calls them (a dry-run JobSet comes back defaulted, an invalid
// one is refused). env.JobSet is set to the result, so that
// env.CheckHealthy reports a crash and env.Teardown stops it; the webhook
// configurations stay, as after a real controller outage.
func StartJobSet(ctx context.Context, env *Env, opts JobSetOptions) (*JobSet, error) {
	if env.JobSet != nil {
		return nil, errors.New("start JobSet: the environment already runs a JobSet controller")
	}
	if opts.Progress == nil {
		opts.Progress = ginkgo.GinkgoWriter
	}
	tool, moduleDir, err := ensureJobSetModule(ctx, opts.Progress)
	if err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	if err := installJobSetCRDFrom(ctx, env.Client, moduleDir); err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	dir := filepath.Join(env.Cluster.Dir(), "jobset")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	certDir := filepath.Join(dir, "certs")
	caPEM, err := WriteServingCertificate(certDir, jobSetServingCertificateName)
	if err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	webhookPort, healthPort := ports[0], ports[1]
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, jobSetConfiguration(webhookPort, healthPort, certDir, opts), 0o600); err != nil {
		return nil, fmt.Errorf("start JobSet: write the controller's configuration: %w", err)
	}
	logPath := filepath.Join(env.Cluster.Dir(), "logs", "jobset-controller.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	start := cluster.StartProcess
	if opts.Detach {
		start = cluster.StartDetachedProcess
	}
	fmt.Fprintf(opts.Progress, "starting jobset-controller %s (log: %s)\n", tool.Version, logPath)
	proc, err := start(jobSetBinary, tool.Path(jobSetBinary),
		[]string{"--config", configPath, "--kubeconfig", env.Cluster.Kubeconfig(), "--zap-devel=false", "--zap-log-level=info"}, logPath)
	if err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	j := &JobSet{Process: proc, Version: tool.Version, LogPath: logPath}
	if err := j.register(ctx, env, moduleDir, "https://"+loopback(webhookPort), "http://"+loopback(healthPort)+"/readyz", caPEM); err != nil {
		_ = j.Stop()
		return nil, fmt.Errorf("start JobSet: %w; last log lines (%s):\n%s", err, logPath, logTail(logPath, jobSetLogTailLines))
	}
	env.JobSet = j
	return j, nil
}

// register waits until the controller is ready (its /readyz turns 200 once
// the webhook server serves), installs the webhook configurations and waits
// until the API server calls them.
func (j *JobSet) register(ctx context.Context, env *Env, moduleDir, webhookURL, readyURL string, caPEM []byte) error {
	if err := waitReadyz(ctx, jobSetBinary, readyURL, jobSetReadyTimeout, j.ExitReason); err != nil {
		return err
	}
	rendered, err := exec.CommandContext(ctx, env.Cluster.Binaries().Kubectl, "kustomize", filepath.Join(moduleDir, jobSetWebhookComponent)).Output()
	if err != nil {
		return fmt.Errorf("render JobSet's webhook configurations (kubectl kustomize %s): %w", jobSetWebhookComponent, commandError(err))
	}
	mutating, validating, err := jobSetWebhookConfigurations(rendered, webhookURL, caPEM)
	if err != nil {
		return err
	}
	if err := applyWebhookConfigurations(ctx, env.Client, mutating, validating); err != nil {
		return err
	}
	probes, err := jobSetWebhookProbes()
	if err != nil {
		return err
	}
	return waitProbesPass(ctx, env.Client, probes)
}

// Stop sends SIGTERM, and SIGKILL if the controller has not exited after 20
// seconds.
func (j *JobSet) Stop() error { return j.Process.Stop(jobSetStopGrace) }

// jobSetConfiguration is the controller's configuration file
// (config.jobset.x-k8s.io/v1alpha1): everything on loopback, no leader
// election, no metrics, no internal certificate management (it would look
// for an in-cluster Service and Secret), the webhook server on webhookPort
// serving the certificate in certDir.
func jobSetConfiguration(webhookPort, healthPort int, certDir string, opts JobSetOptions) []byte {
	config := fmt.Sprintf(`apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
leaderElection:
  leaderElect: false
health:
  healthProbeBindAddress: %q
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %q
internalCertManagement:
  enable: false
`, loopback(healthPort), webhookPort, certDir)
	if opts.QPS != 0 || opts.Burst != 0 {
		config += fmt.Sprintf("clientConnection:\n  qps: %g\n  burst: %d\n", opts.QPS, opts.Burst)
	}
	return []byte(config)
}

// jobSetWebhookConfigurations picks the MutatingWebhookConfiguration and the
// ValidatingWebhookConfiguration out of JobSet's rendered webhook component,
// names them as JobSet's install does, and points every webhook, which
// names an in-cluster Service, at the same path under baseURL, trusting
// caPEM.
func jobSetWebhookConfigurations(rendered []byte, baseURL string, caPEM []byte) (
	*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(rendered), 4096)
	for {
		var obj unstructured.Unstructured
		if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("decode JobSet's webhook component: %w", err)
		}
		var into any
		switch obj.GetKind() {
		case "MutatingWebhookConfiguration":
			if mutating != nil {
				return nil, nil, errors.New("JobSet's webhook component has more than one MutatingWebhookConfiguration")
			}
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			into = mutating
		case "ValidatingWebhookConfiguration":
			if validating != nil {
				return nil, nil, errors.New("JobSet's webhook component has more than one ValidatingWebhookConfiguration")
			}
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			into = validating
		default:
			continue // the Service the webhooks would call in a cluster
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
			return nil, nil, fmt.Errorf("decode %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, errors.New("JobSet's webhook component lacks a MutatingWebhookConfiguration or a ValidatingWebhookConfiguration")
	}
	mutating.ObjectMeta = metav1.ObjectMeta{Name: jobSetNamePrefix + mutating.Name}
	validating.ObjectMeta = metav1.ObjectMeta{Name: jobSetNamePrefix + validating.Name}
	// Each webhook names an in-cluster Service; its path moves under baseURL.
	localise := func(webhook string, config *admissionregistrationv1.WebhookClientConfig) error {
		if config.Service == nil || config.Service.Path == nil || *config.Service.Path == "" {
			return fmt.Errorf("JobSet's webhook %s: clientConfig.service.path is not set, so there is no path to call it at", webhook)
		}
		*config = webhookClientConfig(baseURL, *config.Service.Path, caPEM)
		return nil
	}
	for i := range mutating.Webhooks {
		if err := localise(mutating.Webhooks[i].Name, &mutating.Webhooks[i].ClientConfig); err != nil {
			return nil, nil, err
		}
	}
	for i := range validating.Webhooks {
		if err := localise(validating.Webhooks[i].Name, &validating.Webhooks[i].ClientConfig); err != nil {
			return nil, nil, err
		}
	}
	return mutating, validating, nil
}

// NewJobSet is a JobSet of one replicated Job called "worker" with spec job,
// and nothing else set: JobSet's webhook and CRD supply the defaults.
func NewJobSet(namespace, name string, job batchv1.JobSpec) (*unstructured.Unstructured, error) {
	template, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&batchv1.JobTemplateSpec{Spec: job})
	if err != nil {
		return nil, fmt.Errorf("JobSet %s: %w", name, err)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": JobSetGVR.GroupVersion().String(),
		"kind":       "JobSet",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"replicatedJobs": []any{map[string]any{"name": "worker", "template": template}},
		},
	}}, nil
}

// jobSetWebhookProbes check that the API server calls JobSet's webhooks for
// JobSets, in the default namespace: a dry-run JobSet comes back with
// successPolicy defaulted, and one with an invalid network subdomain (which
// the CRD schema accepts) is refused. The pod webhooks are in the same two
// configurations, which the API server loads whole, so they are active too
// once these are.
func jobSetWebhookProbes() ([]webhookProbe, error) {
	valid, err := NewJobSet(metav1.NamespaceDefault, "webhook-probe", batchv1.JobSpec{
		Template: corev1.PodTemplateSpec{Spec: probePodSpec()},
	})
	if err != nil {
		return nil, err
	}
	invalid := valid.DeepCopy()
	if err := unstructured.SetNestedField(invalid.Object, "Not_A_DNS_Name", "spec", "network", "subdomain"); err != nil {
		return nil, err
	}
	return []webhookProbe{
		{webhook: JobSetMutatingWebhook, check: func(ctx context.Context, c client.Client) string {
			js := valid.DeepCopy()
			if err := c.Create(ctx, js, client.DryRunAll); err != nil {
				return err.Error()
			}
			if operator, _, _ := unstructured.NestedString(js.Object, "spec", "successPolicy", "operator"); operator == "" {
				return "a JobSet was stored without a default successPolicy"
			}
			return ""
		}},
		refusalProbe(JobSetValidatingWebhook, func() client.Object { return invalid.DeepCopy() }),
	}, nil
}

// commandError adds what a failed command wrote to standard error.
func commandError(err error) error {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && len(exitErr.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(exitErr.Stderr))
	}
	return err
}
