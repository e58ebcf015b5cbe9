package clustertopologybinding

import (
	"context"
	"fmt"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
)

// KueueSchedulerName names Kueue in the binding's
// status.schedulerTopologyStatuses.
const KueueSchedulerName = kueue.SchedulerName

// Events of the Kueue Topology sync.
const (
	EventKueueTopologyCreated   = "KueueTopologyCreated"
	EventKueueTopologyReplacing = "KueueTopologyReplacing"
	EventKueueTopologyNotOwned  = "KueueTopologyNotOwned"
	EventKueueLevelsUnsupported = "KueueLevelsUnsupported"
)

// resourceInUseFinalizer is the finalizer Kueue puts on a Topology while a
// ResourceFlavor names it.
const resourceInUseFinalizer = kueuev1beta2.ResourceInUseFinalizerName

// topologyAction is what the sync does to the Kueue Topology.
type topologyAction string

const (
	keepTopology   topologyAction = ""
	createTopology topologyAction = "create"
	// deleteTopology: the Topology copse made has levels the binding no
	// longer has. Its levels are immutable, so it goes and, once gone, is
	// made again.
	deleteTopology topologyAction = "delete"
)

// kueueTopologyPlan is the sync's decision for one binding.
type kueueTopologyPlan struct {
	action topologyAction
	// topology is the Topology to create (action createTopology), with a
	// controller reference to the binding.
	topology *kueuev1beta2.Topology
	// condition is KueueTopologySynced as it stands once action is done.
	condition metav1.Condition
	// status is Kueue's entry of status.schedulerTopologyStatuses.
	status grovecorev1alpha1.SchedulerTopologyStatus
}

// planKueueTopology decides what to do with existing, the Kueue Topology
// of the binding's name (nil when there is none): create it from the
// binding, keep it, or delete it because its levels are out of date. A
// Topology copse did not create for this binding (no controller reference
// to it) is never touched.
func planKueueTopology(binding *copsev1alpha1.ClusterTopologyBinding, existing *kueuev1beta2.Topology) kueueTopologyPlan {
	desired, errs := kueue.Topology(binding)
	keys := kueue.BindingKeys(binding)
	plan := kueueTopologyPlan{status: grovecorev1alpha1.SchedulerTopologyStatus{
		SchedulerTopologyBinding: grovecorev1alpha1.SchedulerTopologyBinding{SchedulerName: KueueSchedulerName, TopologyReference: binding.Name},
	}}
	set := func(reason, message string) {
		status := metav1.ConditionFalse
		if reason == copsev1alpha1.ReasonKueueTopologySynced {
			status = metav1.ConditionTrue
		}
		plan.condition = metav1.Condition{Type: copsev1alpha1.ConditionTypeKueueTopologySynced, Status: status,
			Reason: reason, Message: message, ObservedGeneration: binding.Generation}
		plan.status.InSync = status == metav1.ConditionTrue
		if !plan.status.InSync {
			plan.status.Message = message
		}
	}
	if existing != nil {
		plan.status.SchedulerBackendTopologyObservedGeneration = existing.Generation
	}
	unsupported := func(more string) string {
		return fmt.Sprintf("Kueue's Topology cannot hold the binding's levels: %s%s", errs.ToAggregate(), more)
	}

	switch {
	case existing == nil && len(errs) > 0:
		set(copsev1alpha1.ReasonKueueLevelsUnsupported, unsupported(""))
	case existing == nil:
		plan.action = createTopology
		desired.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(binding,
			copsev1alpha1.SchemeGroupVersion.WithKind("ClusterTopologyBinding"))}
		plan.topology = desired
		set(copsev1alpha1.ReasonKueueTopologySynced, fmt.Sprintf("Kueue Topology %s has the binding's %d levels", binding.Name, len(keys)))
	case !metav1.IsControlledBy(existing, binding):
		match := "differ from"
		if kueue.TopologyMatches(existing, binding) {
			match = "match"
		}
		set(copsev1alpha1.ReasonKueueTopologyNotOwned, fmt.Sprintf(
			"Kueue Topology %s exists and was not created by copse for this binding (%s): copse leaves it alone; its levels %q %s the binding's %q",
			binding.Name, ownerOf(existing), kueue.TopologyLevels(existing), match, keys))
		plan.status.InSync = match == "match" && existing.DeletionTimestamp.IsZero()
	case !existing.DeletionTimestamp.IsZero():
		set(copsev1alpha1.ReasonKueueTopologyReplacing, fmt.Sprintf(
			"Kueue Topology %s is being deleted; Kueue keeps it while a ResourceFlavor names it (finalizer %s); "+
				"copse makes it again with the binding's levels once it is gone", binding.Name, resourceInUseFinalizer))
		if len(errs) > 0 {
			set(copsev1alpha1.ReasonKueueLevelsUnsupported, unsupported(fmt.Sprintf("; copse's Topology %s with the old levels is being deleted", binding.Name)))
		}
	case len(errs) > 0:
		plan.action = deleteTopology
		set(copsev1alpha1.ReasonKueueLevelsUnsupported, unsupported(fmt.Sprintf(
			"; copse deletes its Topology %s, which has the old levels %q", binding.Name, kueue.TopologyLevels(existing))))
	case kueue.TopologyMatches(existing, binding):
		set(copsev1alpha1.ReasonKueueTopologySynced, fmt.Sprintf("Kueue Topology %s has the binding's %d levels", binding.Name, len(keys)))
	default:
		plan.action = deleteTopology
		set(copsev1alpha1.ReasonKueueTopologyReplacing, fmt.Sprintf(
			"the binding's levels %q differ from Kueue Topology %s's %q, which cannot change: copse deletes it and makes it again once it is gone "+
				"(Kueue keeps it while a ResourceFlavor names it, finalizer %s)",
			keys, binding.Name, kueue.TopologyLevels(existing), resourceInUseFinalizer))
	}
	return plan
}

