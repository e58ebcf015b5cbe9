package trainjob

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/trainjob"
)

// The observe step: everything a pass decides on is read here, before any
// decision, and nothing is read after. observe reads the runtime
// (observeRuntime), the backend's object (observeBackend; on the
// PodCliqueSet backend also its PodCliques and pods), builds the backend's
// objects (pure) and reads what exists of them (observeBuilt).

// observe reads everything the pass decides on into its facts. A runtime
// that cannot be resolved, or a build that cannot be made, is a fact
// (ResolveErr, BuildErr): the pass still carries a suspension to the
// backend's object. Any other failed read is returned: nothing is written.
func (r *Reconciler) observe(ctx context.Context, tj *trainerv1alpha1.TrainJob) (facts, error) {
	f := facts{TrainJob: tj, Now: r.Clock.Now(), Backend: trainerv1alpha1.RuntimeBackendJobSet}
	runtime, err := r.observeRuntime(ctx, &f)
	if err != nil {
		f.ResolveErr = errors.Join(err, r.observeSuspendTargets(ctx, &f))
		return f, nil
	}
	if err := r.observeBackend(ctx, &f); err != nil {
		return f, err
	}
	if f.Built, err = r.build(tj, runtime, &f); err != nil {
		f.BuildErr = fmt.Errorf("build the %s of TrainJob %s: %w", f.Backend, tj.Name, err)
		return f, nil
	}
	f.Existing, err = r.observeBuilt(ctx, f)
	return f, err
}

// observeBackend reads the backend's object: the JobSet (from the API server when
// the cache has none), or the PodCliqueSet, its
// PodCliques and how many of its pods have not ended. A PodCliqueSet's
// status changes as its pods go away (its Suspended condition counts them),
// which brings the TrainJob back: pods need no watch of their own.
//
// An object of the TrainJob's name that it does not control is a fact
// (NotControlled), as is, on the PodCliqueSet backend, a recorded
// PodCliqueSet that is gone (BackendDeleted): the cache may simply not have
// it yet, so its absence is confirmed with a read from the API server.
// The PodCliqueSet backend's packing comes from here: the existing
// PodCliqueSet's, else the ClusterTopologyBindings to resolve against.
func (r *Reconciler) observeBackend(ctx context.Context, f *facts) error {
	tj := f.TrainJob
	if f.Backend != trainerv1alpha1.RuntimeBackendPodCliqueSet {
		jobSet, err := r.getJobSet(ctx, tj)
		if err == nil && jobSet == nil && !finished(tj.Status) {
			jobSet, err = r.getJobSetFromServer(ctx, tj)
		}
		if notControlled, ok := asNotControlled(err); ok {
			f.NotControlled = notControlled.Error()
			return nil
		}
		f.JobSet = jobSet
		return err
	}
	pcs, err := r.getPodCliqueSet(ctx, tj)
	notControlled, foreign := asNotControlled(err)
	if err != nil && !foreign {
		return err
	}
	if !finished(tj.Status) && recordedPodCliqueSet(tj) != nil {
		deleted, live, err := r.checkRecordedPodCliqueSet(ctx, tj, pcs)
		if err != nil || deleted != "" {
			f.BackendDeleted = deleted
			return err
		}
		pcs, foreign = live, false
	}
	if foreign {
		f.NotControlled = notControlled.Error()
		return nil
	}
	if pcs == nil {
		if finished(tj.Status) {
			return nil
		}
		bindings := &copsev1alpha1.ClusterTopologyBindingList{}
		if err := r.Client.List(ctx, bindings); err != nil {
			return fmt.Errorf("list ClusterTopologyBindings: %w", err)
		}
		f.Topology = trainjob.ResolveTopologyAgainst(bindings.Items)
		return nil
	}
	f.PodCliqueSet = pcs
	f.Topology = trainjob.KeepTopology(pcs.Spec.Template.TopologyConstraint)
	// The pass that records the PodCliqueSet's end writes the TrainJob's
	// outcome and its jobsStatus once, for good: they are read from the
	// PodCliques the API server has, which the PodCliqueSet's phase was
	// decided from, not from a cache that may not have their last status yet
	// (a Complete TrainJob whose jobsStatus counts no succeeded job).
	reader := client.Reader(r.Client)
	if pcs.Status.Phase.IsTerminal() && !finished(tj.Status) && r.APIReader != nil {
		reader = r.APIReader
	}
	pclqs := &copsev1alpha1.PodCliqueList{}
	if err := reader.List(ctx, pclqs, client.InNamespace(tj.Namespace), client.MatchingLabels{labels.PartOfKey: pcs.Name}); err != nil {
		return fmt.Errorf("list the PodCliques of PodCliqueSet %s: %w", pcs.Name, err)
	}
	for _, pclq := range pclqs.Items {
		if metav1.IsControlledBy(&pclq, pcs) {
			f.PodCliques = append(f.PodCliques, pclq)
		}
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(tj.Namespace), client.MatchingLabels(labels.ForPodCliqueSet(pcs.Name))); err != nil {
		return fmt.Errorf("list the pods of PodCliqueSet %s: %w", pcs.Name, err)
	}
	f.PodsNotEnded = podsNotEnded(pods.Items)
	return nil
}

