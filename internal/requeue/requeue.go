// Package requeue holds what copse's reconcilers share about when to run
// again: the delays of work that waits only on the controller itself,
// combining the requeue wishes of several steps, and what wakes a
// reconciler (the watch predicates UpdatesOf and CreationsAndDeletions, and
// RequestsForList for events that concern a set of objects).
package requeue

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

const (
	// Soon follows a pass that stopped at its write budget: the next pass
	// re-reads the object and its owners before it goes on.
	Soon = time.Millisecond
	// AfterConflict follows a status write the API server refused because
	// the pass computed it from a cache that was behind; the cache is
	// usually milliseconds behind.
	AfterConflict = 50 * time.Millisecond
	// CacheCatchUp follows a pass that found the cache behind this
	// controller's own last status write (expectations.WrittenVersions).
	// The watch event of that write normally triggers the next pass first;
	// this is the fallback.
	CacheCatchUp = 20 * time.Millisecond
)

// Earliest combines two results, keeping the sooner non-zero requeue.
func Earliest(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter < b.RequeueAfter:
		return a
	default:
		return b
	}
}
