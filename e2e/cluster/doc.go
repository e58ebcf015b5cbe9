// Package cluster runs a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) as local processes, plus kwok to
// simulate GPU nodes and a container runtime, for copse's end-to-end tests.
//
// There is no container engine on copse's development and CI machines, so
// kind and envtest-with-downloads are not options. Instead the components are
// built from the Go module proxy through the tools modules under hack/tools
// and cached per user (see EnsureBinaries). Simulated nodes carry a
// zone/block/rack topology in which one rack is one NVLink domain
// (nvidia.com/gpu.clique), and pods follow a lifecycle steered by annotations
// under sim.copse.dev/ (see AnnotationRunDuration). docs/local-cluster.md
// describes the behaviour in full.
package cluster
