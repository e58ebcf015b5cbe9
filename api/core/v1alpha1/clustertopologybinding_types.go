package v1alpha1

import (
	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterTopologyBinding names the topology levels of the cluster's nodes,
// broadest first (zone, block, rack, host, ...), each with the node label
// key that tells a node's domain at that level. A PodCliqueSet's
// topologyConstraint refers to one by name (topologyName) and to its levels
// by domain (pack.required, pack.preferred); copse turns them into the node
// label keys the kube-scheduler packs gangs by. Grove's fourth kind; the
// spec and status are Grove's.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName={ct}
// +kubebuilder:printcolumn:name="Levels",type=string,JSONPath=`.spec.levels[*].domain`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterTopologyBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is Grove's: the ordered levels and, for schedulers that keep
	// their own topology objects, bindings to them.
	Spec grovecorev1alpha1.ClusterTopologyBindingSpec `json:"spec"`
	// Status says whether the levels can be used: condition Ready.
	// +optional
	Status grovecorev1alpha1.ClusterTopologyBindingStatus `json:"status,omitempty"`
}

// ClusterTopologyBindingList is a list of ClusterTopologyBindings.
//
// +kubebuilder:object:root=true
type ClusterTopologyBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTopologyBinding `json:"items"`
}

// Conditions and reasons of placement (topology packing and MNNVL).
const (
	// ConditionTypeReady is True on a ClusterTopologyBinding whose every
	// level's key is carried by at least one node (reason
	// AllLevelsAvailable), False otherwise (reason LevelsUnavailable, the
	// message naming the levels and keys no node carries).
	ConditionTypeReady = "Ready"
	// ReasonAllLevelsAvailable: every level's key is on some node.
	ReasonAllLevelsAvailable = "AllLevelsAvailable"
	// ReasonLevelsUnavailable: no node carries the key of at least one level.
	ReasonLevelsUnavailable = "LevelsUnavailable"

	// ConditionTypeKueueTopologySynced is on a ClusterTopologyBinding while
	// the operator configuration's kueue.enabled is true: True while Kueue's
	// Topology of the binding's name has the binding's keys as its levels,
	// False (with a reason below) while it cannot or does not yet.
	ConditionTypeKueueTopologySynced = "KueueTopologySynced"
	// ReasonKueueTopologySynced: copse's Topology has the binding's levels.
	ReasonKueueTopologySynced = "Synced"
	// ReasonKueueTopologyNotOwned: a Topology of the binding's name exists
	// that copse did not create for this binding; copse leaves it alone.
	ReasonKueueTopologyNotOwned = "TopologyNotOwned"
	// ReasonKueueLevelsUnsupported: Kueue's Topology cannot hold the
	// binding's levels (more than 16, or kubernetes.io/hostname above the
	// narrowest level); the message names the level.
	ReasonKueueLevelsUnsupported = "LevelsUnsupportedByKueue"
	// ReasonKueueTopologyReplacing: the binding's levels changed; a Topology's
	// levels are immutable, so copse deleted the old one and creates the new
	// one once it is gone (Kueue keeps it while a ResourceFlavor names it).
	ReasonKueueTopologyReplacing = "TopologyReplacing"

	// ConditionTypeTopologyLevelsUnavailable is Grove's condition on a
	// PodCliqueSet with a topologyConstraint, with Grove's statuses: True
	// (reason ClusterTopologyLevelsUnavailable) when a level a constraint
	// names is not in the binding; Unknown when the binding cannot be read
	// (ClusterTopologyNotFound, TopologyNameMissing) or topology-aware
	// scheduling is off (TopologyAwareSchedulingDisabled); the message names
	// the fields. False (reason AllClusterTopologyLevelsAvailable) when every
	// constraint is applied. A constraint that cannot be applied is left off
	// the PodGroups and pods; it is never applied half.
	ConditionTypeTopologyLevelsUnavailable = "TopologyLevelsUnavailable"
	// ReasonTopologyAwareSchedulingDisabled: the operator configuration has
	// topologyAwareScheduling.enabled false, or the scheduler backend is not
	// the Workload API.
	ReasonTopologyAwareSchedulingDisabled = "TopologyAwareSchedulingDisabled"
	// ReasonClusterTopologyNotFound: topologyName names no ClusterTopologyBinding.
	ReasonClusterTopologyNotFound = "ClusterTopologyNotFound"
	// ReasonTopologyNameMissing: a constraint sets pack but no topologyName
	// is set on it or any parent.
	ReasonTopologyNameMissing = "TopologyNameMissing"
	// ReasonClusterTopologyLevelsUnavailable: a pack domain is not a level
	// of the named ClusterTopologyBinding.
	ReasonClusterTopologyLevelsUnavailable = "ClusterTopologyLevelsUnavailable"
	// ReasonAllClusterTopologyLevelsAvailable: every constraint is applied.
	ReasonAllClusterTopologyLevelsAvailable = "AllClusterTopologyLevelsAvailable"

	// ConditionTypePodGangsScheduled is on a PodCliqueSet with gang
	// scheduling: False (reason Unschedulable) while the kube-scheduler
	// reports a gang it cannot place (its PodGroup's
	// PodGroupInitiallyScheduled condition), the message quoting the
	// scheduler for each such gang; Unknown (reason GangsPending) while some
	// gang has no verdict yet; True (reason AllGangsScheduled) once every
	// gang of the current runs was placed.
	ConditionTypePodGangsScheduled = "PodGangsScheduled"
	// ReasonGangUnschedulable: the scheduler cannot place at least one gang.
	ReasonGangUnschedulable = "Unschedulable"
	// ReasonGangPlacedIncomplete: a gang was placed (its PodGroup's
	// minCount pods are on nodes) but one of its cliques has fewer pods
	// placed than its minAvailable; the message names the clique.
	ReasonGangPlacedIncomplete = "GangPlacedIncomplete"
	// ReasonGangsPending: no gang was found unplaceable, but some have no
	// verdict from the scheduler yet.
	ReasonGangsPending = "GangsPending"
	// ReasonAllGangsScheduled: every gang was placed.
	ReasonAllGangsScheduled = "AllGangsScheduled"
)

// MNNVL (multi-node NVLink) annotations, as in Grove (GREP-417).
const (
	// AnnotationMNNVLGroup on a PodCliqueSet, in a scaling group's or a
	// clique's template, names the MNNVL group of the pods below it (the
	// nearest one wins): GPU pods of one replica in one group share an NVIDIA
	// ComputeDomain. MNNVLGroupNone opts out. A DNS-1123 label; immutable.
	AnnotationMNNVLGroup = "grove.io/mnnvl-group"
	// MNNVLGroupNone is the AnnotationMNNVLGroup value that opts out.
	MNNVLGroupNone = "none"
)
