package podclique

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// creationState is everything that decides whether the clique may create
// pods now, as plain values: its replica's answer (lifecycle.MayCreatePods,
// the one answer every level asks) and the clique's own causes on top.
//
// The reconciler fills it in two gather steps. The causes that hold the
// whole plan (planHeld) come first, as planPods needs them; the
// prerequisites of the pods the plan would create (their ResourceClaims,
// their base gang's placement) are gathered for those pods only.
// decideCreation then gives the one answer, before the status is written,
// so the status always says why no pod is created.
type creationState struct {
	// going: the PodClique is being deleted.
	going bool
	// invalidLabels is why the PodClique's labels do not identify it
	// (blueprint.IdentityOf); "" when they do.
	invalidLabels string
	// replica is lifecycle.MayCreatePods for the clique's replica and run;
	// "" when the replica may get pods.
	replica lifecycle.Reason
	// complete: the Training clique succeeded (it has the Succeeded
	// condition, or its pods show it now); it gets no pods again.
	complete bool
	// waitingForSuccess are the cliques (trainingSpec.startsAfterSucceeded)
	// that have not succeeded yet; no pod is created until they have.
	waitingForSuccess []string

	// planned is how many pods the plan would create.
	planned int
	// waitingForClaims are the ResourceClaims the planned pods refer to that
	// are not usable yet (missing, another object's, or being deleted).
	waitingForClaims []string
	// waitingForBaseGang is the base gang of the replica whose placement the
	// planned pods wait for (they are held in its domain); "" when none.
	waitingForBaseGang string

	// refusal is the record of the API server's refusals to create pods.
	refusal refusalRecord
	now     time.Time
}

// refusalRecord is what the status says about the API server's refusals
// (the PodCreationRefused condition, status.lastPodCreationRefusalTime),
// plus what this process saw since.
type refusalRecord struct {
	// refused: PodCreationRefused is True. since is its lastTransitionTime,
	// the first refusal in a row; last is the latest refusal.
	refused     bool
	since, last time.Time
	// loosened: a ResourceQuota or LimitRange of the namespace changed
	// after the latest refusal, which may let the pods in: the back-off
	// ends at once. It is kept in memory only; after an operator restart
	// the back-off runs out instead (at most refusalBackoffCap).
	loosened bool
}

// Back-off after the API server refused to create a pod. A refusal (a
// quota, a LimitRange, an admission webhook) does not go away by retrying,
// so the clique tries one pod per back-off until one passes. Each wait is
// one base longer than the refusals in a row have lasted so far, at most the
// cap: with attempts on time, 1s, 2s, 4s, ... (doubling, as before), and it
// is derived from the two durable times only.
const (
	refusalBackoffBase = time.Second
	refusalBackoffCap  = time.Minute
)

// Requeue delays for causes no watched event ends for sure.
const (
	// retryClaims: the pods wait for a ResourceClaim; its creation
	// normally wakes the clique first (claimToCliques).
	retryClaims = 5 * time.Second
	// retryBaseGang: a scaled gang's pods held in its base gang's domain
	// wait for the base gang to be placed. A base PodClique's scheduled
	// count changing wakes it (siblingsOf); the retry covers a wake-up
	// lost with an operator restart.
	retryBaseGang = 10 * time.Second
)

// creationDecision is decideCreation's answer.
type creationDecision struct {
	// reason is the PodCreationBlocked reason of the first cause that holds;
	// "" when nothing holds the clique's pods back. message says it in a
	// sentence.
	reason, message string
	// planHeld: no index is filled and no ended pod is replaced
	// (planInput.blocked). Deletions that keep the clique in shape go on.
	planHeld bool
	// create: the planned pods may be created in this pass. A refused
	// clique may try again once its back-off has run out, although the
	// refusal still stands until a pod passes.
	create bool
	// recheckAfter is when to look again at a cause that no watched event
	// is sure to end; 0 for none.
	recheckAfter time.Duration
}

// planHeld reports whether a cause holds the whole plan: the PodClique is
// going, cannot be identified, its replica may not get pods, it succeeded,
// or it waits for other cliques to succeed. Only the fields of the first
// gather step are read, so it is known before the plan.
func (s creationState) planHeld() bool {
	return s.going || s.invalidLabels != "" || s.replica != "" || s.complete || len(s.waitingForSuccess) > 0
}

