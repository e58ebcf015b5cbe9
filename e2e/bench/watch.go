package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/copse-dev/copse/e2e/framework"
	copselabels "github.com/copse-dev/copse/internal/labels"
)

// Watches time everything: an event's time is when this process received
// it, with the monotonic clock, a few milliseconds after the API server
// committed the change. Objects' own timestamps (creationTimestamp,
// finishedAt, lastTransitionTime) have whole-second precision, too coarse
// for figures of a second or two; they are recorded next to the watch
// times where useful.

// watcherFunc adapts a Watch function to cache.WatcherWithContext.
type watcherFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)

func (f watcherFunc) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return f(ctx, opts)
}

// runWatch delivers every event after resourceVersion to handle, with its
// receive time, until ctx ends; it resumes a broken watch where it stopped.
// A watch that cannot resume (the resourceVersion expired) is reported
// through fail.
func runWatch(ctx context.Context, resourceVersion string, w watcherFunc, handle func(watch.Event, time.Time), fail func(error)) error {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, w)
	if err != nil {
		return err
	}
	go func() {
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					if ctx.Err() == nil {
						fail(fmt.Errorf("watch ended unexpectedly"))
					}
					return
				}
				now := time.Now()
				if ev.Type == watch.Error {
					fail(fmt.Errorf("watch error: %v", ev.Object))
					return
				}
				handle(ev, now)
			}
		}
	}()
	return nil
}

// podRecord is what a watch saw of one pod, with receive times.
type podRecord struct {
	UID       types.UID
	Namespace string
	Name      string
	Labels    map[string]string
	// Added is when the pod was first seen.
	Added time.Time
	// Created is its creationTimestamp (whole seconds).
	Created time.Time
	// Scheduled is when the pod was first seen bound to a node.
	Scheduled time.Time
	// Running, Succeeded, Failed: when the phase was first seen.
	Running, Succeeded, Failed time.Time
	// Terminated is when a main container was first seen terminated, and
	// FinishedAt and ExitCode what that container status said (FinishedAt
	// in whole seconds).
	Terminated time.Time
	FinishedAt time.Time
	ExitCode   int32
	// Deleting is when the pod was first seen with a deletionTimestamp,
	// Deleted when it was seen gone.
	Deleting, Deleted time.Time
	// Node is the node the pod was bound to.
	Node string
	// WorkloadRunning is, per value of its copse.dev/attempt label, when
	// the pod was first seen Running with every main container running
	// and its startup gate (if any) open: the attempt's workload runs.
	WorkloadRunning map[string]time.Time
	// AttemptSeen is, per value of its copse.dev/attempt label, when the
	// pod was first seen with it; HeldAt when it was first seen held at
	// its closed startup gate (the gate container not terminated), as a
	// pod restarted in place is once its old containers are gone.
	AttemptSeen map[string]time.Time
	HeldAt      time.Time
}

// workloadRunning: the pod is Running, every main container runs, and its
// startup gate is not closed (a pod moved to a new attempt by a restart in
// place keeps its old containers running, gate closed, until the kubelet
// restarts them).
func workloadRunning(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.Annotations[copselabels.StartupGateAnnotation] == "closed" ||
		len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// heldAtGate: the pod's startup gate is closed and its gate container
// runs or waits.
func heldAtGate(pod *corev1.Pod) bool {
	if pod.Annotations[copselabels.StartupGateAnnotation] != "closed" {
		return false
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name == copselabels.StartupGateContainer {
			return cs.State.Terminated == nil
		}
	}
	return false
}

// podTracker records the pods of one namespace.
type podTracker struct {
	mu   sync.Mutex
	pods map[types.UID]*podRecord
	last time.Time
	err  error
}

// trackPods starts recording the pods of namespace; it returns once the
// watch is established, so that no later pod is missed.
func trackPods(ctx context.Context, cs kubernetes.Interface, namespace string) (*podTracker, error) {
	pods := cs.CoreV1().Pods(namespace)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods of %s: %w", namespace, err)
	}
	t := &podTracker{pods: map[types.UID]*podRecord{}}
	now := time.Now()
	for i := range list.Items {
		t.observe(&list.Items[i], now)
	}
	err = runWatch(ctx, list.ResourceVersion, func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return pods.Watch(ctx, opts)
	}, func(ev watch.Event, now time.Time) {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.last = now
		if ev.Type == watch.Deleted {
			if r := t.pods[pod.UID]; r != nil && r.Deleted.IsZero() {
				r.Deleted = now
			}
			return
		}
		t.observeLocked(pod, now)
	}, t.fail)
	if err != nil {
		return nil, fmt.Errorf("watch pods of %s: %w", namespace, err)
	}
	return t, nil
}

