package scheduler

import (
	"slices"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/topology"
)

func TestJoinGang(t *testing.T) {
	cases := []struct {
		name    string
		gang    string
		placed  bool
		before  *corev1.PodSchedulingGroup
		want    *corev1.PodSchedulingGroup
		wantErr string
	}{
		{name: "the pod joins its clique's gang", gang: "llm-1", want: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("llm-1")}},
		{name: "copse's gang wins over the template's", gang: "llm-1-decode-2",
			before: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("users-own")},
			want:   &corev1.PodSchedulingGroup{PodGroupName: ptr.To("llm-1-decode-2")}},
		{name: "a clique without a gang label cannot have pods", wantErr: "grove.io/podgang"},
		{name: "a pod of a clique whose gang was placed is placed on its own", gang: "llm-1", placed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{SchedulingGroup: c.before}}
			err := (&Workload{}).PodDecorator().Decorate(pod, blueprint.PodContext{Identity: blueprint.CliqueIdentity{Gang: c.gang}, GangPlaced: c.placed})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, pod.Spec.SchedulingGroup); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoneLeavesPodsAlone(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("users-own")}}}
	if err := (None{}).PodDecorator().Decorate(pod, blueprint.PodContext{}); err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, ""); got != "users-own" {
		t.Errorf("podGroupName %q: without gang scheduling the user's pod spec is left alone", got)
	}
}

func TestPolicyOf(t *testing.T) {
	gang := policyOf(blueprint.Gang{Name: "tj-0", MinCount: 4})
	if gang.Gang == nil || gang.Gang.MinCount != 4 || gang.Basic != nil {
		t.Errorf("a gang is all-or-nothing for its minCount: %+v", gang)
	}
	prelude := policyOf(blueprint.Gang{Name: "tj-0-prelude", Basic: true})
	if prelude.Basic == nil || prelude.Gang != nil {
		t.Errorf("a prelude is scheduled pod by pod: %+v", prelude)
	}
}

func TestPodGroupsOutliveASuspension(t *testing.T) {
	rows := (&Workload{}).ReplicaResources()
	if len(rows) != 2 || rows[0].Kind != "PodGroup" {
		t.Fatalf("rows %+v, want the PodGroup row first, then the Workload's", rows)
	}
	for reason, deleted := range map[copsev1alpha1.RecreationReason]bool{
		copsev1alpha1.RecreationReasonGangTermination: true,
		copsev1alpha1.RecreationReasonTrainingRestart: true,
		copsev1alpha1.RecreationReasonSuspension:      false,
	} {
		if got := rows[0].DeletedBy(reason); got != deleted {
			t.Errorf("PodGroup deleted by %s: %v, want %v", reason, got, deleted)
		}
	}
}

// The Workload is one object of the PodCliqueSet as a whole: built by its
// row's Shared builder with a pod-group template per gang template, never
// updated (its templates are immutable), and never touched by recreations.
func TestWorkloadIsASharedRow(t *testing.T) {
	rows := (&Workload{}).ReplicaResources()
	row := rows[len(rows)-1]
	if row.Kind != WorkloadKind || row.Desired != nil || row.Shared == nil || row.Refresh != nil {
		t.Fatalf("Workload row %+v: want Shared only, never refreshed", row)
	}
	for _, reason := range []copsev1alpha1.RecreationReason{copsev1alpha1.RecreationReasonGangTermination,
		copsev1alpha1.RecreationReasonTrainingRestart, copsev1alpha1.RecreationReasonSuspension} {
		if row.DeletedBy(reason) {
			t.Errorf("the Workload is deleted by a %s recreation", reason)
		}
	}
	pcs := packedPCS()
	objs := row.Shared(blueprint.ReplicaInputs{PodCliqueSet: pcs, Replica: -1})
	if len(objs) != 1 {
		t.Fatalf("%d Workloads, want 1", len(objs))
	}
	w, ok := objs[0].(*schedulingv1beta1.Workload)
	if !ok || w.Name != "llm" || w.Namespace != "ml" || w.Labels[labels.PartOfKey] != "llm" || w.Labels[labels.ComponentKey] != labels.ComponentWorkload {
		t.Fatalf("Workload %+v: want llm in ml, labelled as part of llm", objs[0])
	}
	var templates []string
	for _, tmpl := range w.Spec.PodGroupTemplates {
		templates = append(templates, tmpl.Name)
	}
	if want := []string{"base", "prelude", "scaled-workers"}; !slices.Equal(templates, want) {
		t.Errorf("pod-group templates %v, want %v", templates, want)
	}
}

