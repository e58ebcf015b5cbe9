//go:build tools

// Package tools pins the JobSet controller: the TrainJob backend the e2e
// suites (foundation, trainjob, kueue, chaos) and `make demo` run, and the
// reference the benchmark (e2e/bench, `make bench`) compares copse with. Its
// main package
// is the module root: build it with
// `go build -o <dir>/jobset-controller sigs.k8s.io/jobset`.
package tools

import _ "sigs.k8s.io/jobset"
