//go:build tools

// Package tools pins controller-gen, which generates copse's CRDs and
// deepcopy functions.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