// packedPCS has a standalone clique "router", a prelude clique "setup" that
// "router" starts after (Training), and a scaling group "workers" of 2
// replicas, minAvailable 1.
func packedPCS() *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Name, pcs.Namespace = "llm", "ml"
	pcs.Spec.Replicas = 1
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{
		{Name: "setup", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 1}},
		{Name: "router", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2}},
		{Name: "worker", Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 4}},
	}
	pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{StartsAfterSucceeded: []copsev1alpha1.CliqueSuccessDependency{
		{Clique: "router", Cliques: []string{"setup"}},
	}}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "workers", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)},
	}
	return pcs
}

func TestPodGroupTopologyConstraints(t *testing.T) {
	const block, rack = "example.com/block", "example.com/rack"
	topologyOf := func(key string) *schedulingv1beta1.PodGroupSchedulingConstraints {
		if key == "" {
			return nil
		}
		return &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}
	}
	cases := []struct {
		name    string
		packing topology.Resolved
		want    map[string]string // PodGroup (and template) name -> key
	}{
		{
			name: "no packing",
			want: map[string]string{"llm-0": "", "llm-0-workers-1": "", "llm-0-prelude": ""},
		},
		{
			name:    "the replica's key packs the base gang and, each in a domain of its own, the scaled gangs",
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: block}},
			want:    map[string]string{"llm-0": block, "llm-0-workers-1": block, "llm-0-prelude": ""},
		},
		{
			name: "a scaling group's key packs its scaled gangs",
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: block},
				ScalingGroups: map[string]topology.Pack{"workers": {RequiredKey: rack}}},
			want: map[string]string{"llm-0": block, "llm-0-workers-1": rack, "llm-0-prelude": ""},
		},
		{
			name:    "preferred and clique keys are no PodGroup's",
			packing: topology.Resolved{Replica: topology.Pack{PreferredKey: rack}, Cliques: map[string]topology.Pack{"router": {RequiredKey: rack}}},
			want:    map[string]string{"llm-0": "", "llm-0-workers-1": "", "llm-0-prelude": ""},
		},
	}
	templateOf := map[string]string{"llm-0": "base", "llm-0-workers-1": "scaled-workers", "llm-0-prelude": "prelude"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := packedPCS()
			objs := (&Workload{}).ReplicaResources()[0].Desired(blueprint.ReplicaInputs{PodCliqueSet: pcs, Packing: tc.packing})
			got := map[string]*schedulingv1beta1.PodGroupSchedulingConstraints{}
			for _, obj := range objs {
				pg := obj.(*schedulingv1beta1.PodGroup)
				got[pg.Name] = pg.Spec.SchedulingConstraints
			}
			want := map[string]*schedulingv1beta1.PodGroupSchedulingConstraints{}
			for name, key := range tc.want {
				want[name] = topologyOf(key)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("PodGroup constraints (-want +got):\n%s", diff)
			}

			workload := workloadFor(pcs, blueprint.DesiredGangs(pcs, nil, tc.packing))
			gotTemplates := map[string]*schedulingv1beta1.PodGroupSchedulingConstraints{}
			for _, tmpl := range workload.Spec.PodGroupTemplates {
				gotTemplates[tmpl.Name] = tmpl.SchedulingConstraints
			}
			wantTemplates := map[string]*schedulingv1beta1.PodGroupSchedulingConstraints{}
			for name, key := range tc.want {
				wantTemplates[templateOf[name]] = topologyOf(key)
			}
			if diff := cmp.Diff(wantTemplates, gotTemplates); diff != "" {
				t.Errorf("Workload template constraints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefreshMinCount(t *testing.T) {
	group := func(attempt string, minCount int32) *schedulingv1beta1.PodGroup {
		pg := &schedulingv1beta1.PodGroup{}
		pg.Labels = map[string]string{labels.AttemptKey: attempt}
		pg.Spec.SchedulingPolicy = gangPolicy(minCount)
		return pg
	}
	tests := []struct {
		name              string
		existing, desired *schedulingv1beta1.PodGroup
		changed           bool
		want              int32
	}{
		{name: "same minCount", existing: group("0", 4), desired: group("0", 4), want: 4},
		{name: "a new minAvailable changes minCount in place", existing: group("0", 4), desired: group("0", 3), changed: true, want: 3},
		{name: "another run's gang is left alone", existing: group("1", 4), desired: group("0", 3), want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := refreshMinCount(tt.existing, tt.desired); got != tt.changed {
				t.Errorf("changed = %v, want %v", got, tt.changed)
			}
			if got := tt.existing.Spec.SchedulingPolicy.Gang.MinCount; got != tt.want {
				t.Errorf("minCount %d, want %d", got, tt.want)
			}
		})
	}
}
