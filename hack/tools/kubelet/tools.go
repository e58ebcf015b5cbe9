//go:build tools

// Package tools pins the kubelet of the test cluster's real nodes
// (e2e/cluster/realnode.go). It is a module of its own, beside the
// control plane's (hack/tools/kube) at the same Kubernetes version, so that
// adding real nodes rebuilt none of the control-plane binaries.
package tools

import _ "k8s.io/kubernetes/cmd/kubelet"
