package podclique

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

// observation is what one pass gathers before it decides.
type observation struct {
	// key is the PodClique's expectations key.
	key string
	// owned are the pods the PodClique controls; strays those of an
	// earlier PodClique of the same name.
	owned, strays []podstate.Summary
	// pending are this controller's writes the cache does not show yet:
	// the indices of pods created, and the UIDs of pods deleted, that the
	// cache does not show as such (read from the expectations once).
	pending  expectations.Pending
	creating []int
	deleting map[types.UID]bool
	// id is where the PodClique belongs, from its labels; idErr says why
	// they do not tell.
	id    blueprint.CliqueIdentity
	idErr error
	// pcs is the PodCliqueSet from the cache; nil when not found.
	pcs        *copsev1alpha1.PodCliqueSet
	workload   workloadState
	completion lifecycle.Completion
	startOrder startOrder
	// creation is what decideCreation decides from.
	creation creationState
	// holdIn is the node selector of the base gang's domain the pods to
	// create are held in (blueprint.BaseGangHold); nil when they are not.
	holdIn map[string]string
	// ignored (Training) are the failed pods a failure rule with action
	// Ignore matches: replaced without breaching the clique.
	ignored map[types.UID]bool
	// adopt are the pods a restart in place kept, orphaned from the old
	// run's PodClique, that this one takes over (already in owned, as they
	// will be once adopted); discard those kept that it cannot take (their
	// index is out of range or taken), deleted.
	adopt, discard []podstate.Summary
	// startWindow is the slow-start window a burst of creations starts
	// with (this process's memory of the clique's last burst).
	startWindow int
	// owner is the controller reference of the pods the clique creates or
	// adopts.
	owner metav1.OwnerReference

	// Read only when the pass would need them (observeCreation,
	// observeReleases, observeClaims):
	// serverBlocked is why the API server, read past the cache, forbids the
	// clique's pods now ("" when it allows them); gangPlaced: a pod of the
	// clique's gang in its run is bound to a node; namespaceGoing: the
	// namespace is being deleted; claims are the clique's own
	// ResourceClaims and the templates they are made from.
	serverBlocked  string
	gangPlaced     bool
	namespaceGoing bool
	claims         claimFacts
}

