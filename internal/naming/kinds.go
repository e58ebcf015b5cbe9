package naming

// Names two kinds generate for objects of one kind in one namespace: a
// PodCliqueSet's and a JobSet-backend TrainJob's scheduling.k8s.io Workloads
// and PodGroups. Both kinds' names are DNS-1035 labels (the PodCliqueSet
// webhook and the TrainJob CRD require it), so a PodCliqueSet and a TrainJob
// may share a name; what each generates from its name must still differ.
//
//   - Workloads: a PodCliqueSet's is named after it, a DNS-1035 label, which
//     has no dot; a TrainJob's is <trainjob>.trainjob, which has one. (A
//     Workload name is a DNS subdomain.)
//   - PodGroups: a PodCliqueSet's end in its replica or scaling-group replica
//     index, or in "-prelude" (BaseGang, ScaledGang, PreludeGang); a
//     TrainJob's end in "-trainer" or "-initializer". A name ending in a
//     digit is not a TrainJob's, and "prelude" is neither TrainJob group.
//
// ComputeDomains, the third kind both make, are named in package mnnvl.

// trainJobWorkloadSuffix marks a TrainJob's Workload; its dot is what no
// PodCliqueSet's Workload has.
const trainJobWorkloadSuffix = ".trainjob"

// PodCliqueSetWorkload is the Workload of a PodCliqueSet (scheduler backend
// workload): its name.
func PodCliqueSetWorkload(pcs string) string {
	return pcs
}

// TrainJobWorkload is the Workload of a TrainJob on the JobSet backend with
// podGroupPolicy.workload: <trainjob>.trainjob.
func TrainJobWorkload(trainJob string) string {
	return trainJob + trainJobWorkloadSuffix
}

// TrainJobPodGroup is the PodGroup of one of a TrainJob's pod groups
// (trainer, initializer): <trainjob>-<group>.
func TrainJobPodGroup(trainJob, group string) string {
	return trainJob + "-" + group
}
