package blueprint

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
	"github.com/copse-dev/copse/internal/testfixtures"
	"github.com/copse-dev/copse/internal/topology"
)

func gpuContainer(name string) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{mnnvl.GPUResource: resource.MustParse("4")}}}
}

// mnnvlPCS is testPCS with GPUs in clique "decode" (of scaling group
// "serve") and annotations as given ("" leaves one out).
func mnnvlPCS(pcsGroup, serveGroup string) *copsev1alpha1.PodCliqueSet {
	pcs := testPCS()
	pcs.CliqueTemplate("decode").Spec.PodSpec.Containers = []corev1.Container{gpuContainer("main")}
	pcs.CliqueTemplate("leader").Spec.PodSpec.Containers = []corev1.Container{{Name: "main"}}
	if pcsGroup != "" {
		pcs.Annotations = map[string]string{mnnvl.GroupAnnotation: pcsGroup}
	}
	if serveGroup != "" {
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Annotations = map[string]string{mnnvl.GroupAnnotation: serveGroup}
	}
	return pcs
}

func TestComputeDomainsRow(t *testing.T) {
	row := ComputeDomains()
	for reason, deleted := range map[copsev1alpha1.RecreationReason]bool{
		copsev1alpha1.RecreationReasonTrainingRestart: true,
		copsev1alpha1.RecreationReasonGangTermination: true,
		// A suspension keeps what makes no pods, as it keeps the gangs.
		copsev1alpha1.RecreationReasonSuspension: false,
	} {
		if got := row.DeletedBy(reason); got != deleted {
			t.Errorf("ComputeDomain deleted by %s: %v, want %v", reason, got, deleted)
		}
	}

	cases := []struct {
		name string
		pcs  *copsev1alpha1.PodCliqueSet
		want map[string]string // ComputeDomain name -> group label
	}{
		{name: "no group anywhere: no domain (MNNVL is opt-in)", pcs: mnnvlPCS("", ""), want: map[string]string{}},
		{name: "group of the PodCliqueSet", pcs: mnnvlPCS("a", ""), want: map[string]string{"llm-1-a": "a"}},
		{name: "group of the scaling group", pcs: mnnvlPCS("a", "b"), want: map[string]string{"llm-1-b": "b"}},
		{name: "the GPU clique opted out", pcs: mnnvlPCS("a", "none"), want: map[string]string{}},
		{name: "no GPU clique", pcs: testPCS(), want: map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, obj := range row.Desired(ReplicaInputs{PodCliqueSet: tc.pcs, Replica: 1, Attempt: 3}) {
				cd := obj.(*unstructured.Unstructured)
				if cd.GroupVersionKind() != mnnvl.ComputeDomainGVK || cd.GetNamespace() != "ml" {
					t.Errorf("%s: kind %v in namespace %q", cd.GetName(), cd.GroupVersionKind(), cd.GetNamespace())
				}
				l := cd.GetLabels()
				if l[labels.PartOfKey] != "llm" || l[labels.ReplicaKey] != "1" || l[labels.AttemptKey] != "3" ||
					l[labels.ComponentKey] != mnnvl.ComponentComputeDomain || l[labels.ManagedByKey] != labels.ManagedByValue {
					t.Errorf("%s: labels %v", cd.GetName(), l)
				}
				template, _, _ := unstructured.NestedString(cd.Object, "spec", "channel", "resourceClaimTemplate", "name")
				if template != cd.GetName() {
					t.Errorf("%s: channel template %q, want the ComputeDomain's name", cd.GetName(), template)
				}
				got[cd.GetName()] = l[mnnvl.GroupAnnotation]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ComputeDomains (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodCliqueCarriesItsMNNVLGroup(t *testing.T) {
	cases := []struct {
		name             string
		pcs              *copsev1alpha1.PodCliqueSet
		leader, decode   string
		leaderAnnotation bool
	}{
		{name: "no group anywhere: no annotation", pcs: mnnvlPCS("", "")},
		{name: "inherited from the PodCliqueSet and the scaling group", pcs: mnnvlPCS("a", "b"), leader: "a", decode: "b", leaderAnnotation: true},
		{name: "opt-out is carried too", pcs: mnnvlPCS("", "none"), decode: "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leader := StandalonePodClique(tc.pcs, 0, tc.pcs.CliqueTemplate("leader"), 0, topology.Resolved{})
			got, ok := leader.Annotations[mnnvl.GroupAnnotation]
			if ok != tc.leaderAnnotation || got != tc.leader {
				t.Errorf("leader's group annotation %q (present %v), want %q (present %v)", got, ok, tc.leader, tc.leaderAnnotation)
			}
			pcsg := ScalingGroup(tc.pcs, 0, tc.pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 0)
			decode := GroupedPodClique(tc.pcs, pcsg, 0, tc.pcs.CliqueTemplate("decode"), topology.Resolved{})
			if got := decode.Annotations[mnnvl.GroupAnnotation]; got != tc.decode {
				t.Errorf("decode's group annotation %q, want %q", got, tc.decode)
			}
		})
	}
	pcs := mnnvlPCS("a", "")
	if _, ok := pcs.CliqueTemplate("leader").Annotations[mnnvl.GroupAnnotation]; ok {
		t.Errorf("the template was mutated")
	}
}

func TestMNNVLClaim(t *testing.T) {
	claimed := func(c corev1.Container) corev1.Container {
		c.Resources.Claims = []corev1.ResourceClaim{{Name: mnnvl.ClaimName}}
		return c
	}
	cases := []struct {
		name        string
		annotations map[string]string
		pcsGroup    string // on the PodCliqueSet, read when the PodClique has no annotation
		gpu         bool
		wantClaim   string // template name; "" for no claim
	}{
		{name: "no group anywhere: no claim (MNNVL is opt-in)", gpu: true},
		{name: "group of the PodClique", annotations: map[string]string{mnnvl.GroupAnnotation: "nvl-a"}, gpu: true, wantClaim: "llm-1-nvl-a"},
		{name: "PodClique without the annotation takes the PodCliqueSet's group", pcsGroup: "nvl-b", gpu: true, wantClaim: "llm-1-nvl-b"},
		{name: "the PodClique's annotation wins", annotations: map[string]string{mnnvl.GroupAnnotation: "nvl-a"}, pcsGroup: "nvl-b", gpu: true, wantClaim: "llm-1-nvl-a"},
		{name: "opted out", annotations: map[string]string{mnnvl.GroupAnnotation: "none"}, gpu: true},
		{name: "CPU pod", annotations: map[string]string{mnnvl.GroupAnnotation: "nvl-a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pclq := testfixtures.StandaloneClique(2)
			pclq.Annotations = tc.annotations
			if tc.gpu {
				pclq.Spec.PodSpec.Containers[0] = gpuContainer("main")
			}
			pc := podContextFor(t, pclq)
			if tc.pcsGroup != "" {
				pc.PodCliqueSet.Annotations = map[string]string{mnnvl.GroupAnnotation: tc.pcsGroup}
			}
			pod, err := BuildPod(pc, []PodDecorator{MNNVLClaim()})
			if err != nil {
				t.Fatal(err)
			}
			var want []corev1.PodResourceClaim
			mainContainer := pclq.Spec.PodSpec.Containers[0]
			if tc.wantClaim != "" {
				want = []corev1.PodResourceClaim{{Name: mnnvl.ClaimName, ResourceClaimTemplateName: ptr.To(tc.wantClaim)}}
				mainContainer = claimed(mainContainer)
			}
			if diff := cmp.Diff(want, pod.Spec.ResourceClaims); diff != "" {
				t.Errorf("pod resourceClaims (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(mainContainer.Resources.Claims, pod.Spec.Containers[0].Resources.Claims); diff != "" {
				t.Errorf("main container's claims (-want +got):\n%s", diff)
			}
			if len(pod.Spec.Containers[1].Resources.Claims) > 0 || len(pod.Spec.InitContainers[0].Resources.Claims) > 0 {
				t.Errorf("a CPU container got a claim: %v, %v", pod.Spec.Containers[1].Resources.Claims, pod.Spec.InitContainers[0].Resources.Claims)
			}
		})
	}
}
