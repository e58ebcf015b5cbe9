//go:build tools

// Package tools pins the JobSet controller, the reference the restart
// benchmark (e2e/bench, `make bench`) compares copse with. Its main package
// is the module root: build it with
// `go build -o <dir>/jobset-controller sigs.k8s.io/jobset`.
package tools

import _ "sigs.k8s.io/jobset"
