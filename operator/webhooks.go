package main

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/webhook"
)

// registerWebhooks serves copse's admission webhooks (defaulting and
// validation of the grove.io kinds) on the manager's webhook server. Call it
// only when the webhook server is enabled: mgr.GetWebhookServer() makes the
// manager start a server, which needs a serving certificate.
//
// The webhooks read owners with the API reader, not the cached client: an
// admission decision must not rest on a cache that may lag (see
// webhook.Register). They enforce limits, the configuration's limits on
// pods; features says which optional parts they serve (see webhook.Register).
func registerWebhooks(mgr manager.Manager, limits configv1alpha1.LimitsConfiguration, features webhook.Features) error {
	if err := webhook.Register(mgr.GetWebhookServer(), mgr.GetAPIReader(), limits, features); err != nil {
		return fmt.Errorf("registering admission webhooks: %w", err)
	}
	return nil
}
