package podclique

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	groveconstants "github.com/ai-dynamo/grove/operator/api/common/constants"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// ConditionReasonNeverAvailable is the reason of MinAvailableBreached=Unknown:
// the clique has never had minAvailable pods scheduled and ready, so there is
// nothing to breach yet. A clique that is still starting must not look like
// one that lost its pods, or its gang would be terminated before it ever ran.
const ConditionReasonNeverAvailable = "NeverAvailable"

// ConditionReasonRestartingInPlace is the reason of MinAvailableBreached=
// Unknown while the clique's replica restarts in place (the barrier is up).
const ConditionReasonRestartingInPlace = "RestartingInPlace"

// ConditionReasonPodsFailed is the reason of MinAvailableBreached=True in a
// Training workload when pods failed (exited non-zero, or were evicted) and
// too few healthy pods are left. A failed training pod is a breach at once,
// even in a clique that was never available: it will not come back by
// itself, and recovering is the replica restart's job.
const ConditionReasonPodsFailed = "PodsFailed"

// maxFailuresNamed bounds how many failed pods a condition message lists.
const maxFailuresNamed = 5

// breachInput is what MinAvailableBreached is computed from, besides the
// previous condition.
type breachInput struct {
	training     bool
	counts       lifecycle.PodCounts
	minAvailable int
	// succeeded is true when the clique has the Succeeded condition.
	succeeded bool
	// restarting: the replica restarts in place and a pod of it may still
	// run the previous attempt (the barrier is up); the clique's pods are
	// held at their gates on purpose.
	restarting bool
}

// minAvailableBreachedCondition computes MinAvailableBreached from the
// clique's pods and the condition as it was.
//
// Healthy pods are the ready ones; in a Training workload also those that
// exited 0 (lifecycle.PodCounts.healthy), which count as scheduled too
// (lifecycle.PodCounts.placed). A clique whose training pods finish is not breached.
//
//   - Training, the clique has succeeded: False (AllPodsSucceeded), for good,
//     even once its pods are gone.
//   - False (SufficientReadyPods) while healthy >= minAvailable and placed
//     >= minAvailable.
//   - Training, at least one pod Failed: True (PodsFailed), whatever the
//     previous condition. The message names the failed pods.
//   - Unknown (RestartingInPlace) while its replica restarts in place and
//     the barrier is up, unless a pod failed: the pods kept lose their
//     readiness as their containers restart. The clique is then as new.
//   - Unknown (NeverAvailable) until the clique is available for the first
//     time.
//   - True once it was available and no longer is; the reason says whether
//     too few pods are scheduled (InsufficientScheduledPods) or, with enough
//     scheduled, too few are ready (InsufficientReadyPods).
//
// "Was available once" is read from previous: a status of False or True means
// the clique got there before (or, for PodsFailed, was breached before). It
// thus lives in the API server and survives an operator restart.
// LastTransitionTime is left to the caller (meta.SetStatusCondition) so it
// moves only when the status does; the PodCliqueSet controller takes the True
// condition's lastTransitionTime as the moment the breach began.
func minAvailableBreachedCondition(previous *metav1.Condition, in breachInput) metav1.Condition {
	cond := metav1.Condition{Type: groveconstants.ConditionTypeMinAvailableBreached}
	training := in.training
	placed := in.counts.Placed(training)
	counts := fmt.Sprintf("%d ready and %d scheduled of minAvailable %d", in.counts.Ready, in.counts.Scheduled, in.minAvailable)
	healthyWord := "ready"
	if training {
		counts = fmt.Sprintf("%d ready and %d scheduled, %d exited 0, of minAvailable %d",
			in.counts.Ready, in.counts.Scheduled, in.counts.Succeeded, in.minAvailable)
		healthyWord = "ready or exited 0"
	}
	wasAvailable := previous != nil &&
		(previous.Status == metav1.ConditionFalse || previous.Status == metav1.ConditionTrue)
	switch {
	case training && in.succeeded:
		cond.Status = metav1.ConditionFalse
		cond.Reason = copsev1alpha1.ReasonAllPodsSucceeded
		cond.Message = "The clique completed: every pod exited 0"
	case in.restarting && !in.counts.BrokenByFailures(in.minAvailable):
		// As for a clique that was never available: the pods the restart
		// kept lose their readiness as their containers restart, and that
		// is no breach.
		cond.Status = metav1.ConditionUnknown
		cond.Reason = ConditionReasonRestartingInPlace
		cond.Message = "The replica restarts in place; the clique's pods wait at their startup gates until no pod of the replica runs the previous attempt: " + counts
	case in.counts.Available(training, in.minAvailable):
		cond.Status = metav1.ConditionFalse
		cond.Reason = groveconstants.ConditionReasonSufficientReadyPods
		cond.Message = "Enough pods are scheduled and " + healthyWord + ": " + counts
	case training && in.counts.BrokenByFailures(in.minAvailable):
		cond.Status = metav1.ConditionTrue
		cond.Reason = ConditionReasonPodsFailed
		cond.Message = fmt.Sprintf("%s, and too few are %s: %s", describeFailures(in.counts.Failed), healthyWord, counts)
	case !wasAvailable:
		cond.Status = metav1.ConditionUnknown
		cond.Reason = ConditionReasonNeverAvailable
		cond.Message = "The clique has not yet had minAvailable pods scheduled and " + healthyWord + ": " + counts
	case placed < in.minAvailable:
		cond.Status = metav1.ConditionTrue
		cond.Reason = groveconstants.ConditionReasonInsufficientScheduledPods
		cond.Message = "Too few pods are scheduled: " + counts
	default:
		cond.Status = metav1.ConditionTrue
		cond.Reason = groveconstants.ConditionReasonInsufficientReadyPods
		cond.Message = "Too few pods are " + healthyWord + ": " + counts
	}
	return cond
}

