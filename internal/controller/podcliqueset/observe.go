package podcliqueset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/resourcesharing"
	"github.com/copse-dev/copse/internal/topology"
)

// observed is what exists for a PodCliqueSet, as the cache shows it.
type observed struct {
	// byKind holds, per row of the resource table, the objects controlled
	// by the PodCliqueSet or by one of its scaling groups.
	byKind map[string][]client.Object
	// podCliques and scalingGroups are the typed views of their rows;
	// podCliques holds standalone and grouped PodCliques alike.
	podCliques    []*copsev1alpha1.PodClique
	scalingGroups []*copsev1alpha1.PodCliqueScalingGroup
	// pods are every pod labelled as part of the PodCliqueSet.
	pods []podstate.Summary
	// packing is the topology packing objects built this pass get
	// (topology.Lookup); packingProblems are the constraints left out of it.
	packing         topology.Resolved
	packingProblems []topology.Problem
	// claimTemplates are the ResourceClaimTemplate objects resourceSharing
	// names; missingClaimTemplates those that do not exist yet.
	claimTemplates        resourcesharing.External
	missingClaimTemplates []types.NamespacedName
	// deletedMembers holds, per Training replica, the members of its whole
	// run that were deleted from outside (observeDeletedMembers).
	deletedMembers map[int]deletedMembers
}

// observe lists every row of the resource table and the pods, and reads
// the ClusterTopologyBinding the constraints name. Scaling groups are listed
// first: grouped PodCliques are controlled by them.
func (r *Reconciler) observe(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) (*observed, error) {
	selector := client.MatchingLabelsSelector{Selector: labels.SelectPodCliqueSet(pcs.Name)}
	ns := client.InNamespace(pcs.Namespace)
	out := &observed{byKind: map[string][]client.Object{}}
	packing, problems, err := topology.Lookup(ctx, r.Client, r.APIReader, pcs, r.TopologyAwareScheduling)
	if err != nil {
		return nil, err
	}
	out.packing, out.packingProblems = packing, problems
	if out.claimTemplates, out.missingClaimTemplates, err = resourcesharing.Gather(ctx, r.Client, pcs); err != nil {
		return nil, err
	}
	owners := map[types.UID]bool{pcs.UID: true}

	for _, row := range r.resources() {
		list := row.NewList()
		if err := r.Client.List(ctx, list, ns, selector); err != nil {
			return nil, fmt.Errorf("list %ss: %w", row.Kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, fmt.Errorf("read the list of %ss: %w", row.Kind, err)
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok {
				continue
			}
			if ref := metav1.GetControllerOfNoCopy(obj); ref == nil || !owners[ref.UID] {
				continue
			}
			out.byKind[row.Kind] = append(out.byKind[row.Kind], obj)
			switch o := obj.(type) {
			case *copsev1alpha1.PodCliqueScalingGroup:
				out.scalingGroups = append(out.scalingGroups, o)
				owners[o.UID] = true
			case *copsev1alpha1.PodClique:
				out.podCliques = append(out.podCliques, o)
			}
		}
	}

	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, ns, selector); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out.pods = make([]podstate.Summary, 0, len(pods.Items))
	for i := range pods.Items {
		out.pods = append(out.pods, podstate.Of(&pods.Items[i]))
	}
	return out, nil
}

// resources is the resource table: the optional features' rows, copse's
// rows and the scheduler backend's. The order matters for observe: scaling
// groups before PodCliques.
func (r *Reconciler) resources() []blueprint.ReplicaResource {
	rows := append([]blueprint.ReplicaResource(nil), r.Resources...)
	rows = append(rows, blueprint.ReplicaResources()...)
	return append(rows, r.Backend.ReplicaResources()...)
}

// ofReplica returns the objects of one replica in row kind; replica -1
// returns those of no replica (a row's Shared objects, and objects of the
// kind that a scaling group controls).
func (o *observed) ofReplica(kind string, replica int) []client.Object {
	var out []client.Object
	for _, obj := range o.byKind[kind] {
		if replicaOf(obj) == replica {
			out = append(out, obj)
		}
	}
	return out
}

// groupReplicas are the live replica counts of the scaling groups, by
// object name, for building gangs.
func (o *observed) groupReplicas() map[string]int32 {
	out := map[string]int32{}
	for _, g := range o.scalingGroups {
		out[g.Name] = g.Spec.Replicas
	}
	return out
}

// activePods are the pods that have not ended, terminating ones included:
// until they are gone they still hold their GPUs.
func (o *observed) activePods() []podstate.Summary {
	var out []podstate.Summary
	for _, p := range o.pods {
		if p.HoldsNode() {
			out = append(out, p)
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

// attemptOf reads an object's attempt label; 0 when it has none.
func attemptOf(obj client.Object) int {
	i, _ := labels.Index(obj.GetLabels(), labels.AttemptKey)
	return i
}

// uids are the UIDs of every observed object of the resource table.
func (o *observed) uids() map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, objs := range o.byKind {
		for _, obj := range objs {
			out[obj.GetUID()] = true
		}
	}
	return out
}

// currentRuns holds the replicas that still have objects of their current
// run that a suspension deletes (rows, a kind that makes pods) or pods of
// it.
func (o *observed) currentRuns(pcs *copsev1alpha1.PodCliqueSet, rows []blueprint.ReplicaResource) map[int]bool {
	out := map[int]bool{}
	for _, row := range rows {
		if !row.DeletedBy(copsev1alpha1.RecreationReasonSuspension) {
			continue
		}
		for _, obj := range o.byKind[row.Kind] {
			if r := replicaOf(obj); r >= 0 && attemptOf(obj) == int(lifecycle.CurrentAttempt(pcs, r)) {
				out[r] = true
			}
		}
	}
	for _, p := range o.pods {
		if p.Attempt == int(lifecycle.CurrentAttempt(pcs, p.Replica)) {
			out[p.Replica] = true
		}
	}
	return out
}
