package framework

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

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
}

// History records every pod and PodGroup event of a namespace, in the API
// server's order, so that tests can check invariants that a poll could
// miss: two runs of a replica overlapping, a pod that exited 0 run again.
type History struct {
	mu     sync.Mutex
	events []ObjectEvent
	cancel context.CancelFunc
	done   sync.WaitGroup
	errs   []error
}

// RecordHistory starts recording the pods and PodGroups of namespace. Call
// Stop before reading the events.
func RecordHistory(ctx context.Context, clientset kubernetes.Interface, namespace string) (*History, error) {
	ctx, cancel := context.WithCancel(ctx)
	h := &History{cancel: cancel}
	pods := clientset.CoreV1().Pods(namespace)
	podGroups := clientset.SchedulingV1beta1().PodGroups(namespace)
	sources := []struct {
		kind  string
		list  func(context.Context, metav1.ListOptions) (string, error)
		watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
	}{
		{"Pod", func(ctx context.Context, o metav1.ListOptions) (string, error) {
			l, err := pods.List(ctx, o)
			if err != nil {
				return "", err
			}
			h.seed("Pod", podItems(l.Items))
			return l.ResourceVersion, nil
		}, pods.Watch},
		{"PodGroup", func(ctx context.Context, o metav1.ListOptions) (string, error) {
			l, err := podGroups.List(ctx, o)
			if err != nil {
				return "", err
			}
			h.seed("PodGroup", podGroupItems(l.Items))
			return l.ResourceVersion, nil
		}, podGroups.Watch},
	}
	for _, src := range sources {
		rv, err := src.list(ctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("list %ss of %s: %w", src.kind, namespace, err)
		}
		w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return src.watch(ctx, o)
			},
		})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("watch %ss of %s: %w", src.kind, namespace, err)
		}
		h.done.Add(1)
		go func() {
			defer h.done.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					h.add(ev)
				}
			}
		}()
	}
	return h, nil
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

// Err reports a watch error, if any occurred.
func (h *History) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) == 0 {
		return nil
	}
	return h.errs[0]
}

func (h *History) seed(kind string, objs []runtime.Object) {
	for _, obj := range objs {
		h.add(watch.Event{Type: watch.Added, Object: obj})
	}
}

func (h *History) add(ev watch.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch obj := ev.Object.(type) {
	case *corev1.Pod:
		e := eventOf(ev.Type, "Pod", &obj.ObjectMeta)
		e.Phase = obj.Status.Phase
		h.events = append(h.events, e)
	case *schedulingv1beta1.PodGroup:
		h.events = append(h.events, eventOf(ev.Type, "PodGroup", &obj.ObjectMeta))
	case *metav1.Status:
		h.errs = append(h.errs, fmt.Errorf("watch error: %s", obj.Message))
	}
}

func eventOf(t watch.EventType, kind string, m *metav1.ObjectMeta) ObjectEvent {
	return ObjectEvent{
		Type: t, Kind: kind, ResourceVersion: m.ResourceVersion, Name: m.Name, UID: string(m.UID),
		PodCliqueSet: m.Labels[labels.PartOfKey], Replica: m.Labels[labels.ReplicaKey], Attempt: m.Labels[labels.AttemptKey],
		PodClique: m.Labels[labels.PodCliqueKey], Clique: m.Labels[labels.CliqueTemplateKey], Index: m.Labels[labels.PodIndexKey],
		Terminating: m.DeletionTimestamp != nil,
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
