package main

import (
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/controller/clustertopologybinding"
	"github.com/copse-dev/copse/internal/controller/podclique"
	"github.com/copse-dev/copse/internal/controller/podcliquescalinggroup"
	"github.com/copse-dev/copse/internal/controller/podcliqueset"
	"github.com/copse-dev/copse/internal/controller/trainingruntime"
	"github.com/copse-dev/copse/internal/controller/trainjob"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/lifecycle"
	"github.com/copse-dev/copse/internal/scheduler"
	trainjobfront "github.com/copse-dev/copse/internal/trainjob"
	"github.com/copse-dev/copse/internal/webhook"
)

// registerControllers joins copse's controllers and admission webhooks to the
// manager. schedulerBackend is already resolved: it is never "auto" here;
// mnnvlParts passed the MNNVL preflight check (newMNNVLParts);
// kueueMaxPodSets is what kueuePreflight read.
func registerControllers(mgr manager.Manager, cfg *configv1alpha1.OperatorConfiguration,
	schedulerBackend configv1alpha1.SchedulerBackend, mnnvlParts mnnvlParts, kueueMaxPodSets int) error {
	backend := newSchedulerBackend(schedulerBackend)
	// Topology constraints become PodGroup constraints, which only the
	// Workload API backend makes.
	topologyAwareScheduling := cfg.TopologyAwareScheduling.Enabled && backend.Name() == scheduler.BackendWorkload
	recorders, err := newEventRecorders(mgr)
	if err != nil {
		return err
	}
	pcsReconciler := &podcliqueset.Reconciler{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		Scheme:      mgr.GetScheme(),
		Recorder:    recorders.For(podcliqueset.ControllerName),
		Backend:     backend,
		Resources:   mnnvlParts.resources,
		Clock:       clock.RealClock{},
		WriteBudget: int(cfg.Controllers.MaxWritesPerReconcile),

		IncompleteGangTimeout: cfg.Scheduler.IncompleteGangTimeout.Duration,
		InPlaceRestartTimeout: cfg.Scheduler.InPlaceRestartTimeout.Duration,

		TopologyAwareScheduling: topologyAwareScheduling,
		Kueue:                   cfg.Kueue.Enabled,
		KueueMaxPodSets:         kueueMaxPodSets,
	}
	if err := pcsReconciler.SetupWithManager(mgr, int(cfg.Controllers.PodCliqueSet.ConcurrentSyncs)); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", podcliqueset.ControllerName, err)
	}

	pcsgReconciler := &podcliquescalinggroup.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  recorders.For(podcliquescalinggroup.ControllerName),
		Clock:     clock.RealClock{},

		TopologyAwareScheduling: topologyAwareScheduling,
		WriteBudget:             int(cfg.Controllers.MaxWritesPerReconcile),
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
		Decorators: append([]blueprint.PodDecorator{
			backend.PodDecorator(),
			lifecycle.OutcomeFinalizer(),
			blueprint.SharedClaims(),
			blueprint.StartupGate(cfg.StartupGate.Image),
			blueprint.RestartAgent(cfg.StartupGate.Image),
		}, append(mnnvlParts.decorators, kueueDecorators(cfg.Kueue)...)...),
		MaxConcurrentReconciles: int(cfg.Controllers.PodClique.ConcurrentSyncs),
		WriteBudget:             int(cfg.Controllers.MaxWritesPerReconcile),
		Clock:                   clock.RealClock{},
	}
	if err := pclqReconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", podclique.ControllerName, err)
	}

	ctbReconciler := &clustertopologybinding.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: recorders.For(clustertopologybinding.ControllerName),
		Kueue:    cfg.Kueue.Enabled,
	}
	if err := ctbReconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", clustertopologybinding.ControllerName, err)
	}

	names := []string{podcliqueset.ControllerName, podcliquescalinggroup.ControllerName, podclique.ControllerName,
		clustertopologybinding.ControllerName}
	kueueNames, err := registerKueueController(mgr, cfg, recorders, topologyAwareScheduling, kueueMaxPodSets)
	if err != nil {
		return err
	}
	names = append(names, kueueNames...)
	trainJobEnabled := *cfg.Controllers.TrainJob.Enabled
	if trainJobEnabled {
		if err := registerTrainJobControllers(mgr, cfg, recorders); err != nil {
			return err
		}
		names = append(names, trainjob.ControllerName, trainingruntime.ControllerName)
	}

	if *cfg.WebhookServer.Enabled {
		features := webhook.Features{
			TrainJob:      trainJobEnabled,
			TopologyAware: topologyAwareScheduling,
			MNNVL:         cfg.MNNVL.Enabled,
			Kueue:         cfg.Kueue.Enabled,

			MNNVLDefaultGroup: cfg.MNNVL.DefaultGroup,
			KueueMaxPodSets:   kueueMaxPodSets,
		}
		if err := registerWebhooks(mgr, cfg.Limits, features); err != nil {
			return err
		}
	}

	mgr.GetLogger().WithName("setup").Info("registered controllers",
		"schedulerBackend", backend.Name(),
		"topologyAwareScheduling", topologyAwareScheduling,
		"controllers", names,
		"webhooksEnabled", *cfg.WebhookServer.Enabled)
	return nil
}

