package v1alpha1

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodClique is a set of pods with one role (one pod template) within a
// PodCliqueSet replica. The PodCliqueSet or PodCliqueScalingGroup controller
// creates it; users normally do not.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
// +kubebuilder:resource:shortName={pclq}
// +kubebuilder:printcolumn:name="MinAvail",type=integer,JSONPath=`.spec.minAvailable`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Scheduled",type=integer,JSONPath=`.status.scheduledReplicas`
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].status`
// +kubebuilder:printcolumn:name="Replaced",type=integer,JSONPath=`.status.podReplacements`,priority=1
// +kubebuilder:printcolumn:name="MinBreached",type=string,JSONPath=`.status.conditions[?(@.type=="MinAvailableBreached")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodClique struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is Grove's PodClique spec, unchanged.
	Spec grovecorev1alpha1.PodCliqueSpec `json:"spec"`
	// Status is Grove's PodClique status plus what a Training workload needs
	// to stay exact when pods disappear or the operator restarts.
	// +optional
	Status PodCliqueStatus `json:"status,omitempty"`
}

// PodCliqueStatus is Grove's PodCliqueStatus plus copse's Training fields.
// Training workloads also get the Succeeded condition.
type PodCliqueStatus struct {
	grovecorev1alpha1.PodCliqueStatus `json:",inline"`
	// SucceededIndexes are the pod indices whose pod exited 0, in the compact
	// form of the Job API's completedIndexes: ascending, comma-separated
	// numbers and ranges, e.g. "0-3,7". Training only. An index is recorded
	// before its pod may be removed (Training pods carry the finalizer
	// copse.dev/outcome until then), so an index that succeeded is never run
	// again, even once its pod is gone.
	// +optional
	SucceededIndexes string `json:"succeededIndexes,omitempty"`
	// LastSucceededTime is the latest finish time among the pods recorded in
	// succeededIndexes; once every index is recorded, it is when the clique
	// completed.
	// +optional
	LastSucceededTime *metav1.Time `json:"lastSucceededTime,omitempty"`
	// PodReplacements counts the failed pods this clique replaced on its
	// own: Training cliques with minAvailable below replicas replace a failed
	// pod while enough others are healthy, with exponential back-off (10s,
	// doubling, at most 6m, as the Job API does).
	// +optional
	// +kubebuilder:validation:Minimum=0
	PodReplacements int32 `json:"podReplacements,omitempty"`
	// ReplacingPods are the UIDs of failed pods counted in podReplacements
	// that are still being removed; the record keeps the count exact when the
	// operator restarts in between.
	// +optional
	// +listType=set
	ReplacingPods []types.UID `json:"replacingPods,omitempty"`
	// LastPodCreationRefusalTime is when the API server last refused to
	// create one of the clique's pods (a ResourceQuota, a LimitRange, an
	// admission webhook), while the PodCreationRefused condition is True;
	// unset once a pod is created again. With that condition's
	// lastTransitionTime (the first refusal in a row) it sets the back-off
	// before the next attempt, so the back-off survives an operator restart.
	// +optional
	LastPodCreationRefusalTime *metav1.MicroTime `json:"lastPodCreationRefusalTime,omitempty"`
}

// PodCliqueList is a list of PodCliques.
//
// +kubebuilder:object:root=true
type PodCliqueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the PodCliques.
	Items []PodClique `json:"items"`
}
