//go:build tools

// Package tools pins the Kubernetes control-plane binaries that the local
// test cluster builds from source. It is its own module so that the
// kubernetes dependency tree never enters copse's main go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
