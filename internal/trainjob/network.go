package trainjob

import "fmt"

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
