// Package scheduler is the seam between copse and the scheduler that
// places gangs. Which pods form a gang is copse's decision
// (blueprint.ReplicaGangs); a Backend turns gangs into the objects its
// scheduler understands and prepares each pod to join its gang. Backends
// for KAI or Volcano would implement the same interface.
package scheduler

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/internal/blueprint"
)

// Backend names, as in the operator configuration.
const (
	BackendWorkload = "workload"
	BackendNone     = "none"
)

// Backend keeps a scheduler's gang objects in line with a PodCliqueSet.
type Backend interface {
	// Name is the backend's configuration name.
	Name() string
	// PodDecorator prepares a pod for this scheduler (e.g. names its gang);
	// the PodClique controller applies it to every pod it creates.
	PodDecorator() blueprint.PodDecorator
	// ReplicaResources are the backend's objects, as rows of the
	// PodCliqueSet controller's table: per replica (its gangs, created with
	// a replica's run and deleted and recreated with it), and for the
	// PodCliqueSet as a whole (a row's Shared objects, e.g. the Workload
	// describing the gang shapes).
	ReplicaResources() []blueprint.ReplicaResource
}

// None places pods one by one with the default scheduler: no gang objects.
type None struct{}

// Name implements Backend.
func (None) Name() string { return BackendNone }

// PodDecorator implements Backend: pods are left as they are.
func (None) PodDecorator() blueprint.PodDecorator {
	return blueprint.PodDecorator{Name: "scheduler-none", Decorate: func(*corev1.Pod, blueprint.PodContext) error { return nil }}
}

// ReplicaResources implements Backend; there are none.
func (None) ReplicaResources() []blueprint.ReplicaResource { return nil }
