package podcliqueset

import (
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// convergeSets are the sets that make every replica that may run
// (lifecycle.MayCreatePods) have exactly the objects each row of the
// resource table wants for it, and the PodCliqueSet the objects its rows
// want for it as a whole (their Shared ones): missing ones are created, ones
// a row no longer wants (a scaled-in group's gang) are deleted, and existing
// ones of a row with a Refresh are brought to the template (never a Training
// workload's). Replicas at or beyond spec.replicas lose all their objects.
// Objects a scaling group controls are left to it.
func convergeSets(pcs *copsev1alpha1.PodCliqueSet, rec lifecycle.Records, obs *observed, rows []blueprint.ReplicaResource) []children.Set {
	groupReplicas := obs.groupReplicas()
	pass := children.Pass[blueprint.ReplicaInputs]{
		Rows:     rows,
		Observed: obs.children,
		Replicas: int(pcs.Spec.Replicas),
		Inputs: func(replica int) blueprint.ReplicaInputs {
			in := blueprint.ReplicaInputs{PodCliqueSet: pcs, Replica: replica, GroupReplicas: groupReplicas,
				Packing: obs.packing, ClaimTemplates: obs.claimTemplates}
			if replica != children.NoReplica {
				in.Attempt = rec.Attempt(replica)
			}
			return in
		},
		MayCreate: func(replica int) bool {
			return lifecycle.MayCreatePods(rec.Replica(replica, -1)) == ""
		},
		Frozen: pcs.IsTraining(),
	}
	sets := pass.Sets()
	for i := range sets {
		sets[i].Step = string(errCodeSyncChildren)
	}
	return sets
}
