package webhook_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/llm:1"}}}
}

// clique is a clique template with only the required fields set.
func clique(name string, replicas int32) *grovecorev1alpha1.PodCliqueTemplateSpec {
	return &grovecorev1alpha1.PodCliqueTemplateSpec{
		Name: name,
		Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: name, Replicas: replicas, PodSpec: podSpec()},
	}
}

// newPodCliqueSet is a PodCliqueSet as a user writes it: a standalone
// "leader" clique and a "worker" clique in scaling group "decode", nothing
// optional set.
func newPodCliqueSet(namespace, name string, workloadType copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	pcs.Spec.WorkloadType = workloadType
	pcs.Spec.Replicas = 1
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 3)}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "decode", CliqueNames: []string{"worker"}},
	}
	return pcs
}

// expectDenial asserts that err is the denial of the named webhook, reported
// by the API server as Invalid, and that its message has every fragment.
func expectDenial(err error, webhook string, fragments ...string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the request was admitted")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid (422) error, got %v", err)
	Expect(err.Error()).To(ContainSubstring(`admission webhook "` + webhook + `" denied the request`))
	for _, fragment := range fragments {
		Expect(err.Error()).To(ContainSubstring(fragment))
	}
}

// update re-reads obj and applies change to it until the update does not
// conflict: if the operator's controllers run, they may write the object too.
func update[T client.Object](ctx context.Context, obj T, change func(T)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return env.Client.Update(ctx, obj)
	})
}

// longName returns a DNS label of n characters.
func longName(n int) string { return strings.Repeat("w", n) }
