// Package bench measures copse on the local cluster (e2e/cluster) against
// references run in the same process, on the same cluster, in the same
// minutes, so that ratios hold on a noisy machine even when absolute times
// do not:
//
//   - creation: Training PodCliqueSet create -> its N-th pod exists, against
//     a plain client creating N equivalent pods at the operator's client QPS
//     and burst;
//   - restart: one pod of a 64-pod Training replica exits 1 -> all
//     replacement pods created / Running, against a JobSet (v0.12.0, run as
//     a local process with its webhooks, framework.StartJobSet) with
//     failurePolicy maxRestarts 1, Recreate;
//   - completion: the last pod exits 0 -> the workload is Succeeded, against
//     the same JobSet reaching Completed;
//   - API cost: the operator's API writes per pod and status writes per run,
//     from its rest_client_requests_total metric and from watches;
//   - operator cost: CPU seconds and peak resident memory, from /proc.
//
// Every time is measured with this process's clock on watch events (pods,
// PodCliqueSets, JobSets), not from the objects' second-granularity
// timestamps, which are recorded alongside. The command is
// e2e/bench/cmd/copse-bench (`make bench`); docs/performance.md describes the
// method and the first results.
package bench
