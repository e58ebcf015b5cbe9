package podclique

import (
	"maps"
	"slices"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// podSelector selects a PodClique's pods; it is the scale subresource's
// selector, so a HorizontalPodAutoscaler finds the pods' metrics.
func podSelector(podClique string) string {
	return k8slabels.SelectorFromSet(k8slabels.Set{labels.PodCliqueKey: podClique}).String()
}

// statusInput is what a PodClique's status is computed from, besides the
// PodClique itself.
type statusInput struct {
	pods     []podstate.Summary
	workload workloadState
	// completion is the Training clique's completion (recorded and observed).
	completion lifecycle.Completion
	// replaced are the failed pods whose replacement this pass decides;
	// they are added to podReplacements and replacingPods.
	replaced []podstate.Summary
	// ignored are the failed pods a failure rule ignores: they do not
	// breach the clique (observation.ignored).
	ignored map[types.UID]bool
	// startOrder is where the clique stands in its replica's start order.
	startOrder startOrder
	// creation is decideCreation's answer: PodCreationBlocked.
	creation creationDecision
	// template is what the update fields are judged against.
	template templateState
	now      metav1.Time
}

// computeStatus returns the PodClique's status, as each pass writes it
// before it acts; statusAfterAttempt then records how a creation attempt
// went, the one thing known only after acting. Fields this controller does
// not own (lastErrors, conditions of other types) are carried over; the
// update fields are updateStatus's. Only pods that are neither ended nor
// terminating are counted in the replica fields. now stamps the conditions
// whose status changes.
//
// The conditions depend on the workload type, so they are left as they are
// when the PodCliqueSet is unknown (workload.known false), all but
// PodCreationBlocked; only the counts are updated then. The Succeeded
// condition, once True, is never touched again, and the Training records
// only grow: an index that exited 0 stays recorded, and a replacement stays
// counted.
func computeStatus(pclq *copsev1alpha1.PodClique, in statusInput) copsev1alpha1.PodCliqueStatus {
	status := *pclq.Status.DeepCopy()
	status.Conditions = slices.Clone(status.Conditions)
	training := in.workload.training()
	replacing := replacingAfter(pclq.Status.ReplacingPods, in.pods, in.replaced)
	counts := lifecycle.CountPods(in.pods, training, in.completion.Succeeded.CountBelow(int(pclq.Spec.Replicas)), union(replacing, in.ignored))
	status.ObservedGeneration = ptr.To(pclq.Generation)
	status.Replicas = int32(counts.Active)
	status.ReadyReplicas = int32(counts.Ready)
	status.ScheduledReplicas = int32(counts.Scheduled)
	status.ScheduleGatedReplicas = int32(counts.Gated)
	status.Selector = ptr.To(podSelector(pclq.Name))
	updateStatus(&status, pclq, in.template, in.pods, in.now)
	if !in.workload.known {
		// PodCreationBlocked does not depend on the workload type; it is
		// kept unless the cause is the missing PodCliqueSet itself, which
		// is passing (a cache that lags, or the PodClique about to be
		// garbage collected) and would cost every clique a write.
		if in.creation.reason != string(lifecycle.ReasonUnknownWorkload) {
			setCondition(&status, pclq.Generation, creationBlockedCondition(in.creation), in.now)
		}
		return status
	}

	if training {
		status.SucceededIndexes = in.completion.Succeeded.String()
		if !in.completion.LastSucceeded.IsZero() {
			status.LastSucceededTime = &metav1.Time{Time: in.completion.LastSucceeded}
		}
		status.PodReplacements += int32(len(in.replaced))
		status.ReplacingPods = sortedUIDs(replacing)
	}

	minAvail := int(pclq.MinAvailable())
	alreadySucceeded := meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded)
	newlySucceeded := training && !alreadySucceeded && in.completion.Complete
	previousBreach := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
	conditions := []metav1.Condition{
		scheduledCondition(training, counts, minAvail),
		minAvailableBreachedCondition(previousBreach, breachInput{
			training:     training,
			counts:       counts,
			minAvailable: minAvail,
			succeeded:    alreadySucceeded || newlySucceeded,
			restarting:   in.startOrder.barrier,
		}),
	}
	if cond := startupBlockedCondition(in.startOrder); cond != nil {
		conditions = append(conditions, *cond)
	}
	conditions = append(conditions, creationBlockedCondition(in.creation))
	for _, cond := range conditions {
		setCondition(&status, pclq.Generation, cond, in.now)
	}
	if newlySucceeded {
		cond := succeededCondition(in.completion, int(pclq.Spec.Replicas), in.now)
		cond.ObservedGeneration = pclq.Generation
		meta.SetStatusCondition(&status.Conditions, cond)
	}
	return status
}

// setCondition sets cond, observed at generation; its lastTransitionTime
// becomes now only when its status changes (meta.SetStatusCondition).
func setCondition(status *copsev1alpha1.PodCliqueStatus, generation int64, cond metav1.Condition, now metav1.Time) {
	cond.ObservedGeneration = generation
	cond.LastTransitionTime = now
	meta.SetStatusCondition(&status.Conditions, cond)
}

// union is the UIDs in a or b.
func union(a, b map[types.UID]bool) map[types.UID]bool {
	out := make(map[types.UID]bool, len(a)+len(b))
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

// replacingAfter is status.replacingPods after this pass: the recorded
// replacements whose pod still exists, plus those decided now.
func replacingAfter(previous []types.UID, pods []podstate.Summary, replaced []podstate.Summary) map[types.UID]bool {
	present := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		present[p.UID] = true
	}
	out := map[types.UID]bool{}
	for _, uid := range previous {
		if present[uid] {
			out[uid] = true
		}
	}
	for _, p := range replaced {
		out[p.UID] = true
	}
	return out
}

