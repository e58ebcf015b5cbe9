package podclique

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/naming"
)

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
