package podclique

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
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
}

// observe gathers the PodClique's pods (syncing the expectations), its
// PodCliqueSet, its completion and start order, and the causes that hold
// its whole plan (creationState.planHeld).
func (r *Reconciler) observe(ctx context.Context, key string, pclq *copsev1alpha1.PodClique, now time.Time) (*observation, error) {
	owned, strays, err := r.podsOf(ctx, pclq.Namespace, pclq.Name, string(pclq.UID))
	if err != nil {
		return nil, err
	}
	o := &observation{key: key, owned: owned, strays: strays}
	o.pending = r.syncExpectations(ctx, key, pclq, owned)
	o.id, o.idErr = blueprint.IdentityOf(pclq)
	if o.pcs, err = r.podCliqueSet(ctx, pclq.Namespace, pclq.Labels[labels.PartOfKey]); err != nil {
		return nil, err
	}
	replica := lifecycle.ReplicaStateOf(o.pcs, o.id.Replica, o.id.Attempt)
	o.workload = workloadStateOf(o.pcs, replica)
	if o.workload.training() {
		o.completion = lifecycle.CliqueCompletion(int(pclq.Spec.Replicas), pclq.Status.SucceededIndexes, pclq.Status.LastSucceededTime, owned)
		o.ignored = lifecycle.IgnoredFailures(o.pcs.FailurePolicy(), pclq.Labels[labels.CliqueTemplateKey], owned)
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
	return o, nil
}

// observeCreation gathers the prerequisites of the pods the plan would
// create (none when a cause holds the plan): the ResourceClaims they refer
// to, and the placement of the base gang they are held with.
func (r *Reconciler) observeCreation(ctx context.Context, pclq *copsev1alpha1.PodClique, o *observation, create []int) error {
	o.creation.planned = len(create)
	if len(create) == 0 || o.creation.planHeld() {
		return nil
	}
	var err error
	if o.creation.waitingForClaims, err = r.unreadyClaims(ctx, pclq, o.pcs, o.id, create); err != nil {
		return err
	}
	holdKey := blueprint.BaseGangHoldKey(pclq, o.id)
	if holdKey == "" {
		return nil
	}
	boundNodes, err := r.baseGangNodes(ctx, pclq.Namespace, o.id)
	if err != nil {
		return err
	}
	var wait bool
	if o.holdIn, wait = blueprint.BaseGangHold(holdKey, boundNodes); wait {
		o.creation.waitingForBaseGang = naming.BaseGang(o.id.PodCliqueSet, o.id.Replica)
	}
	return nil
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

// blockedOnServer re-reads the PodCliqueSet and the PodClique from the API
// server, bypassing the cache, just before pods are created, and says why
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
