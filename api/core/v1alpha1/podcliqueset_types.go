package v1alpha1

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodCliqueSet is a set of gangs of pods (one gang per replica), each made of
// PodCliques and PodCliqueScalingGroups. With workloadType Training it is a
// finite workload that ends Succeeded or Failed.
//
// packDomain is deprecated in Grove and refused on new objects; copse keeps
// that rule so that it accepts exactly what Grove accepts.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
// +kubebuilder:resource:shortName={pcs}
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.workloadType`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Restarts",type=integer,JSONPath=`.status.restartCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.spec.template.?topologyConstraint.?packDomain.hasValue()",message="spec.template.topologyConstraint.packDomain is deprecated and not allowed on new objects; use pack.required",fieldPath=".spec.template.topologyConstraint.packDomain",optionalOldSelf=true,reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.spec.template.cliques) || !self.spec.template.cliques.exists(c, c.?topologyConstraint.?packDomain.hasValue())",message="spec.template.cliques[].topologyConstraint.packDomain is deprecated and not allowed on new objects; use pack.required",fieldPath=".spec.template.cliques",optionalOldSelf=true,reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.spec.template.podCliqueScalingGroups) || !self.spec.template.podCliqueScalingGroups.exists(g, g.?topologyConstraint.?packDomain.hasValue())",message="spec.template.podCliqueScalingGroups[].topologyConstraint.packDomain is deprecated and not allowed on new objects; use pack.required",fieldPath=".spec.template.podCliqueScalingGroups",optionalOldSelf=true,reason=FieldValueForbidden
type PodCliqueSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state: Grove's PodCliqueSet spec plus the training fields.
	Spec PodCliqueSetSpec `json:"spec"`
	// Status is the observed state.
	// +optional
	Status PodCliqueSetStatus `json:"status,omitempty"`
}

// PodCliqueSetList is a list of PodCliqueSets.
//
// +kubebuilder:object:root=true
type PodCliqueSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the PodCliqueSets.
	Items []PodCliqueSet `json:"items"`
}

// PodCliqueSetSpec is Grove's PodCliqueSetSpec plus the GREP-0285 fields.
//
// The training rules below live in the CRD so that they hold even when the
// operator's webhook is down; the webhook adds the ones CEL cannot express.
//
// +kubebuilder:validation:XValidation:rule="self.workloadType == 'Training' || !has(self.trainingSpec)",message="spec.trainingSpec is allowed only when spec.workloadType is Training",fieldPath=".trainingSpec",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.workloadType != 'Training' || oldSelf.workloadType != 'Training' || self.replicas == oldSelf.replicas",message="spec.replicas is immutable when spec.workloadType is Training",fieldPath=".replicas",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.workloadType != 'Training' || !has(self.template.cliques) || self.template.cliques.all(c, !has(c.spec.autoScalingConfig))",message="spec.template.cliques[].spec.autoScalingConfig is not allowed when spec.workloadType is Training",fieldPath=".template.cliques",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.workloadType != 'Training' || !has(self.template.podCliqueScalingGroups) || self.template.podCliqueScalingGroups.all(g, !has(g.scaleConfig))",message="spec.template.podCliqueScalingGroups[].scaleConfig is not allowed when spec.workloadType is Training",fieldPath=".template.podCliqueScalingGroups",reason=FieldValueForbidden
type PodCliqueSetSpec struct {
	grovecorev1alpha1.PodCliqueSetSpec `json:",inline"`

	// WorkloadType selects the lifecycle. Inference (the default) runs until
	// deleted and replaces failed pods, as Grove does. Training is finite: pods
	// that exit 0 are not recreated, failures restart whole replicas within
	// trainingSpec.maxRestarts, and the PodCliqueSet ends Succeeded or Failed.
	// Immutable.
	// +optional
	// +kubebuilder:default=Inference
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.workloadType is immutable"
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// TrainingSpec bounds a Training workload. Allowed only with workloadType Training.
	// +optional
	TrainingSpec *TrainingSpec `json:"trainingSpec,omitempty"`
}

// PodCliqueSetStatus is Grove's PodCliqueSetStatus plus the GREP-0285 fields.
type PodCliqueSetStatus struct {
	grovecorev1alpha1.PodCliqueSetStatus `json:",inline"`

	// Phase is the lifecycle phase. Pending and Running apply to every
	// PodCliqueSet; Succeeded and Failed only to Training workloads, where they
	// are terminal.
	// +optional
	Phase PodCliqueSetPhase `json:"phase,omitempty"`

	// RestartCount is the number of replica restarts consumed, summed over all
	// replicas. Compared with trainingSpec.maxRestarts.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RestartCount int32 `json:"restartCount,omitempty"`

	// StartTime is when the phase first became Running. Restarts do not reset
	// it: trainingSpec.maxRuntime is a wall-clock deadline from this instant.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
}
