package podcliqueset

import (
	"bytes"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/generationhash"
	"github.com/copse-dev/copse/internal/webhook/training"
)

// podTemplateChangeForbidden says why a Training PodCliqueSet's pod
// templates are fixed.
var podTemplateChangeForbidden = fmt.Sprintf(
	"pod template changes are not allowed when %s is %s (they would need a rolling update, which Training workloads do not do)",
	specPath.Child("workloadType"), copsev1alpha1.WorkloadTypeTraining)

// validateTrainingUpdate applies GREP-0285's update rules for Training
// workloads, which are neither scaled nor rolled out while they run:
//
//   - The replica counts of the template's cliques and scaling groups cannot
//     change: they are the replica counts of the PodCliques and
//     PodCliqueScalingGroups, which are immutable for Training, and a
//     restarted replica would be created with the new counts.
//     (spec.replicas itself is checked by the CRD.)
//   - The generation hash (package generationhash) cannot change: that
//     would be a rolling update.
//   - trainingSpec.startsAfterSucceeded cannot change: it decides the gangs.
//
// One window is open, as the Job API opens it for suspended Jobs (KEP-2926,
// mutable scheduling directives): while a workload is suspended with no
// run in progress (PodCliqueSet.SchedulingDirectivesMutable), the
// scheduling directives of its pod templates may change, and nothing else
// of them. That is what a queue's admission or a TrainJob's runtimePatches
// change before the workload (re)starts; the pods of the next run are
// built from the new templates, and no running pod is affected.
//
// The rules apply when either object is Training; the CRD keeps
// workloadType from changing.
func validateTrainingUpdate(old, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if !old.IsTraining() && !pcs.IsTraining() {
		return nil
	}
	errs := validateTemplateReplicasUnchanged(old, pcs)
	errs = append(errs, validateStartsAfterSucceededUnchanged(old, pcs)...)
	return append(errs, validateGenerationHashUnchanged(old, pcs)...)
}

func validateTemplateReplicasUnchanged(old, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	detail := fmt.Sprintf("is immutable when %s is %s", specPath.Child("workloadType"), copsev1alpha1.WorkloadTypeTraining)
	oldCliqueReplicas := map[string]int32{}
	for _, clique := range old.Spec.Template.Cliques {
		if clique != nil {
			oldCliqueReplicas[clique.Name] = clique.Spec.Replicas
		}
	}
	var errs field.ErrorList
	for i, clique := range pcs.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		// Added cliques are reported by validateImmutableFields.
		if replicas, existed := oldCliqueReplicas[clique.Name]; existed && replicas != clique.Spec.Replicas {
			errs = append(errs, field.Forbidden(cliquesPath.Index(i).Child("spec", "replicas"), detail))
		}
	}
	oldGroupReplicas := map[string]int32{}
	for _, group := range old.Spec.Template.PodCliqueScalingGroupConfigs {
		oldGroupReplicas[group.Name] = copsev1alpha1.ScalingGroupReplicas(group)
	}
	for g, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		replicas, existed := oldGroupReplicas[group.Name]
		if existed && replicas != copsev1alpha1.ScalingGroupReplicas(group) {
			errs = append(errs, field.Forbidden(groupsPath.Index(g).Child("replicas"), detail))
		}
	}
	return errs
}

// validateGenerationHashUnchanged rejects an update that changes the
// generation hash, naming each clique and field that changed it: a clique's
// labels, annotations or podSpec, or spec.template.priorityClassName when
// the pods of a clique take it (their podSpec has none of its own).
//
// Cliques that were added or removed also change the hash; they are not
// reported here, since validateImmutableFields rejects them already.
func validateGenerationHashUnchanged(old, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	forbidden := podTemplateChangeForbidden
	if old.SchedulingDirectivesMutable() {
		old, pcs = withoutSchedulingDirectives(old), withoutSchedulingDirectives(pcs)
		forbidden = podTemplateChangeWhileSuspended
	}
	if generationhash.GenerationHash(old) == generationhash.GenerationHash(pcs) {
		return nil
	}
	oldByName := map[string]int{}
	for i, clique := range old.Spec.Template.Cliques {
		if clique != nil {
			oldByName[clique.Name] = i
		}
	}
	var errs field.ErrorList
	var takePriorityClass []string
	cliqueSetChanged := false
	for i, clique := range pcs.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		j, existed := oldByName[clique.Name]
		if !existed {
			cliqueSetChanged = true
			continue
		}
		oldClique := old.Spec.Template.Cliques[j]
		before, after := generationhash.Clique(old, oldClique), generationhash.Clique(pcs, clique)
		if sameInput(before, after) {
			continue
		}
		path := cliquesPath.Index(i)
		if !sameInput(before.Labels, after.Labels) {
			errs = append(errs, field.Forbidden(path.Child("labels"), forbidden))
		}
		if !sameInput(before.Annotations, after.Annotations) {
			errs = append(errs, field.Forbidden(path.Child("annotations"), forbidden))
		}
		switch {
		case !sameInput(oldClique.Spec.PodSpec, clique.Spec.PodSpec):
			errs = append(errs, field.Forbidden(path.Child("spec", "podSpec"), forbidden))
		case !sameInput(before.PodSpec, after.PodSpec):
			// The podSpec is as it was, so the priority class it
			// inherits from the template changed.
			takePriorityClass = append(takePriorityClass, clique.Name)
		}
	}
	if len(takePriorityClass) > 0 {
		errs = append(errs, field.Forbidden(templatePath.Child("priorityClassName"), fmt.Sprintf(
			"%s; it is the priority class of the pods of clique(s) %q", forbidden, takePriorityClass)))
	}
	if len(errs) == 0 && len(old.Spec.Template.Cliques) == len(pcs.Spec.Template.Cliques) && !cliqueSetChanged {
		// Every change of the hash's inputs is attributed above; this is a
		// safety net so that a new input cannot slip through unreported.
		errs = append(errs, field.Forbidden(cliquesPath, forbidden))
	}
	return errs
}

