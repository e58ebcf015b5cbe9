package clustertopologybinding

import (
	"strings"
	"testing"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

const blockKey = "topology.copse.dev/block"

// ownedBinding is a binding with a UID, so that Topologies can point at it.
func ownedBinding(levels ...grovecorev1alpha1.TopologyLevel) *copsev1alpha1.ClusterTopologyBinding {
	b := binding(4, levels...)
	b.UID = types.UID("binding-uid")
	return b
}

// topologyOf is a Topology named fleet with the given levels, controlled
// by the object with controller's UID ("" for no controller).
func topologyOf(controller types.UID, keys ...string) *kueuev1beta2.Topology {
	t := &kueuev1beta2.Topology{}
	t.Name = "fleet"
	t.Generation = 2
	for _, k := range keys {
		t.Spec.Levels = append(t.Spec.Levels, kueuev1beta2.TopologyLevel{NodeLabel: k})
	}
	if controller != "" {
		t.OwnerReferences = []metav1.OwnerReference{{APIVersion: "grove.io/v1alpha1", Kind: "ClusterTopologyBinding",
			Name: "fleet", UID: controller, Controller: new(true)}}
	}
	return t
}

func deleting(t *kueuev1beta2.Topology) *kueuev1beta2.Topology {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t.DeletionTimestamp = &now
	t.Finalizers = []string{resourceInUseFinalizer}
	return t
}

func TestPlanKueueTopology(t *testing.T) {
	fleet := []grovecorev1alpha1.TopologyLevel{level("zone", zoneKey), level("block", blockKey), level("rack", rackKey), level("host", hostKey)}
	hostFirst := []grovecorev1alpha1.TopologyLevel{level("host", hostKey), level("rack", rackKey)}
	tests := []struct {
		name     string
		levels   []grovecorev1alpha1.TopologyLevel
		existing *kueuev1beta2.Topology
		action   topologyAction
		reason   string
		inSync   bool
		message  string // a part of the condition's message
	}{
		{
			name: "none yet: create it", levels: fleet,
			action: createTopology, reason: copsev1alpha1.ReasonKueueTopologySynced, inSync: true,
			message: "Kueue Topology fleet has the binding's 4 levels",
		},
		{
			name: "copse's, same levels: keep", levels: fleet, existing: topologyOf("binding-uid", zoneKey, blockKey, rackKey, hostKey),
			action: keepTopology, reason: copsev1alpha1.ReasonKueueTopologySynced, inSync: true,
			message: "Kueue Topology fleet has the binding's 4 levels",
		},
		{
			name: "copse's, levels changed: delete to make it again", levels: fleet, existing: topologyOf("binding-uid", zoneKey, rackKey, hostKey),
			action: deleteTopology, reason: copsev1alpha1.ReasonKueueTopologyReplacing,
			message: `the binding's levels ["topology.kubernetes.io/zone" "topology.copse.dev/block" "topology.copse.dev/rack" "kubernetes.io/hostname"] ` +
				`differ from Kueue Topology fleet's ["topology.kubernetes.io/zone" "topology.copse.dev/rack" "kubernetes.io/hostname"], which cannot change`,
		},
		{
			name: "copse's, being deleted: wait", levels: fleet, existing: deleting(topologyOf("binding-uid", zoneKey, rackKey)),
			action: keepTopology, reason: copsev1alpha1.ReasonKueueTopologyReplacing,
			message: "Kueue Topology fleet is being deleted; Kueue keeps it while a ResourceFlavor names it (finalizer kueue.x-k8s.io/resource-in-use)",
		},
		{
			name: "not copse's, same levels: left alone", levels: fleet, existing: topologyOf("", zoneKey, blockKey, rackKey, hostKey),
			action: keepTopology, reason: copsev1alpha1.ReasonKueueTopologyNotOwned, inSync: true,
			message: "Kueue Topology fleet exists and was not created by copse for this binding (no controller): copse leaves it alone; " +
				`its levels ["topology.kubernetes.io/zone" "topology.copse.dev/block" "topology.copse.dev/rack" "kubernetes.io/hostname"] match`,
		},
		{
			name: "an earlier binding's of the same name: left alone", levels: fleet, existing: topologyOf("old-uid", rackKey),
			action: keepTopology, reason: copsev1alpha1.ReasonKueueTopologyNotOwned,
			message: `(controlled by ClusterTopologyBinding fleet, uid old-uid): copse leaves it alone; its levels ["topology.copse.dev/rack"] differ from`,
		},
		{
			name: "levels Kueue refuses, none yet: nothing made", levels: hostFirst,
			action: keepTopology, reason: copsev1alpha1.ReasonKueueLevelsUnsupported,
			message: `Kueue's Topology cannot hold the binding's levels: spec.levels[0].key: Invalid value: "kubernetes.io/hostname": ` +
				"Kueue's Topology takes kubernetes.io/hostname only as its last (narrowest) level",
		},
		{
			name: "levels Kueue refuses, copse's old one: delete it", levels: hostFirst, existing: topologyOf("binding-uid", rackKey, hostKey),
			action: deleteTopology, reason: copsev1alpha1.ReasonKueueLevelsUnsupported,
			message: `; copse deletes its Topology fleet, which has the old levels ["topology.copse.dev/rack" "kubernetes.io/hostname"]`,
		},
		{
			name: "levels Kueue refuses, copse's old one being deleted", levels: hostFirst, existing: deleting(topologyOf("binding-uid", rackKey, hostKey)),
			action: keepTopology, reason: copsev1alpha1.ReasonKueueLevelsUnsupported,
			message: "; copse's Topology fleet with the old levels is being deleted",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ownedBinding(tt.levels...)
			plan := planKueueTopology(b, tt.existing)
			if plan.action != tt.action {
				t.Errorf("action = %q, want %q", plan.action, tt.action)
			}
			c := plan.condition
			wantStatus := metav1.ConditionFalse
			if tt.reason == copsev1alpha1.ReasonKueueTopologySynced {
				wantStatus = metav1.ConditionTrue
			}
			if c.Type != copsev1alpha1.ConditionTypeKueueTopologySynced || c.Status != wantStatus || c.Reason != tt.reason || c.ObservedGeneration != 4 {
				t.Errorf("condition = %+v, want %s %s/%s at generation 4", c, copsev1alpha1.ConditionTypeKueueTopologySynced, wantStatus, tt.reason)
			}
			if !strings.Contains(c.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", c.Message, tt.message)
			}
			s := plan.status
			if s.SchedulerName != "kueue" || s.TopologyReference != "fleet" || s.InSync != tt.inSync {
				t.Errorf("scheduler status = %+v, want kueue/fleet inSync=%v", s, tt.inSync)
			}
			if !tt.inSync && s.Message == "" {
				t.Errorf("scheduler status out of sync without a message")
			}
			if tt.existing != nil && s.SchedulerBackendTopologyObservedGeneration != 2 {
				t.Errorf("observed generation = %d, want the Topology's 2", s.SchedulerBackendTopologyObservedGeneration)
			}
			if tt.action != createTopology {
				if plan.topology != nil {
					t.Errorf("topology to create = %+v, want none", plan.topology)
				}
				return
			}
			got := plan.topology
			ref := metav1.GetControllerOf(got)
			if ref == nil || ref.UID != "binding-uid" || ref.Kind != "ClusterTopologyBinding" || ref.APIVersion != "grove.io/v1alpha1" || ref.Name != "fleet" {
				t.Errorf("controller of the new Topology = %+v, want the binding", ref)
			}
			if len(got.Spec.Levels) != 4 || got.Spec.Levels[1].NodeLabel != blockKey {
				t.Errorf("levels of the new Topology = %+v", got.Spec.Levels)
			}
		})
	}
}

