package podclique

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/metrics"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/requeue"
)

// act carries out the plan once the status that records it is written:
// deletes pods, releases the outcome finalizer of the pods whose outcome is
// recorded, opens startup gates, keeps the clique's ResourceClaims, and
// creates the planned pods when the decision lets it. It asks to run again
// for work the budget left over and for causes that no event ends for sure.
func (r *Reconciler) act(ctx context.Context, pclq *copsev1alpha1.PodClique, o *observation, plan podPlan, creation creationDecision) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	now := o.creation.now
	if len(plan.replace) > 0 {
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeNormal, EventReasonPodsReplaced, "ReplacePods",
			"Replacing %d failed pod(s) (%s); %d replaced so far", len(plan.replace), describeFailures(plan.replace), pclq.Status.PodReplacements)
	}
	var errs []error
	adopted, err := r.adoptPods(ctx, pclq, o.adopt)
	errs = append(errs, err)
	for _, p := range o.discard {
		plan.delete = append(plan.delete, podDeletion{pod: p, cause: causeNotAdoptable})
	}
	deleted, err := r.deletePods(ctx, pclq, o.key, plan.delete)
	errs = append(errs, err)
	released, err := r.releaseRecorded(ctx, pclq, o.workload, o.owned, o.strays, plan.delete, r.writeBudget()-deleted-len(plan.create))
	errs = append(errs, err)
	var open gateOpening
	if !o.creation.going {
		open = gatesToOpen(o.startOrder, o.owned, max(r.writeBudget()-deleted-len(plan.create), children.MaxInFlight))
	}
	opened, err := r.openGates(ctx, pclq, open.pods)
	errs = append(errs, err)
	// The pass counts once in the write-budget metric, whichever of its
	// steps the budget cut.
	budgetCut := sync.OnceFunc(metrics.WriteBudgetCut("PodClique"))
	if plan.truncated || released.truncated || open.truncated {
		budgetCut()
	}
	claimsResult, err := r.syncClaims(ctx, pclq, o.pcs, o.id, o.idErr == nil && !o.creation.going, budgetCut)
	errs = append(errs, err)

	result := claimsResult
	if plan.truncated || released.truncated || open.truncated || opened < len(open.pods) || adopted < len(o.adopt) {
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: requeue.Soon})
	}
	if !plan.retryAt.IsZero() {
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: max(plan.retryAt.Sub(now), time.Millisecond)})
	}
	if o.pcs == nil {
		log.Info("PodCliqueSet not found; creating no pods", "podCliqueSet", o.id.PodCliqueSet)
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: retryMissingPodCliqueSet})
	}
	switch {
	case len(plan.create) == 0:
	case !creation.create:
		log.V(1).Info("creating no pods", "reason", creation.reason, "message", creation.message, "planned", len(plan.create))
		result = requeue.Earliest(result, ctrl.Result{RequeueAfter: creation.recheckAfter})
	default:
		createResult, err := r.createPods(ctx, pclq, o, plan.create)
		errs = append(errs, err)
		result = requeue.Earliest(result, createResult)
	}
	return result, errors.Join(errs...)
}

func (r *Reconciler) deletePods(ctx context.Context, pclq *copsev1alpha1.PodClique, key string, deletions []podDeletion) (int, error) {
	if len(deletions) == 0 {
		return 0, nil
	}
	log := ctrl.LoggerFrom(ctx)
	deleted, err := children.InSlowStart(ctx, len(deletions), children.MaxInFlight, children.MaxInFlight, time.Time{}, func(ctx context.Context, i int) error {
		d := deletions[i]
		if err := children.DeletePodAndRelease(ctx, r.Client, pclq.Namespace, d.pod); err != nil {
			return fmt.Errorf("%w (%s)", err, d.cause)
		}
		r.Expectations.ExpectDeletions(key, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pclq.Namespace, Name: d.pod.Name, UID: d.pod.UID}})
		log.V(1).Info("deleted pod", "pod", d.pod.Name, "index", d.pod.Index, "cause", d.cause)
		return nil
	})
	if deleted > 0 {
		causes := causeCounts(deletions)
		log.Info("deleted pods", "deleted", deleted, "planned", len(deletions), "causes", causes)
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeNormal, EventReasonPodsDeleted, "DeletePods",
			"Deleted %d pod(s) (planned: %s)", deleted, causes)
	}
	if err != nil {
		log.Error(err, "deleting pods failed", "deleted", deleted, "planned", len(deletions))
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonPodDeleteFailed, "DeletePods",
			"Deleted %d of %d pod(s): %v", deleted, len(deletions), err)
		return deleted, fmt.Errorf("deleting pods of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	return deleted, nil
}