// podTemplateChangeWhileSuspended says what may change in the window.
var podTemplateChangeWhileSuspended = fmt.Sprintf(
	"while a %s workload is suspended and not running, only the scheduling directives of its pod templates may change "+
		"(labels, annotations, nodeSelector, tolerations, affinity, schedulingGates)",
	copsev1alpha1.WorkloadTypeTraining)

// withoutSchedulingDirectives is a copy of pcs without what may change in
// the window: its cliques' pod labels and annotations, and where their pods
// are placed and when they may be scheduled (the Job API's mutable
// scheduling directives).
func withoutSchedulingDirectives(pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
	out := pcs.DeepCopy()
	for _, clique := range out.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		clique.Labels, clique.Annotations = nil, nil
		spec := &clique.Spec.PodSpec
		spec.NodeSelector, spec.Tolerations, spec.Affinity, spec.SchedulingGates = nil, nil, nil, nil
	}
	return out
}

// sameInput compares two hash inputs the way the generation hash does.
func sameInput(a, b any) bool {
	return bytes.Equal(generationhash.Canonical(a), generationhash.Canonical(b))
}

// validateTrainingPods requires restartPolicy Never (or unset, which the
// defaulting webhook makes Never) on every clique of a Training workload.
func validateTrainingPods(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if !pcs.IsTraining() {
		return nil
	}
	var errs field.ErrorList
	for i, clique := range pcs.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		if policy := clique.Spec.PodSpec.RestartPolicy; policy != "" && policy != corev1.RestartPolicyNever {
			errs = append(errs, training.RestartPolicyMustBeNever(cliquesPath.Index(i).Child("spec", "podSpec", "restartPolicy"), policy))
		}
	}
	return errs
}

// successPolicyPath is where the success policy is reported.
var successPolicyPath = specPath.Child("trainingSpec", "successPolicy")

// validateSuccessPolicy requires every target of trainingSpec.successPolicy
// to name a clique template: a replica's PodCliques are made from those,
// and a target matching none could never be met (All) or would silently
// never count (Any). The CRD allows trainingSpec for Training only.
func validateSuccessPolicy(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if pcs.Spec.TrainingSpec == nil || pcs.Spec.TrainingSpec.SuccessPolicy == nil {
		return nil
	}
	return validateTargetCliques(pcs, successPolicyPath.Child("targetCliques"), pcs.Spec.TrainingSpec.SuccessPolicy.TargetCliques)
}

var failureRulesPath = specPath.Child("trainingSpec", "failurePolicy", "rules")

// validateFailurePolicy requires each failure rule's targetCliques to name
// clique templates: a rule whose target matches none would never apply,
// and the failures it was written for would restart and count instead.
func validateFailurePolicy(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if pcs.Spec.TrainingSpec == nil || pcs.Spec.TrainingSpec.FailurePolicy == nil {
		return nil
	}
	var errs field.ErrorList
	for i, rule := range pcs.Spec.TrainingSpec.FailurePolicy.Rules {
		errs = append(errs, validateTargetCliques(pcs, failureRulesPath.Index(i).Child("targetCliques"), rule.TargetCliques)...)
		if rule.Action == copsev1alpha1.FailureActionIgnore {
			errs = append(errs, validateIgnoreTargets(pcs, failureRulesPath.Index(i), rule.TargetCliques)...)
		}
	}
	return errs
}

// validateIgnoreTargets requires the cliques an Ignore rule applies to
// (every clique when it names none) to tolerate failures: minAvailable below
// replicas. A gang clique (minAvailable = replicas) is below minAvailable
// the moment a pod fails, ignored or not, and its replica restarts: the rule
// would promise what the gang cannot keep.
func validateIgnoreTargets(pcs *copsev1alpha1.PodCliqueSet, path *field.Path, targets []string) field.ErrorList {
	var errs field.ErrorList
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil || (len(targets) > 0 && !slices.Contains(targets, clique.Name)) {
			continue
		}
		if minAvailable := ptr.Deref(clique.Spec.MinAvailable, clique.Spec.Replicas); minAvailable >= clique.Spec.Replicas {
			errs = append(errs, field.Invalid(path.Child("action"), copsev1alpha1.FailureActionIgnore, fmt.Sprintf(
				"Ignore applies only to cliques that tolerate failures, minAvailable below replicas; clique %q has minAvailable %d of %d replicas "+
					"(name the tolerant cliques in targetCliques, or use RestartReplicaWithoutCount)", clique.Name, minAvailable, clique.Spec.Replicas)))
		}
	}
	return errs
}

// validateTargetCliques requires each target to name a clique template.
func validateTargetCliques(pcs *copsev1alpha1.PodCliqueSet, path *field.Path, targets []string) field.ErrorList {
	var names []string
	known := map[string]bool{}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			names = append(names, clique.Name)
			known[clique.Name] = true
		}
	}
	var errs field.ErrorList
	for i, target := range targets {
		if !known[target] {
			errs = append(errs, field.Invalid(path.Index(i), target,
				fmt.Sprintf("must name a clique of %s: one of %q", cliquesPath, names)))
		}
	}
	return errs
}
