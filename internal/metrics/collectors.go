package metrics

import "github.com/prometheus/client_golang/prometheus"

// Collectors are copse's metrics: the transition metrics and the
// write-budget counter, which register themselves, and the state gauges'
// collector (its reader unset: for descriptions only). The chart's test
// checks the dashboard and the alert rules against their names.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{replicaRecreations, gpuSecondsLost, phaseTransitions, timeToRunning, admissionWait, runDuration, writeBudgetCuts, &StateCollector{}}
}
