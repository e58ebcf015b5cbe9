package podclique

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/labels"
)

// Event reasons. Per-pod events would flood a large clique, so there is one
// event per reconcile and kind of write, and one per failure.
const (
	EventReasonPodsCreated      = "PodsCreated"
	EventReasonPodsDeleted      = "PodsDeleted"
	EventReasonPodCreateFailed  = "PodCreateFailed"
	EventReasonPodDeleteFailed  = "PodDeleteFailed"
	EventReasonInvalidPodClique = "InvalidPodClique"
)

// retryMissingPodCliqueSet is how soon a PodClique whose PodCliqueSet is not
// in the cache is looked at again. The PodCliqueSet is normally deleted and
// the garbage collector about to remove the PodClique; the retry covers a
// cache that has not caught up yet.
const retryMissingPodCliqueSet = 10 * time.Second

// Reconciler keeps a PodClique's pods at spec.replicas and writes its status.
//
// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Scheme resolves the PodClique's group, version and kind for the pods'
	// owner references.
	Scheme *runtime.Scheme
	// Recorder emits events about PodCliques (mgr.GetEventRecorder).
	Recorder events.EventRecorder
	// Expectations remembers pod creations and deletions the cache has not
	// shown yet. Share one store per controller, never between controllers.
	Expectations *expectations.Store
	// GangScheduling puts every pod in the PodGroup named by the PodClique's
	// labels.PodGangKey label (pod spec.schedulingGroup.podGroupName).
	GangScheduling bool
	// MaxConcurrentReconciles is how many PodCliques are reconciled at once;
	// 0 means controller-runtime's default of 1.
	MaxConcurrentReconciles int
	// APIReader reads from the API server, bypassing the cache
	// (mgr.GetAPIReader). Before creating pods for a Training workload the
	// controller re-reads the PodCliqueSet and the PodClique with it, so that
	// a cache that has not yet seen the workload end, or the clique succeed,
	// cannot bring back pods that are done. Nil skips that check.
	APIReader client.Reader
}

// Reconcile gathers the PodClique, its pods and its PodCliqueSet from the
// cache, decides with planPods and computeStatus, and applies the result.
// The status is written even when no pod may be created (a Training
// workload that ended, a clique that succeeded).
// Pod changes and the status write are both attempted; their errors are
// returned together so the request is retried.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// controller-runtime's logger already names the PodClique (namespace, name).
	log := ctrl.LoggerFrom(ctx)
	key := expectations.Key(req.Namespace, req.Name)

	pclq := &copsev1alpha1.PodClique{}
	if err := r.Client.Get(ctx, req.NamespacedName, pclq); err != nil {
		if apierrors.IsNotFound(err) {
			// The pods go with it by owner-reference garbage collection.
			r.Expectations.Forget(key)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading PodClique %s: %w", req.NamespacedName, err)
	}

	pods, err := r.ownedPods(ctx, pclq)
	if err != nil {
		return ctrl.Result{}, err
	}
	infos := make([]podInfo, 0, len(pods))
	present := make([]types.UID, 0, len(pods))
	var terminating []types.UID
	for _, pod := range pods {
		infos = append(infos, podInfoOf(pod))
		present = append(present, pod.UID)
		if pod.DeletionTimestamp != nil {
			terminating = append(terminating, pod.UID)
		}
	}
	pending := r.Expectations.Sync(key, present, terminating)
	if pending.RecordedForAnotherOwner(pclq.UID) {
		log.Info("forgetting expectations of an earlier PodClique of the same name")
		r.Expectations.Forget(key)
		pending = expectations.Pending{}
	}
	if !pending.Empty() {
		log.V(1).Info("cache lags behind this controller's writes",
			"pendingCreations", len(pending.Creations), "pendingDeletions", len(pending.Deletions))
	}

	pcs, err := r.podCliqueSet(ctx, pclq.Namespace, pclq.Labels[labels.PartOfKey])
	if err != nil {
		return ctrl.Result{}, err
	}
	ws := workloadStateOf(pcs)

	result, podsErr := r.reconcilePods(ctx, pclq, pcs, ws, key, infos, pending)
	statusResult, statusErr := r.writeStatus(ctx, pclq, infos, ws)
	return earliest(result, statusResult), errors.Join(podsErr, statusErr)
}