// describeFailures names failed pods by index, lowest first, e.g.
// "2 pods failed: index 1 (container train exited 1, Error), index 3 (Evicted)".
func describeFailures(failed []podstate.Summary) string {
	ordered := slices.Clone(failed)
	slices.SortFunc(ordered, func(a, b podstate.Summary) int {
		if a.HasIndex != b.HasIndex {
			return boolFirst(a.HasIndex, b.HasIndex)
		}
		if c := cmp.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	parts := make([]string, 0, min(len(ordered), maxFailuresNamed)+1)
	for _, p := range ordered[:min(len(ordered), maxFailuresNamed)] {
		who := "pod " + p.Name
		if p.HasIndex {
			who = fmt.Sprintf("index %d", p.Index)
		}
		why := "failed"
		if p.Failure != nil {
			why = p.Failure.String()
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", who, why))
	}
	if more := len(ordered) - maxFailuresNamed; more > 0 {
		parts = append(parts, fmt.Sprintf("%d more", more))
	}
	noun := "pods"
	if len(ordered) == 1 {
		noun = "pod"
	}
	return fmt.Sprintf("%d %s failed: %s", len(ordered), noun, strings.Join(parts, ", "))
}

// scheduledCondition computes PodCliqueScheduled: True while at least
// minAvailable pods have a node. In a Training workload pods that exited 0
// count as scheduled (lifecycle.PodCounts.placed), so a finished clique does not look
// unscheduled.
func scheduledCondition(training bool, counts lifecycle.PodCounts, minAvailable int) metav1.Condition {
	placed := counts.Placed(training)
	cond := metav1.Condition{
		Type:    groveconstants.ConditionTypePodCliqueScheduled,
		Message: fmt.Sprintf("%d of minAvailable %d pods scheduled", placed, minAvailable),
	}
	if training && counts.Succeeded > 0 {
		cond.Message = fmt.Sprintf("%d of minAvailable %d pods scheduled, %d of them exited 0", placed, minAvailable, counts.Succeeded)
	}
	if placed >= minAvailable {
		cond.Status = metav1.ConditionTrue
		cond.Reason = groveconstants.ConditionReasonSufficientScheduledPods
	} else {
		cond.Status = metav1.ConditionFalse
		cond.Reason = groveconstants.ConditionReasonInsufficientScheduledPods
	}
	return cond
}

// succeededCondition is the Succeeded condition of a Training clique that
// is complete: every index exited 0. Its lastTransitionTime is when the last
// of them finished, not when the operator noticed, so a completion observed
// late (the operator was down) is judged by when it happened. It is set once
// and never changed or removed, so completion outlives the pods.
func succeededCondition(completion lifecycle.Completion, replicas int, now metav1.Time) metav1.Condition {
	at := now
	if !completion.LastSucceeded.IsZero() {
		at = metav1.NewTime(completion.LastSucceeded)
	}
	return metav1.Condition{
		Type:               copsev1alpha1.ConditionTypeSucceeded,
		Status:             metav1.ConditionTrue,
		Reason:             copsev1alpha1.ReasonAllPodsSucceeded,
		Message:            fmt.Sprintf("all %d pods exited 0", replicas),
		LastTransitionTime: at,
	}
}

// wasAvailable reports whether the clique has been available once: its
// MinAvailableBreached condition has left Unknown. Its gang has then been
// placed.
func wasAvailable(pclq *copsev1alpha1.PodClique) bool {
	c := meta.FindStatusCondition(pclq.Status.Conditions, groveconstants.ConditionTypeMinAvailableBreached)
	return c != nil && c.Status != metav1.ConditionUnknown
}
