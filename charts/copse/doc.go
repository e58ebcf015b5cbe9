// Package copse holds the Go tests of the copse Helm chart (the chart itself
// is the YAML beside this file; .helmignore keeps Go files out of it). They
// render the chart with the pinned helm and check it against the code: the
// webhook configurations against internal/webhook, the ConfigMap against
// api/config/v1alpha1, and the RBAC against the +kubebuilder:rbac markers
// and the reviewed list rbac-reviewed.yaml.
package copse