// reconcilePods creates and deletes pods as planPods decides. pcs is nil when
// the PodCliqueSet is not in the cache.
func (r *Reconciler) reconcilePods(ctx context.Context, pclq *copsev1alpha1.PodClique, pcs *copsev1alpha1.PodCliqueSet,
	ws workloadState, key string, pods []podInfo, pending expectations.Pending) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if pclq.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	id, err := identityOf(pclq, r.GangScheduling)
	if err != nil {
		log.Error(err, "PodClique cannot have pods until its labels are fixed")
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonInvalidPodClique, "CreatePods", "Cannot create pods: %v", err)
		return ctrl.Result{}, nil
	}
	if pcs == nil {
		log.Info("PodCliqueSet not found; not changing pods", "podCliqueSet", id.podCliqueSet)
		return ctrl.Result{RequeueAfter: retryMissingPodCliqueSet}, nil
	}
	if pcs.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}

	in := planInput{
		desired:      int(pclq.Spec.Replicas),
		minAvailable: minAvailable(pclq.Spec),
		workload:     ws.workload,
		frozen:       creationsFrozen(ws, cliqueSucceeded(pclq, ws, pods)),
		pods:         pods,
		creating:     creatingIndices(pending),
		deleting:     deletingUIDs(pending),
	}
	plan := planPods(in)
	if len(plan.create) > 0 && ws.training() && r.APIReader != nil {
		why, err := r.frozenOnServer(ctx, pclq, pcs.Name)
		if err != nil {
			return ctrl.Result{}, err
		}
		if why != "" {
			log.Info("creating no pods: the API server shows what the cache does not yet", "reason", why, "planned", len(plan.create))
			in.frozen = true
			plan = planPods(in)
		}
	}
	deleteErr := r.deletePods(ctx, pclq, key, plan.delete)
	createErr := r.createPods(ctx, pclq, pcs, id, key, plan.create)
	return ctrl.Result{}, errors.Join(deleteErr, createErr)
}

// ownedPods lists the pods labelled for the PodClique that it controls; a pod
// left over from an earlier PodClique of the same name is not its pod.
func (r *Reconciler) ownedPods(ctx context.Context, pclq *copsev1alpha1.PodClique) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(pclq.Namespace),
		client.MatchingLabels{labels.PodCliqueKey: pclq.Name}); err != nil {
		return nil, fmt.Errorf("listing pods of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	owned := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], pclq) {
			owned = append(owned, &list.Items[i])
		}
	}
	return owned, nil
}

// podCliqueSet returns the PodClique's PodCliqueSet from the cache, or nil
// when it is gone or name is empty (the PodClique lacks the label).
func (r *Reconciler) podCliqueSet(ctx context.Context, namespace, name string) (*copsev1alpha1.PodCliqueSet, error) {
	if name == "" {
		return nil, nil
	}
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pcs); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading PodCliqueSet %s/%s: %w", namespace, name, err)
	}
	return pcs, nil
}

// frozenOnServer reads the PodCliqueSet and the PodClique from the API
// server rather than the cache and says why no pod may be created, or ""
// when pods may be created. The PodCliqueSet controller records that a
// Training workload ended before it terminates the pods, and this
// controller records Succeeded before anyone removes the pods, but the pod,
// PodCliqueSet and PodClique informers are independent: the cache may show
// the pods gone before it shows why. The API server does show why.
func (r *Reconciler) frozenOnServer(ctx context.Context, pclq *copsev1alpha1.PodClique, pcsName string) (string, error) {
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: pclq.Namespace, Name: pcsName}, pcs); err != nil {
		if apierrors.IsNotFound(err) {
			return "the PodCliqueSet is gone", nil
		}
		return "", fmt.Errorf("reading PodCliqueSet %s/%s from the API server: %w", pclq.Namespace, pcsName, err)
	}
	if creationsFrozen(workloadStateOf(pcs), false) {
		return "the Training workload has ended", nil
	}
	live := &copsev1alpha1.PodClique{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(pclq), live); err != nil {
		if apierrors.IsNotFound(err) {
			return "the PodClique is gone", nil
		}
		return "", fmt.Errorf("reading PodClique %s/%s from the API server: %w", pclq.Namespace, pclq.Name, err)
	}
	if live.UID != pclq.UID {
		return "the PodClique was replaced", nil
	}
	if meta.IsStatusConditionTrue(live.Status.Conditions, copsev1alpha1.ConditionTypeSucceeded) {
		return "the PodClique has succeeded", nil
	}
	return "", nil
}

func (r *Reconciler) createPods(ctx context.Context, pclq *copsev1alpha1.PodClique, pcs *copsev1alpha1.PodCliqueSet,
	id cliqueIdentity, key string, indices []int) error {
	if len(indices) == 0 {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	tmpl := podTemplate{pclq: pclq, id: id, gangScheduling: r.GangScheduling}
	if id.grouped() {
		groupPods, err := scalingGroupPods(pcs.Spec.Template, id.clique)
		if err != nil {
			// Retrying cannot help until the template changes, and a template
			// change reaches this PodClique through its creator.
			log.Error(err, "cannot compute the scaling group's pod count; not creating pods", "scalingGroup", id.scalingGroup)
			r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonInvalidPodClique, "CreatePods", "Cannot create pods: %v", err)
			return nil
		}
		tmpl.groupPods = groupPods
	}
	owner, err := r.ownerReference(pclq)
	if err != nil {
		return err
	}
	tmpl.owner = owner

	created, err := inSlowStartBatches(ctx, len(indices), maxBatchSize, func(ctx context.Context, i int) error {
		pod := buildPod(tmpl, indices[i])
		if err := r.Client.Create(ctx, pod); err != nil {
			return fmt.Errorf("creating pod with index %d: %w", indices[i], err)
		}
		r.Expectations.ExpectCreations(key, pod)
		return nil
	})
	if created > 0 {
		log.Info("created pods", "created", created, "planned", len(indices), "indices", indices)
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeNormal, EventReasonPodsCreated, "CreatePods", "Created %d pod(s)", created)
	}
	if err != nil {
		log.Error(err, "creating pods failed", "created", created, "planned", len(indices))
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonPodCreateFailed, "CreatePods",
			"Created %d of %d pod(s): %v", created, len(indices), err)
		return fmt.Errorf("creating pods of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	return nil
}