func TestKueueTopologyEvents(t *testing.T) {
	b := ownedBinding(level("rack", rackKey), level("host", hostKey))
	created := planKueueTopology(b, nil)
	notOwned := planKueueTopology(b, topologyOf("", rackKey))
	replacing := planKueueTopology(b, topologyOf("binding-uid", rackKey))
	kept := planKueueTopology(b, topologyOf("binding-uid", rackKey, hostKey))
	conditions := func(p kueueTopologyPlan) []metav1.Condition { return []metav1.Condition{p.condition} }
	tests := []struct {
		name     string
		previous []metav1.Condition
		plan     kueueTopologyPlan
		want     []string
	}{
		{"created", nil, created, []string{`Normal KueueTopologyCreated created Kueue Topology fleet with levels ["topology.copse.dev/rack" "kubernetes.io/hostname"]`}},
		{"kept", conditions(kept), kept, nil},
		{"replacing", conditions(kept), replacing, []string{"Normal KueueTopologyReplacing " + replacing.condition.Message}},
		{"turns not owned", conditions(kept), notOwned, []string{"Warning KueueTopologyNotOwned " + notOwned.condition.Message}},
		{"stays not owned", conditions(notOwned), notOwned, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range kueueTopologyEvents(tt.previous, tt.plan) {
				if e.action != "SyncKueueTopology" {
					t.Errorf("action = %q", e.action)
				}
				got = append(got, e.eventType+" "+e.reason+" "+e.message)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("events = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestComputeStatusWithKueue(t *testing.T) {
	b := ownedBinding(level("rack", rackKey))
	plan := planKueueTopology(b, nil)
	status := computeStatus(b, sets.New(rackKey), &plan)
	synced := meta.FindStatusCondition(status.Conditions, copsev1alpha1.ConditionTypeKueueTopologySynced)
	if synced == nil || synced.Status != metav1.ConditionTrue {
		t.Errorf("KueueTopologySynced = %+v, want True", synced)
	}
	if len(status.SchedulerTopologyStatuses) != 1 || !status.SchedulerTopologyStatuses[0].InSync {
		t.Errorf("schedulerTopologyStatuses = %+v, want Kueue's, in sync", status.SchedulerTopologyStatuses)
	}
	if ready := meta.FindStatusCondition(status.Conditions, copsev1alpha1.ConditionTypeReady); ready == nil || ready.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True", ready)
	}

	// Kueue turned off: its condition and status go.
	b.Status = status
	off := computeStatus(b, sets.New(rackKey), nil)
	if meta.FindStatusCondition(off.Conditions, copsev1alpha1.ConditionTypeKueueTopologySynced) != nil || off.SchedulerTopologyStatuses != nil {
		t.Errorf("with Kueue off: %+v, want no KueueTopologySynced and no schedulerTopologyStatuses", off)
	}
}
