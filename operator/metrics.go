package main

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsemetrics "github.com/copse-dev/copse/internal/metrics"
)

// registerStateMetrics serves copse's state gauges (internal/metrics),
// read from the manager's cache at each scrape, on the metrics endpoint.
// The transition metrics register themselves.
func registerStateMetrics(mgr manager.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	collector := &copsemetrics.StateCollector{Reader: mgr.GetCache(), TrainJobs: *cfg.Controllers.TrainJob.Enabled}
	if err := ctrlmetrics.Registry.Register(collector); err != nil {
		return fmt.Errorf("registering the workload state metrics: %w", err)
	}
	return nil
}
