package framework

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// podState is how a fixture pod differs from a Ready pod of the current
// template.
type podState struct{ outdated, notReady, deleting, missing bool }

// rolloutFixture is a PodCliqueSet of replicas replicas, each a standalone
// clique "router" (2 pods, minAvailable 2) and a scaling group "model" of
// "prefill" and "decode" (1 pod each; 2 group replicas, minAvailable 1),
// with its PodCliques and pods. states changes pods by key:
// "<replica>/router/<index>" or "<replica>/<clique>@<group replica>".
func rolloutFixture(replicas int, states map[string]podState) (*copsev1alpha1.PodCliqueSet, []copsev1alpha1.PodClique, []corev1.Pod) {
	router := CliqueTemplate("router", 2, PodSpec(0))
	router.Spec.MinAvailable = ptr.To[int32](2)
	pcs := NewPodCliqueSet("ns", "svc", int32(replicas), router, CliqueTemplate("prefill", 1, PodSpec(0)), CliqueTemplate("decode", 1, PodSpec(0)))
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
		Name: "model", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
	}}
	hashes := TemplateHashes(pcs)
	var pclqs []copsev1alpha1.PodClique
	var pods []corev1.Pod
	add := func(key string, pclqLabels map[string]string, index int) {
		state := states[key]
		if state.missing {
			return
		}
		podLabels := labels.Merge(pclqLabels, map[string]string{labels.PodIndexKey: strconv.Itoa(index)})
		podLabels[labels.PodTemplateHashKey] = hashes[podLabels[labels.CliqueTemplateKey]]
		if state.outdated {
			podLabels[labels.PodTemplateHashKey] = "0ld"
		}
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key, Labels: podLabels}}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if state.notReady {
			pod.Status.Conditions[0].Status = corev1.ConditionFalse
		}
		if state.deleting {
			pod.DeletionTimestamp = ptr.To(metav1.Now())
		}
		pods = append(pods, pod)
	}
	for r := range replicas {
		name := naming.StandalonePodClique("svc", r, "router")
		l := labels.Merge(labels.ForReplica("svc", r), map[string]string{labels.CliqueTemplateKey: "router", labels.PodCliqueKey: name})
		pclqs = append(pclqs, copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 2}})
		for i := range 2 {
			add(fmt.Sprintf("%d/router/%d", r, i), l, i)
		}
		pcsg := naming.ScalingGroup("svc", r, "model")
		for j := range 2 {
			for _, clique := range []string{"prefill", "decode"} {
				name := naming.GroupedPodClique(pcsg, j, clique)
				l := labels.Merge(labels.ForReplica("svc", r), map[string]string{labels.CliqueTemplateKey: clique, labels.PodCliqueKey: name,
					labels.ScalingGroupKey: pcsg, labels.ScalingGroupReplicaKey: strconv.Itoa(j)})
				pclqs = append(pclqs, copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}, Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: 1}})
				add(fmt.Sprintf("%d/%s@%d", r, clique, j), l, 0)
			}
		}
	}
	return pcs, pclqs, pods
}

