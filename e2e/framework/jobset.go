package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/onsi/ginkgo/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/process"
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
	*process.Process
	// Version is the pinned sigs.k8s.io/jobset version.
	Version string
}

// InstallJobSetCRD builds (or finds cached) the pinned JobSet tool, installs
// the JobSet CRD from its module's source and waits until it is served.
func InstallJobSetCRD(ctx context.Context, c client.Client, progress io.Writer) (cluster.BuiltTool, error) {
	tool, moduleDir, err := ensureToolModule(ctx, cluster.ToolJobSet, progress)
	if err != nil {
		return cluster.BuiltTool{}, err
	}
	return tool, installJobSetCRDFrom(ctx, c, moduleDir)
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
	tool, moduleDir, err := ensureToolModule(ctx, cluster.ToolJobSet, opts.Progress)
	if err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	if err := installJobSetCRDFrom(ctx, env.Client, moduleDir); err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	probes, err := jobSetWebhookProbes()
	if err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	controller := localController{
		product: "JobSet", tool: tool, moduleDir: moduleDir, binary: jobSetBinary, dirName: "jobset",
		certificateName: jobSetServingCertificateName,
		configuration: func(webhookPort, healthPort int, certDir string) ([]byte, error) {
			return jobSetConfiguration(webhookPort, healthPort, certDir, opts), nil
		},
		webhookComponent: jobSetWebhookComponent, namePrefix: jobSetNamePrefix, probes: probes,
		detach: opts.Detach, progress: opts.Progress,
	}
	proc, err := controller.start(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("start JobSet: %w", err)
	}
	j := &JobSet{Process: proc, Version: tool.Version}
	env.JobSet = j
	return j, nil
}

// Stop sends SIGTERM, and SIGKILL if the controller has not exited after 20
// seconds.
func (j *JobSet) Stop() error { return j.Process.Stop(localControllerStopGrace) }

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
