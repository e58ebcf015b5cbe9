//go:build tools

// Package tools pins the container runtime of the test cluster's real nodes:
// containerd, its runc shim and ctr, which imports the images made here.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
