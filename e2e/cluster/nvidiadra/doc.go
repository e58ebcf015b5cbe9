// Package nvidiadra is copse's simulated NVIDIA DRA driver for ComputeDomains:
// test tooling for the local cluster (e2e/cluster), like kwok, never shipped
// in the chart. It installs the ComputeDomain CRD (resource.nvidia.com/v1beta1)
// and the channel DeviceClass, publishes a ResourceSlice of IMEX channel
// devices for every simulated GPU node, and does for each ComputeDomain what
// NVIDIA's controller does: it creates the domain's channel
// ResourceClaimTemplate and reports the domain Ready with the nodes its
// allocated claims landed on. The kube-scheduler's DRA allocator does the
// allocation, so placement is decided by the real scheduler.
//
// The pure parts (SliceForNode, ClaimTemplateFor, StatusFromClaims) build
// objects from plain inputs; Run starts the controller that gathers the
// inputs from informers and applies the results. docs/placement.md ("Testing
// without GPUs") says what is simulated and what is not.
package nvidiadra
