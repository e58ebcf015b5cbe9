package kueue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// withTopologyAssignment is wl with the pod set's assignment carrying a
// topology assignment of one rack (its pods on hosts of it).
func withTopologyAssignment(wl *kueue.Workload, podSet string) *kueue.Workload {
	wl = wl.DeepCopy()
	for i := range wl.Status.Admission.PodSetAssignments {
		a := &wl.Status.Admission.PodSetAssignments[i]
		if string(a.Name) == podSet {
			a.TopologyAssignment = &kueue.TopologyAssignment{Levels: []string{rackKey, hostKey}, Slices: []kueue.TopologyAssignmentSlice{{
				DomainCount:    1,
				ValuesPerLevel: []kueue.TopologyAssignmentSliceLevelValues{{Universal: ptr.To("r1")}, {Universal: ptr.To("n1")}},
				PodCounts:      kueue.TopologyAssignmentSlicePodCounts{Universal: a.Count},
			}}}
		}
	}
	return wl
}

func TestTopologyInfo(t *testing.T) {
	gate := []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/topology"}}
	tests := []struct {
		name     string
		request  *kueue.PodSetTopologyRequest
		assigned bool
		want     PodSetInfo
	}{
		{name: "no topology assignment: nothing", request: required(rackKey), want: PodSetInfo{}},
		{
			name: "required", request: required(rackKey), assigned: true,
			want: PodSetInfo{SchedulingGates: gate, Annotations: map[string]string{
				"kueue.x-k8s.io/workload": workloadName, "kueue.x-k8s.io/podset-required-topology": rackKey}},
		},
		{
			name: "preferred", request: &kueue.PodSetTopologyRequest{Preferred: ptr.To(rackKey)}, assigned: true,
			want: PodSetInfo{SchedulingGates: gate, Annotations: map[string]string{
				"kueue.x-k8s.io/workload": workloadName, "kueue.x-k8s.io/podset-preferred-topology": rackKey}},
		},
		{
			name: "slices", request: sliced(rackKey, 4), assigned: true,
			want: PodSetInfo{SchedulingGates: gate, Annotations: map[string]string{
				"kueue.x-k8s.io/workload":                       workloadName,
				"kueue.x-k8s.io/podset-slice-required-topology": rackKey, "kueue.x-k8s.io/podset-slice-size": "4"}},
		},
		{
			name: "required and slices", assigned: true,
			request: &kueue.PodSetTopologyRequest{Required: ptr.To(blockKey), PodSetSliceRequiredTopology: ptr.To(rackKey), PodSetSliceSize: ptr.To[int32](2)},
			want: PodSetInfo{SchedulingGates: gate, Annotations: map[string]string{
				"kueue.x-k8s.io/workload": workloadName, "kueue.x-k8s.io/podset-required-topology": blockKey,
				"kueue.x-k8s.io/podset-slice-required-topology": rackKey, "kueue.x-k8s.io/podset-slice-size": "2"}},
		},
		{
			name: "slices at two levels", assigned: true,
			request: layered(layer(blockKey, 8), layer(rackKey, 4)),
			want: PodSetInfo{SchedulingGates: gate, Annotations: map[string]string{
				"kueue.x-k8s.io/workload":                                   workloadName,
				"kueue.x-k8s.io/podset-slice-required-topology-constraints": `[{"topology":"example.com/block","size":8},{"topology":"example.com/rack","size":4}]`}},
		},
		{
			name: "no request, assigned by a topology-only ClusterQueue: unconstrained", assigned: true,
			want: PodSetInfo{SchedulingGates: gate, Annotations: map[string]string{
				"kueue.x-k8s.io/workload": workloadName, "kueue.x-k8s.io/podset-unconstrained-topology": "true"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcs := queued()
			podSets, err := PodSets(pcs, map[string]*kueue.PodSetTopologyRequest{"leader": tt.request}, 0)
			if err != nil {
				t.Fatal(err)
			}
			wl := reserved(BuildWorkload(pcs, podSets, Priority{}))
			if tt.assigned {
				wl = withTopologyAssignment(wl, "leader")
			}
			got := TopologyInfo(wl, &wl.Status.Admission.PodSetAssignments[0])
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("TopologyInfo (-want +got):\n%s", diff)
			}
		})
	}
}

// An admission with a topology assignment puts the gate and annotations on
// that clique's template only, and Restore takes them off again.
func TestTopologyInfoMergedAndRestored(t *testing.T) {
	pcs := queued()
	podSets, err := PodSets(pcs, map[string]*kueue.PodSetTopologyRequest{"leader": required(rackKey)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	wl := withTopologyAssignment(reserved(BuildWorkload(pcs, podSets, Priority{})), "leader")
	infos, err := AdmissionInfos(wl, flavors())
	if err != nil {
		t.Fatal(err)
	}
	merged, err := Merge(pcs, infos)
	if err != nil {
		t.Fatal(err)
	}
	for _, clique := range merged.Spec.Template.Cliques {
		gates, annotations := clique.Spec.PodSpec.SchedulingGates, clique.Annotations
		if clique.Name != "leader" {
			if len(gates) != 0 || annotations[kueue.WorkloadAnnotation] != "" {
				t.Errorf("clique %s without a topology assignment got gates %v, annotations %v", clique.Name, gates, annotations)
			}
			continue
		}
		if !cmp.Equal(gates, []corev1.PodSchedulingGate{{Name: kueue.TopologySchedulingGate}}) ||
			annotations[kueue.WorkloadAnnotation] != workloadName || annotations[kueue.PodSetRequiredTopologyAnnotation] != rackKey ||
			clique.Labels[PodSetLabel] != "leader" {
			t.Errorf("leader: gates %v, annotations %v, labels %v; want the topology gate, the workload and required-topology annotations, the podset label",
				gates, annotations, clique.Labels)
		}
	}
	restored, changed := Restore(merged, wl)
	if !changed || !cmp.Equal(restored.Spec.Template, pcs.Spec.Template) {
		t.Errorf("Restore did not give the templates back (changed %v):\n%s", changed, cmp.Diff(pcs.Spec.Template, restored.Spec.Template))
	}
}