// observe is every read of a pass: the PodClique's pods (syncing the
// expectations), its PodCliqueSet, its completion and start order, and the
// causes that hold its whole plan (creationState.planHeld); then, for the
// writes the plan would make only, their prerequisites and the API server's
// word (observeCreation, observeReleases, observeClaims). Nothing is read
// after it.
func (r *Reconciler) observe(ctx context.Context, key string, pclq *copsev1alpha1.PodClique, now time.Time, budget int) (*observation, error) {
	owned, strays, err := r.podsOf(ctx, pclq.Namespace, pclq.Name, string(pclq.UID))
	if err != nil {
		return nil, err
	}
	o := &observation{key: key, owned: owned, strays: strays, startWindow: r.history.startWindow(key)}
	o.pending = r.syncExpectations(ctx, key, pclq, owned)
	o.creating, o.deleting = creatingIndices(o.pending), deletingUIDs(o.pending)
	o.id, o.idErr = blueprint.IdentityOf(pclq)
	if o.pcs, err = r.podCliqueSet(ctx, pclq.Namespace, pclq.Labels[labels.PartOfKey]); err != nil {
		return nil, err
	}
	replica := lifecycle.ReplicaStateOf(o.pcs, o.id.Replica, o.id.Attempt)
	o.workload = workloadStateOf(o.pcs, replica)
	if o.workload.training() {
		o.completion = lifecycle.CliqueCompletion(int(pclq.Spec.Replicas), pclq.Status.SucceededIndexes, pclq.Status.LastSucceededTime, owned)
		o.ignored = lifecycle.NotJudged(o.pcs.FailurePolicy(), pclq.Labels[labels.CliqueTemplateKey], owned)
	}
	if o.idErr == nil {
		if o.startOrder, err = r.observeStartOrder(ctx, pclq, o.pcs, o.id); err != nil {
			return nil, err
		}
	}
	o.startOrder.inPlace, o.startOrder.barrier = o.pcs.RestartsInPlace(), replica.Barrier
	o.adopt, o.discard, o.strays = adoptionOf(pclq, o.id.Attempt, replica.InPlace && o.idErr == nil, o.owned, o.strays)
	o.owned = append(o.owned, o.adopt...)
	o.creation = creationState{
		going:             pclq.DeletionTimestamp != nil,
		replica:           lifecycle.MayCreatePods(replica),
		complete:          o.workload.training() && cliqueComplete(pclq, o.completion),
		waitingForSuccess: o.startOrder.waitingForSuccess,
		refusal:           refusalRecordOf(&pclq.Status),
		now:               now,
	}
	if o.idErr != nil {
		o.creation.invalidLabels = o.idErr.Error()
	}
	if rec := o.creation.refusal; rec.refused {
		o.creation.refusal.loosened = r.history.loosenedAfter(pclq.Namespace, latest(rec.since, rec.last))
	}
	gvk, err := apiutil.GVKForObject(pclq, r.Scheme)
	if err != nil {
		return nil, fmt.Errorf("resolving the PodClique kind: %w", err)
	}
	o.owner = *metav1.NewControllerRef(pclq, gvk)

	var prospect podPlan
	if !o.creation.going {
		prospect = planPods(o.planInput(pclq, now, budget))
	}
	if err := r.observeCreation(ctx, pclq, o, prospect.create); err != nil {
		return nil, err
	}
	if o.namespaceGoing, err = r.observeReleases(ctx, pclq, o); err != nil {
		return nil, err
	}
	if o.claims, err = r.observeClaims(ctx, pclq, o); err != nil {
		return nil, err
	}
	return o, nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// podsOf lists the pods labelled for the PodClique name. owned are those the
// PodClique (uid) controls; strays are the others (left over from an
// earlier PodClique of the same name), whose finalizers are released.
func (r *Reconciler) podsOf(ctx context.Context, namespace, name string, uid string) (owned, strays []podstate.Summary, err error) {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{labels.PodCliqueKey: name}); err != nil {
		return nil, nil, fmt.Errorf("listing pods of PodClique %s/%s: %w", namespace, name, err)
	}
	for i := range list.Items {
		s := podstate.Of(&list.Items[i])
		if uid != "" && string(s.ControllerUID) == uid {
			owned = append(owned, s)
		} else {
			strays = append(strays, s)
		}
	}
	return owned, strays, nil
}

// podCliqueSet returns the PodClique's PodCliqueSet from the cache, or nil
// when it is gone or name is empty (the PodClique lacks the label).
func (r *Reconciler) podCliqueSet(ctx context.Context, namespace, name string) (*copsev1alpha1.PodCliqueSet, error) {
	if name == "" {
		return nil, nil
	}
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pcs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading PodCliqueSet %s/%s: %w", namespace, name, err)
	}
	return pcs, nil
}

// observeStartOrder gathers the clique's start order: its predecessors from
// the PodCliqueSet's template, and its siblings from the cache.
func (r *Reconciler) observeStartOrder(ctx context.Context, pclq *copsev1alpha1.PodClique, pcs *copsev1alpha1.PodCliqueSet, id blueprint.CliqueIdentity) (startOrder, error) {
	if pcs == nil {
		return startOrder{}, nil
	}
	groupMinAvailable := blueprint.GroupMinAvailable(pcs)
	scope := startScope(pcs, id, groupMinAvailable)
	in := startOrderInput{
		readyPredecessors:   blueprint.ScopePredecessors(blueprint.GatePredecessors(pcs)[id.Clique], scope, blueprint.CliqueScalingGroups(pcs)),
		successPredecessors: blueprint.SuccessPredecessors(pcs)[id.Clique],
		scope:               scope,
	}
	if len(in.readyPredecessors) == 0 && len(in.successPredecessors) == 0 {
		return startOrder{}, nil
	}
	in.groupMinAvailable = groupMinAvailable
	var list copsev1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &list, client.InNamespace(pclq.Namespace), siblingSelector(id)); err != nil {
		return startOrder{}, fmt.Errorf("listing the PodCliques of replica %d of %s/%s: %w", id.Replica, pclq.Namespace, id.PodCliqueSet, err)
	}
	for i := range list.Items {
		in.siblings = append(in.siblings, siblingOf(&list.Items[i]))
	}
	return decideStartOrder(in), nil
}

