package podclique

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
)

// observation is what one pass gathers before it decides.
type observation struct {
	// key is the PodClique's expectations key.
	key string
	// owned are the pods the PodClique controls; strays those of an
	// earlier PodClique of the same name.
	owned, strays []podstate.Summary
	// pending are this controller's writes the cache does not show yet.
	pending expectations.Pending
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