// registerTrainJobControllers adds the TrainJob front-end: TrainJobs into
// JobSets, and the release of runtimes no TrainJob needs. It refuses to start
// when the cluster does not serve the APIs it needs, naming them and the
// switch that leaves the front-end out.
func registerTrainJobControllers(mgr manager.Manager, cfg *configv1alpha1.OperatorConfiguration, recorders *eventRecorders) error {
	for _, gvk := range []schema.GroupVersionKind{
		trainerv1alpha1.SchemeGroupVersion.WithKind("TrainJob"),
		trainerv1alpha1.SchemeGroupVersion.WithKind("TrainingRuntime"),
		trainerv1alpha1.SchemeGroupVersion.WithKind("ClusterTrainingRuntime"),
		jobsetv1alpha2.GroupVersion.WithKind("JobSet"),
	} {
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return fmt.Errorf("the TrainJob front-end needs %s, which the cluster does not serve (%v): install its CRD "+
				"(JobSet v0.12.0 for jobset.x-k8s.io; the chart's trainJob.installCRDs for trainer.kubeflow.org) "+
				"or set controllers.trainJob.enabled to false", gvk, err)
		}
	}
	_, err := mgr.GetRESTMapper().RESTMapping(schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup").GroupKind(), schedulingv1beta1.SchemeGroupVersion.Version)
	// Kubeflow's coscheduling and Volcano PodGroups, made for runtimes whose
	// podGroupPolicy names those schedulers; a runtime asking for one the
	// cluster does not serve fails its TrainJobs with a stated reason.
	schedulerPodGroups := map[schema.GroupVersionKind]bool{}
	for _, kind := range []schema.GroupVersionKind{trainjobfront.CoschedulingPodGroupKind, trainjobfront.VolcanoPodGroupKind} {
		_, mappingErr := mgr.GetRESTMapper().RESTMapping(kind.GroupKind(), kind.Version)
		schedulerPodGroups[kind] = mappingErr == nil
	}
	tjReconciler := &trainjob.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  recorders.For(trainjob.ControllerName),
		Clock:     clock.RealClock{},
		// Without the Workload API, a runtime asking for Workload gangs
		// fails its TrainJobs with a stated reason instead.
		WorkloadAPI:        err == nil,
		SchedulerPodGroups: schedulerPodGroups,
		MNNVL:              cfg.MNNVL.Enabled,
	}
	if err := tjReconciler.SetupWithManager(mgr, int(cfg.Controllers.TrainJob.ConcurrentSyncs)); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", trainjob.ControllerName, err)
	}
	if err := (&trainingruntime.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", trainingruntime.ControllerName, err)
	}
	return nil
}

func newSchedulerBackend(name configv1alpha1.SchedulerBackend) scheduler.Backend {
	if name == configv1alpha1.SchedulerBackendWorkload {
		return &scheduler.Workload{}
	}
	return scheduler.None{}
}
