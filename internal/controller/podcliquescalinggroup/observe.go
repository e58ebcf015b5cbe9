package podcliquescalinggroup

import (
	"context"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/resourcesharing"
	"github.com/copse-dev/copse/internal/topology"
)

// facts is everything one pass reads, and the time it decides at: the
// pass decides and writes from these alone, reading nothing after them.
type facts struct {
	pcsg *copsev1alpha1.PodCliqueScalingGroup
	// pcs is the PodCliqueSet that controls the group.
	pcs *copsev1alpha1.PodCliqueSet
	obs *observed
	now time.Time
}

// observeAll makes every read of the pass: the controlling PodCliqueSet,
// then what exists for the group (observe). It returns nil facts when the
// group has no live controlling PodCliqueSet: there is nothing to do then.
func (r *Reconciler) observeAll(ctx context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup) (*facts, error) {
	pcs, err := r.owningPodCliqueSet(ctx, pcsg)
	if err != nil || pcs == nil {
		return nil, err
	}
	obs, err := r.observe(ctx, pcs, pcsg)
	if err != nil {
		return nil, err
	}
	return &facts{pcsg: pcsg, pcs: pcs, obs: obs, now: r.now()}, nil
}

// owningPodCliqueSet returns the PodCliqueSet that controls the group, or
// nil when it is gone or is not the controller (nothing to do then).
func (r *Reconciler) owningPodCliqueSet(ctx context.Context, pcsg *copsev1alpha1.PodCliqueScalingGroup) (*copsev1alpha1.PodCliqueSet, error) {
	owner := metav1.GetControllerOf(pcsg)
	if owner == nil || owner.Kind != "PodCliqueSet" {
		return nil, nil
	}
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pcsg.Namespace, Name: owner.Name}, pcs); err != nil {
		if err = client.IgnoreNotFound(err); err != nil {
			return nil, fmt.Errorf("read PodCliqueSet %s/%s, the controller of %s: %w", pcsg.Namespace, owner.Name, pcsg.Name, err)
		}
		return nil, nil
	}
	if pcs.UID != owner.UID || !pcs.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return pcs, nil
}

// observed is what exists for a scaling group, as the cache shows it.
type observed struct {
	// children holds the objects of every row of the group's table that the
	// group controls, by kind and group replica (children.NoReplica: of
	// none).
	children children.Observed
	// cliques are its PodCliques, for its status.
	cliques []copsev1alpha1.PodClique
	// config is the template's scaling group the object was made from; nil
	// when none is.
	config *grovecorev1alpha1.PodCliqueScalingGroupConfig
	// packing is the PodCliqueSet's topology packing; the PodCliqueSet
	// reports the constraints left out, so they are not repeated here.
	packing topology.Resolved
	// claimTemplates are the ResourceClaimTemplate objects the group's
	// resourceSharing names; missingClaimTemplates those that do not exist
	// yet (read only when the group has resourceSharing entries).
	claimTemplates        resourcesharing.External
	missingClaimTemplates []types.NamespacedName
}

// observe lists every row of the group's table (its PodCliques and claims,
// labelled with the group's name), keeps those the group controls and sorts
// them by group replica once; and reads the PodCliqueSet's packing and, when
// the group shares resources, the claim templates.
func (r *Reconciler) observe(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup) (*observed, error) {
	selector := k8slabels.SelectorFromSet(labels.Merge(labels.ForPodCliqueSet(pcs.Name), map[string]string{labels.ScalingGroupKey: pcsg.Name}))
	listed, err := children.List(ctx, r.Client, blueprint.GroupResources(), pcsg.Namespace, selector)
	if err != nil {
		return nil, fmt.Errorf("observe the children of %s/%s: %w", pcsg.Namespace, pcsg.Name, err)
	}
	owners := map[types.UID]bool{pcsg.UID: true}
	for kind, objs := range listed {
		listed[kind] = children.ControlledBy(objs, owners)
	}
	out := &observed{children: children.Index(listed, groupReplicaLabel)}
	for _, obj := range listed[blueprint.GroupPodCliques().Kind] {
		if pclq, ok := obj.(*copsev1alpha1.PodClique); ok {
			out.cliques = append(out.cliques, *pclq)
		}
	}
	if out.packing, _, err = topology.Lookup(ctx, r.Client, r.APIReader, pcs, r.TopologyAwareScheduling); err != nil {
		return nil, fmt.Errorf("observe the topology packing of %s/%s: %w", pcsg.Namespace, pcsg.Name, err)
	}
	replica, _ := labels.Index(pcsg.Labels, labels.ReplicaKey)
	if out.config = resourcesharing.ScalingGroupConfig(pcs, replica, pcsg.Name); out.config != nil && len(out.config.ResourceSharing) > 0 {
		if out.claimTemplates, out.missingClaimTemplates, err = claimtemplates.Read(ctx, r.Client, pcs); err != nil {
			return nil, fmt.Errorf("observe the claim templates of %s/%s: %w", pcsg.Namespace, pcsg.Name, err)
		}
	}
	return out, nil
}

// groupReplicaLabel reads an object's group replica label;
// children.NoReplica when it has none (the group's shared claims).
func groupReplicaLabel(obj client.Object) int {
	if j, ok := labels.Index(obj.GetLabels(), labels.ScalingGroupReplicaKey); ok {
		return j
	}
	return children.NoReplica
}
