package podclique

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/podstate"
)

// The steps of a pass's writes, as they name failed writes.
const (
	stepAdopt     = "adopt pods"
	stepDelete    = "delete pods"
	stepRelease   = "release finalizers"
	stepOpenGates = "open startup gates"
	stepCreate    = "create pods"
	stepClaims    = "resource claims"
)

// passPlan is one pass's plan, and what its result is made from once the
// writer carried it out.
type passPlan struct {
	children.PassPlan
	// now is the pass's time.
	now time.Time
	// pods is planPods' answer, creation decideCreation's.
	pods     podPlan
	creation creationDecision
	// cutShort: the decision left work for the next pass (the budget cut
	// the deletions, releases or gates).
	cutShort bool
	// failure is what the pass fails with whatever the writes do
	// (resourceSharing names templates that do not exist).
	failure error
	// holdReason is why the planned pods are not created, for the log (""
	// when they are): the decision holds them, the PodCliqueSet is not in
	// the cache, the API server forbids them, or they cannot be built.
	holdReason string
}

// passConfig is the operator configuration a pass decides with.
type passConfig struct {
	// budget bounds the pass's pod writes.
	budget int
	// decorators finish every pod blueprint.Pod built.
	decorators []blueprint.PodDecorator
}

// planPass is the pass's decision, pure: from what observe read, the status
// to write (records first: an index that exited 0, a replacement counted,
// why no pod is created), the events that status's transitions make, the
// clique's own ResourceClaims, and the pod writes in the order they are
// made: adopt the pods a restart in place kept, delete, release outcome
// finalizers, open startup gates, create.
func planPass(pclq *copsev1alpha1.PodClique, o *observation, cfg passConfig) passPlan {
	now, budget := o.creation.now, cfg.budget
	var pods podPlan
	if !o.creation.going {
		pods = planPods(o.planInput(pclq, now, budget))
	}
	creation := decideCreation(o.creation)
	written := pclq.DeepCopy()
	written.Status = computeStatus(pclq, statusInput{pods: o.owned, workload: o.workload, completion: o.completion, replaced: pods.replace, ignored: o.ignored,
		startOrder: o.startOrder, creation: creation, template: templateStateOf(o.pcs, pclq), now: metav1.NewTime(now)})

	plan := passPlan{now: now, pods: pods, creation: creation, failure: claimtemplates.MissingError(o.claims.missing)}
	plan.Observed, plan.Status = pclq, written
	plan.Events = transitionEvents(pclq, written, o, pods)
	plan.Objects = claimSets(written, o)

	deletions := slices.Concat(pods.delete, deletionsOf(o.discard, causeNotAdoptable))
	rest := max(budget-len(deletions)-len(pods.create), children.MaxInFlight)

	// Each pod is written at most once a pass: the writes of one burst run
	// at once, so a second write to a pod would race the first (an
	// adopted pod's gate opens in the pass its adoption wakes).
	planned := map[types.UID]bool{}
	add := func(w children.PodWrite) {
		if !planned[w.Pod.UID] {
			planned[w.Pod.UID] = true
			plan.Pods = append(plan.Pods, w)
		}
	}
	for _, p := range o.adopt {
		add(children.PodWrite{Op: children.PodAdopt, Step: stepAdopt, Pod: p, Owner: &o.owner})
	}
	for _, d := range deletions {
		add(children.PodWrite{Op: children.PodDelete, Step: stepDelete, Pod: d.pod, Release: true})
	}
	in := releaseInputOf(written, o.workload)
	in.namespaceGoing = o.namespaceGoing
	releases := releasesOf(in, o.workload.known, o.owned, o.strays, planned, rest)
	var gates gateOpening
	if !o.creation.going {
		gates = gatesToOpen(o.startOrder, o.owned, rest)
	}
	plan.cutShort = pods.truncated || releases.truncated || gates.truncated
	for _, p := range releases.pods {
		add(children.PodWrite{Op: children.PodRelease, Step: stepRelease, Pod: p})
	}
	for _, p := range gates.pods {
		add(children.PodWrite{Op: children.PodOpenGate, Step: stepOpenGates, Pod: p})
	}
	creates, holdReason, buildErr := buildCreations(written, o, cfg.decorators, pods.create, creation)
	if buildErr != nil {
		plan.Events = append(plan.Events, children.Event{Type: corev1.EventTypeWarning, Reason: EventReasonInvalidPodClique,
			Action: "CreatePods", Message: fmt.Sprintf("Cannot create pods: %v", buildErr)})
	}
	plan.holdReason = holdReason
	for i, pod := range creates {
		plan.Pods = append(plan.Pods, children.PodWrite{Op: children.PodCreate, Step: stepCreate, New: pod, Pod: podstate.Summary{Index: pods.create[i], HasIndex: true}})
	}
	if len(creates) > 0 {
		plan.PodStartWindow = o.startWindow
	}
	plan.PodTimeBound = true
	plan.RequeueAfter = requeueOf(o, pods, creation)
	plan.Settle = settleWrites(o, plan.Pods, deletions)
	return plan
}

