package v1alpha1

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodCliqueScalingGroup scales a group of PodCliques of one PodCliqueSet
// replica together: each of its replicas owns one PodClique per member clique.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName={pcsg}
// +kubebuilder:printcolumn:name="MinAvail",type=integer,JSONPath=`.spec.minAvailable`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Scheduled",type=integer,JSONPath=`.status.scheduledReplicas`
// +kubebuilder:printcolumn:name="MinBreached",type=string,JSONPath=`.status.conditions[?(@.type=="MinAvailableBreached")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodCliqueScalingGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is Grove's PodCliqueScalingGroup spec, unchanged.
	Spec grovecorev1alpha1.PodCliqueScalingGroupSpec `json:"spec"`
	// Status is Grove's PodCliqueScalingGroup status, unchanged.
	// +optional
	Status grovecorev1alpha1.PodCliqueScalingGroupStatus `json:"status,omitempty"`
}

// PodCliqueScalingGroupList is a list of PodCliqueScalingGroups.
//
// +kubebuilder:object:root=true
type PodCliqueScalingGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the PodCliqueScalingGroups.
	Items []PodCliqueScalingGroup `json:"items"`
}
