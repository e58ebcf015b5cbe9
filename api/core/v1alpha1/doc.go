// Package v1alpha1 holds copse's grove.io/v1alpha1 API: PodCliqueSet,
// PodClique, PodCliqueScalingGroup and ClusterTopologyBinding.
//
// The types are a JSON-compatible superset of Grove's API
// (github.com/ai-dynamo/grove/operator/api): every Grove manifest decodes and
// applies unchanged. Grove's spec and status structs are embedded inline so
// the superset cannot drift field by field; copse adds only the GREP-0285
// training fields (workloadType, trainingSpec, phase, restartCount,
// startTime). The compatibility tests in this package prove both directions.
//
// +kubebuilder:object:generate=true
// +groupName=grove.io
package v1alpha1
