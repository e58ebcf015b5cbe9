package trainjob

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// notExpressible is the rule every refusal of the PodCliqueSet backend names.
const notExpressible = "not expressible on the PodCliqueSet backend"

// PodCliqueSetRefusals lists what a runtime's template asks for that a
// Training PodCliqueSet cannot do, each naming the field. Nothing is dropped
// silently: the runtime webhook refuses such a runtime with spec.backend
// PodCliqueSet, and a TrainJob whose snapshot has one fails with
// TrainingRuntimeNotSupported.
//
// A Job's backoffLimit (pod retries inside a Job) has no equivalent: a
// Training PodCliqueSet restarts its whole replica on a failure, within
// failurePolicy.maxRestarts. An unset backoffLimit is therefore ignored and
// 0 (fail at the first failed pod) means the same thing; any other value is
// refused.
func PodCliqueSetRefusals(spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	return podCliqueSetRefusals(&spec.Template.Spec, spec.PodGroupPolicy)
}

func podCliqueSetRefusals(spec *jobsetv1alpha2.JobSetSpec, podGroupPolicy *trainerv1alpha1.PodGroupPolicy) field.ErrorList {
	var errs field.ErrorList
	refuse := func(path *field.Path, why string) {
		errs = append(errs, field.Forbidden(path, notExpressible+": "+why))
	}
	if podGroupPolicy != nil {
		policyPath := field.NewPath("spec", "podGroupPolicy")
		if podGroupPolicy.Coscheduling != nil {
			refuse(policyPath.Child("coscheduling"), "a PodCliqueSet is gang-scheduled by copse (podGroupPolicy.workload or none)")
		}
		if podGroupPolicy.Volcano != nil {
			refuse(policyPath.Child("volcano"), "a PodCliqueSet is gang-scheduled by copse (podGroupPolicy.workload or none)")
		}
	}

	specPath := field.NewPath("spec", "template", "spec")
	_, ruleErrs := failureRulesFrom(spec, specPath)
	errs = append(errs, ruleErrs...)
	if spec.Coordinator != nil {
		refuse(specPath.Child("coordinator"), "no coordinator annotation is written")
	}
	if spec.ManagedBy != nil {
		refuse(specPath.Child("managedBy"), "the PodCliqueSet is run by copse")
	}
	if len(spec.VolumeClaimPolicies) > 0 {
		refuse(specPath.Child("volumeClaimPolicies"), "no shared PersistentVolumeClaims are created; name an existing claim in the pod template's volumes")
	}
	if network := spec.Network; network != nil {
		if network.EnableDNSHostnames != nil && !*network.EnableDNSHostnames {
			refuse(specPath.Child("network", "enableDNSHostnames"), "every pod has a hostname under its replica's headless Service")
		}
		if network.Subdomain != "" {
			refuse(specPath.Child("network", "subdomain"), "the pods' subdomain is the replica's headless Service")
		}
	}
	for i, rjob := range spec.ReplicatedJobs {
		jobPath := specPath.Child("replicatedJobs").Index(i)
		if rjob.Replicas > 1 {
			refuse(jobPath.Child("replicas"), "a replicated job becomes one clique; use parallelism for more pods")
		}
		if rjob.GroupName != "" && rjob.GroupName != "default" {
			refuse(jobPath.Child("groupName"), "cliques have no groups")
		}
		jobRefusals(&rjob.Template.Spec, jobPath.Child("template", "spec"), refuse)
	}
	return errs
}

// jobRefusals are the Job template's fields a clique cannot express.
func jobRefusals(job *batchv1.JobSpec, path *field.Path, refuse func(*field.Path, string)) {
	if ptr.Deref(job.BackoffLimit, 0) != 0 {
		refuse(path.Child("backoffLimit"), "a failed pod restarts the whole replica within failurePolicy.maxRestarts; set 0 or leave it unset")
	}
	if job.BackoffLimitPerIndex != nil {
		refuse(path.Child("backoffLimitPerIndex"), "a failed pod restarts the whole replica")
	}
	if job.MaxFailedIndexes != nil {
		refuse(path.Child("maxFailedIndexes"), "a failed pod restarts the whole replica")
	}
	if job.SuccessPolicy != nil {
		refuse(path.Child("successPolicy"), "a clique succeeds when all its pods have; use the JobSet successPolicy")
	}
	if job.PodReplacementPolicy != nil {
		refuse(path.Child("podReplacementPolicy"), "a replica's new pods are created once its old pods are gone")
	}
	if job.CompletionMode != nil && *job.CompletionMode != batchv1.IndexedCompletion {
		refuse(path.Child("completionMode"), "every pod of a clique has an index")
	}
	if job.Selector != nil || ptr.Deref(job.ManualSelector, false) {
		refuse(path.Child("selector"), "pods are selected by copse's labels")
	}
	if job.ManagedBy != nil {
		refuse(path.Child("managedBy"), "the pods are run by copse")
	}
	if policy := job.Template.Spec.RestartPolicy; policy != "" && policy != corev1.RestartPolicyNever {
		refuse(path.Child("template", "spec", "restartPolicy"), "a Training clique's pods run once (Never); failures restart the replica")
	}
}
