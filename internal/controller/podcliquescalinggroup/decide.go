package podcliquescalinggroup

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ai-dynamo/grove/operator/api/common/constants"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/claimtemplates"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/lifecycle"
)

// passPlan is the pass's plan for the writer, and what is known to be
// wrong before any write (missing templates): it is returned with the
// writes' errors, so that the pass is retried.
type passPlan struct {
	children.PassPlan
	known error
}

// planPass decides everything one pass writes, from its facts alone
// (pure). budget is the writer's write budget: the recreation event names
// only the objects the writer gets to delete within it (settleRecreations).
//
//	status    computed from the group's PodCliques
//	recreate  Inference only: the group replicas whose breach outlasted
//	          terminationDelay; their PodCliques are deleted
//	converge  every row for the group replicas below spec.replicas, but
//	          those being recreated
func planPass(f facts, budget int) passPlan {
	pcsg, pcs, obs := f.pcsg, f.pcs, f.obs
	planned := pcsg.DeepCopy()
	planned.Status = computeStatus(pcsg, obs.cliques)
	updateStatus(&planned.Status, pcsg, generationOf(pcs), obs.cliques, metav1.NewTime(f.now))
	var recreate groupRecreations
	if !pcs.IsTraining() {
		// Training restarts the whole replica instead (the PodCliqueSet
		// controller), since one missing clique stops the job.
		recreate = decideGroupReplicaRecreations(pcsg.MinAvailable(), planned.Status.AvailableReplicas, obs.cliques, pcs.TerminationDelay(), f.now)
	}
	deletions := planRecreations(obs, recreate.replicas)
	sets, missing := convergeSets(pcs, planned, obs, recreate.replicas)
	return passPlan{known: errors.Join(missing, claimtemplates.MissingError(obs.missingClaimTemplates)), PassPlan: children.PassPlan{
		Observed:     pcsg,
		Status:       planned,
		Deletes:      deletionsOf(deletions),
		Objects:      sets,
		RequeueAfter: recreate.requeueAfter,
		Settle:       settleRecreations(pcsg.MinAvailable(), deletions, budget),
	}}
}

// recreation is one object of a recreated group replica to delete.
type recreation struct {
	replica int
	kind    string
	object  client.Object
}

// step is the recreation's own Step: the writer reports each deletion's
// error by it, so settleRecreations knows which deletions went through.
func (d recreation) step() string {
	return fmt.Sprintf("recreate group replica %d (%s %s)", d.replica, d.kind, d.object.GetName())
}

// planRecreations names the objects of the group replicas to recreate that
// are made afresh for a new run (the rows RecreatedWithReplica: their
// PodCliques, not their claims) and are not being deleted yet, in replica
// then row order; converge creates them again on a later pass. The
// decision rests on the cliques' breach conditions, which the API server
// holds, and each deletion names the object's UID, so a crash in between
// repeats nothing: the recreated cliques start with no breach.
func planRecreations(obs *observed, replicas []int) []recreation {
	var out []recreation
	for _, j := range replicas {
		for _, row := range blueprint.GroupResources() {
			if !row.RecreatedWithReplica {
				continue
			}
			for _, obj := range obs.children.Of(row.Kind, j) {
				if obj.GetDeletionTimestamp().IsZero() {
					out = append(out, recreation{replica: j, kind: row.Kind, object: obj})
				}
			}
		}
	}
	return out
}

// deletionsOf are the writer's deletions of the recreations, one each, so
// that each one's error is its own.
func deletionsOf(recreations []recreation) []children.Deletion {
	out := make([]children.Deletion, 0, len(recreations))
	for _, d := range recreations {
		out = append(out, children.Deletion{Step: d.step(), Kind: d.kind, Objects: []client.Object{d.object}})
	}
	return out
}

// convergeSets are the sets that keep every row of the group's table
// (blueprint.GroupResources: its claims, then its PodCliques) for each
// group replica below spec.replicas, unless the replica may not have new
// PodCliques (a Training replica being restarted, or whose run was whole
// already, a workload that ended: lifecycle.MayCreatePodCliques) or is
// being recreated this pass (it waits for its old PodCliques to be gone);
// the objects of group replicas at or above spec.replicas are deleted. A
// Training workload's PodCliques never change once created. It also
// returns the error of member cliques the template lacks.
func convergeSets(pcs *copsev1alpha1.PodCliqueSet, pcsg *copsev1alpha1.PodCliqueScalingGroup,
	obs *observed, recreating []int) ([]children.Set, error) {
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
	var err error
	if mayCreate && pcsg.Spec.Replicas > 0 {
		if missing := missingCliqueTemplates(pcs, pcsg); missing != nil {
			err = fmt.Errorf("cliques %q of scaling group %s are not in PodCliqueSet %s's template", missing, pcsg.Name, pcs.Name)
		}
	}
	return pass.Sets(), err
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

// groupRecreations is which group replicas to recreate now, and when to
// look again for breaches that have not lasted terminationDelay yet.
type groupRecreations struct {
	replicas     []int
	requeueAfter time.Duration
}

// decideGroupReplicaRecreations applies Grove's gang termination at the
// level of one scaling-group replica (Inference): a group replica one of
// whose cliques has been breached (MinAvailableBreached=True) for at least
// delay is recreated on its own, provided the group still has minAvailable
// available replicas without it. Otherwise the group itself is breached,
// and the PodCliqueSet controller recreates the whole PodCliqueSet replica
// instead. available is the group's available replicas (a breached group
// replica is never among them).
func decideGroupReplicaRecreations(minAvailable, available int32, cliques []copsev1alpha1.PodClique, delay time.Duration, now time.Time) groupRecreations {
	var d groupRecreations
	if available < minAvailable {
		return d
	}
	breachedSince := map[int]time.Time{}
	for i := range cliques {
		c := &cliques[i]
		cond := meta.FindStatusCondition(c.Status.Conditions, constants.ConditionTypeMinAvailableBreached)
		j := groupReplicaLabel(c)
		if cond == nil || cond.Status != metav1.ConditionTrue || j < 0 || !c.DeletionTimestamp.IsZero() {
			continue
		}
		if since, seen := breachedSince[j]; !seen || cond.LastTransitionTime.Time.Before(since) {
			breachedSince[j] = cond.LastTransitionTime.Time
		}
	}
	for j, since := range breachedSince {
		remaining := since.Add(delay).Sub(now)
		if remaining <= 0 {
			d.replicas = append(d.replicas, j)
			continue
		}
		if d.requeueAfter == 0 || remaining < d.requeueAfter {
			d.requeueAfter = remaining
		}
	}
	slices.Sort(d.replicas)
	return d
}
