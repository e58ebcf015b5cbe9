package trainjob

import (
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// keepCreateDefaults gives a rebuilt JobSet spec the values JobSet's
// defaulting webhook set when the JobSet was created, wherever the build
// leaves them unset. JobSet (v0.12.0) defaults on create only, and on update
// refuses any change to replicatedJobs but the pod template's labels,
// annotations, nodeSelector, tolerations and scheduling gates, and any change
// to successPolicy, startupPolicy, network and failurePolicy: a rebuilt spec
// without these defaults would be refused, or would quietly drop them.
// rebuilt may share pointers with existing afterwards.
func keepCreateDefaults(existing jobsetv1alpha2.JobSetSpec, rebuilt *jobsetv1alpha2.JobSetSpec) {
	if rebuilt.SuccessPolicy == nil {
		rebuilt.SuccessPolicy = existing.SuccessPolicy
	}
	if rebuilt.StartupPolicy == nil {
		rebuilt.StartupPolicy = existing.StartupPolicy
	}
	switch {
	case rebuilt.Network == nil:
		rebuilt.Network = existing.Network
	case existing.Network != nil:
		if rebuilt.Network.EnableDNSHostnames == nil {
			rebuilt.Network.EnableDNSHostnames = existing.Network.EnableDNSHostnames
		}
		if rebuilt.Network.PublishNotReadyAddresses == nil {
			rebuilt.Network.PublishNotReadyAddresses = existing.Network.PublishNotReadyAddresses
		}
	}
	if rebuilt.FailurePolicy != nil && existing.FailurePolicy != nil {
		for i := range rebuilt.FailurePolicy.Rules {
			if rule := &rebuilt.FailurePolicy.Rules[i]; rule.Name == "" && i < len(existing.FailurePolicy.Rules) {
				rule.Name = existing.FailurePolicy.Rules[i].Name
			}
		}
	}
	for i := range rebuilt.VolumeClaimPolicies {
		if policy := &rebuilt.VolumeClaimPolicies[i]; policy.RetentionPolicy == nil && i < len(existing.VolumeClaimPolicies) {
			policy.RetentionPolicy = existing.VolumeClaimPolicies[i].RetentionPolicy
		}
	}
	old := map[string]*jobsetv1alpha2.ReplicatedJob{}
	for i := range existing.ReplicatedJobs {
		old[existing.ReplicatedJobs[i].Name] = &existing.ReplicatedJobs[i]
	}
	for i := range rebuilt.ReplicatedJobs {
		rjob := &rebuilt.ReplicatedJobs[i]
		before, ok := old[rjob.Name]
		if !ok {
			continue
		}
		job := &rjob.Template.Spec
		if job.CompletionMode == nil {
			job.CompletionMode = before.Template.Spec.CompletionMode
		}
		if job.Template.Spec.RestartPolicy == "" {
			job.Template.Spec.RestartPolicy = before.Template.Spec.Template.Spec.RestartPolicy
		}
	}
}
