package core_test

import (
	"context"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
)

const (
	shortWait = 30 * time.Second
	longWait  = 2 * time.Minute
)

func podSpec(gpus int64) corev1.PodSpec {
	spec := corev1.PodSpec{
		// Fast deletion keeps recreations quick on simulated nodes.
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers:                    []corev1.Container{{Name: "main", Image: "example.com/app:1"}},
	}
	if gpus > 0 {
		spec.Containers[0].Resources.Limits = corev1.ResourceList{cluster.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}
	}
	return spec
}

func cliqueTemplate(name string, replicas int32, spec corev1.PodSpec) *grovecorev1alpha1.PodCliqueTemplateSpec {
	return &grovecorev1alpha1.PodCliqueTemplateSpec{
		Name: name,
		Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: name, Replicas: replicas, PodSpec: spec},
	}
}

func newPCS(namespace, name string, replicas int32, cliques ...*grovecorev1alpha1.PodCliqueTemplateSpec) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	pcs.Spec.Replicas = replicas
	pcs.Spec.Template.Cliques = cliques
	return pcs
}

// podsOf lists the live pods of a PodCliqueSet, by label.
func podsOf(ctx context.Context, g Gomega, namespace, pcsName string, extra ...client.ListOption) []corev1.Pod {
	var pods corev1.PodList
	opts := append([]client.ListOption{client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: pcsName}}, extra...)
	g.Expect(env.Client.List(ctx, &pods, opts...)).To(Succeed())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			live = append(live, p)
		}
	}
	return live
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func envOf(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

func getPCS(ctx context.Context, g Gomega, namespace, name string) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pcs)).To(Succeed())
	return pcs
}
