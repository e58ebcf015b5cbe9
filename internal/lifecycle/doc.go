// Package lifecycle holds the pure rules of a workload's lifecycle that more
// than one controller applies, so that each is written once:
//
//   - MayCreatePods: may a replica get new pods (and new children) now?
//   - CliqueCompletion: which indices of a Training clique are done, and when
//     the clique completed, from its durable record and its pods;
//   - FirstFailure / DescribeFailure: the root cause of a replica's failure;
//   - ReplacementBackoff: how long a Training clique waits before replacing a
//     failed pod, as the Job API does.
//   - CountPods: a clique's pods counted as its status and decisions read
//     them (ready, scheduled, succeeded, being replaced);
//   - OutcomeFinalizer: the pod decorator that keeps a Training pod until
//     its outcome is recorded.
//
// Everything here is a function of plain values; the controllers gather the
// values and apply the results.
package lifecycle
