package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/copse-dev/copse/internal/eventsink"
)

// eventRecorders hands each controller its events.EventRecorder. They share
// one broadcaster whose sink drops, quietly, the events of a namespace being
// deleted (internal/eventsink); the manager's own recorders would log each
// as an error. The broadcaster runs with the manager and stops with it.
type eventRecorders struct {
	broadcaster events.EventBroadcaster
	mgr         manager.Manager
}

func newEventRecorders(mgr manager.Manager) (*eventRecorders, error) {
	clientset, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	sink := eventsink.Quiet{
		EventSink: &events.EventSinkImpl{Interface: clientset.EventsV1()},
		Log:       mgr.GetLogger().WithName("events"),
	}
	r := &eventRecorders{broadcaster: events.NewBroadcaster(sink), mgr: mgr}
	if err := mgr.Add(r); err != nil {
		return nil, fmt.Errorf("adding the event broadcaster to the manager: %w", err)
	}
	return r, nil
}

// For returns the recorder of the named controller.
func (r *eventRecorders) For(controller string) events.EventRecorder {
	return r.broadcaster.NewRecorder(r.mgr.GetScheme(), controller)
}

// Start implements manager.Runnable: it delivers events until ctx ends.
func (r *eventRecorders) Start(ctx context.Context) error {
	if err := r.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("starting the event broadcaster: %w", err)
	}
	<-ctx.Done()
	r.broadcaster.Shutdown()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: events are
// delivered on every replica, whichever emits them.
func (r *eventRecorders) NeedLeaderElection() bool { return false }
