package mnnvl

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/testfixtures"
)

func gpus(n string) corev1.ResourceList {
	return corev1.ResourceList{GPUResource: resource.MustParse(n)}
}

// annotated is the fixture PodCliqueSet (standalone "leader", scaling group
// "decode" of "prefill" and "worker") with group annotations at each level;
// "" leaves a level without one.
func annotated(pcsGroup, decodeGroup, workerGroup string) *copsev1alpha1.PodCliqueSet {
	pcs := testfixtures.PodCliqueSet(copsev1alpha1.WorkloadTypeTraining)
	if pcsGroup != "" {
		pcs.Annotations = map[string]string{GroupAnnotation: pcsGroup}
	}
	if decodeGroup != "" {
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Annotations = map[string]string{GroupAnnotation: decodeGroup}
	}
	if workerGroup != "" {
		pcs.CliqueTemplate("worker").Annotations = map[string]string{GroupAnnotation: workerGroup, "other": "x"}
	}
	return pcs
}

func TestCliqueGroup(t *testing.T) {
	cases := []struct {
		name                    string
		pcs                     *copsev1alpha1.PodCliqueSet
		leader, prefill, worker string
	}{
		{name: "no annotation anywhere: no group", pcs: annotated("", "", ""), leader: NoGroup, prefill: NoGroup, worker: NoGroup},
		{name: "PodCliqueSet annotation reaches every clique", pcs: annotated("a", "", ""), leader: "a", prefill: "a", worker: "a"},
		{name: "scaling group overrides the PodCliqueSet for its members", pcs: annotated("a", "b", ""), leader: "a", prefill: "b", worker: "b"},
		{name: "clique overrides its scaling group", pcs: annotated("a", "b", "c"), leader: "a", prefill: "b", worker: "c"},
		{name: "scaling group without a PodCliqueSet annotation", pcs: annotated("", "b", ""), leader: NoGroup, prefill: "b", worker: "b"},
		{name: "none on the PodCliqueSet, a clique opts back in", pcs: annotated("none", "", "c"), leader: "none", prefill: "none", worker: "c"},
		{name: "none on a clique only", pcs: annotated("a", "", "none"), leader: "a", prefill: "a", worker: "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{CliqueGroup(tc.pcs, "leader"), CliqueGroup(tc.pcs, "prefill"), CliqueGroup(tc.pcs, "worker")}
			want := []string{tc.leader, tc.prefill, tc.worker}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("groups of leader, prefill, worker (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestsGPUs(t *testing.T) {
	cases := []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{name: "no containers request GPUs", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}},
		{name: "GPU limit", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}, {Name: "g", Resources: corev1.ResourceRequirements{Limits: gpus("4")}}}}, want: true},
		{name: "GPU request", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "g", Resources: corev1.ResourceRequirements{Requests: gpus("1")}}}}, want: true},
		{name: "init container with GPUs", spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "g", Resources: corev1.ResourceRequirements{Limits: gpus("1")}}}, Containers: []corev1.Container{{Name: "c"}}}, want: true},
		{name: "zero GPUs is no request", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "g", Resources: corev1.ResourceRequirements{Limits: gpus("0")}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RequestsGPUs(&tc.spec); got != tc.want {
				t.Errorf("RequestsGPUs = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReplicaGroups(t *testing.T) {
	withGPUs := func(pcs *copsev1alpha1.PodCliqueSet, cliques ...string) *copsev1alpha1.PodCliqueSet {
		for _, c := range cliques {
			pcs.CliqueTemplate(c).Spec.PodSpec.Containers = []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Limits: gpus("4")}}}
		}
		return pcs
	}
	cases := []struct {
		name string
		pcs  *copsev1alpha1.PodCliqueSet
		want []string
	}{
		{name: "no GPU clique: no group", pcs: annotated("a", "", "")},
		{name: "GPU cliques without a group: no domain (MNNVL is opt-in)", pcs: withGPUs(annotated("", "", ""), "leader", "worker")},
		{name: "a GPU clique without a group next to one with a group", pcs: withGPUs(annotated("", "b", ""), "leader", "worker"), want: []string{"b"}},
		{name: "one group per distinct group of GPU cliques, sorted", pcs: withGPUs(annotated("z", "b", "c"), "leader", "prefill", "worker"), want: []string{"b", "c", "z"}},
		{name: "a CPU clique's group has no domain", pcs: withGPUs(annotated("z", "b", "c"), "worker"), want: []string{"c"}},
		{name: "opted out GPU cliques have no domain", pcs: withGPUs(annotated("none", "", "c"), "leader", "worker"), want: []string{"c"}},
		{name: "every GPU clique opted out", pcs: withGPUs(annotated("none", "", ""), "leader", "worker")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ReplicaGroups(tc.pcs)); diff != "" {
				t.Errorf("ReplicaGroups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputeDomainName(t *testing.T) {
	cases := []struct {
		pcs     string
		replica int
		group   string
		want    string
	}{
		{pcs: "llm", replica: 0, group: "default", want: "llm-0-default"},
		{pcs: "llm", replica: 12, group: "fabric-a", want: "llm-12-fabric-a"},
	}
	for _, tc := range cases {
		if got := ComputeDomainName(tc.pcs, tc.replica, tc.group); got != tc.want {
			t.Errorf("ComputeDomainName(%q, %d, %q) = %q, want %q", tc.pcs, tc.replica, tc.group, got, tc.want)
		}
	}
}

func TestComputeDomain(t *testing.T) {
	cd := ComputeDomain("ml", "llm-0-a", map[string]string{"k": "v"})
	want := map[string]any{
		"apiVersion": "resource.nvidia.com/v1beta1",
		"kind":       "ComputeDomain",
		"metadata":   map[string]any{"namespace": "ml", "name": "llm-0-a", "labels": map[string]any{"k": "v"}},
		"spec": map[string]any{
			"numNodes": int64(0),
			"channel": map[string]any{
				"resourceClaimTemplate": map[string]any{"name": "llm-0-a"},
				"allocationMode":        "Single",
			},
		},
	}
	if diff := cmp.Diff(want, cd.Object); diff != "" {
		t.Errorf("ComputeDomain (-want +got):\n%s", diff)
	}
}

func TestAddClaim(t *testing.T) {
	gpu := func(name string) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: gpus("4")}}
	}
	cpu := func(name string) corev1.Container { return corev1.Container{Name: name} }
	withClaim := func(c corev1.Container, claims ...string) corev1.Container {
		for _, name := range claims {
			c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
		}
		return c
	}
	entry := func(name, template string) corev1.PodResourceClaim {
		return corev1.PodResourceClaim{Name: name, ResourceClaimTemplateName: ptr.To(template)}
	}
	cases := []struct {
		name     string
		spec     corev1.PodSpec
		want     corev1.PodSpec
		takePart bool
	}{
		{
			name: "CPU pod is not changed",
			spec: corev1.PodSpec{Containers: []corev1.Container{cpu("main")}},
			want: corev1.PodSpec{Containers: []corev1.Container{cpu("main")}},
		},
		{
			name:     "GPU containers get the claim, CPU containers do not",
			spec:     corev1.PodSpec{InitContainers: []corev1.Container{gpu("warmup"), cpu("fetch")}, Containers: []corev1.Container{gpu("main"), cpu("sidecar")}},
			want:     corev1.PodSpec{InitContainers: []corev1.Container{withClaim(gpu("warmup"), ClaimName), cpu("fetch")}, Containers: []corev1.Container{withClaim(gpu("main"), ClaimName), cpu("sidecar")}, ResourceClaims: []corev1.PodResourceClaim{entry(ClaimName, "llm-0")}},
			takePart: true,
		},
		{
			name:     "the user's own claims stay",
			spec:     corev1.PodSpec{Containers: []corev1.Container{withClaim(gpu("main"), "scratch")}, ResourceClaims: []corev1.PodResourceClaim{entry("scratch", "disk")}},
			want:     corev1.PodSpec{Containers: []corev1.Container{withClaim(gpu("main"), "scratch", ClaimName)}, ResourceClaims: []corev1.PodResourceClaim{entry("scratch", "disk"), entry(ClaimName, "llm-0")}},
			takePart: true,
		},
		{
			name:     "applied twice: no duplicates, the entry names this template",
			spec:     corev1.PodSpec{Containers: []corev1.Container{withClaim(gpu("main"), ClaimName)}, ResourceClaims: []corev1.PodResourceClaim{entry(ClaimName, "stale")}},
			want:     corev1.PodSpec{Containers: []corev1.Container{withClaim(gpu("main"), ClaimName)}, ResourceClaims: []corev1.PodResourceClaim{entry(ClaimName, "llm-0")}},
			takePart: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := *tc.spec.DeepCopy()
			if got := AddClaim(&spec, "llm-0"); got != tc.takePart {
				t.Errorf("AddClaim = %v, want %v", got, tc.takePart)
			}
			if diff := cmp.Diff(tc.want, spec); diff != "" {
				t.Errorf("pod spec (-want +got):\n%s", diff)
			}
			again := *spec.DeepCopy()
			AddClaim(&again, "llm-0")
			if diff := cmp.Diff(spec, again); diff != "" {
				t.Errorf("a second AddClaim changed the spec (-first +second):\n%s", diff)
			}
			renamed := *spec.DeepCopy()
			RenameClaimTemplate(&renamed, "llm-1")
			named := *tc.spec.DeepCopy()
			AddClaim(&named, "llm-1")
			if diff := cmp.Diff(named, renamed); diff != "" {
				t.Errorf("RenameClaimTemplate differs from AddClaim with the new template (-add +rename):\n%s", diff)
			}
			// RemoveClaim undoes AddClaim, keeping the user's own claims.
			removed := *spec.DeepCopy()
			RemoveClaim(&removed)
			unclaimed := *tc.spec.DeepCopy()
			RemoveClaim(&unclaimed)
			if diff := cmp.Diff(unclaimed, removed); diff != "" {
				t.Errorf("RemoveClaim after AddClaim (-without +removed):\n%s", diff)
			}
			if strings.Contains(fmt.Sprint(removed), ClaimName) {
				t.Errorf("the channel claim is still there: %+v", removed)
			}
		})
	}
}

