// Package eventsink delivers copse's events to the API server, dropping
// quietly the ones it refuses because their namespace is being deleted:
// the workloads of a deleted namespace react to their pods going away, and
// their events cannot be stored any more. Without this, every such event
// is an error line in the operator's log.
package eventsink

import (
	"context"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
)

// Quiet is an events.EventSink that reports an event refused for a
// terminating namespace as delivered, and logs it at debug level.
type Quiet struct {
	events.EventSink
	Log logr.Logger
}

var _ events.EventSink = Quiet{}

// Create implements events.EventSink.
func (q Quiet) Create(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := q.EventSink.Create(ctx, event)
	return q.filter(event, out, err)
}

// Update implements events.EventSink.
func (q Quiet) Update(ctx context.Context, event *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := q.EventSink.Update(ctx, event)
	return q.filter(event, out, err)
}

// Patch implements events.EventSink.
func (q Quiet) Patch(ctx context.Context, event *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	out, err := q.EventSink.Patch(ctx, event, data)
	return q.filter(event, out, err)
}

func (q Quiet) filter(event, out *eventsv1.Event, err error) (*eventsv1.Event, error) {
	if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		q.Log.V(1).Info("dropped an event of a namespace being deleted",
			"namespace", event.Namespace, "reason", event.Reason, "regarding", event.Regarding.Name)
		return event, nil
	}
	return out, err
}
