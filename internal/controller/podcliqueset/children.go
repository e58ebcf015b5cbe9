package podcliqueset

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/scheduler"
)

// syncChildren creates the missing Services, PodCliqueScalingGroups and
// standalone PodCliques of every replica, and deletes those of replicas
// beyond spec.replicas. Replicas being recreated are left alone until their
// old objects are gone. Existing objects are not updated: their specs can
// be scaled independently (PodClique and PodCliqueScalingGroup have scale
// subresources), and template changes are not rolled out yet.
func (r *Reconciler) syncChildren(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, observed *children, recreating map[int]bool) error {
	existing := map[string]bool{}
	for i := range observed.services {
		existing["Service/"+observed.services[i].Name] = true
	}
	for i := range observed.scalingGroups {
		existing["PodCliqueScalingGroup/"+observed.scalingGroups[i].Name] = true
	}
	for i := range observed.podCliques {
		existing["PodClique/"+observed.podCliques[i].Name] = true
	}

	grouped := blueprint.GroupedCliques(pcs)
	var desired []client.Object
	for replica := range int(pcs.Spec.Replicas) {
		desired = append(desired, blueprint.ReplicaService(pcs, replica))
		if recreating[replica] {
			continue
		}
		attempt := currentAttempt(pcs, replica)
		for _, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			desired = append(desired, blueprint.ScalingGroup(pcs, replica, group, attempt))
		}
		for _, clique := range pcs.Spec.Template.Cliques {
			if clique != nil && !grouped[clique.Name] {
				desired = append(desired, blueprint.StandalonePodClique(pcs, replica, clique, attempt))
			}
		}
	}

	var errs []error
	for _, obj := range desired {
		if existing[kindOf(obj)+"/"+obj.GetName()] {
			continue
		}
		if err := controllerutil.SetControllerReference(pcs, obj, r.Scheme); err != nil {
			errs = append(errs, fmt.Errorf("owner reference on %s %s: %w", kindOf(obj), obj.GetName(), err))
			continue
		}
		// Names are fixed, so a create repeated on a stale cache fails with
		// AlreadyExists instead of making a second object.
		if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("create %s %s: %w", kindOf(obj), obj.GetName(), err))
		}
	}
	errs = append(errs, r.deleteSurplusReplicas(ctx, pcs, observed))
	return errors.Join(errs...)
}

// deleteSurplusReplicas removes the objects of replicas at or beyond
// spec.replicas, after a scale-in.
func (r *Reconciler) deleteSurplusReplicas(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, observed *children) error {
	var surplus []client.Object
	isSurplus := func(obj client.Object) bool { return replicaOf(obj) >= int(pcs.Spec.Replicas) }
	for i := range observed.services {
		if isSurplus(&observed.services[i]) {
			surplus = append(surplus, &observed.services[i])
		}
	}
	for i := range observed.scalingGroups {
		if isSurplus(&observed.scalingGroups[i]) {
			surplus = append(surplus, &observed.scalingGroups[i])
		}
	}
	for i := range observed.podCliques {
		if isSurplus(&observed.podCliques[i]) && isStandalone(pcs, &observed.podCliques[i]) {
			surplus = append(surplus, &observed.podCliques[i])
		}
	}
	var errs []error
	for _, obj := range surplus {
		if !obj.GetDeletionTimestamp().IsZero() {
			continue
		}
		uid := obj.GetUID()
		if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete %s %s of a removed replica: %w", kindOf(obj), obj.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// syncGangs hands the desired gangs to the scheduler backend. Scaling-group
// replica counts come from the live PodCliqueScalingGroups, which can be
// scaled on their own.
func (r *Reconciler) syncGangs(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, observed *children) error {
	groupReplicas := map[string]int32{}
	for i := range observed.scalingGroups {
		groupReplicas[observed.scalingGroups[i].Name] = observed.scalingGroups[i].Spec.Replicas
	}
	if err := r.Backend.SyncGangs(ctx, pcs, scheduler.DesiredGangs(pcs, groupReplicas)); err != nil {
		return fmt.Errorf("sync gangs with scheduler backend %s: %w", r.Backend.Name(), err)
	}
	return nil
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *copsev1alpha1.PodClique:
		return "PodClique"
	case *copsev1alpha1.PodCliqueScalingGroup:
		return "PodCliqueScalingGroup"
	case *corev1.Service:
		return "Service"
	default:
		return fmt.Sprintf("%T", obj)
	}
}