// allOutdated marks every pod of a replica outdated.
func allOutdated(replica int, states map[string]podState) map[string]podState {
	for _, key := range []string{"router/0", "router/1", "prefill@0", "decode@0", "prefill@1", "decode@1"} {
		key = fmt.Sprintf("%d/%s", replica, key)
		s := states[key]
		s.outdated = true
		states[key] = s
	}
	return states
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		states map[string]podState
		want   summary
	}{
		{
			name:   "every pod Ready on the current template",
			states: map[string]podState{},
			want:   summary{available: map[int]bool{0: true, 1: true}, complete: map[int]bool{0: true, 1: true}},
		},
		{
			name:   "every pod Ready on an outdated template: nothing is being replaced",
			states: allOutdated(1, allOutdated(0, map[string]podState{})),
			want:   summary{available: map[int]bool{0: true, 1: true}, complete: map[int]bool{0: false, 1: false}},
		},
		{
			name: "replica 0's base gang deleted, its group replica 1 still outdated",
			states: allOutdated(1, map[string]podState{
				"0/router/0": {outdated: true, deleting: true}, "0/router/1": {missing: true},
				"0/prefill@0": {outdated: true, deleting: true}, "0/decode@0": {missing: true},
				"0/prefill@1": {outdated: true}, "0/decode@1": {outdated: true},
			}),
			want: summary{available: map[int]bool{0: false, 1: true}, replacing: []int{0}, mostDisruptedGroupReplicas: 1, complete: map[int]bool{0: false, 1: false}},
		},
		{
			name: "replica 0's base gang recreated, not Ready yet",
			states: allOutdated(1, map[string]podState{
				"0/router/0": {notReady: true}, "0/router/1": {notReady: true}, "0/prefill@0": {notReady: true}, "0/decode@0": {notReady: true},
				"0/prefill@1": {outdated: true}, "0/decode@1": {outdated: true},
			}),
			want: summary{available: map[int]bool{0: false, 1: true}, replacing: []int{0}, mostDisruptedGroupReplicas: 1, complete: map[int]bool{0: false, 1: false}},
		},
		{
			name: "replica 0's group replica 1 being replaced while the rest is Ready: available, still being replaced",
			states: allOutdated(1, map[string]podState{
				"0/prefill@1": {outdated: true, deleting: true}, "0/decode@1": {outdated: true},
			}),
			want: summary{available: map[int]bool{0: true, 1: true}, replacing: []int{0}, mostDisruptedGroupReplicas: 1, complete: map[int]bool{0: false, 1: false}},
		},
		{
			name:   "replica 0's last outdated pods deleted: no longer being replaced, pods still missing",
			states: allOutdated(1, map[string]podState{"0/prefill@1": {outdated: true, deleting: true}, "0/decode@1": {missing: true}}),
			want:   summary{available: map[int]bool{0: true, 1: true}, mostDisruptedGroupReplicas: 1, complete: map[int]bool{0: false, 1: false}},
		},
		{
			name: "two replicas being replaced at once",
			states: map[string]podState{
				"0/router/0": {outdated: true}, "0/router/1": {missing: true},
				"1/decode@1": {outdated: true},
			},
			want: summary{available: map[int]bool{0: false, 1: true}, replacing: []int{0, 1}, complete: map[int]bool{0: false, 1: false}},
		},
		{
			name: "only the decode clique changed: nothing is being replaced yet",
			states: map[string]podState{
				"0/decode@0": {outdated: true}, "0/decode@1": {outdated: true},
				"1/decode@0": {outdated: true}, "1/decode@1": {outdated: true},
			},
			want: summary{available: map[int]bool{0: true, 1: true}, complete: map[int]bool{0: false, 1: false}},
		},
		{
			name: "only the decode clique changed: replica 1's group replica 0 replaced",
			states: map[string]podState{
				"0/decode@0": {outdated: true}, "0/decode@1": {outdated: true},
				"1/decode@1": {outdated: true},
			},
			want: summary{available: map[int]bool{0: true, 1: true}, replacing: []int{1}, complete: map[int]bool{0: false, 1: false}},
		},
		{
			name:   "one router of two Ready with minAvailable 2",
			states: map[string]podState{"1/router/1": {notReady: true}},
			want:   summary{available: map[int]bool{0: true, 1: false}, complete: map[int]bool{0: true, 1: true}},
		},
		{
			name:   "both group replicas lack a Ready pod",
			states: map[string]podState{"0/decode@0": {notReady: true}, "0/prefill@1": {notReady: true}},
			want:   summary{available: map[int]bool{0: false, 1: true}, mostDisruptedGroupReplicas: 2, complete: map[int]bool{0: true, 1: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pcs, pclqs, pods := rolloutFixture(2, tt.states)
			if got := summarize(pcs, pclqs, pods); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("summarize() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStillReplacing(t *testing.T) {
	replacing := map[int]bool{}
	steps := []struct {
		sum  summary
		want []int
	}{
		{summary{complete: map[int]bool{0: false, 1: false}}, nil},
		{summary{replacing: []int{0}, complete: map[int]bool{0: false, 1: false}}, []int{0}},
		// Replica 0's last outdated pods deleted: still being replaced
		// until it has all its pods again.
		{summary{complete: map[int]bool{0: false, 1: false}}, []int{0}},
		{summary{replacing: []int{1}, complete: map[int]bool{0: false, 1: false}}, []int{0, 1}},
		{summary{replacing: []int{1}, complete: map[int]bool{0: true, 1: false}}, []int{1}},
		{summary{complete: map[int]bool{0: true, 1: true}}, nil},
	}
	for i, step := range steps {
		if got := stillReplacing(replacing, step.sum); !reflect.DeepEqual(got, step.want) {
			t.Errorf("step %d: stillReplacing() = %v, want %v", i, got, step.want)
		}
	}
}

func TestRolloutRecord(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.Unix(int64(s), 0) }
	rec := &RolloutRecord{Samples: []RolloutSample{
		{At: at(1).Time},
		{At: at(2).Time, Unavailable: []int{0}, Replacing: []int{0}, MostDisruptedGroupReplicas: 1},
		{At: at(3).Time, Replacing: []int{0}},
		{At: at(4).Time, Unavailable: []int{1}, Replacing: []int{1}},
		{At: at(5).Time, Unavailable: []int{0, 1}, Replacing: []int{0, 1}, MostDisruptedGroupReplicas: 2},
	}}
	if got := rec.MostUnavailable(); got != 2 {
		t.Errorf("MostUnavailable() = %d, want 2", got)
	}
	if got := rec.SamplesWithUnavailable(); got != 3 {
		t.Errorf("SamplesWithUnavailable() = %d, want 3", got)
	}
	if got := rec.MostDisruptedGroupReplicas(); got != 2 {
		t.Errorf("MostDisruptedGroupReplicas() = %d, want 2", got)
	}
	if got := rec.ReplacementOrder(); !reflect.DeepEqual(got, []int{0, 1}) {
		t.Errorf("ReplacementOrder() = %v, want [0 1]", got)
	}
	if got := rec.OverlappingReplacements(); len(got) != 1 {
		t.Errorf("OverlappingReplacements() = %v, want one", got)
	}
	want := map[int][]Interval{
		0: {{From: at(2).Time, To: at(3).Time}, {From: at(5).Time, To: at(5).Time}},
		1: {{From: at(4).Time, To: at(5).Time}},
	}
	if got := rec.ReplacementIntervals(); !reflect.DeepEqual(got, want) {
		t.Errorf("ReplacementIntervals() = %v, want %v", got, want)
	}
}
