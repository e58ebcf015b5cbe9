package podcliqueset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// children are the objects that exist for a PodCliqueSet, as the cache sees
// them. Standalone PodCliques and scaling groups are controlled by the
// PodCliqueSet; grouped PodCliques by their scaling group, and are found
// through the labels every generated object carries.
type children struct {
	services      []corev1.Service
	scalingGroups []copsev1alpha1.PodCliqueScalingGroup
	// podCliques holds standalone and grouped PodCliques alike.
	podCliques []copsev1alpha1.PodClique
	// pods are every pod labelled as part of the PodCliqueSet.
	pods []corev1.Pod
}

// activePods are the pods that have not ended, terminating ones included:
// until they are gone they still hold their GPUs.
func (c *children) activePods() []*corev1.Pod {
	var out []*corev1.Pod
	for i := range c.pods {
		if p := &c.pods[i]; p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

func (r *Reconciler) observe(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) (*children, error) {
	selector := client.MatchingLabelsSelector{Selector: labels.SelectPodCliqueSet(pcs.Name)}
	ns := client.InNamespace(pcs.Namespace)
	out := &children{}

	var services corev1.ServiceList
	if err := r.Client.List(ctx, &services, ns, selector); err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	for _, svc := range services.Items {
		if metav1.IsControlledBy(&svc, pcs) {
			out.services = append(out.services, svc)
		}
	}

	var groups copsev1alpha1.PodCliqueScalingGroupList
	if err := r.Client.List(ctx, &groups, ns, selector); err != nil {
		return nil, fmt.Errorf("list PodCliqueScalingGroups: %w", err)
	}
	groupUIDs := map[string]bool{}
	for _, g := range groups.Items {
		if metav1.IsControlledBy(&g, pcs) {
			out.scalingGroups = append(out.scalingGroups, g)
			groupUIDs[string(g.UID)] = true
		}
	}

	var cliques copsev1alpha1.PodCliqueList
	if err := r.Client.List(ctx, &cliques, ns, selector); err != nil {
		return nil, fmt.Errorf("list PodCliques: %w", err)
	}
	for _, c := range cliques.Items {
		owner := metav1.GetControllerOf(&c)
		if owner != nil && (owner.UID == pcs.UID || groupUIDs[string(owner.UID)]) {
			out.podCliques = append(out.podCliques, c)
		}
	}

	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, ns, selector); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out.pods = pods.Items
	return out, nil
}

// ofReplica returns the objects of one replica, across kinds, as the
// generic objects a recreation deletes.
func (c *children) ofReplica(replica int) []client.Object {
	var out []client.Object
	for i := range c.scalingGroups {
		if replicaOf(&c.scalingGroups[i]) == replica {
			out = append(out, &c.scalingGroups[i])
		}
	}
	for i := range c.podCliques {
		if replicaOf(&c.podCliques[i]) == replica {
			out = append(out, &c.podCliques[i])
		}
	}
	return out
}

// replicaOf reads an object's replica index label; -1 when it has none,
// which matches no replica.
func replicaOf(obj client.Object) int {
	if i, ok := labels.Index(obj.GetLabels(), labels.ReplicaKey); ok {
		return i
	}
	return -1
}

// isStandalone tells a PodClique the PodCliqueSet controls from one a
// scaling group controls.
func isStandalone(pcs *copsev1alpha1.PodCliqueSet, pclq *copsev1alpha1.PodClique) bool {
	return metav1.IsControlledBy(pclq, pcs)
}