// releaseOutcome is what releaseRecorded did.
type releaseOutcome struct {
	// truncated: more pods wait for their finalizer than the budget allowed.
	truncated bool
}

// releaseRecorded removes the outcome finalizer of every pod whose outcome
// the written status records, or that is not to be accounted for
// (outcomeReleasable), and of the strays. Pods being deleted this pass were
// released with their deletion.
func (r *Reconciler) releaseRecorded(ctx context.Context, pclq *copsev1alpha1.PodClique, ws workloadState,
	owned, strays []podstate.Summary, deleted []podDeletion, budget int) (releaseOutcome, error) {
	in := releaseInput{
		cliqueUID:         pclq.UID,
		cliqueGoing:       pclq.DeletionTimestamp != nil,
		training:          ws.training(),
		ended:             ws.ended,
		replicaSucceeded:  ws.replicaSucceeded,
		desired:           int(pclq.Spec.Replicas),
		recordedSucceeded: recordedSucceeded(pclq),
		recordedReplacing: uidSet(pclq.Status.ReplacingPods),
	}
	skip := map[types.UID]bool{}
	for _, d := range deleted {
		skip[d.pod.UID] = true
	}
	var release, held []podstate.Summary
	for _, p := range append(slices.Clone(owned), strays...) {
		switch {
		case skip[p.UID]:
		case outcomeReleasable(p, in):
			release = append(release, p)
		case p.HasOutcomeFinalizer && p.Terminating:
			held = append(held, p)
		}
	}
	if len(held) > 0 {
		// Pods deleted by someone else and still held: only a namespace
		// deletion makes them releasable, and it is rare, so the namespace
		// is read only then.
		going, err := r.namespaceGoing(ctx, pclq.Namespace)
		if err != nil {
			return releaseOutcome{}, err
		}
		in.namespaceGoing = going
		for _, p := range held {
			if outcomeReleasable(p, in) {
				release = append(release, p)
			}
		}
	}
	if !ws.known && len(strays) == 0 {
		// Without the PodCliqueSet the records cannot be trusted to be
		// complete; only pods that are plainly not this clique's go.
		release = nil
	}
	var out releaseOutcome
	if budget = max(budget, children.MaxInFlight); len(release) > budget {
		release, out.truncated = release[:budget], true
	}
	return out, r.releaseAll(ctx, pclq.Namespace, release)
}

// namespaceGoing reports whether the namespace is being deleted, read from
// the API server (copse caches no namespaces).
func (r *Reconciler) namespaceGoing(ctx context.Context, namespace string) (bool, error) {
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	return ns.DeletionTimestamp != nil, nil
}

// releaseAll removes the outcome finalizer from each pod.
func (r *Reconciler) releaseAll(ctx context.Context, namespace string, pods []podstate.Summary) error {
	var withFinalizer []podstate.Summary
	for _, p := range pods {
		if p.HasOutcomeFinalizer {
			withFinalizer = append(withFinalizer, p)
		}
	}
	if len(withFinalizer) == 0 {
		return nil
	}
	released, err := children.InSlowStart(ctx, len(withFinalizer), children.MaxInFlight, children.MaxInFlight, time.Time{}, func(ctx context.Context, i int) error {
		return children.ReleasePodOutcome(ctx, r.Client, namespace, withFinalizer[i])
	})
	ctrl.LoggerFrom(ctx).V(1).Info("released outcome finalizers", "released", released, "planned", len(withFinalizer))
	return err
}