// observeCreation gathers the prerequisites of the pods the plan would
// create (none when a cause holds the plan): the ResourceClaims they refer
// to and the placement of the base gang they are held with; then, when the
// decision would let them be created, the API server's word that the
// clique may still have pods (blockedOnServer) and whether its gang is
// placed already (gangPlaced).
func (r *Reconciler) observeCreation(ctx context.Context, pclq *copsev1alpha1.PodClique, o *observation, create []int) error {
	o.creation.planned = len(create)
	if len(create) == 0 || o.creation.planHeld() {
		return nil
	}
	var err error
	if o.creation.waitingForClaims, err = r.unreadyClaims(ctx, pclq, o.pcs, o.id, create); err != nil {
		return err
	}
	if holdKey := blueprint.BaseGangHoldKey(pclq, o.id); holdKey != "" {
		boundNodes, err := r.baseGangNodes(ctx, pclq.Namespace, o.id)
		if err != nil {
			return err
		}
		var wait bool
		if o.holdIn, wait = blueprint.BaseGangHold(holdKey, boundNodes); wait {
			o.creation.waitingForBaseGang = naming.BaseGang(o.id.PodCliqueSet, o.id.Replica)
		}
	}
	if !decideCreation(o.creation).create {
		return nil
	}
	if o.serverBlocked, err = r.blockedOnServer(ctx, pclq, o.id); err != nil {
		return err
	}
	o.gangPlaced, err = r.gangPlaced(ctx, pclq.Namespace, o.id)
	return err
}

// gangPlaced reports whether a pod of the clique's gang, in the clique's run
// of its replica, is bound to a node. The gang's quorum was then met and the
// gang placed: a pod created now must not join it, since kube-scheduler
// counts only the gang's pods that still run towards its minCount, and the
// peers of a late pod may have ended by the time it comes (a clique whose
// first pods came late, after an operator restart or a slow cache).
func (r *Reconciler) gangPlaced(ctx context.Context, namespace string, id blueprint.CliqueIdentity) (bool, error) {
	if id.Gang == "" {
		return false, nil
	}
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{
		labels.PartOfKey: id.PodCliqueSet, labels.PodGangKey: id.Gang, labels.AttemptKey: strconv.Itoa(id.Attempt),
	}); err != nil {
		return false, fmt.Errorf("listing the pods of gang %s/%s: %w", namespace, id.Gang, err)
	}
	for i := range list.Items {
		if list.Items[i].Spec.NodeName != "" {
			return true, nil
		}
	}
	return false, nil
}

// baseGangNodes lists the labels of the nodes the pods of the clique's
// replica's base gang, in the same run, are bound to (one entry per bound
// pod), for blueprint.BaseGangHold. Nodes are read as metadata, from the
// cache; a node gone since is skipped.
func (r *Reconciler) baseGangNodes(ctx context.Context, namespace string, id blueprint.CliqueIdentity) ([]map[string]string, error) {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{
		labels.PartOfKey: id.PodCliqueSet, labels.PodGangKey: naming.BaseGang(id.PodCliqueSet, id.Replica), labels.AttemptKey: strconv.Itoa(id.Attempt),
	}); err != nil {
		return nil, fmt.Errorf("listing the pods of base gang %s/%s: %w", namespace, naming.BaseGang(id.PodCliqueSet, id.Replica), err)
	}
	var out []map[string]string
	for i := range list.Items {
		name := list.Items[i].Spec.NodeName
		if name == "" {
			continue
		}
		node := &metav1.PartialObjectMetadata{}
		node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading node %s of base gang %s/%s: %w", name, namespace, naming.BaseGang(id.PodCliqueSet, id.Replica), err)
		}
		out = append(out, node.Labels)
	}
	return out, nil
}