// ownerOf describes a Topology's controller for messages.
func ownerOf(t *kueuev1beta2.Topology) string {
	if ref := metav1.GetControllerOf(t); ref != nil {
		return fmt.Sprintf("controlled by %s %s, uid %s", ref.Kind, ref.Name, ref.UID)
	}
	return "no controller"
}

// kueueTopologyEvents are the events of a sync: what was done, and a
// Warning when the condition turns to a reason that needs a person (a
// Topology copse may not touch, levels Kueue cannot hold).
func kueueTopologyEvents(previous []metav1.Condition, plan kueueTopologyPlan) []transitionEvent {
	var out []transitionEvent
	switch plan.action {
	case createTopology:
		out = append(out, transitionEvent{corev1.EventTypeNormal, EventKueueTopologyCreated, "SyncKueueTopology",
			fmt.Sprintf("created Kueue Topology %s with levels %q", plan.topology.Name, kueue.TopologyLevels(plan.topology))})
	case deleteTopology:
		out = append(out, transitionEvent{corev1.EventTypeNormal, EventKueueTopologyReplacing, "SyncKueueTopology", plan.condition.Message})
	}
	warnings := map[string]string{
		copsev1alpha1.ReasonKueueTopologyNotOwned:  EventKueueTopologyNotOwned,
		copsev1alpha1.ReasonKueueLevelsUnsupported: EventKueueLevelsUnsupported,
	}
	reason, warn := warnings[plan.condition.Reason]
	if was := meta.FindStatusCondition(previous, copsev1alpha1.ConditionTypeKueueTopologySynced); warn && (was == nil || was.Reason != plan.condition.Reason) {
		out = append(out, transitionEvent{corev1.EventTypeWarning, reason, "SyncKueueTopology", plan.condition.Message})
	}
	return out
}

// syncKueueTopology reads the Kueue Topology of the binding's name, plans,
// and carries out the plan.
func (r *Reconciler) syncKueueTopology(ctx context.Context, binding *copsev1alpha1.ClusterTopologyBinding) (kueueTopologyPlan, error) {
	existing := &kueuev1beta2.Topology{}
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: binding.Name}, existing); {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return kueueTopologyPlan{}, fmt.Errorf("get Kueue Topology %s: %w", binding.Name, err)
	}
	plan := planKueueTopology(binding, existing)
	switch plan.action {
	case createTopology:
		if err := r.Client.Create(ctx, plan.topology); err != nil {
			return plan, fmt.Errorf("create Kueue Topology %s: %w", binding.Name, err)
		}
		plan.status.SchedulerBackendTopologyObservedGeneration = plan.topology.Generation
	case deleteTopology:
		// The UID precondition keeps a Topology someone made under the same
		// name since the read.
		err := r.Client.Delete(ctx, existing, client.Preconditions{UID: &existing.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			return plan, fmt.Errorf("delete Kueue Topology %s: %w", binding.Name, err)
		}
	}
	return plan, nil
}
