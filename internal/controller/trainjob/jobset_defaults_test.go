package trainjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// built is a JobSet spec as the pipeline builds it: no JobSet defaults.
func built(suspend bool) jobsetv1alpha2.JobSetSpec {
	return jobsetv1alpha2.JobSetSpec{
		Suspend: ptr.To(suspend),
		FailurePolicy: &jobsetv1alpha2.FailurePolicy{Rules: []jobsetv1alpha2.FailurePolicyRule{
			{Action: jobsetv1alpha2.FailJobSet},
		}},
		VolumeClaimPolicies: []jobsetv1alpha2.VolumeClaimPolicy{{}},
		ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name:     "node",
			Replicas: 1,
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Parallelism: ptr.To[int32](2),
				Template: corev1.PodTemplateSpec{
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "node", Image: "trainer:v1"}}},
				},
			}},
		}},
	}
}

func withPodLabel(spec jobsetv1alpha2.JobSetSpec, value string) jobsetv1alpha2.JobSetSpec {
	spec.ReplicatedJobs[0].Template.Spec.Template.Labels = map[string]string{"team": value}
	return spec
}

// created is what JobSet v0.12.0's defaulting webhook stores for a build.
func created(spec jobsetv1alpha2.JobSetSpec) jobsetv1alpha2.JobSetSpec {
	out := *spec.DeepCopy()
	out.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll}
	out.StartupPolicy = &jobsetv1alpha2.StartupPolicy{StartupPolicyOrder: jobsetv1alpha2.AnyOrder}
	out.Network = &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(true), PublishNotReadyAddresses: ptr.To(true)}
	out.FailurePolicy.Rules[0].Name = "failurePolicyRule0"
	out.VolumeClaimPolicies[0].RetentionPolicy = &jobsetv1alpha2.VolumeRetentionPolicy{WhenDeleted: ptr.To(jobsetv1alpha2.RetentionPolicyDelete)}
	for i := range out.ReplicatedJobs {
		out.ReplicatedJobs[i].Template.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		out.ReplicatedJobs[i].Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	return out
}

func TestKeepCreateDefaults(t *testing.T) {
	tests := []struct {
		name     string
		existing jobsetv1alpha2.JobSetSpec
		rebuilt  jobsetv1alpha2.JobSetSpec
		want     jobsetv1alpha2.JobSetSpec
	}{{
		name:     "resume: only suspend changes, every default is kept",
		existing: created(withPodLabel(built(true), "vision")),
		rebuilt:  withPodLabel(built(false), "vision"),
		want:     created(withPodLabel(built(false), "vision")),
	}, {
		name:     "a runtime patch changed the pod labels while suspended: the change is kept too",
		existing: created(withPodLabel(built(true), "vision")),
		rebuilt:  withPodLabel(built(true), "audio"),
		want:     created(withPodLabel(built(true), "audio")),
	}, {
		name:     "values the build sets win over the stored ones",
		existing: created(built(true)),
		rebuilt: func() jobsetv1alpha2.JobSetSpec {
			spec := built(false)
			spec.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAny, TargetReplicatedJobs: []string{"node"}}
			spec.Network = &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(false)}
			spec.ReplicatedJobs[0].Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
			spec.FailurePolicy.Rules[0].Name = "mine"
			return spec
		}(),
		want: func() jobsetv1alpha2.JobSetSpec {
			spec := created(built(false))
			spec.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAny, TargetReplicatedJobs: []string{"node"}}
			spec.Network = &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(false), PublishNotReadyAddresses: ptr.To(true)}
			spec.ReplicatedJobs[0].Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
			spec.FailurePolicy.Rules[0].Name = "mine"
			return spec
		}(),
	}, {
		name:     "a replicated job the stored JobSet lacks gets nothing",
		existing: jobsetv1alpha2.JobSetSpec{},
		rebuilt:  built(false),
		want:     built(false),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := *tt.rebuilt.DeepCopy()
			keepCreateDefaults(tt.existing, &got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rebuilt spec (-want +got):\n%s", diff)
			}
		})
	}
}
