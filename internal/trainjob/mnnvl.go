package trainjob

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// withMNNVLGroup returns a copy of a PodCliqueSet's annotations with the
// TrainJob's grove.io/mnnvl-group annotation, if it has one: on the
// PodCliqueSet backend the PodCliqueSet's MNNVL rules apply (validation,
// inheritance by the cliques, one ComputeDomain per group).
func withMNNVLGroup(annotations map[string]string, trainJob *trainerv1alpha1.TrainJob) map[string]string {
	out := maps.Clone(annotations)
	if group, ok := trainJob.Annotations[mnnvl.GroupAnnotation]; ok {
		out = labels.Merge(out, map[string]string{mnnvl.GroupAnnotation: group})
	}
	return out
}

// AddJobSetMNNVL gives a JobSet backend's build one NVIDIA ComputeDomain for
// the whole TrainJob, named after it and controlled by it, and the domain's
// channel claim on every container of the JobSet's pod templates that
// requests nvidia.com/gpu (mnnvl.AddClaim). Nothing is added when the
// TrainJob opts out (grove.io/mnnvl-group: none) or no container requests
// GPUs. Call it only when the operator's mnnvl.enabled is on.
func AddJobSetMNNVL(objects *JobSetObjects, trainJob *trainerv1alpha1.TrainJob) {
	if trainJob.Annotations[mnnvl.GroupAnnotation] == copsev1alpha1.MNNVLGroupNone {
		return
	}
	takesPart := false
	for i := range objects.JobSet.Spec.ReplicatedJobs {
		podSpec := &objects.JobSet.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
		if mnnvl.AddClaim(podSpec, trainJob.Name) {
			takesPart = true
		}
	}
	if !takesPart {
		return
	}
	objects.ComputeDomain = TrainJobComputeDomain(trainJob)
}

// TrainJobComputeDomain is the ComputeDomain of a TrainJob on the JobSet
// backend: named after it, labelled and controlled as its other objects.
func TrainJobComputeDomain(trainJob *trainerv1alpha1.TrainJob) *unstructured.Unstructured {
	cd := mnnvl.ComputeDomain(trainJob.Namespace, trainJob.Name, labels.Merge(ownedLabels(trainJob),
		map[string]string{labels.ComponentKey: mnnvl.ComponentComputeDomain}))
	cd.SetOwnerReferences(append(cd.GetOwnerReferences(), ControllerReference(trainJob)))
	return cd
}