// buildCreations builds the pods of the planned indices when they may be
// created: the decision lets them, the PodCliqueSet is known and the API
// server, read past the cache, agrees. Every pod is built before any is
// created: a clique whose pods cannot be built gets none, rather than some.
// holdReason says why none is, for the log.
func buildCreations(written *copsev1alpha1.PodClique, o *observation, decorators []blueprint.PodDecorator, indices []int, creation creationDecision) (pods []*corev1.Pod, holdReason string, err error) {
	switch {
	case len(indices) == 0:
		return nil, "", nil
	case !creation.create:
		return nil, creation.message, nil
	case o.pcs == nil:
		return nil, "the PodCliqueSet is not in the cache", nil
	case o.serverBlocked != "":
		return nil, "the API server shows what the cache does not yet: " + o.serverBlocked, nil
	}
	pc := blueprint.PodContext{PodCliqueSet: o.pcs, PodClique: written, Identity: o.id, Owner: o.owner,
		GangPlaced: wasAvailable(written) || o.gangPlaced, StartupGate: o.startOrder.gateForNewPods(), HoldIn: o.holdIn}
	pods = make([]*corev1.Pod, len(indices))
	for i, index := range indices {
		pc.Index = index
		if pods[i], err = blueprint.BuildPod(pc, decorators); err != nil {
			return nil, "the pods cannot be built", err
		}
	}
	return pods, "", nil
}

// transitionEvents are the events of the status this pass writes: the
// failed pods whose replacement it records, and labels that stopped
// identifying the PodClique.
func transitionEvents(observed, written *copsev1alpha1.PodClique, o *observation, pods podPlan) []children.Event {
	var events []children.Event
	if len(pods.replace) > 0 {
		events = append(events, children.Event{Type: corev1.EventTypeNormal, Reason: EventReasonPodsReplaced, Action: "ReplacePods",
			Message: fmt.Sprintf("Replacing %d failed pod(s) (%s); %d replaced so far", len(pods.replace), describeFailures(pods.replace), written.Status.PodReplacements)})
	}
	if creationBlockedReason(observed) != copsev1alpha1.ReasonInvalidLabels && creationBlockedReason(written) == copsev1alpha1.ReasonInvalidLabels {
		events = append(events, children.Event{Type: corev1.EventTypeWarning, Reason: EventReasonInvalidPodClique, Action: "CreatePods",
			Message: fmt.Sprintf("Cannot create pods: %v", o.idErr)})
	}
	return events
}

// requeueOf is when the decision wants the next pass: when a replacement back-off ends; soon for a PodCliqueSet
// not in the cache; when a cause that holds the planned pods and that no
// watched event is sure to end is to be looked at again.
func requeueOf(o *observation, pods podPlan, creation creationDecision) time.Duration {
	var result time.Duration
	earliest := func(d time.Duration) {
		if d > 0 && (result == 0 || d < result) {
			result = d
		}
	}
	if !pods.retryAt.IsZero() {
		earliest(max(pods.retryAt.Sub(o.creation.now), time.Millisecond))
	}
	if o.pcs == nil {
		earliest(retryMissingPodCliqueSet)
	}
	if len(pods.create) > 0 && !creation.create {
		earliest(creation.recheckAfter)
	}
	return result
}

func deletionsOf(pods []podstate.Summary, cause deletionCause) []podDeletion {
	out := make([]podDeletion, 0, len(pods))
	for _, p := range pods {
		out = append(out, podDeletion{pod: p, cause: cause})
	}
	return out
}
