//go:build tools

// Package tools pins runc, the OCI runtime containerd's shim runs the real
// nodes' containers with. Its main package is the module root.
package tools

import _ "github.com/opencontainers/runc"