// blockedOnServer re-reads the PodCliqueSet and the PodClique from the API
// server, bypassing the cache, in a pass that would create pods, and says why
// no pod may be created, or "" when pods may be. Each pass creates a bounded
// number of pods and asks again, so a deleted, replaced, recreating or ended
// owner stops pod creation within one pass, even while the cache has not
// caught up (the pod, PodClique and PodCliqueSet informers are independent:
// the cache may show the pods gone before it shows why).
func (r *Reconciler) blockedOnServer(ctx context.Context, pclq *copsev1alpha1.PodClique, id blueprint.CliqueIdentity) (string, error) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: id.PodCliqueSet}, pcs); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("reading PodCliqueSet %s/%s from the API server: %w", pclq.Namespace, id.PodCliqueSet, err)
		}
		pcs = nil
	}
	if why := lifecycle.MayCreatePods(lifecycle.ReplicaStateOf(pcs, id.Replica, id.Attempt)); why != "" {
		return why.Message(), nil
	}
	live := &copsev1alpha1.PodClique{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pclq), live); err != nil {
		if apierrors.IsNotFound(err) {
			return "the PodClique is gone", nil
		}
		return "", fmt.Errorf("reading PodClique %s/%s from the API server: %w", pclq.Namespace, pclq.Name, err)
	}
	switch {
	case live.UID != pclq.UID:
		return "the PodClique was replaced", nil
	case live.DeletionTimestamp != nil:
		return "the PodClique is being deleted", nil
	case meta.IsStatusConditionTrue(live.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded):
		return "the PodClique has succeeded", nil
	}
	return "", nil
}

// observeReleases reads whether the namespace is being deleted, only when a
// pod someone else deleted still waits on its outcome finalizer and only a
// namespace deletion would release it: that is rare, and copse caches no
// namespaces.
func (r *Reconciler) observeReleases(ctx context.Context, pclq *copsev1alpha1.PodClique, o *observation) (bool, error) {
	in := releaseInputOf(pclq, o.workload)
	for _, p := range append(slices.Clone(o.owned), o.strays...) {
		if p.HasOutcomeFinalizer && p.Terminating && !outcomeReleasable(p, in) {
			return r.namespaceGoing(ctx, pclq.Namespace)
		}
	}
	return false, nil
}

// namespaceGoing reports whether the namespace is being deleted, read from
// the API server.
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

// claimFacts is what observeClaims read of the clique's own ResourceClaims.
type claimFacts struct {
	// read: the clique's pods get claims of their own and it may have pods,
	// so the rest was read.
	read bool
	// listed are the claims the PodClique controls, by kind.
	listed map[string][]client.Object
	// templates are the external ResourceClaimTemplates the claims are made
	// from; missing those named that do not exist.
	templates resourcesharing.External
	missing   []types.NamespacedName
}

