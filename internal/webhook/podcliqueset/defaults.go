// Package podcliqueset holds the admission rules of the PodCliqueSet: the
// defaults the mutating webhook applies and the checks the validating
// webhook runs on create and update. The rules are pure functions of the
// objects, so they are tested without an API server; handlers.go adapts them
// to controller-runtime's admission interfaces.
package podcliqueset

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// Default fills every unset field of pcs that has a default, leaving the
// fields the user set alone. It is idempotent, so it is safe on update too.
//
// The CRD schema already defaults some of these fields when the API server
// decodes the object; they are set here as well so that the result does not
// depend on which of the two ran.
func Default(pcs *copsev1alpha1.PodCliqueSet) {
	pcs.Spec.WorkloadType = pcs.Spec.WorkloadType.OrDefault()
	workload := pcs.Spec.WorkloadType
	if workload != copsev1alpha1.WorkloadTypeInference && workload != copsev1alpha1.WorkloadTypeTraining {
		// The CRD's enum rejects unknown types; defaulting is not the place
		// to guess for one.
		return
	}

	if pcs.Spec.UpdateStrategy == nil {
		pcs.Spec.UpdateStrategy = &grovecorev1alpha1.PodCliqueSetUpdateStrategy{}
	}
	if pcs.Spec.UpdateStrategy.Type == "" {
		pcs.Spec.UpdateStrategy.Type = grovecorev1alpha1.RollingRecreateStrategy
	}
	defaultTemplate(&pcs.Spec.Template, workload)
}

// The values come from api/core/v1alpha1 (derived.go), the one home of every
// default, so that the controllers treat an object the webhook never saw
// exactly as one it defaulted.
func defaultTemplate(template *grovecorev1alpha1.PodCliqueSetTemplateSpec, workload copsev1alpha1.WorkloadType) {
	if template.StartupType == nil {
		template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeAnyOrder)
	}
	if template.TerminationDelay == nil {
		template.TerminationDelay = &metav1.Duration{Duration: workload.DefaultTerminationDelay()}
	}
	if template.HeadlessServiceConfig == nil {
		// Pods find their peers through the replica's headless Service
		// while they start, i.e. before they are ready.
		template.HeadlessServiceConfig = &grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: true}
	}
	for _, clique := range template.Cliques {
		if clique != nil {
			defaultClique(&clique.Spec, workload)
		}
	}
	for i := range template.PodCliqueScalingGroupConfigs {
		defaultScalingGroup(&template.PodCliqueScalingGroupConfigs[i])
	}
}

func defaultClique(spec *grovecorev1alpha1.PodCliqueSpec, workload copsev1alpha1.WorkloadType) {
	// Grove treats a missing (zero) replica count as one pod.
	if spec.Replicas == 0 {
		spec.Replicas = 1
	}
	if spec.MinAvailable == nil {
		spec.MinAvailable = ptr.To(copsev1alpha1.CliqueMinAvailable(*spec))
	}
	if spec.ScaleConfig != nil && spec.ScaleConfig.MinReplicas == nil {
		spec.ScaleConfig.MinReplicas = ptr.To(spec.Replicas)
	}
	if spec.PodSpec.RestartPolicy == "" {
		spec.PodSpec.RestartPolicy = workload.DefaultRestartPolicy()
	}
	if spec.PodSpec.TerminationGracePeriodSeconds == nil {
		spec.PodSpec.TerminationGracePeriodSeconds = ptr.To(copsev1alpha1.DefaultPodTerminationGracePeriodSeconds)
	}
}

func defaultScalingGroup(group *grovecorev1alpha1.PodCliqueScalingGroupConfig) {
	if group.Replicas == nil {
		group.Replicas = ptr.To(copsev1alpha1.ScalingGroupReplicas(*group))
	}
	if group.MinAvailable == nil {
		group.MinAvailable = ptr.To(copsev1alpha1.ScalingGroupMinAvailable(*group))
	}
	if group.ScaleConfig != nil && group.ScaleConfig.MinReplicas == nil {
		group.ScaleConfig.MinReplicas = ptr.To(*group.Replicas)
	}
}
