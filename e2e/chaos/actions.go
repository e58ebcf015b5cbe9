package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
)

// stepProgress is where a workload is in its steps.
type stepProgress struct {
	next int
	// acted: the next step has acted and waits to be done.
	acted bool
	// exited are the pod runs a StepExit told to exit.
	exited map[podRun]bool
	// seen are the pod runs the last step acted on: a StepExit and a
	// StepRelease leave them alone (a pod restarted in place is in a new run).
	seen map[podRun]bool
	// releasing: a StepRelease was reached; released are the pods told to
	// exit since.
	releasing bool
	released  map[podRun]bool
	// quietSince is when the harness first saw no pod of the workload
	// holding a node (zero while one does).
	quietSince time.Time
}

// targetPods are the unit's pods of the step's target: the clique (a
// TrainJob's job) in the replica (a TrainJob has one), of every run; for a
// StepExit and a StepEvict only those the previous step did not see (an
// eviction after an eviction waits for the run it restarted).
func targetPods(u unit, s Step, st unitState, seen map[podRun]bool) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range st.Pods {
		if (s.Kind == StepExit || s.Kind == StepEvict) && seen[runOf(&p)] {
			continue
		}
		if u.jobSetPods() {
			if p.Labels[jobsetv1alpha2.ReplicatedJobNameKey] == s.Clique {
				out = append(out, p)
			}
			continue
		}
		if p.Labels[labels.CliqueTemplateKey] == s.Clique && p.Labels[labels.ReplicaKey] == strconv.Itoa(int(s.Replica)) {
			out = append(out, p)
		}
	}
	return out
}

// targetRunning: as many pods of the target as the plan gives it run and
// are not terminating.
func targetRunning(w Workload, u unit, s Step, st unitState, seen map[podRun]bool) bool {
	c, err := w.Clique(s.Clique)
	if err != nil {
		return false
	}
	running := 0
	for _, p := range targetPods(u, s, st, seen) {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running >= int(c.Pods)
}

// quiet: no pod of the unit holds a node.
func quiet(st unitState) bool {
	for i := range st.Pods {
		if holdsNode(&st.Pods[i]) {
			return false
		}
	}
	return true
}

// advanceSteps takes the workload's next steps whose moment has come.
func (r *runner) advanceSteps(ctx context.Context, run *WorkloadRun, st unitState) {
	p := &run.steps
	if quiet(st) {
		if p.quietSince.IsZero() {
			p.quietSince = time.Now()
		}
	} else {
		p.quietSince = time.Time{}
	}
	for p.next < len(run.Steps) {
		s := run.Steps[p.next]
		if !p.acted {
			if !r.stepMomentCame(run, s, st) {
				return
			}
			if err := r.act(ctx, run, s, st); err != nil {
				fmt.Fprintf(r.out, "[chaos] %s %s: %s: %v (retrying)\n", clock(r.start, time.Now()), run.Name, s, err)
				return
			}
			p.acted = true
			if s.Kind != StepRelease {
				p.seen = aimedAt(run.unit, s, st)
			}
			run.Actions = append(run.Actions, fmt.Sprintf("%s at %s", s, clock(r.start, time.Now())))
			fmt.Fprintf(r.out, "[chaos] %s %s: %s\n", clock(r.start, time.Now()), run.Name, s)
			for _, k := range run.kills {
				if k.Trigger == TriggerAction && !r.killer.hasFired(k.Index) {
					r.killer.fire(k, "after "+s.String())
				}
			}
		}
		if !stepDone(run, s, st) {
			return
		}
		p.next++
		p.acted, p.exited = false, nil
	}
}

// aimedAt are the pods step s acts on: a deleted PodClique's pods; every
// pod of the workload for a step on the whole workload.
func aimedAt(u unit, s Step, st unitState) map[podRun]bool {
	pods := st.Pods
	if s.Kind == StepDeletePodClique || s.Kind == StepEvict {
		pods = targetPods(u, s, st, nil)
	}
	out := map[podRun]bool{}
	for _, p := range pods {
		out[runOf(&p)] = true
	}
	return out
}

func (r *runner) stepMomentCame(run *WorkloadRun, s Step, st unitState) bool {
	switch s.Kind {
	case StepResume, StepReactivate:
		return !run.steps.quietSince.IsZero() && time.Since(run.steps.quietSince) >= s.Hold
	case StepRelease:
		return true
	}
	return targetRunning(run.Workload, run.unit, s, st, run.steps.seen)
}

// release makes every running pod of a workload that reached its
// StepRelease exit 0, but those the step before it acted on.
func (r *runner) release(ctx context.Context, run *WorkloadRun, st unitState) {
	p := &run.steps
	if !p.releasing {
		return
	}
	for _, pod := range st.Pods {
		if p.seen[runOf(&pod)] || p.released[runOf(&pod)] || pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		if err := r.env.PatchPodExit(ctx, &pod, "0"); err != nil {
			fmt.Fprintf(r.out, "[chaos] %s: release: %v (retrying)\n", run.Name, err)
			return
		}
		p.released[runOf(&pod)] = true
	}
}

// stepDone: a StepExit is done once every pod it told to exit has exited 0
// (or is gone); every other step once it acted.
func stepDone(run *WorkloadRun, s Step, st unitState) bool {
	if s.Kind != StepExit {
		return true
	}
	left := map[podRun]bool{}
	for r := range run.steps.exited {
		left[r] = true
	}
	for _, p := range st.Pods {
		if left[runOf(&p)] && p.Status.Phase != corev1.PodSucceeded {
			return false
		}
	}
	return true
}

// act carries out step s.
func (r *runner) act(ctx context.Context, run *WorkloadRun, s Step, st unitState) error {
	c := r.env.Client
	switch s.Kind {
	case StepSuspend, StepResume:
		return r.setSuspend(ctx, run.unit, s.Kind == StepSuspend)
	case StepExit:
		if run.steps.exited == nil {
			run.steps.exited = map[podRun]bool{}
		}
		for _, p := range targetPods(run.unit, s, st, run.steps.seen) {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || run.steps.exited[runOf(&p)] {
				continue
			}
			if err := r.env.PatchPodExit(ctx, &p, "0"); err != nil {
				return err
			}
			run.steps.exited[runOf(&p)] = true
		}
		return nil
	case StepRelease:
		// The pods the previous step saw are left alone: seen is kept.
		run.steps.releasing, run.steps.released = true, map[podRun]bool{}
		return nil
	case StepDeletePodClique:
		pclq := &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace,
			Name: naming.StandalonePodClique(run.ObjectName, int(s.Replica), s.Clique)}}
		return client.IgnoreNotFound(c.Delete(ctx, pclq))
	case StepDeleteBackend:
		pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: run.Namespace, Name: run.ObjectName}}
		return client.IgnoreNotFound(c.Delete(ctx, pcs))
	case StepEvict:
		for _, p := range targetPods(run.unit, s, st, run.steps.seen) {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
			return c.SubResource("eviction").Create(ctx, &p, eviction)
		}
		return errors.New("no running pod to evict")
	case StepChangeTopology:
		return r.changeTopology(ctx, run)
	case StepPreempt:
		if err := client.IgnoreAlreadyExists(c.Create(ctx, run.Preemptor(run.Namespace))); err != nil {
			return err
		}
		r.follow(run, unit{Kind: KindPodCliqueSet, Namespace: run.Namespace, Name: PreemptorName, Queued: true}, true)
		return nil
	case StepDeactivate, StepReactivate:
		if st.Kueue == nil {
			return errors.New("no Kueue Workload yet")
		}
		wl := st.Kueue.DeepCopy()
		patch := client.MergeFrom(wl.DeepCopy())
		wl.Spec.Active = ptr.To(s.Kind == StepReactivate)
		return c.Patch(ctx, wl, patch)
	}
	return fmt.Errorf("unknown step %q", s.Kind)
}