// decideCreation is the one answer to "may this clique create pods now,
// and if not, why". The causes, first that holds wins: the PodClique is
// being deleted; its labels do not identify it; its replica may not get
// pods (lifecycle.MayCreatePods: the PodCliqueSet gone or being deleted,
// the workload ended, the replica succeeded, waits for Kueue, is
// suspended, is being recreated, or the clique is of an earlier run); the
// Training clique succeeded; it waits for cliques to succeed
// (startsAfterSucceeded); the planned pods wait for ResourceClaims; they
// wait for their base gang's placement; the API server refuses the pods
// (with back-off).
func decideCreation(s creationState) creationDecision {
	held := func(reason, message string) creationDecision {
		return creationDecision{reason: reason, message: message, planHeld: true}
	}
	wait := func(reason, message string, recheck time.Duration) creationDecision {
		d := creationDecision{reason: reason, message: message}
		if s.planned > 0 {
			d.recheckAfter = recheck
		}
		return d
	}
	switch {
	case s.going:
		return held(copsev1alpha1.ReasonPodCliqueDeleting, "the PodClique is being deleted")
	case s.invalidLabels != "":
		return held(copsev1alpha1.ReasonInvalidLabels, "the PodClique's labels do not say where it belongs: "+s.invalidLabels)
	case s.replica != "":
		return held(string(s.replica), s.replica.Message())
	case s.complete:
		return held(copsev1alpha1.ReasonAllPodsSucceeded, "the clique succeeded (every index exited 0); its pods are not run again")
	case len(s.waitingForSuccess) > 0:
		return held(copsev1alpha1.ReasonWaitingForSucceeded,
			fmt.Sprintf("no pod is created until clique(s) %s of the replica have succeeded", strings.Join(s.waitingForSuccess, ", ")))
	case len(s.waitingForClaims) > 0:
		return wait(copsev1alpha1.ReasonWaitingForResourceClaims,
			fmt.Sprintf("the pods wait for ResourceClaim(s) %s to exist (resourceSharing)", someNames(s.waitingForClaims)), retryClaims)
	case s.waitingForBaseGang != "":
		return wait(copsev1alpha1.ReasonWaitingForBaseGang,
			fmt.Sprintf("the pods are held in the domain of base gang %s, which has no pod on a node yet", s.waitingForBaseGang), retryBaseGang)
	case s.refusal.refused:
		d := creationDecision{reason: copsev1alpha1.ReasonCreationRefused,
			message: "the API server refuses the clique's pods (see PodCreationRefused); one pod is tried again after each back-off"}
		retryAt := refusalRetryAt(s.refusal.since, s.refusal.last)
		switch {
		case s.refusal.loosened || !s.now.Before(retryAt):
			d.create = true
		case s.planned > 0:
			d.recheckAfter = retryAt.Sub(s.now)
		}
		return d
	}
	return creationDecision{create: true}
}

// maxClaimsNamed bounds how many claims the condition's message names.
const maxClaimsNamed = 5

// someNames lists names, at most maxClaimsNamed of them, then how many more.
func someNames(names []string) string {
	if len(names) <= maxClaimsNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxClaimsNamed], ", "), len(names)-maxClaimsNamed)
}

// refusalRetryAt is when a refused clique may try again: after the latest
// refusal (last), one base longer than the refusals have lasted since the
// first (since), at most the cap. A missing time counts as the other one.
func refusalRetryAt(since, last time.Time) time.Time {
	switch {
	case last.IsZero():
		last = since
	case since.IsZero() || since.After(last):
		since = last
	}
	return last.Add(min(last.Sub(since)+refusalBackoffBase, refusalBackoffCap))
}

// refusalRecordOf reads the refusal record from a PodClique's status.
func refusalRecordOf(status *copsev1alpha1.PodCliqueStatus) refusalRecord {
	cond := meta.FindStatusCondition(status.Conditions, copsev1alpha1.ConditionTypePodCreationRefused)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return refusalRecord{}
	}
	rec := refusalRecord{refused: true, since: cond.LastTransitionTime.Time}
	if status.LastPodCreationRefusalTime != nil {
		rec.last = status.LastPodCreationRefusalTime.Time
	}
	return rec
}
