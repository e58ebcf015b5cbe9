// Package v1alpha1 defines the file that configures copse-operator
// (apiVersion config.copse.dev/v1alpha1, kind OperatorConfiguration): its Go
// types, defaults, validation and a strict loader.
//
// The configuration is read from disk at start-up and is never served by the
// API server, hence +kubebuilder:skip: CRD generation must leave it alone while
// deepcopy generation still covers it.
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=config.copse.dev
package v1alpha1
