package bench

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/copse-dev/copse/e2e/framework"
)

// LabelJobSetRestartAttempt is the label the JobSet controller puts on its
// Jobs and pods: the JobSet's restart count when they were created.
const LabelJobSetRestartAttempt = "jobset.sigs.k8s.io/restart-attempt"

// NewJobSet is the benchmark's JobSet: one replicated Job of n pods of
// podSpec (restartPolicy Never, annotated with podAnnotations), parallelism
// = completions = n, backoffLimit 0, so that one failed pod fails the Job,
// and failurePolicy maxRestarts with restart strategy Recreate. The rest
// (Indexed completion, successPolicy All, ...) is left to JobSet's
// defaulting webhook, which the benchmark's JobSet controller serves.
func NewJobSet(namespace, name string, n int32, podSpec corev1.PodSpec, podAnnotations map[string]string, maxRestarts int32) (*unstructured.Unstructured, error) {
	podSpec.RestartPolicy = corev1.RestartPolicyNever
	js, err := framework.NewJobSet(namespace, name, batchv1.JobSpec{
		Parallelism:  ptr.To(n),
		Completions:  ptr.To(n),
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Annotations: podAnnotations},
			Spec:       podSpec,
		},
	})
	if err != nil {
		return nil, err
	}
	failurePolicy := map[string]any{"maxRestarts": int64(maxRestarts), "restartStrategy": "Recreate"}
	if err := unstructured.SetNestedMap(js.Object, failurePolicy, "spec", "failurePolicy"); err != nil {
		return nil, fmt.Errorf("JobSet %s: %w", name, err)
	}
	return js, nil
}
