// Package scheduler is the seam between copse and the scheduler that
// places gangs. A Backend turns a PodCliqueSet's gangs into the objects its
// scheduler understands; the PodClique controller only needs to know whether
// pods join gangs. Backends for KAI or Volcano would implement the same
// interface.
package scheduler

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
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
	// PodsJoinGangs tells the PodClique controller whether pods must name
	// their gang (spec.schedulingGroup) when created.
	PodsJoinGangs() bool
	// SyncGangs creates, updates and deletes the backend's objects so that
	// exactly the given gangs exist for pcs.
	SyncGangs(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, gangs []Gang) error
	// ReplicaGangObjects returns the backend's objects for one replica.
	// Recreating a replica deletes them with its PodCliques, so that the new
	// pods are scheduled as a new gang.
	ReplicaGangObjects(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, replica int) ([]client.Object, error)
}

// None places pods one by one with the default scheduler: no gang objects.
type None struct{}

// Name implements Backend.
func (None) Name() string { return BackendNone }

// PodsJoinGangs implements Backend.
func (None) PodsJoinGangs() bool { return false }

// SyncGangs implements Backend; there is nothing to sync.
func (None) SyncGangs(context.Context, *copsev1alpha1.PodCliqueSet, []Gang) error { return nil }

// ReplicaGangObjects implements Backend; there are none.
func (None) ReplicaGangObjects(context.Context, *copsev1alpha1.PodCliqueSet, int) ([]client.Object, error) {
	return nil, nil
}
