package main

import (
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/controller/kueueworkload"
	"github.com/copse-dev/copse/internal/kueue"
)

// kueueKinds are the Kueue kinds copse reads or writes: it refuses to start
// without any of them.
var kueueKinds = []schema.GroupVersionKind{
	kueuev1beta2.SchemeGroupVersion.WithKind("Workload"),
	kueuev1beta2.SchemeGroupVersion.WithKind("ResourceFlavor"),
	kueuev1beta2.SchemeGroupVersion.WithKind("WorkloadPriorityClass"),
	kueuev1beta2.SchemeGroupVersion.WithKind("Topology"),
}

// checkKueueServed refuses, when kueue.enabled is true, a cluster that does
// not serve Kueue's kinds: every queued PodCliqueSet would wait, suspended,
// for a Workload that cannot be created.
func checkKueueServed(mapper meta.RESTMapper, cfg configv1alpha1.KueueConfiguration) error {
	if !cfg.Enabled {
		return nil
	}
	for _, gvk := range kueueKinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return fmt.Errorf("kueue.enabled is true but the cluster does not serve %s (%v): install Kueue v0.19 (copse is tested with v0.19.2) "+
				"(its CRDs serve kueue.x-k8s.io/v1beta2), or set kueue.enabled to false", gvk, err)
		}
	}
	return nil
}

// kueuePreflight checks, before the manager starts and when kueue.enabled
// is true, that the cluster serves Kueue's kinds (checkKueueServed), and
// returns the most pod sets the installed Kueue takes in a Workload, read
// once from the schema its CRD serves (0 when kueue.enabled is false). When
// the limit cannot be read, copse logs why and assumes the limit of the
// Kueue it is tested with.
func kueuePreflight(log logr.Logger, mapper meta.RESTMapper, schemas openapi.Client, cfg configv1alpha1.KueueConfiguration) (int, error) {
	if err := checkKueueServed(mapper, cfg); err != nil || !cfg.Enabled {
		return 0, err
	}
	limit, err := kueue.ServedMaxPodSets(schemas)
	if err != nil {
		log.Error(err, "cannot read the most pod sets a Kueue Workload takes; assuming Kueue v0.19's", "maxPodSets", kueue.DefaultMaxPodSets)
		return kueue.DefaultMaxPodSets, nil
	}
	log.Info("read the most pod sets a Kueue Workload takes from its CRD", "maxPodSets", limit)
	return limit, nil
}

// registerKueueController adds, when kueue.enabled is true, the controller
// that queues labelled PodCliqueSets through Kueue (kueuePreflight has
// passed). It returns the controller names it added.
func registerKueueController(mgr manager.Manager, cfg *configv1alpha1.OperatorConfiguration, recorders *eventRecorders,
	topologyAwareScheduling bool, maxPodSets int) ([]string, error) {
	if !cfg.Kueue.Enabled {
		return nil, nil
	}
	r := &kueueworkload.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  recorders.For(kueueworkload.ControllerName),
		Clock:     clock.RealClock{},

		TopologyAwareScheduling: topologyAwareScheduling,
		MaxPodSets:              maxPodSets,
	}
	if err := r.SetupWithManager(mgr, int(cfg.Controllers.PodCliqueSet.ConcurrentSyncs)); err != nil {
		return nil, fmt.Errorf("setting up the %s controller: %w", kueueworkload.ControllerName, err)
	}
	return []string{kueueworkload.ControllerName}, nil
}

// kueueDecorators are the pod decorators of the Kueue integration: the pod
// set index a sliced topology request orders pods by.
func kueueDecorators(cfg configv1alpha1.KueueConfiguration) []blueprint.PodDecorator {
	if !cfg.Enabled {
		return nil
	}
	return []blueprint.PodDecorator{kueue.PodSetIndexDecorator()}
}