// createPods creates the pods of the given indices, after the API server
// confirms that the clique may still have them (blockedOnServer). A refusal
// is recorded in the status (PodCreationRefused, its time: the back-off is
// derived from them) and in an event that quote the API server.
func (r *Reconciler) createPods(ctx context.Context, pclq *copsev1alpha1.PodClique, o *observation, indices []int) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	why, err := r.blockedOnServer(ctx, pclq, o.id)
	if err != nil {
		return ctrl.Result{}, err
	}
	if why != "" {
		log.Info("creating no pods: the API server shows what the cache does not yet", "reason", why, "planned", len(indices))
		return ctrl.Result{}, nil
	}
	gvk, err := apiutil.GVKForObject(pclq, r.Scheme)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("resolving the PodClique kind: %w", err)
	}
	placed := wasAvailable(pclq)
	if !placed {
		if placed, err = r.gangPlaced(ctx, pclq.Namespace, o.id); err != nil {
			return ctrl.Result{}, err
		}
	}
	pc := blueprint.PodContext{PodCliqueSet: o.pcs, PodClique: pclq, Identity: o.id, Owner: *metav1.NewControllerRef(pclq, gvk),
		GangPlaced: placed, StartupGate: o.startOrder.gateForNewPods(), HoldIn: o.holdIn}
	// Every pod is built before any is created: a clique whose pods cannot
	// be built gets none, rather than some.
	pods := make([]*corev1.Pod, len(indices))
	for i, index := range indices {
		pc.Index = index
		if pods[i], err = blueprint.BuildPod(pc, r.Decorators); err != nil {
			log.Error(err, "cannot build the clique's pods; not creating any")
			r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonInvalidPodClique, "CreatePods", "Cannot create pods: %v", err)
			return ctrl.Result{}, nil
		}
	}

	stopBy := time.Now().Add(children.PassTime) // wall time: it bounds work, not a decision
	created, err := children.InSlowStart(ctx, len(pods), r.history.startWindow(o.key), children.MaxInFlight, stopBy, func(ctx context.Context, i int) error {
		if err := r.Client.Create(ctx, pods[i]); err != nil {
			return fmt.Errorf("creating pod with index %d: %w", indices[i], err)
		}
		r.Expectations.ExpectCreations(o.key, pods[i])
		return nil
	})
	if created > 0 {
		log.Info("created pods", "created", created, "planned", len(indices))
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeNormal, EventReasonPodsCreated, "CreatePods", "Created %d pod(s)", created)
	}
	r.history.burst(o.key, err == nil)
	switch {
	case err == nil && created < len(indices):
		// The pass ran out of time: the next one reads the owners again
		// before it goes on.
		return ctrl.Result{RequeueAfter: requeue.Soon}, r.noteAttempt(ctx, pclq, o.creation, nil)
	case err == nil:
		return ctrl.Result{}, r.noteAttempt(ctx, pclq, o.creation, nil)
	case isRefusal(err):
		message := refusalMessage(err)
		now := r.Clock.Now()
		if err := r.noteAttempt(ctx, pclq, o.creation, &message); err != nil {
			return ctrl.Result{}, err
		}
		rec := refusalRecordOf(&pclq.Status)
		until := refusalRetryAt(rec.since, rec.last)
		if !rec.refused { // the status write was lost; the next pass tries again after a base back-off
			until = now.Add(refusalBackoffBase)
		}
		log.Info("the API server refuses the clique's pods; retrying with back-off", "created", created, "planned", len(indices),
			"retryAt", until.Format(time.RFC3339), "message", message)
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonPodCreationRefused, "CreatePods",
			"Created %d of %d pod(s); the API server refused the rest, retrying at %s: %s", created, len(indices), until.Format(time.RFC3339), message)
		return ctrl.Result{RequeueAfter: max(until.Sub(now), time.Millisecond)}, nil
	default:
		log.Error(err, "creating pods failed", "created", created, "planned", len(indices))
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonPodCreateFailed, "CreatePods",
			"Created %d of %d pod(s): %v", created, len(indices), err)
		return ctrl.Result{}, fmt.Errorf("creating pods of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
}

// noteAttempt writes what a creation attempt says about refusals
// (statusAfterAttempt), only when that changes the status.
func (r *Reconciler) noteAttempt(ctx context.Context, pclq *copsev1alpha1.PodClique, state creationState, refusal *string) error {
	status, changed := statusAfterAttempt(pclq, state, refusal, r.Clock.Now())
	if !changed {
		return nil
	}
	if err := r.writeStatus(ctx, pclq, status); err != nil && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// causeCounts summarises why pods are deleted, e.g. "ended=1 scale-in=2".
func causeCounts(deletions []podDeletion) string {
	counts := map[deletionCause]int{}
	for _, d := range deletions {
		counts[d.cause]++
	}
	parts := make([]string, 0, len(counts))
	for _, cause := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", cause, counts[cause]))
	}
	return strings.Join(parts, " ")
}
