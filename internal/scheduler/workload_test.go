package scheduler

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
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
	if len(rows) != 1 || rows[0].Kind != "PodGroup" {
		t.Fatalf("rows %+v, want one PodGroup row", rows)
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
