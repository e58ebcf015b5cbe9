package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var writeBudgetCuts = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "copse_write_budget_exhausted_total",
	Help: "Reconcile passes that left writes for the next pass because they reached the operator's " +
		"controllers.maxWritesPerReconcile, by controller (PodCliqueSet, PodCliqueScalingGroup, PodClique). " +
		"Process lifetime: an operator restart starts it at zero.",
}, []string{"controller"})

func init() {
	metrics.Registry.MustRegister(writeBudgetCuts)
}

// WriteBudgetCut returns what a pass of the named controller calls when
// its write budget leaves work for the next pass (children.Budget's cut
// hook): the one place copse_write_budget_exhausted_total is counted.
func WriteBudgetCut(controller string) func() {
	counter := writeBudgetCuts.WithLabelValues(controller)
	return counter.Inc
}
