package eventsink

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// sink answers every call with err.
type sink struct{ err error }

func (s sink) Create(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) { return e, s.err }
func (s sink) Update(_ context.Context, e *eventsv1.Event) (*eventsv1.Event, error) { return e, s.err }
func (s sink) Patch(_ context.Context, e *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return e, s.err
}

func TestQuietDropsOnlyEventsOfTerminatingNamespaces(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "e",
		errors.New("unable to create new content in namespace ns because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "ns"}}
	other := apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "e", errors.New("RBAC"))
	event := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}}
	ctx := context.Background()

	for name, call := range map[string]func(Quiet) error{
		"create": func(q Quiet) error { _, err := q.Create(ctx, event); return err },
		"update": func(q Quiet) error { _, err := q.Update(ctx, event); return err },
		"patch":  func(q Quiet) error { _, err := q.Patch(ctx, event, nil); return err },
	} {
		if err := call(Quiet{EventSink: sink{terminating}, Log: logr.Discard()}); err != nil {
			t.Errorf("%s: a terminating namespace's refusal must be dropped, got %v", name, err)
		}
		if err := call(Quiet{EventSink: sink{other}, Log: logr.Discard()}); err == nil {
			t.Errorf("%s: another refusal must come through", name)
		}
	}
}
