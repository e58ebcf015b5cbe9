package podcliqueset

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// converge makes every replica that may run (lifecycle.MayCreatePods) have
// exactly the objects each row of the resource table wants for it, and the
// PodCliqueSet the objects its rows want for it as a whole (their Shared
// ones): missing ones are created, ones a row no longer wants (a scaled-in
// group's gang) are deleted, and existing ones of a row with a Refresh are
// brought to the template (never a Training workload's). Replicas at or
// beyond spec.replicas lose all their objects. Objects a scaling group
// controls are left to it. The writes are internal/children's, within the
// pass's budget.
func (r *Reconciler) converge(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, obs *observed, budget *children.Budget) error {
	groupReplicas := obs.groupReplicas()
	pass := children.Pass[blueprint.ReplicaInputs]{
		Rows:     r.resources(),
		Observed: obs.children,
		Replicas: int(pcs.Spec.Replicas),
		Inputs: func(replica int) blueprint.ReplicaInputs {
			in := blueprint.ReplicaInputs{PodCliqueSet: pcs, Replica: replica, GroupReplicas: groupReplicas,
				Packing: obs.packing, ClaimTemplates: obs.claimTemplates}
			if replica != children.NoReplica {
				in.Attempt = lifecycle.CurrentAttempt(pcs, replica)
			}
			return in
		},
		MayCreate: func(replica int) bool {
			why := lifecycle.MayCreatePods(lifecycle.ReplicaStateOf(pcs, replica, -1))
			if why != "" {
				log.FromContext(ctx).V(1).Info("not converging replica", "replica", replica, "reason", why)
			}
			return why == ""
		},
		Frozen: pcs.IsTraining(),
	}
	return r.children().Converge(ctx, pcs, pass.Sets(), budget)
}

// children is the writer of the PodCliqueSet's objects.
func (r *Reconciler) children() children.Writer {
	return children.Writer{Client: r.Client, Scheme: r.Scheme}
}
