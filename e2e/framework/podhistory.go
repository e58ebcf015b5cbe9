package framework

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/copse-dev/copse/internal/labels"
)

// ObjectEvent is one change of a pod or PodGroup, as the API server ordered
// it: its resourceVersion orders it against every other event of the
// cluster, whatever the kind.
type ObjectEvent struct {
	Type            watch.EventType
	Kind            string
	ResourceVersion string
	Name            string
	UID             string
	PodCliqueSet    string
	Replica         string
	Attempt         string
	PodClique       string
	Clique          string
	Index           string
	Phase           corev1.PodPhase
	Terminating     bool
	// StartupGate is a pod's copse.dev/startup-gate annotation ("closed",
	// "open"; "" for a pod without a startup gate).
	StartupGate string
}

// History records every pod and PodGroup event of a namespace, in the API
// server's order, so that tests can check invariants that a poll could
// miss: two runs of a replica overlapping, a pod that exited 0 run again.
// It survives an API server restart: when its watch cannot resume ("too old
// resource version"), it lists again and records the differences, as an
// informer would.
type History struct {
	mu     sync.Mutex
	events []ObjectEvent
	// live is the last state seen per kind and UID, for the differences of
	// a relist.
	live   map[string]map[string]ObjectEvent
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// historySource lists and watches one kind.
type historySource struct {
	kind  string
	list  func(context.Context) ([]runtime.Object, string, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// RecordHistory starts recording the pods and PodGroups of namespace. Call
// Stop before reading the events.
func RecordHistory(ctx context.Context, clientset kubernetes.Interface, namespace string) (*History, error) {
	ctx, cancel := context.WithCancel(ctx)
	h := &History{cancel: cancel, live: map[string]map[string]ObjectEvent{}}
	pods := clientset.CoreV1().Pods(namespace)
	podGroups := clientset.SchedulingV1beta1().PodGroups(namespace)
	sources := []historySource{
		{"Pod", func(ctx context.Context) ([]runtime.Object, string, error) {
			l, err := pods.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			return podItems(l.Items), l.ResourceVersion, nil
		}, pods.Watch},
		{"PodGroup", func(ctx context.Context) ([]runtime.Object, string, error) {
			l, err := podGroups.List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, "", err
			}
			return podGroupItems(l.Items), l.ResourceVersion, nil
		}, podGroups.Watch},
	}
	for _, src := range sources {
		rv, err := h.relist(ctx, src)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("list %ss of %s: %w", src.kind, namespace, err)
		}
		h.done.Add(1)
		go func() {
			defer h.done.Done()
			h.follow(ctx, src, rv)
		}()
	}
	return h, nil
}

// follow watches src from rv until ctx ends, resuming after a broken watch
// and relisting when the watch cannot resume.
func (h *History) follow(ctx context.Context, src historySource, rv string) {
	for ctx.Err() == nil {
		w, err := src.watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			time.Sleep(200 * time.Millisecond) // the API server is down: wait for it
			continue
		}
		gone := false
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				// "Too old" (the API server restarted and its watch cache
				// starts later): relist. Anything else (a broken stream, the
				// recording stopped): resume from the last version seen.
				status, ok := ev.Object.(*metav1.Status)
				gone = ok && status.Code == http.StatusGone
				break
			}
			if ev.Type == watch.Bookmark {
				rv = resourceVersionOf(ev.Object, rv)
				continue
			}
			h.add(ev)
			rv = resourceVersionOf(ev.Object, rv)
		}
		w.Stop()
		if gone {
			for ctx.Err() == nil {
				if rv, err = h.relist(ctx, src); err == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}

// relist lists src and records the differences from what was seen: objects
// not seen are added, objects no longer listed are deleted, changed ones
// modified, all at the list's resourceVersion.
func (h *History) relist(ctx context.Context, src historySource) (string, error) {
	objs, rv, err := src.list(ctx)
	if err != nil {
		return "", err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	listed := map[string]bool{}
	for _, obj := range objs {
		e, ok := h.eventOf(watch.Added, obj)
		if !ok {
			continue
		}
		listed[e.UID] = true
		prev, seen := h.live[src.kind][e.UID]
		switch {
		case !seen:
		case prev.ResourceVersion == e.ResourceVersion:
			continue
		default:
			e.Type = watch.Modified
		}
		e.ResourceVersion = rv
		h.record(e)
	}
	for uid, prev := range h.live[src.kind] {
		if !listed[uid] {
			prev.Type, prev.ResourceVersion = watch.Deleted, rv
			h.record(prev)
		}
	}
	return rv, nil
}

// Stop ends the recording.
func (h *History) Stop() {
	h.cancel()
	h.done.Wait()
}

// Events returns the recorded events, ordered by resourceVersion.
func (h *History) Events() []ObjectEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ObjectEvent, len(h.events))
	copy(out, h.events)
	sortByResourceVersion(out)
	return out
}

func (h *History) add(ev watch.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.eventOf(ev.Type, ev.Object); ok {
		h.record(e)
	}
}

// eventOf turns a watched object into an event; ok is false for kinds the
// history does not record.
func (h *History) eventOf(t watch.EventType, obj runtime.Object) (ObjectEvent, bool) {
	switch o := obj.(type) {
	case *corev1.Pod:
		e := eventOf(t, "Pod", &o.ObjectMeta)
		e.Phase = o.Status.Phase
		return e, true
	case *schedulingv1beta1.PodGroup:
		return eventOf(t, "PodGroup", &o.ObjectMeta), true
	}
	return ObjectEvent{}, false
}

// record appends e and keeps the live state; callers hold h.mu.
func (h *History) record(e ObjectEvent) {
	h.events = append(h.events, e)
	if h.live[e.Kind] == nil {
		h.live[e.Kind] = map[string]ObjectEvent{}
	}
	if e.Type == watch.Deleted {
		delete(h.live[e.Kind], e.UID)
	} else {
		h.live[e.Kind][e.UID] = e
	}
}

func resourceVersionOf(obj runtime.Object, fallback string) string {
	if m, ok := obj.(metav1.Object); ok && m.GetResourceVersion() != "" {
		return m.GetResourceVersion()
	}
	return fallback
}

func eventOf(t watch.EventType, kind string, m *metav1.ObjectMeta) ObjectEvent {
	return ObjectEvent{
		Type: t, Kind: kind, ResourceVersion: m.ResourceVersion, Name: m.Name, UID: string(m.UID),
		PodCliqueSet: m.Labels[labels.PartOfKey], Replica: m.Labels[labels.ReplicaKey], Attempt: m.Labels[labels.AttemptKey],
		PodClique: m.Labels[labels.PodCliqueKey], Clique: m.Labels[labels.CliqueTemplateKey], Index: m.Labels[labels.PodIndexKey],
		Terminating: m.DeletionTimestamp != nil, StartupGate: m.Annotations[labels.StartupGateAnnotation],
	}
}

func podItems(items []corev1.Pod) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func podGroupItems(items []schedulingv1beta1.PodGroup) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func sortByResourceVersion(events []ObjectEvent) {
	slices.SortStableFunc(events, func(a, b ObjectEvent) int {
		c, err := resourceversion.CompareResourceVersion(a.ResourceVersion, b.ResourceVersion)
		if err != nil {
			return 0
		}
		return c
	})
}