func (t *podTracker) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = fmt.Errorf("pod watch: %w", err)
	}
}

func (t *podTracker) observe(pod *corev1.Pod, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observeLocked(pod, now)
}

func (t *podTracker) observeLocked(pod *corev1.Pod, now time.Time) {
	r := t.pods[pod.UID]
	if r == nil {
		r = &podRecord{UID: pod.UID, Namespace: pod.Namespace, Name: pod.Name, Added: now, Created: pod.CreationTimestamp.Time}
		t.pods[pod.UID] = r
	}
	r.Labels = pod.Labels
	if pod.Spec.NodeName != "" {
		setOnce(&r.Scheduled, now)
		r.Node = pod.Spec.NodeName
	}
	if attempt, ok := pod.Labels[copselabels.AttemptKey]; ok {
		if r.AttemptSeen == nil {
			r.AttemptSeen = map[string]time.Time{}
		}
		if _, seen := r.AttemptSeen[attempt]; !seen {
			r.AttemptSeen[attempt] = now
		}
	}
	if heldAtGate(pod) {
		setOnce(&r.HeldAt, now)
	}
	if workloadRunning(pod) {
		if r.WorkloadRunning == nil {
			r.WorkloadRunning = map[string]time.Time{}
		}
		attempt := pod.Labels[copselabels.AttemptKey]
		if _, seen := r.WorkloadRunning[attempt]; !seen {
			r.WorkloadRunning[attempt] = now
		}
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		setOnce(&r.Running, now)
	case corev1.PodSucceeded:
		setOnce(&r.Succeeded, now)
	case corev1.PodFailed:
		setOnce(&r.Failed, now)
	}
	if pod.DeletionTimestamp != nil {
		setOnce(&r.Deleting, now)
	}
	if r.Terminated.IsZero() {
		for _, cs := range pod.Status.ContainerStatuses {
			if term := cs.State.Terminated; term != nil {
				r.Terminated, r.FinishedAt, r.ExitCode = now, term.FinishedAt.Time, term.ExitCode
				break
			}
		}
	}
}

func setOnce(t *time.Time, now time.Time) {
	if t.IsZero() {
		*t = now
	}
}

// Pods returns copies of the records of the pods matching selector.
func (t *podTracker) Pods(selector labels.Selector) []podRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []podRecord
	for _, r := range t.pods {
		if selector.Matches(labels.Set(r.Labels)) {
			out = append(out, *r)
		}
	}
	return out
}

// Err is the watch's failure, if it broke.
func (t *podTracker) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *podTracker) lastEvent() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// objRecord is what a watch saw of one custom object.
type objRecord struct {
	Namespace string
	Name      string
	Added     time.Time
	// StatusWrites counts the changes of .status seen, the first status
	// included: every status write that changed something bumps the
	// resourceVersion and produces one watch event (writes that change
	// nothing produce none, and are not counted).
	StatusWrites int
	// Phases: when each .status.phase value was first seen.
	Phases map[string]time.Time
	// TrueConditions: when each condition type was first seen True.
	TrueConditions map[string]time.Time
	// Available is when status.availableReplicas was first seen to reach
	// spec.replicas (PodCliqueSets).
	Available time.Time
	// Deleted is when the object was seen gone.
	Deleted time.Time
	// BarrierLifted is when a restart in place was first seen with its
	// barrier lifted (PodCliqueSets: status.replicaRecreations[].barrierLiftedAt).
	BarrierLifted time.Time
	// Changes is when each version of the object was seen: its creation
	// and every write that changed it (spec, metadata or status), one watch
	// event each.
	Changes []time.Time

	status any
}

// objTracker records the objects of one resource in one namespace.
type objTracker struct {
	kind string
	mu   sync.Mutex
	objs map[types.UID]*objRecord
	last time.Time
	err  error
}

