package blueprint

import (
	"slices"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/topology"
)

func TestSharedClaimsDecorator(t *testing.T) {
	pcs := testPCS()
	pcs.Spec.Template.ResourceSharing = []grovecorev1alpha1.PCSResourceSharingSpec{
		{ResourceSharingSpec: grovecorev1alpha1.ResourceSharingSpec{Name: "cache", Scope: grovecorev1alpha1.ResourceSharingScopeAllReplicas}},
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing = []grovecorev1alpha1.PCSGResourceSharingSpec{
		{ResourceSharingSpec: grovecorev1alpha1.ResourceSharingSpec{Name: "gpus", Scope: grovecorev1alpha1.ResourceSharingScopePerReplica}},
	}
	pcs.CliqueTemplate("decode").ResourceSharing = []grovecorev1alpha1.ResourceSharingSpec{
		{Name: "scratch", Scope: grovecorev1alpha1.ResourceSharingScopePerReplica},
	}
	pcs.CliqueTemplate("decode").Spec.PodSpec.Containers = []corev1.Container{{Name: "main"}}
	pcsg := ScalingGroup(pcs, 1, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 0)
	pclq := GroupedPodClique(pcs, pcsg, 2, pcs.CliqueTemplate("decode"), topology.Resolved{})
	id, err := IdentityOf(pclq)
	if err != nil {
		t.Fatal(err)
	}
	pc := PodContext{PodCliqueSet: pcs, PodClique: pclq, Identity: id, Index: 1, StartupGate: labels.StartupGateClosed,
		Owner: *metav1.NewControllerRef(pclq, copsev1alpha1.SchemeGroupVersion.WithKind("PodClique"))}
	// As wired in the operator: before the startup gate, so copse's own
	// init container gets no claim (Grove's init container gets none).
	pod, err := BuildPod(pc, []PodDecorator{SharedClaims(), StartupGate("gate:1")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"llm-all-cache", "llm-1-serve-2-gpus", "llm-1-serve-2-decode-1-scratch"}
	var got []string
	for _, c := range pod.Spec.ResourceClaims {
		if ptr.Deref(c.ResourceClaimName, "") != c.Name {
			t.Errorf("claim %s refers to %v", c.Name, c.ResourceClaimName)
		}
		got = append(got, c.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("pod claims %v, want %v", got, want)
	}
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		n := len(c.Resources.Claims)
		if c.Name == StartupGateContainer && n != 0 || c.Name != StartupGateContainer && n != len(want) {
			t.Errorf("container %s has claims %v", c.Name, c.Resources.Claims)
		}
	}
}