// recordedPodCliqueSet is the PodCliqueSet status.backend records, nil when
// it records none.
func recordedPodCliqueSet(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.BackendStatus {
	if b := tj.Status.Backend; b != nil && b.Kind == "PodCliqueSet" {
		return b
	}
	return nil
}

// checkRecordedPodCliqueSet tells whether the PodCliqueSet the TrainJob
// recorded still runs it. cached is the cache's (nil when the cache has
// none the TrainJob controls). deleted says why it does not, "" when it
// does; live is then the PodCliqueSet, read from the API server when the
// cache did not have it. It is gone when the API server has no PodCliqueSet
// of that name controlled by the TrainJob with the recorded UID, or has it
// being deleted.
func (r *Reconciler) checkRecordedPodCliqueSet(ctx context.Context, tj *trainerv1alpha1.TrainJob, cached *copsev1alpha1.PodCliqueSet) (deleted string, live *copsev1alpha1.PodCliqueSet, err error) {
	record := recordedPodCliqueSet(tj)
	live = cached
	if live == nil {
		live = &copsev1alpha1.PodCliqueSet{}
		err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(tj), live)
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return "", nil, fmt.Errorf("read PodCliqueSet %s from the API server: %w", tj.Name, err)
		case !metav1.IsControlledBy(live, tj):
			live = nil
		}
	}
	switch {
	case live == nil:
		return backendDeletedMessage(record.Name, "was deleted"), nil, nil
	case record.UID != "" && live.UID != record.UID:
		return backendDeletedMessage(record.Name, fmt.Sprintf("was deleted (PodCliqueSet %s now has uid %s, not the recorded %s)", live.Name, live.UID, record.UID)), nil, nil
	case live.DeletionTimestamp != nil:
		return backendDeletedMessage(record.Name, "is being deleted"), nil, nil
	}
	return "", live, nil
}

// backendDeletedMessage is the Failed condition's message for a
// PodCliqueSet deleted from outside.
func backendDeletedMessage(name, what string) string {
	return fmt.Sprintf("PodCliqueSet %s %s before the TrainJob finished. It held the run's state (its restart count and the pods "+
		"that had exited 0), so copse does not create it again: a new one would reset the restart budget and run finished work again", name, what)
}

// podsNotEnded counts, per clique template, the pods that have not ended
// (terminating ones included), of every attempt.
func podsNotEnded(pods []corev1.Pod) map[string]int {
	out := map[string]int{}
	for i := range pods {
		if podstate.Of(&pods[i]).HoldsNode() {
			out[pods[i].Labels[labels.CliqueTemplateKey]]++
		}
	}
	return out
}

func (r *Reconciler) getPodCliqueSet(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*copsev1alpha1.PodCliqueSet, error) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	if found, err := r.getControlled(ctx, tj, "PodCliqueSet", pcs); !found {
		return nil, err
	}
	return pcs, nil
}

func (r *Reconciler) getJobSet(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	jobSet := &jobsetv1alpha2.JobSet{}
	if found, err := r.getControlled(ctx, tj, "JobSet", jobSet); !found {
		return nil, err
	}
	return jobSet, nil
}

// getJobSetFromServer reads the TrainJob's JobSet from the API server: the
// cache may not have caught up with the one this controller just created,
// and the build is applied as a creation only when there is none (an apply
// onto an existing JobSet without the defaults its webhook set at creation
// would be refused). Nil reads nothing.
func (r *Reconciler) getJobSetFromServer(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*jobsetv1alpha2.JobSet, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	jobSet := &jobsetv1alpha2.JobSet{}
	switch err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(tj), jobSet); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the JobSet of TrainJob %s from the API server: %w", tj.Name, err)
	case !metav1.IsControlledBy(jobSet, tj):
		return nil, &notControlledError{kind: "JobSet", name: jobSet.Name, trainJob: tj.Name}
	}
	return jobSet, nil
}

// getControlled reads the TrainJob's namesake of a kind into obj; found is
// false when there is none. One the TrainJob does not control is a
// *notControlledError: copse leaves it alone.
func (r *Reconciler) getControlled(ctx context.Context, tj *trainerv1alpha1.TrainJob, kind string, obj client.Object) (bool, error) {
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(tj), obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get the %s of TrainJob %s: %w", kind, tj.Name, err)
	case !metav1.IsControlledBy(obj, tj):
		return false, &notControlledError{kind: kind, name: obj.GetName(), trainJob: tj.Name}
	}
	return true, nil
}

// notControlledError: an object of the TrainJob's name exists that the
// TrainJob does not control.
type notControlledError struct {
	kind, name, trainJob string
}

func (e *notControlledError) Error() string {
	return fmt.Sprintf("%s %s exists but is not controlled by TrainJob %s: copse leaves it alone, and creates the TrainJob's own "+
		"once it is gone", e.kind, e.name, e.trainJob)
}

func asNotControlled(err error) (*notControlledError, bool) {
	var notControlled *notControlledError
	return notControlled, errors.As(err, &notControlled)
}
