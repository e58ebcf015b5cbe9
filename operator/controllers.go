package main

import (
	"fmt"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/controller/podclique"
	"github.com/copse-dev/copse/internal/controller/podcliquescalinggroup"
	"github.com/copse-dev/copse/internal/controller/podcliqueset"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/scheduler"
)

// registerControllers joins copse's controllers and admission webhooks to the
// manager. schedulerBackend is already resolved: it is never "auto" here.
func registerControllers(mgr manager.Manager, cfg *configv1alpha1.OperatorConfiguration,
	schedulerBackend configv1alpha1.SchedulerBackend) error {
	backend := newSchedulerBackend(mgr, schedulerBackend)
	recorders, err := newEventRecorders(mgr)
	if err != nil {
		return err
	}

	pcsReconciler := &podcliqueset.Reconciler{
		Client:      mgr.GetClient(),
		Scheme:      mgr.GetScheme(),
		Recorder:    recorders.For(podcliqueset.ControllerName),
		Backend:     backend,
		Clock:       clock.RealClock{},
		WriteBudget: int(cfg.Controllers.MaxWritesPerReconcile),
	}
	if err := pcsReconciler.SetupWithManager(mgr, int(cfg.Controllers.PodCliqueSet.ConcurrentSyncs)); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", podcliqueset.ControllerName, err)
	}

	pcsgReconciler := &podcliquescalinggroup.Reconciler{
		Client:   mgr.GetClient(),
		Scheme:   mgr.GetScheme(),
		Recorder: recorders.For(podcliquescalinggroup.ControllerName),
		Clock:    clock.RealClock{},
	}
	if err := pcsgReconciler.SetupWithManager(mgr, int(cfg.Controllers.PodCliqueScalingGroup.ConcurrentSyncs)); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", podcliquescalinggroup.ControllerName, err)
	}

	pclqReconciler := &podclique.Reconciler{
		Client:       mgr.GetClient(),
		Scheme:       mgr.GetScheme(),
		Recorder:     recorders.For(podclique.ControllerName),
		Expectations: expectations.New(expectations.Options{Logger: mgr.GetLogger().WithName("expectations")}),
		// Every pod copse creates is finished by these, in order.
		Decorators: []blueprint.PodDecorator{
			backend.PodDecorator(),
			lifecycle.OutcomeFinalizer(),
		},
		MaxConcurrentReconciles: int(cfg.Controllers.PodClique.ConcurrentSyncs),
		WriteBudget:             int(cfg.Controllers.MaxWritesPerReconcile),
		Clock:                   clock.RealClock{},
	}
	if err := pclqReconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", podclique.ControllerName, err)
	}

	if *cfg.WebhookServer.Enabled {
		if err := registerWebhooks(mgr, cfg.Limits); err != nil {
			return err
		}
	}

	mgr.GetLogger().WithName("setup").Info("registered controllers",
		"schedulerBackend", backend.Name(),
		"controllers", []string{podcliqueset.ControllerName, podcliquescalinggroup.ControllerName, podclique.ControllerName},
		"webhooksEnabled", *cfg.WebhookServer.Enabled)
	return nil
}

func newSchedulerBackend(mgr manager.Manager, name configv1alpha1.SchedulerBackend) scheduler.Backend {
	if name == configv1alpha1.SchedulerBackendWorkload {
		return &scheduler.Workload{Client: mgr.GetClient(), Scheme: mgr.GetScheme()}
	}
	return scheduler.None{}
}
