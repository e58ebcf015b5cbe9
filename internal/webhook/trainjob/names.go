package trainjob

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/jobset/pkg/util/placement"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/trainjob"
	pcswebhook "github.com/copse-dev/copse/internal/webhook/podcliqueset"
)

var metadataNamePath = field.NewPath("metadata", "name")

// jobSetPodNameSuffix is the room JobSet's webhook keeps for the random
// suffix of a pod name, "-" and five characters.
const jobSetPodNameSuffix = "-abcde"

// validateBackendNames refuses a new TrainJob whose name is too long for
// the object its runtime's backend makes of it, naming metadata.name, the
// backend and the limit: otherwise the TrainJob would be admitted and its
// JobSet or PodCliqueSet refused on every attempt. The backend object is
// built from the TrainJob as the controller builds it, and its names are
// checked by the backend's own rules:
//
//   - PodCliqueSet: the PodCliqueSet webhook's name rules
//     (podcliqueset.ValidateNames, podcliqueset.MaxNameLength: hostnames of
//     <trainjob>-0-<job>-<index> with room for five digits of index), so the
//     two webhooks can never disagree;
//   - JobSet: JobSet v0.12.0's webhook rules (jobSetNameErrors), tighter than
//     the CRD's 63 characters.
//
// A plan that cannot be built is left to the other rules and to the
// controller (TrainingRuntimeNotSupported).
func validateBackendNames(tj *trainerv1alpha1.TrainJob, runtime trainjob.Runtime) field.ErrorList {
	backend := trainjob.BackendOf(&runtime.Spec)
	var limit int
	var why string
	if backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		// The packing does not change a name, so the bindings are not read.
		plan, err := trainjob.PlanPodCliqueSet(tj, runtime, trainjob.KeepTopology(nil))
		if err != nil {
			return nil
		}
		pcs := trainjob.BuildPodCliqueSet(plan)
		limit = pcswebhook.MaxNameLength(pcs)
		var details []string
		for _, err := range pcswebhook.ValidateNames(pcs) {
			details = append(details, err.Detail)
		}
		why = strings.Join(details, "; ")
	} else {
		plan, err := trainjob.PlanJobSet(tj, runtime)
		if err != nil {
			return nil
		}
		jobSet := trainjob.BuildJobSet(plan)
		limit = jobSetMaxNameLength(jobSet)
		why = strings.Join(jobSetNameErrors(jobSet), "; ")
	}
	if len(tj.Name) <= limit {
		return nil
	}
	return field.ErrorList{field.Invalid(metadataNamePath, tj.Name, fmt.Sprintf(
		"must be no more than %d characters for %s %s, whose backend is %s (the %s is named after the TrainJob): %s",
		limit, runtime.Kind, runtime.Name, backend, backend, why))}
}

// jobSetNameErrors are the rules of names JobSet v0.12.0's webhook applies
// to a JobSet, after its defaulting (an unset completionMode is Indexed),
// with JobSet's own name functions: each replicated job's last Job,
// <jobset>-<job>-<replica>, must be a DNS-1035 label, and so must, for an
// indexed Job with completions, its last pod's name with the room of its
// random suffix, <jobset>-<job>-<replica>-<index>-xxxxx.
func jobSetNameErrors(js *jobsetv1alpha2.JobSet) []string {
	var errs []string
	for _, rjob := range js.Spec.ReplicatedJobs {
		lastJob := int(rjob.Replicas - 1)
		jobName := placement.GenJobName(js.Name, rjob.Name, lastJob)
		if msgs := validation.IsDNS1035Label(jobName); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("JobSet would name the Job %q: %s", jobName, strings.Join(msgs, "; ")))
		}
		job := rjob.Template.Spec
		indexed := ptr.Deref(job.CompletionMode, batchv1.IndexedCompletion) == batchv1.IndexedCompletion
		if !indexed || job.Completions == nil {
			continue
		}
		podName := placement.GenPodName(js.Name, rjob.Name, strconv.Itoa(lastJob), strconv.Itoa(int(*job.Completions-1))) + jobSetPodNameSuffix
		if msgs := validation.IsDNS1035Label(podName); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("JobSet would name a pod like %q: %s", podName, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

// jobSetMaxNameLength is the longest name js could have without breaking
// jobSetNameErrors, found by trying the rules on names of every length.
func jobSetMaxNameLength(js *jobsetv1alpha2.JobSet) int {
	probe := js.DeepCopy()
	for n := naming.MaxLabelLength; n > 0; n-- {
		probe.Name = strings.Repeat("a", n)
		if len(jobSetNameErrors(probe)) == 0 {
			return n
		}
	}
	return 0
}