func sortedUIDs(set map[types.UID]bool) []types.UID {
	if len(set) == 0 {
		return nil
	}
	out := make([]types.UID, 0, len(set))
	for uid := range set {
		out = append(out, uid)
	}
	slices.Sort(out)
	return out
}

// cliqueComplete reports whether the Training clique is done: it has the
// Succeeded condition, or its completion shows it now (this pass's status
// write adds the condition).
func cliqueComplete(pclq *copsev1alpha1.PodClique, completion lifecycle.Completion) bool {
	return meta.IsStatusConditionTrue(pclq.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded) || completion.Complete
}

// templateState is what the PodClique's update status is judged against:
// the PodCliqueSet's generation hash and the hash of the clique's template.
type templateState struct {
	// known: the PodCliqueSet was found and has recorded a generation hash.
	known bool
	// generationHash is the PodCliqueSet's status.currentGenerationHash.
	generationHash string
	// templateHash is the hash of the clique's template in the
	// PodCliqueSet now; the PodClique's label carries it once the
	// PodCliqueSet (or scaling group) controller has refreshed it.
	templateHash string
	onDelete     bool
}

// templateStateOf reads the PodCliqueSet (nil when not found).
func templateStateOf(pcs *copsev1alpha1.PodCliqueSet, pclq *copsev1alpha1.PodClique) templateState {
	if pcs == nil || pcs.Status.CurrentGenerationHash == nil {
		return templateState{}
	}
	clique := pcs.CliqueTemplate(pclq.Labels[labels.CliqueTemplateKey])
	if clique == nil {
		return templateState{}
	}
	return templateState{
		known:          true,
		generationHash: *pcs.Status.CurrentGenerationHash,
		templateHash:   generationhash.PodTemplateHash(pcs, clique),
		onDelete:       pcs.UpdatesOnDelete(),
	}
}

// updateStatus sets the update fields of a PodClique's status as Grove
// reports them, from its pods and the PodCliqueSet:
//
//   - updatedReplicas: pods neither ended nor terminating that carry the
//     PodClique's template hash (labels.PodTemplateHashKey).
//   - updateProgress starts when the PodCliqueSet's generation hash differs
//     from the one the clique last realised (currentPodCliqueSetGenerationHash);
//     OnDelete ends it at once, RollingRecreate once no running pod has an
//     old hash and minAvailable pods are ready. Which pods are replaced is
//     the PodCliqueSet's decision (whole gangs), so
//     readyPodsSelectedToUpdate stays empty.
//   - currentPodTemplateHash and currentPodCliqueSetGenerationHash are set
//     when no update is in progress, the PodClique carries its template's
//     hash and every running pod has it.
func updateStatus(status *copsev1alpha1.PodCliqueStatus, pclq *copsev1alpha1.PodClique, t templateState, pods []podstate.Summary, now metav1.Time) {
	expected := pclq.Labels[labels.PodTemplateHashKey]
	if expected == "" {
		return
	}
	var updated, old, readyUpdated int32
	for _, p := range pods {
		if !p.Active() {
			continue
		}
		if p.TemplateHash != expected {
			old++
			continue
		}
		updated++
		if p.Ready {
			readyUpdated++
		}
	}
	status.UpdatedReplicas = updated
	if !t.known {
		return
	}
	progress := status.UpdateProgress
	if status.CurrentPodCliqueSetGenerationHash != nil && *status.CurrentPodCliqueSetGenerationHash != t.generationHash &&
		(progress == nil || progress.PodCliqueSetGenerationHash != t.generationHash) {
		progress = &grovecorev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: t.generationHash}
		if t.onDelete {
			progress.UpdateEndedAt = ptr.To(now)
		}
	} else if progress != nil {
		progress = progress.DeepCopy()
	}
	labelCurrent := expected == t.templateHash
	if progress != nil && progress.UpdateEndedAt == nil {
		// The PodClique may take its template after the update started.
		progress.PodTemplateHash = expected
		if labelCurrent && old == 0 && readyUpdated >= min(pclq.MinAvailable(), pclq.Spec.Replicas) {
			progress.UpdateEndedAt = ptr.To(now)
		}
	} else if progress != nil && progress.PodTemplateHash == "" {
		progress.PodTemplateHash = expected
	}
	status.UpdateProgress = progress
	if labelCurrent && old == 0 && (progress == nil || progress.UpdateEndedAt != nil) {
		status.CurrentPodTemplateHash = ptr.To(expected)
		status.CurrentPodCliqueSetGenerationHash = ptr.To(t.generationHash)
	}
}

// creationBlockedCondition is the PodCreationBlocked condition of the
// decision.
func creationBlockedCondition(d creationDecision) metav1.Condition {
	if d.reason == "" {
		return metav1.Condition{Type: copsev1alpha1.ConditionTypePodCreationBlocked, Status: metav1.ConditionFalse,
			Reason: copsev1alpha1.ReasonCreationAllowed, Message: "nothing holds the clique's pods back"}
	}
	return metav1.Condition{Type: copsev1alpha1.ConditionTypePodCreationBlocked, Status: metav1.ConditionTrue,
		Reason: d.reason, Message: d.message}
}
