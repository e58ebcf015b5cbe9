package podcliquescalinggroup

import (
	"context"
	"errors"
	"fmt"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// converge keeps every row of the group's table (blueprint.GroupResources:
// its claims, then its PodCliques) for each group replica below
// spec.replicas, unless the replica may not have new PodCliques (a Training
// replica being restarted, or whose run was whole already, a workload that
// ended: lifecycle.MayCreatePodCliques) or is being recreated this pass (it
// waits for its old PodCliques to be gone); the objects of group replicas
// at or above spec.replicas are deleted. A Training workload's PodCliques
// never change once created. The writes are internal/children's, within the
// pass's budget.
func (r *Reconciler) converge(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup,
	obs *observed, recreating []int, budget *children.Budget) error {
	skip := map[int]bool{}
	for _, j := range recreating {
		skip[j] = true
	}
	replica, _ := labels.Index(pcsg.Labels, labels.ReplicaKey)
	attempt, _ := labels.Index(pcsg.Labels, labels.AttemptKey)
	mayCreate := lifecycle.MayCreatePodCliques(lifecycle.ReplicaStateOf(pcs, replica, attempt)) == ""
	pass := children.Pass[blueprint.GroupInputs]{
		Rows:     blueprint.GroupResources(),
		Observed: obs.children,
		Replicas: int(pcsg.Spec.Replicas),
		Inputs: func(j int) blueprint.GroupInputs {
			return blueprint.GroupInputs{PodCliqueSet: pcs, ScalingGroup: pcsg, Config: obs.config, Replica: j,
				Packing: obs.packing, ClaimTemplates: obs.claimTemplates}
		},
		MayCreate: func(j int) bool { return mayCreate && !skip[j] },
		Frozen:    pcs.IsTraining(),
	}
	err := r.children().Converge(ctx, pcsg, pass.Sets(), budget)
	if mayCreate && pcsg.Spec.Replicas > 0 {
		if missing := missingCliqueTemplates(pcs, pcsg); missing != nil {
			err = errors.Join(err, fmt.Errorf("cliques %q of scaling group %s are not in PodCliqueSet %s's template", missing, pcsg.Name, pcs.Name))
		}
	}
	return err
}

// missingCliqueTemplates are the group's member cliques that the
// PodCliqueSet's template does not have: they get no PodCliques.
func missingCliqueTemplates(pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup) []string {
	var out []string
	for _, name := range pcsg.Spec.CliqueNames {
		if pcs.CliqueTemplate(name) == nil {
			out = append(out, name)
		}
	}
	return out
}

// children is the writer of the group's objects.
func (r *Reconciler) children() children.Writer {
	return children.Writer{Client: r.Client, Scheme: r.Scheme}
}
