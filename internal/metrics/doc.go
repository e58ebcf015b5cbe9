// Package metrics holds copse's own Prometheus metrics, served on the
// operator's metrics endpoint through controller-runtime's registry next to
// its reconcile and work-queue metrics. docs/observability.md lists them.
//
// Three kinds, each updated in one place:
//
//   - State gauges (workloads.go) are read from the manager's cache when
//     Prometheus scrapes, so an operator restart neither loses nor repeats
//     them: they are the API server's state.
//   - Transition counters and histograms (transitions.go) count what a
//     PodCliqueSet's status write made durable (a restart recorded, a phase
//     reached). The PodCliqueSet controller records them right after the
//     write succeeds, the same place its events come from. They live as
//     long as the process: a restart of the operator starts them at zero,
//     which Prometheus' rate() and increase() read as a counter reset.
//   - The write-budget counter (writebudget.go) counts reconcile passes
//     whose write budget left work for the next pass, from the budget's
//     own cut hook (children.Budget.OnCut); process lifetime as well.
//
// Labels are bounded: a namespace, a phase, a reason, an outcome; never a
// workload's name, whose number grows without bound on a training cluster.
package metrics