// setSuspend sets spec.suspend of the unit's object, as a user would.
func (r *runner) setSuspend(ctx context.Context, u unit, suspend bool) error {
	var obj client.Object = &copsev1alpha1.PodCliqueSet{}
	if u.Kind == KindTrainJob {
		obj = &trainerv1alpha1.TrainJob{}
	}
	if err := r.env.Client.Get(ctx, client.ObjectKey{Namespace: u.Namespace, Name: u.Name}, obj); err != nil {
		return err
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	switch o := obj.(type) {
	case *copsev1alpha1.PodCliqueSet:
		o.Spec.Suspend = ptr.To(suspend)
	case *trainerv1alpha1.TrainJob:
		o.Spec.Suspend = ptr.To(suspend)
	}
	return r.env.Client.Patch(ctx, obj, patch)
}

// labelNodes gives every kwok node the label key, valued with its rack, so
// that a level of that key packs as the rack level does.
func (r *runner) labelNodes(ctx context.Context, key string) error {
	var nodes corev1.NodeList
	if err := r.env.Client.List(ctx, &nodes, client.MatchingLabels{cluster.LabelType: cluster.TypeKwok}); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Labels[key] == n.Labels[cluster.LabelRack] {
			continue
		}
		patch := client.MergeFrom(n.DeepCopy())
		n.Labels[key] = n.Labels[cluster.LabelRack]
		if err := r.env.Client.Patch(ctx, n, patch); err != nil {
			return fmt.Errorf("label node %s with %s: %w", n.Name, key, err)
		}
	}
	return nil
}

// changeTopology changes the workload's binding as Topology.Change says.
func (r *runner) changeTopology(ctx context.Context, run *WorkloadRun) error {
	c := r.env.Client
	key := TopologyKey(run.Namespace)
	switch run.Topology.Change {
	case TopologyDeleted:
		return client.IgnoreNotFound(c.Delete(ctx, Binding(BindingName(run.Namespace), key)))
	case TopologyRekeyed:
		if err := r.labelNodes(ctx, key+"-b"); err != nil {
			return err
		}
		b := &copsev1alpha1.ClusterTopologyBinding{}
		if err := c.Get(ctx, client.ObjectKey{Name: BindingName(run.Namespace)}, b); err != nil {
			return err
		}
		b.Spec.Levels[0].Key = key + "-b"
		return c.Update(ctx, b)
	case TopologyAdded:
		return client.IgnoreAlreadyExists(c.Create(ctx, Binding(addedBindingName(run.Namespace), key)))
	}
	return fmt.Errorf("no change %q to make", run.Topology.Change)
}

// createRetrying creates obj, retrying while the webhooks are down with
// the operator. A refusal (invalid, forbidden) is returned as refused,
// with the field it names first; other errors after createTimeout as err.
func (r *runner) createRetrying(ctx context.Context, obj client.Object) (refused *apierrors.StatusError, err error) {
	deadline := time.Now().Add(createTimeout)
	for {
		err := r.env.Client.Create(ctx, obj.DeepCopyObject().(client.Object))
		var status *apierrors.StatusError
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			return nil, nil
		case (apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)) && errors.As(err, &status):
			return status, nil
		case time.Now().After(deadline):
			return nil, fmt.Errorf("create %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
		sleep(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// refusedField is the first field a refusal names, or its message when it
// names none.
func refusedField(status *apierrors.StatusError) string {
	if d := status.ErrStatus.Details; d != nil {
		for _, cause := range d.Causes {
			if cause.Field != "" {
				return cause.Field
			}
		}
	}
	return status.ErrStatus.Message
}