// trackObjects starts recording the objects of gvr in namespace.
func trackObjects(ctx context.Context, dc dynamic.Interface, gvr schema.GroupVersionResource, namespace string) (*objTracker, error) {
	res := dc.Resource(gvr).Namespace(namespace)
	list, err := res.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", gvr.Resource, namespace, err)
	}
	t := &objTracker{kind: kindOf(gvr), objs: map[types.UID]*objRecord{}}
	now := time.Now()
	for i := range list.Items {
		t.observe(&list.Items[i], now)
	}
	err = runWatch(ctx, list.GetResourceVersion(), func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		return res.Watch(ctx, opts)
	}, func(ev watch.Event, now time.Time) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return
		}
		if ev.Type == watch.Deleted {
			t.deleted(u, now)
			return
		}
		t.observe(u, now)
	}, func(err error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.err == nil {
			t.err = fmt.Errorf("%s watch: %w", gvr.Resource, err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch %s of %s: %w", gvr.Resource, namespace, err)
	}
	return t, nil
}

func (t *objTracker) observe(u *unstructured.Unstructured, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = now
	r := t.objs[u.GetUID()]
	status, hasStatus := u.Object["status"]
	if r == nil {
		r = &objRecord{Namespace: u.GetNamespace(), Name: u.GetName(), Added: now, Phases: map[string]time.Time{}, TrueConditions: map[string]time.Time{}}
		t.objs[u.GetUID()] = r
		if hasStatus && !emptyStatus(status) {
			r.StatusWrites++
		}
	} else if !equality.Semantic.DeepEqual(status, r.status) {
		r.StatusWrites++
	}
	r.status = status
	r.Changes = append(r.Changes, now)
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "" {
		if _, seen := r.Phases[phase]; !seen {
			r.Phases[phase] = now
		}
	}
	want, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if available, found, _ := unstructured.NestedInt64(u.Object, "status", "availableReplicas"); found && want > 0 && available >= want {
		setOnce(&r.Available, now)
	}
	recreations, _, _ := unstructured.NestedSlice(u.Object, "status", "replicaRecreations")
	for _, rec := range recreations {
		if m, ok := rec.(map[string]any); ok && m["barrierLiftedAt"] != nil {
			setOnce(&r.BarrierLifted, now)
		}
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		cond, ok := c.(map[string]any)
		if !ok || cond["status"] != "True" {
			continue
		}
		if typ, ok := cond["type"].(string); ok {
			if _, seen := r.TrueConditions[typ]; !seen {
				r.TrueConditions[typ] = now
			}
		}
	}
}

func (t *objTracker) deleted(u *unstructured.Unstructured, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = now
	if r := t.objs[u.GetUID()]; r != nil && r.Deleted.IsZero() {
		r.Deleted = now
	}
}

func emptyStatus(status any) bool {
	m, ok := status.(map[string]any)
	return status == nil || (ok && len(m) == 0)
}

// Objects returns copies of every record.
func (t *objTracker) Objects() []objRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []objRecord
	for _, r := range t.objs {
		out = append(out, *r)
	}
	return out
}

// Object returns the record of the object called name.
func (t *objTracker) Object(name string) (objRecord, bool) {
	for _, r := range t.Objects() {
		if r.Name == name {
			return r, true
		}
	}
	return objRecord{}, false
}

// ObjectIn returns the record of the object namespace/name, for a tracker
// of every namespace.
func (t *objTracker) ObjectIn(namespace, name string) (objRecord, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.objs {
		if r.Namespace == namespace && r.Name == name {
			return *r, true
		}
	}
	return objRecord{}, false
}

// Err is the watch's failure, if it broke.
func (t *objTracker) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *objTracker) lastEvent() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// eventSource is a tracker, for waitQuiet.
type eventSource interface{ lastEvent() time.Time }

// waitQuiet waits for quietFor without events, at most quietLimit.
const (
	quietFor   = time.Second
	quietLimit = 20 * time.Second
)

// waitQuiet waits until none of the trackers has seen an event for
// quietFor, at most quietLimit: the operator has finished reacting, so that its
// metrics include everything the run caused.
func waitQuiet(ctx context.Context, sources ...eventSource) {
	deadline := time.Now().Add(quietLimit)
	for time.Now().Before(deadline) {
		var last time.Time
		for _, s := range sources {
			if l := s.lastEvent(); l.After(last) {
				last = l
			}
		}
		if time.Since(last) >= quietFor {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitFor polls cond until it holds, the tracker errs, or timeout passes.
// cond returns whether it holds and, if not, what it saw, for the error.
// Times are taken from the trackers' records, not from when waitFor
// notices, so polling adds nothing to a measurement.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string)) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(20 * time.Millisecond)
	defer ticker.Stop()
	for {
		ok, detail := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for %s after %s: %w (%s)", what, time.Since(start).Round(time.Millisecond), ctx.Err(), detail)
		case <-ticker.C:
		}
	}
}

// kindOf names the kind of the resources the benchmark watches.
func kindOf(gvr schema.GroupVersionResource) string {
	switch gvr {
	case pcsGVR:
		return "PodCliqueSet"
	case pclqGVR:
		return "PodClique"
	case framework.JobSetGVR:
		return "JobSet"
	case jobGVR:
		return "Job"
	case trainJobGVR:
		return "TrainJob"
	case workloadGVR:
		return "Workload"
	}
	return gvr.Resource
}
