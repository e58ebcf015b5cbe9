package trainjob

import (
	"fmt"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// PodCliqueSetPodIndexFieldPath is the pod label copse gives every pod of a
// PodClique with its index in the clique, read through the downward API as
// each pod's rank on the PodCliqueSet backend (JobSet's pods read their
// completion index instead).
var PodCliqueSetPodIndexFieldPath = fmt.Sprintf("metadata.labels['%s']", labels.PodIndexKey)

// NameJobSetPods sets every PodSet's Endpoints to the DNS names its pods get
// from the JobSet controller: <trainjob>-<job>-<jobIndex>-<podIndex> under the
// JobSet's subdomain (the TrainJob's name unless the template sets one).
func NameJobSetPods(p *Plan) {
	subdomain := p.TrainJob.Name
	if p.Spec.Network != nil && p.Spec.Network.Subdomain != "" {
		subdomain = p.Spec.Network.Subdomain
	}
	for i, rjob := range p.Spec.ReplicatedJobs {
		podSet := &p.PodSets[i]
		podSet.Endpoints = nil
		replicas := rjob.Replicas
		if replicas == 0 {
			replicas = 1 // JobSet's default
		}
		for job := range replicas {
			for pod := range podSet.Count {
				podSet.Endpoints = append(podSet.Endpoints, fmt.Sprintf("%s-%s-%d-%d.%s", p.TrainJob.Name, rjob.Name, job, pod, subdomain))
			}
		}
	}
}

// NamePodCliqueSetPods sets every PodSet's Endpoints to the DNS names of its
// pods on the PodCliqueSet backend: one clique per replicated job, in the
// PodCliqueSet's only replica, each pod resolving as
// <hostname>.<replica service>.
func NamePodCliqueSetPods(p *Plan) {
	for i := range p.PodSets {
		podSet := &p.PodSets[i]
		podSet.Endpoints = nil
		for pod := range podSet.Count {
			podSet.Endpoints = append(podSet.Endpoints, podCliqueSetPodDNSName(p.TrainJob.Name, podSet.Name, int(pod)))
		}
	}
}

// podCliqueSetPodDNSName is the name a PodCliqueSet pod answers to: the pod
// hostname copse gives it (<podclique>-<index>) under the headless Service of
// its replica, which is the pod's subdomain. The TrainJob's PodCliqueSet has
// one replica, 0.
func podCliqueSetPodDNSName(pcs, clique string, index int) string {
	return naming.PodHostname(naming.StandalonePodClique(pcs, 0, clique), index) + "." + naming.ReplicaService(pcs, 0)
}

// rendezvousHost is the DNS name of the trainer's first pod, which every
// framework uses as its coordinator.
func rendezvousHost(p *Plan) string {
	if p.Backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		clique := NodeName
		if trainer := p.TrainerPodSet(); trainer != nil {
			clique = trainer.Name
		}
		return podCliqueSetPodDNSName(p.TrainJob.Name, clique, 0)
	}
	return fmt.Sprintf("%s-%s-0-0.%s", p.TrainJob.Name, NodeName, p.TrainJob.Name)
}

// podIndexFieldPath is where a pod reads its rank through the downward API:
// its Job completion index on the JobSet backend, its index in its clique on
// the PodCliqueSet backend.
func podIndexFieldPath(p *Plan) string {
	if p.Backend == trainerv1alpha1.RuntimeBackendPodCliqueSet {
		return PodCliqueSetPodIndexFieldPath
	}
	return CompletionIndexFieldPath
}