// observeClaims reads the clique's own ResourceClaims and the templates
// they are made from, when its pods get claims of their own and it may
// have pods (not being deleted, its PodCliqueSet found, its labels read).
func (r *Reconciler) observeClaims(ctx context.Context, pclq *copsev1alpha1.PodClique, o *observation) (claimFacts, error) {
	if o.idErr != nil || o.creation.going || o.pcs == nil || len(resourcesharing.References(o.pcs)) == 0 {
		return claimFacts{}, nil
	}
	if template := o.pcs.CliqueTemplate(o.id.Clique); template == nil || len(template.ResourceSharing) == 0 {
		return claimFacts{}, nil
	}
	templates, missing, err := claimtemplates.Read(ctx, r.Client, o.pcs)
	if err != nil {
		return claimFacts{}, err
	}
	selector := k8slabels.SelectorFromSet(labels.Merge(labels.ForPodCliqueSet(o.pcs.Name), map[string]string{labels.PodCliqueKey: pclq.Name}))
	listed, err := children.List(ctx, r.Client, blueprint.CliqueResources(), pclq.Namespace, selector)
	if err != nil {
		return claimFacts{}, fmt.Errorf("resource claims of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	for kind, objs := range listed {
		listed[kind] = children.ControlledBy(objs, map[types.UID]bool{pclq.UID: true})
	}
	return claimFacts{read: true, listed: listed, templates: templates, missing: missing}, nil
}

// unreadyClaims gathers, for the pods of the indices to create, the
// ResourceClaims they refer to (resourcesharing.PodClaims: the
// PodCliqueSet's, the scaling group's and the clique's) that are not usable
// yet: missing from the cache, controlled by another object than the one of
// their level, or being deleted. The pods wait until there are none: a pod
// created earlier would wait unscheduled for a claim that may never come (a
// template not created yet), or join one that is on its way out. The
// clique's own claims are written after the status (claimSets), and
// their creation wakes the clique again (claimToCliques).
func (r *Reconciler) unreadyClaims(ctx context.Context, pclq *copsev1alpha1.PodClique, pcs *copsev1alpha1.PodCliqueSet,
	id blueprint.CliqueIdentity, create []int) ([]string, error) {
	if pcs == nil || len(create) == 0 || len(resourcesharing.References(pcs)) == 0 {
		return nil, nil
	}
	var refs []resourcesharing.Ref
	seen := map[string]claimState{}
	for _, index := range create {
		place := blueprint.PodPlaceOf(blueprint.PodContext{PodCliqueSet: pcs, PodClique: pclq, Identity: id, Index: index})
		for _, ref := range resourcesharing.PodClaims(pcs, place) {
			if _, read := seen[ref.Name]; read {
				continue
			}
			state, err := r.readClaim(ctx, pclq.Namespace, ref.Name)
			if err != nil {
				return nil, err
			}
			seen[ref.Name] = state
			refs = append(refs, ref)
		}
	}
	return claimsWaiting(refs, seen, claimOwners(pcs, pclq, id)), nil
}

// readClaim reads one claim from the cache.
func (r *Reconciler) readClaim(ctx context.Context, namespace, name string) (claimState, error) {
	claim := &resourcev1.ResourceClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim); err != nil {
		if apierrors.IsNotFound(err) {
			return claimState{}, nil
		}
		return claimState{}, fmt.Errorf("read ResourceClaim %s/%s: %w", namespace, name, err)
	}
	state := claimState{exists: true, deleting: !claim.DeletionTimestamp.IsZero()}
	for _, ref := range claim.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			state.controller = ref.UID
		}
	}
	return state, nil
}

// syncExpectations folds the cache's view into the expectations store and
// returns the writes the cache does not show yet.
func (r *Reconciler) syncExpectations(ctx context.Context, key string, pclq *copsev1alpha1.PodClique, pods []podstate.Summary) expectations.Pending {
	present := make([]types.UID, 0, len(pods))
	var terminating []types.UID
	for _, p := range pods {
		present = append(present, p.UID)
		if p.Terminating {
			terminating = append(terminating, p.UID)
		}
	}
	pending := r.Expectations.Sync(key, present, terminating)
	if pending.RecordedForAnotherOwner(pclq.UID) {
		ctrl.LoggerFrom(ctx).Info("forgetting expectations of an earlier PodClique of the same name")
		r.Expectations.Forget(key)
		return expectations.Pending{}
	}
	if !pending.Empty() {
		ctrl.LoggerFrom(ctx).V(1).Info("cache lags behind this controller's writes",
			"pendingCreations", len(pending.Creations), "pendingDeletions", len(pending.Deletions))
	}
	return pending
}

// creatingIndices are the indices of pods created but not yet in the cache.
func creatingIndices(pending expectations.Pending) []int {
	var out []int
	for _, e := range pending.Creations {
		if i, ok := labels.Index(e.Labels, labels.PodIndexKey); ok {
			out = append(out, i)
		}
	}
	return out
}

// deletingUIDs are the pods deleted that the cache still shows alive.
func deletingUIDs(pending expectations.Pending) map[types.UID]bool {
	out := make(map[types.UID]bool, len(pending.Deletions))
	for _, e := range pending.Deletions {
		out[e.UID] = true
	}
	return out
}
