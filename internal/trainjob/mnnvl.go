package trainjob

import (
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

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

// TakesPartInMNNVL reports whether a TrainJob opts in to MNNVL: its
// grove.io/mnnvl-group annotation names a group (not "none"), as a
// PodCliqueSet's does in Grove. The TrainJob is the workload its user
// writes; Kubeflow Trainer has no MNNVL API of its own.
func TakesPartInMNNVL(trainJob *trainerv1alpha1.TrainJob) bool {
	return mnnvl.TakesPart(trainJob.Annotations[mnnvl.GroupAnnotation])
}

// AddJobSetMNNVL gives a JobSet backend's build one NVIDIA ComputeDomain for
// the whole TrainJob, <trainjob>-mnnvl (mnnvl.TrainJobComputeDomainName,
// never a PodCliqueSet replica's name), controlled by it, and the domain's
// channel claim on every container of the JobSet's pod templates that
// requests nvidia.com/gpu (mnnvl.AddClaim), when the TrainJob names a
// group (TakesPartInMNNVL; every group means the one domain). Nothing is
// added when it names none, opts out, or no container requests GPUs. Call
// it only when the operator's mnnvl.enabled is on.
func AddJobSetMNNVL(objects *JobSetObjects, trainJob *trainerv1alpha1.TrainJob) {
	if !TakesPartInMNNVL(trainJob) {
		return
	}
	name := mnnvl.TrainJobComputeDomainName(trainJob.Name)
	takesPart := false
	for i := range objects.JobSet.Spec.ReplicatedJobs {
		podSpec := &objects.JobSet.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
		if mnnvl.AddClaim(podSpec, name) {
			takesPart = true
		}
	}
	if !takesPart {
		return
	}
	objects.ComputeDomain = TrainJobComputeDomain(trainJob, name)
}

// TrainJobComputeDomain is the ComputeDomain of a TrainJob on the JobSet
// backend, called name: labelled and controlled as its other objects.
func TrainJobComputeDomain(trainJob *trainerv1alpha1.TrainJob, name string) *unstructured.Unstructured {
	cd := mnnvl.ComputeDomain(trainJob.Namespace, name, labels.Merge(ownedLabels(trainJob),
		map[string]string{labels.ComponentKey: mnnvl.ComponentComputeDomain}))
	cd.SetOwnerReferences(append(cd.GetOwnerReferences(), ControllerReference(trainJob)))
	return cd
}

// KeepJobSetComputeDomain makes a build keep the ComputeDomain of the
// TrainJob's existing JobSet: JobSet refuses any change of its pod
// templates but their scheduling directives, so a JobSet keeps the channel
// claim it was created with. When existing has one, the build's claims and
// ComputeDomain take its template's name (a JobSet copse created before
// TrainJobs' ComputeDomains were named <trainjob>-mnnvl uses <trainjob>);
// when it has none (built before MNNVL was on, or by Kubeflow Trainer), the
// build has none either. Without an existing JobSet, or without MNNVL in the
// build, nothing changes.
func KeepJobSetComputeDomain(objects *JobSetObjects, trainJob *trainerv1alpha1.TrainJob, existing *jobsetv1alpha2.JobSet) {
	if existing == nil || objects.ComputeDomain == nil {
		return
	}
	name, ok := jobSetChannelTemplate(existing)
	for i := range objects.JobSet.Spec.ReplicatedJobs {
		podSpec := &objects.JobSet.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
		if ok {
			mnnvl.RenameClaimTemplate(podSpec, name)
		} else {
			mnnvl.RemoveClaim(podSpec)
		}
	}
	if !ok {
		objects.ComputeDomain = nil
		return
	}
	if objects.ComputeDomain.GetName() != name {
		objects.ComputeDomain = TrainJobComputeDomain(trainJob, name)
	}
}

// jobSetChannelTemplate is the ResourceClaimTemplate of the ComputeDomain
// channel claim in a JobSet's pod templates, if any has one.
func jobSetChannelTemplate(jobSet *jobsetv1alpha2.JobSet) (string, bool) {
	for _, rjob := range jobSet.Spec.ReplicatedJobs {
		for _, claim := range rjob.Template.Spec.Template.Spec.ResourceClaims {
			if claim.Name == mnnvl.ClaimName && claim.ResourceClaimTemplateName != nil {
				return *claim.ResourceClaimTemplateName, true
			}
		}
	}
	return "", false
}

// ValidateComputeDomainName refuses, at metadata.name, a TrainJob whose
// ComputeDomain name <trainjob>-mnnvl would not fit a DNS label, like every
// name copse generates: only where it gets one, on the JobSet backend, when
// it names a group and a pod template of the plan requests GPUs. JobSet's
// own name rules already keep every TrainJob whose trainer job is indexed
// well below the limit; this covers the rest. Call it only when the
// operator's mnnvl.enabled is on.
func ValidateComputeDomainName(p *Plan) field.ErrorList {
	tj := p.TrainJob
	if p.Backend != trainerv1alpha1.RuntimeBackendJobSet || !TakesPartInMNNVL(tj) {
		return nil
	}
	name := mnnvl.TrainJobComputeDomainName(tj.Name)
	if len(name) <= validation.DNS1123LabelMaxLength {
		return nil
	}
	for _, rjob := range p.Spec.ReplicatedJobs {
		if mnnvl.RequestsGPUs(&rjob.Template.Spec.Template.Spec) {
			return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), tj.Name, fmt.Sprintf(
				"its ComputeDomain %q (its MNNVL group on the runtime's JobSet backend gives GPU pods one) would be %d characters, over the limit of %d: "+
					"shorten the name by %d character(s), or opt out with %s: %s",
				name, len(name), validation.DNS1123LabelMaxLength, len(name)-validation.DNS1123LabelMaxLength,
				mnnvl.GroupAnnotation, copsev1alpha1.MNNVLGroupNone))}
		}
	}
	return nil
}