func TestTakesPart(t *testing.T) {
	for group, want := range map[string]bool{NoGroup: false, copsev1alpha1.MNNVLGroupNone: false, "default": true, "fabric-a": true} {
		if got := TakesPart(group); got != want {
			t.Errorf("TakesPart(%q) = %v, want %v", group, got, want)
		}
	}
}

func TestWithDefaultGroup(t *testing.T) {
	cases := []struct {
		name         string
		annotations  map[string]string
		defaultGroup string
		want         map[string]string
		added        bool
	}{
		{name: "option off: nothing added", annotations: map[string]string{"a": "b"}, want: map[string]string{"a": "b"}},
		{name: "option off, no annotations", want: nil},
		{name: "no group: the default one", annotations: map[string]string{"a": "b"}, defaultGroup: "nvl",
			want: map[string]string{"a": "b", GroupAnnotation: "nvl"}, added: true},
		{name: "no annotations at all", defaultGroup: "nvl", want: map[string]string{GroupAnnotation: "nvl"}, added: true},
		{name: "a group of its own is kept", annotations: map[string]string{GroupAnnotation: "fabric"}, defaultGroup: "nvl",
			want: map[string]string{GroupAnnotation: "fabric"}},
		{name: "the opt-out is kept", annotations: map[string]string{GroupAnnotation: "none"}, defaultGroup: "nvl",
			want: map[string]string{GroupAnnotation: "none"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.annotations)
			got, added := WithDefaultGroup(tc.annotations, tc.defaultGroup)
			if added != tc.added {
				t.Errorf("added = %v, want %v", added, tc.added)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.annotations); diff != "" {
				t.Errorf("the input was changed (-before +after):\n%s", diff)
			}
		})
	}
}
