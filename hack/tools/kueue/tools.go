//go:build tools

// Package tools pins Kueue (sigs.k8s.io/kueue), run for real by the e2e
// suites, `make demo` and the benchmark (e2e/framework/kueue.go): it queues
// TrainJobs through its own TrainJob integration and admits the Workloads
// copse creates for PodCliqueSets. Build it with
// `go build -o <dir>/kueue sigs.k8s.io/kueue/cmd/kueue`.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