func (r *Reconciler) deletePods(ctx context.Context, pclq *copsev1alpha1.PodClique, key string, deletions []podDeletion) error {
	if len(deletions) == 0 {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	deleted, err := inSlowStartBatches(ctx, len(deletions), maxBatchSize, func(ctx context.Context, i int) error {
		d := deletions[i]
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pclq.Namespace, Name: d.pod.name, UID: d.pod.uid}}
		// The UID precondition makes sure only the pod that was decided on goes.
		err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &d.pod.uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s (%s): %w", d.pod.name, d.cause, err)
		}
		r.Expectations.ExpectDeletions(key, pod)
		log.V(1).Info("deleted pod", "pod", d.pod.name, "index", d.pod.index, "cause", d.cause)
		return nil
	})
	if deleted > 0 {
		causes := causeCounts(deletions)
		log.Info("deleted pods", "deleted", deleted, "planned", len(deletions), "causes", causes)
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeNormal, EventReasonPodsDeleted, "DeletePods",
			"Deleted %d pod(s) (planned: %s)", deleted, causes)
	}
	if err != nil {
		log.Error(err, "deleting pods failed", "deleted", deleted, "planned", len(deletions))
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonPodDeleteFailed, "DeletePods",
			"Deleted %d of %d pod(s): %v", deleted, len(deletions), err)
		return fmt.Errorf("deleting pods of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	return nil
}

// writeStatus is the only place that writes a PodClique's status. The write
// carries the resourceVersion it was computed from: MinAvailableBreached
// and Succeeded depend on the previous conditions, so a status computed from
// a stale PodClique must be refused rather than overwrite a newer one.
//
// It runs after reconcilePods, from the same pods: a Training pod that
// exited 0 is never deleted by this controller, so the pods from which a
// new Succeeded condition is derived are still there when it is written.
func (r *Reconciler) writeStatus(ctx context.Context, pclq *copsev1alpha1.PodClique, pods []podInfo, ws workloadState) (ctrl.Result, error) {
	status := computeStatus(pclq, pods, ws, metav1.Now())
	if equality.Semantic.DeepEqual(status, pclq.Status) {
		return ctrl.Result{}, nil
	}
	base := client.MergeFromWithOptions(pclq.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pclq.Status = status
	if err := r.Client.Status().Patch(ctx, pclq, base); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return ctrl.Result{}, nil
		case apierrors.IsConflict(err):
			// The controller does not watch its own status writes, so it must
			// come back by itself once the cache has the newer PodClique. The
			// cache is usually milliseconds behind: a rate-limited requeue
			// (5ms, doubling) retries at once and backs off only if it keeps
			// lagging, where a fixed wait delayed every completion by a second.
			ctrl.LoggerFrom(ctx).V(1).Info("status computed from a stale PodClique; retrying")
			return ctrl.Result{Requeue: true}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing status of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) ownerReference(pclq *copsev1alpha1.PodClique) (metav1.OwnerReference, error) {
	gvk, err := apiutil.GVKForObject(pclq, r.Scheme)
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("resolving the PodClique kind: %w", err)
	}
	return *metav1.NewControllerRef(pclq, gvk), nil
}

// creatingIndices are the indices of pods created but not yet in the cache.
func creatingIndices(pending expectations.Pending) []int {
	var out []int
	for _, e := range pending.Creations {
		if i, ok := labels.Index(e.Labels, labels.PodIndexKey); ok {
			out = append(out, i)
		}
	}
	return out
}

// deletingUIDs are the pods deleted that the cache still shows alive.
func deletingUIDs(pending expectations.Pending) map[types.UID]bool {
	out := make(map[types.UID]bool, len(pending.Deletions))
	for _, e := range pending.Deletions {
		out[e.UID] = true
	}
	return out
}

// causeCounts summarises why pods are deleted, e.g. "ended=1 scale-in=2".
func causeCounts(deletions []podDeletion) string {
	counts := map[deletionCause]int{}
	for _, d := range deletions {
		counts[d.cause]++
	}
	parts := make([]string, 0, len(counts))
	for _, cause := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", cause, counts[cause]))
	}
	return strings.Join(parts, " ")
}

// earliest combines two results, keeping the sooner non-zero requeue.
func earliest(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter < b.RequeueAfter:
		return a
	default:
		return b
	}
}
