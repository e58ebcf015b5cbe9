package podcliqueset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// observeLostNodes finds the nodes of the pods a restart in place may keep,
// and records those that are gone or being deleted: their pods cannot
// restart where they are. The restart may be decided in this very pass, so
// every active pod's node is read (from the cache's metadata of nodes)
// while the workload restarts in place and has not ended. A kept pod whose
// node goes later is deleted by the pod garbage collector, a failure of the
// new attempt.
func (r *Reconciler) observeLostNodes(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed) error {
	if !obs.records.Training || !pcs.RestartsInPlace() || obs.records.Ended {
		return nil
	}
	for _, p := range obs.pods {
		if p.Node == "" || !p.Active() {
			continue
		}
		if _, seen := obs.lostNodes[p.Node]; seen {
			continue
		}
		lost, err := r.nodeLost(ctx, p.Node)
		if err != nil {
			return err
		}
		if obs.lostNodes == nil {
			obs.lostNodes = map[string]bool{}
		}
		obs.lostNodes[p.Node] = lost
	}
	return nil
}

// nodeLost reports whether the node is gone or being deleted, from the
// cache's metadata of nodes.
func (r *Reconciler) nodeLost(ctx context.Context, name string) (bool, error) {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading node %s: %w", name, err)
	}
	return !node.DeletionTimestamp.IsZero(), nil
}
