package main

import (
	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// registerControllers is where copse's controllers and admission webhooks
// join the manager. Each controller takes its concurrency from
// cfg.Controllers; webhooks must be registered only when
// cfg.WebhookServer.Enabled is true, since mgr.GetWebhookServer() starts a
// server that needs a serving certificate. schedulerBackend is already
// resolved: it is never "auto" here.
//
// No controller exists yet.
func registerControllers(mgr manager.Manager, cfg *configv1alpha1.OperatorConfiguration,
	schedulerBackend configv1alpha1.SchedulerBackend) error {
	mgr.GetLogger().WithName("setup").Info("registering controllers",
		"schedulerBackend", schedulerBackend,
		"controllers", []string{},
		"webhooksEnabled", *cfg.WebhookServer.Enabled)
	return nil
}
