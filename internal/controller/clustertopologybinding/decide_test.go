package clustertopologybinding

import (
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

const (
	zoneKey = "topology.kubernetes.io/zone"
	rackKey = "topology.copse.dev/rack"
	hostKey = "kubernetes.io/hostname"
)

func binding(generation int64, levels ...grovecorev1alpha1.TopologyLevel) *copsev1alpha1.ClusterTopologyBinding {
	b := &copsev1alpha1.ClusterTopologyBinding{}
	b.Name = "fleet"
	b.Generation = generation
	b.Spec.Levels = levels
	return b
}

func level(domain, key string) grovecorev1alpha1.TopologyLevel {
	return grovecorev1alpha1.TopologyLevel{Domain: grovecorev1alpha1.TopologyDomain(domain), Key: key}
}

func TestReadyCondition(t *testing.T) {
	tests := []struct {
		name        string
		levels      []grovecorev1alpha1.TopologyLevel
		keys        []string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{
			name:        "every key on some node",
			levels:      []grovecorev1alpha1.TopologyLevel{level("zone", zoneKey), level("rack", rackKey), level("host", hostKey)},
			keys:        []string{zoneKey, rackKey, hostKey, "type"},
			wantStatus:  metav1.ConditionTrue,
			wantReason:  copsev1alpha1.ReasonAllLevelsAvailable,
			wantMessage: "every level's key is carried by at least one node (3 levels)",
		},
		{
			name:       "one key on no node",
			levels:     []grovecorev1alpha1.TopologyLevel{level("zone", zoneKey), level("rack", "example.com/rack"), level("host", hostKey)},
			keys:       []string{zoneKey, rackKey, hostKey},
			wantStatus: metav1.ConditionFalse,
			wantReason: copsev1alpha1.ReasonLevelsUnavailable,
			wantMessage: "no node carries the label key of level rack (example.com/rack): " +
				"a gang packed at it cannot be placed",
		},
		{
			name:       "two keys on no node, named in the binding's order",
			levels:     []grovecorev1alpha1.TopologyLevel{level("zone", "a.example/zone"), level("rack", rackKey), level("host", "a.example/host")},
			keys:       []string{rackKey},
			wantStatus: metav1.ConditionFalse,
			wantReason: copsev1alpha1.ReasonLevelsUnavailable,
			wantMessage: "no node carries the label key of levels zone (a.example/zone), host (a.example/host): " +
				"a gang packed at them cannot be placed",
		},
		{
			name:       "no nodes at all",
			levels:     []grovecorev1alpha1.TopologyLevel{level("host", hostKey)},
			wantStatus: metav1.ConditionFalse,
			wantReason: copsev1alpha1.ReasonLevelsUnavailable,
			wantMessage: "no node carries the label key of level host (kubernetes.io/hostname): " +
				"a gang packed at it cannot be placed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readyCondition(binding(7, tt.levels...), sets.New(tt.keys...))
			if got.Type != copsev1alpha1.ConditionTypeReady || got.Status != tt.wantStatus || got.Reason != tt.wantReason ||
				got.Message != tt.wantMessage || got.ObservedGeneration != 7 {
				t.Errorf("readyCondition = %+v, want Ready %s/%s %q at generation 7", got, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	long := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := binding(3, level("rack", rackKey))
	b.Status.ObservedGeneration = 2
	b.Status.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue,
		Reason: copsev1alpha1.ReasonAllLevelsAvailable, LastTransitionTime: long, ObservedGeneration: 2}}
	b.Status.SchedulerTopologyStatuses = []grovecorev1alpha1.SchedulerTopologyStatus{{InSync: true}}

	same := computeStatus(b, sets.New(rackKey), nil)
	if same.ObservedGeneration != 3 {
		t.Errorf("observedGeneration = %d, want 3", same.ObservedGeneration)
	}
	if same.SchedulerTopologyStatuses != nil {
		t.Errorf("schedulerTopologyStatuses = %v, want none: the kube-scheduler has no topology object", same.SchedulerTopologyStatuses)
	}
	ready := meta.FindStatusCondition(same.Conditions, copsev1alpha1.ConditionTypeReady)
	if ready == nil || !ready.LastTransitionTime.Equal(&long) || ready.ObservedGeneration != 3 {
		t.Errorf("Ready = %+v, want the old transition time kept and generation 3", ready)
	}

	changed := computeStatus(b, sets.New(hostKey), nil)
	ready = meta.FindStatusCondition(changed.Conditions, copsev1alpha1.ConditionTypeReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.LastTransitionTime.Equal(&long) {
		t.Errorf("Ready = %+v, want False with a new transition time", ready)
	}
	if b.Status.ObservedGeneration != 2 || len(b.Status.Conditions) != 1 || b.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("computeStatus changed its input: %+v", b.Status)
	}
}

func TestTransitionEvents(t *testing.T) {
	ready := func(reason string) grovecorev1alpha1.ClusterTopologyBindingStatus {
		status := metav1.ConditionFalse
		if reason == copsev1alpha1.ReasonAllLevelsAvailable {
			status = metav1.ConditionTrue
		}
		return grovecorev1alpha1.ClusterTopologyBindingStatus{Conditions: []metav1.Condition{{
			Type: copsev1alpha1.ConditionTypeReady, Status: status, Reason: reason, Message: "msg " + reason}}}
	}
	none := grovecorev1alpha1.ClusterTopologyBindingStatus{}
	tests := []struct {
		name              string
		previous, current grovecorev1alpha1.ClusterTopologyBindingStatus
		wantWarning       bool
	}{
		{"created unusable", none, ready(copsev1alpha1.ReasonLevelsUnavailable), true},
		{"turns unusable", ready(copsev1alpha1.ReasonAllLevelsAvailable), ready(copsev1alpha1.ReasonLevelsUnavailable), true},
		{"stays unusable", ready(copsev1alpha1.ReasonLevelsUnavailable), ready(copsev1alpha1.ReasonLevelsUnavailable), false},
		{"turns ready", ready(copsev1alpha1.ReasonLevelsUnavailable), ready(copsev1alpha1.ReasonAllLevelsAvailable), false},
		{"created ready", none, ready(copsev1alpha1.ReasonAllLevelsAvailable), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := transitionEvents(tt.previous, tt.current)
			if !tt.wantWarning {
				if len(got) != 0 {
					t.Errorf("events = %+v, want none", got)
				}
				return
			}
			want := transitionEvent{corev1.EventTypeWarning, EventLevelsUnavailable, "CheckLevels", "msg " + copsev1alpha1.ReasonLevelsUnavailable}
			if len(got) != 1 || got[0] != want {
				t.Errorf("events = %+v, want [%+v]", got, want)
			}
		})
	}
}

func TestLabelKeys(t *testing.T) {
	node := func(labels map[string]string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	got := labelKeys([]metav1.PartialObjectMetadata{
		node(map[string]string{rackKey: "r0", hostKey: "n0"}),
		node(nil),
		node(map[string]string{zoneKey: "", hostKey: "n1"}),
	})
	if want := sets.New(rackKey, hostKey, zoneKey); !got.Equal(want) {
		t.Errorf("labelKeys = %v, want %v", sets.List(got), sets.List(want))
	}
}
