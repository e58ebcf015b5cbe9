package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

// The JobSet controller is the restart and completion reference, built by
// the tools builder (e2e/cluster, row "jobset": hack/tools/jobset, whose
// go.mod pins its version).
const (
	// jobSetCRDPath is the JobSet CRD inside the module.
	jobSetCRDPath = "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"
	// jobSetBinary is the controller binary of the tool.
	jobSetBinary = "jobset-controller"
	// LabelJobSetRestartAttempt is the label the JobSet controller puts on
	// its Jobs and pods: the JobSet's restart count when they were created.
	LabelJobSetRestartAttempt = "jobset.sigs.k8s.io/restart-attempt"
	// ConditionJobSetCompleted is the JobSet condition of success.
	ConditionJobSetCompleted = "Completed"
	// jobSetStopGrace is how long Stop waits after SIGTERM.
	jobSetStopGrace = 20 * time.Second
)

// JobSetGVR is the JobSet resource.
var JobSetGVR = schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}

// JobSetCRD reads the JobSet CRD from the pinned module's source.
func JobSetCRD(ctx context.Context, tool cluster.Tool) (*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := tool.ModuleSource(ctx)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, jobSetCRDPath))
	if err != nil {
		return nil, fmt.Errorf("read the JobSet CRD: %w", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("decode the JobSet CRD: %w", err)
	}
	return crd, nil
}

// InstallCRD creates or updates crd and waits until it is served.
func InstallCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	err := c.Create(ctx, crd.DeepCopy())
	if apierrors.IsAlreadyExists(err) {
		existing := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, existing); err != nil {
			return fmt.Errorf("get CRD %s: %w", crd.Name, err)
		}
		existing.Spec = crd.Spec
		err = c.Update(ctx, existing)
	}
	if err != nil {
		return fmt.Errorf("install CRD %s: %w", crd.Name, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// JobSetController is a JobSet controller process run against the cluster.
type JobSetController struct {
	*cluster.Process
}

// StartJobSetController runs binary against the cluster of kubeconfig with
// the given client QPS and burst, leader election, metrics and certificate
// management off, and its (unregistered) webhook server on a test
// certificate in dir: nothing calls its webhooks, but it refuses to start
// without a serving certificate. It returns once /readyz answers.
func StartJobSetController(ctx context.Context, binary, kubeconfig, dir, logPath string, qps float32, burst int) (*JobSetController, error) {
	certDir := filepath.Join(dir, "certs")
	if _, err := framework.WriteServingCertificate(certDir, "jobset-webhook"); err != nil {
		return nil, err
	}
	ports, err := cluster.FreePorts(2)
	if err != nil {
		return nil, err
	}
	webhookPort, healthPort := ports[0], ports[1]
	health := net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort))
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
clientConnection:
  qps: %g
  burst: %d
`, health, webhookPort, certDir, qps, burst)
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("write JobSet controller configuration: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	proc, err := cluster.StartProcess("jobset-controller", binary,
		[]string{"--config", configPath, "--kubeconfig", kubeconfig, "--zap-devel=false", "--zap-log-level=info"}, logPath)
	if err != nil {
		return nil, err
	}
	j := &JobSetController{Process: proc}
	url := "http://" + health + "/readyz"
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := j.CheckHealthy(); err != nil {
			return false, err
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		_ = j.Stop()
		return nil, fmt.Errorf("JobSet controller not ready: %w; log: %s", err, logPath)
	}
	return j, nil
}

// Stop sends SIGTERM, and SIGKILL if it has not exited after 20 seconds.
func (j *JobSetController) Stop() error { return j.Process.Stop(jobSetStopGrace) }

// NewJobSet is a JobSet of one replicated Job of n pods of podSpec
// (restartPolicy Never, annotated with podAnnotations): parallelism =
// completions = n, backoffLimit 0, so that one failed pod fails the Job, and
// failurePolicy maxRestarts with restart strategy Recreate. JobSet's
// defaulting webhook does not run here, so its defaults are applied by
// ApplyJobSetDefaults.
func NewJobSet(namespace, name string, n int32, podSpec corev1.PodSpec, podAnnotations map[string]string, maxRestarts int32) (*unstructured.Unstructured, error) {
	podSpec.RestartPolicy = corev1.RestartPolicyNever
	job := batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		Parallelism:  ptr.To(n),
		Completions:  ptr.To(n),
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: podAnnotations},
			Spec:       podSpec,
		},
	}}
	jobTemplate, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&job)
	if err != nil {
		return nil, fmt.Errorf("JobSet %s: %w", name, err)
	}
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": JobSetGVR.GroupVersion().String(),
		"kind":       "JobSet",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{
			"failurePolicy": map[string]any{"maxRestarts": int64(maxRestarts), "restartStrategy": "Recreate"},
			"replicatedJobs": []any{map[string]any{
				"name":     "worker",
				"replicas": int64(1),
				"template": jobTemplate,
			}},
		},
	}}
	ApplyJobSetDefaults(js)
	return js, nil
}

// ApplyJobSetDefaults sets what JobSet v0.12.0's defaulting webhook
// (pkg/webhooks/jobset_webhook.go, Default) would: successPolicy All,
// startupPolicy AnyOrder, Indexed completion and restartPolicy OnFailure for
// every replicated Job's template where unset, DNS hostnames and
// publishNotReadyAddresses on, and names for unnamed failure-policy rules.
func ApplyJobSetDefaults(js *unstructured.Unstructured) {
	obj := js.Object
	setIfAbsent(obj, map[string]any{"operator": "All"}, "spec", "successPolicy")
	setIfAbsent(obj, map[string]any{"startupPolicyOrder": "AnyOrder"}, "spec", "startupPolicy")
	setIfAbsent(obj, true, "spec", "network", "enableDNSHostnames")
	setIfAbsent(obj, true, "spec", "network", "publishNotReadyAddresses")
	rjobs, _, _ := unstructured.NestedSlice(obj, "spec", "replicatedJobs")
	for _, r := range rjobs {
		if rjob, ok := r.(map[string]any); ok {
			setIfAbsent(rjob, "Indexed", "template", "spec", "completionMode")
			setIfAbsent(rjob, string(corev1.RestartPolicyOnFailure), "template", "spec", "template", "spec", "restartPolicy")
		}
	}
	_ = unstructured.SetNestedSlice(obj, rjobs, "spec", "replicatedJobs")
	rules, found, _ := unstructured.NestedSlice(obj, "spec", "failurePolicy", "rules")
	if found {
		for i, r := range rules {
			if rule, ok := r.(map[string]any); ok && rule["name"] == nil {
				rule["name"] = fmt.Sprintf("failurePolicyRule%d", i)
			}
		}
		_ = unstructured.SetNestedSlice(obj, rules, "spec", "failurePolicy", "rules")
	}
}

func setIfAbsent(obj map[string]any, value any, fields ...string) {
	if v, found, _ := unstructured.NestedFieldNoCopy(obj, fields...); found && v != nil && v != "" {
		return
	}
	_ = unstructured.SetNestedField(obj, value, fields...)
}
