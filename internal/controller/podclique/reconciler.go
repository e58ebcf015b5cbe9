package podclique

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/requeue"
)

// Event reasons. Per-pod events would flood a large clique, so there is one
// event per reconcile and kind of write, and one per failure.
const (
	EventReasonPodsCreated        = "PodsCreated"
	EventReasonPodsDeleted        = "PodsDeleted"
	EventReasonPodCreateFailed    = "PodCreateFailed"
	EventReasonPodDeleteFailed    = "PodDeleteFailed"
	EventReasonPodCreationRefused = "PodCreationRefused"
	EventReasonPodsReplaced       = "PodsReplaced"
	EventReasonInvalidPodClique   = "InvalidPodClique"
	EventReasonStartupGatesOpened = "StartupGatesOpened"
	EventReasonPodsAdopted        = "PodsAdopted"
)

// retryMissingPodCliqueSet is how soon a PodClique whose PodCliqueSet is
// not in the cache looks again. It is normally deleted and the garbage
// collector is about to remove the PodClique; the retry covers a cache that
// lags.
const retryMissingPodCliqueSet = 10 * time.Second

// Reconciler keeps a PodClique's pods at spec.replicas and writes its status.
//
// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=resourcequotas;limitranges,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server, bypassing the cache
	// (mgr.GetAPIReader); see blockedOnServer.
	APIReader client.Reader
	// Scheme resolves the PodClique's group, version and kind for the pods'
	// owner references.
	Scheme *runtime.Scheme
	// Recorder emits events about PodCliques (mgr.GetEventRecorder).
	Recorder events.EventRecorder
	// Expectations remembers pod creations and deletions the cache has not
	// shown yet. Share one store per controller, never between controllers.
	Expectations *expectations.Store
	// Decorators finish every pod after blueprint.Pod built it, in order
	// (the scheduler backend's, the Training outcome finalizer, ...).
	Decorators []blueprint.PodDecorator
	// WriteBudget bounds the pods one pass creates and deletes; 0 means the
	// configuration's default.
	WriteBudget int
	// MaxConcurrentReconciles is how many PodCliques are reconciled at once;
	// 0 means controller-runtime's default of 1.
	MaxConcurrentReconciles int
	// Clock is the time source; nil means the real clock.
	Clock clock.PassiveClock

	once    sync.Once
	history *creationHistory
	// written is the last status version this controller wrote per
	// PodClique: a pass on a cache that has not caught up with it would
	// only lose the optimistic-lock race (a 409) or act on stale records.
	written expectations.WrittenVersions
}

// Reconcile gathers the PodClique, its pods and its PodCliqueSet, decides
// with planPods, decideCreation and computeStatus, writes the status, and
// then acts on it: first the records (an index that exited 0, a replacement
// counted, why no pod is created) become durable, then pods are deleted,
// finalizers released and pods created.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// controller-runtime's logger already names the PodClique (namespace, name).
	r.once.Do(r.init)
	key := expectations.Key(req.Namespace, req.Name)
	now := r.Clock.Now()

	pclq := &copsev1alpha1.PodClique{}
	if err := r.Client.Get(ctx, req.NamespacedName, pclq); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading PodClique %s: %w", req.NamespacedName, err)
		}
		return ctrl.Result{}, r.forget(ctx, req, key)
	}
	if r.written.Behind(key, pclq) {
		ctrl.LoggerFrom(ctx).V(1).Info("the cache has not caught up with the last status write yet")
		return ctrl.Result{RequeueAfter: requeue.CacheCatchUp}, nil
	}

	o, err := r.observe(ctx, key, pclq, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := planPods(o.planInput(pclq, now, r.writeBudget()))
	if o.creation.going {
		plan = podPlan{}
	}
	if err := r.observeCreation(ctx, pclq, o, plan.create); err != nil {
		return ctrl.Result{}, err
	}
	creation := decideCreation(o.creation)

	status := computeStatus(pclq, statusInput{pods: o.owned, workload: o.workload, completion: o.completion, replaced: plan.replace, ignored: o.ignored,
		startOrder: o.startOrder, creation: creation, template: templateStateOf(o.pcs, pclq), now: metav1.NewTime(now)})
	wasInvalid := creationBlockedReason(pclq) == copsev1alpha1.ReasonInvalidLabels
	if err := r.writeStatus(ctx, pclq, status); err != nil {
		if apierrors.IsConflict(err) {
			ctrl.LoggerFrom(ctx).V(1).Info("status computed from a stale PodClique; retrying")
			return ctrl.Result{RequeueAfter: requeue.AfterConflict}, nil
		}
		return ctrl.Result{}, err
	}
	if !wasInvalid && creationBlockedReason(pclq) == copsev1alpha1.ReasonInvalidLabels {
		ctrl.LoggerFrom(ctx).Error(o.idErr, "PodClique cannot have pods until its labels are fixed")
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, EventReasonInvalidPodClique, "CreatePods", "Cannot create pods: %v", o.idErr)
	}
	// The records are durable now: act on them.
	return r.act(ctx, pclq, o, plan, creation)
}

// creationBlockedReason is the reason of the PodClique's PodCreationBlocked
// condition; "" without one.
func creationBlockedReason(pclq *copsev1alpha1.PodClique) string {
	if c := meta.FindStatusCondition(pclq.Status.Conditions, copsev1alpha1.ConditionTypePodCreationBlocked); c != nil {
		return c.Reason
	}
	return ""
}

// forget lets go of a PodClique that is gone: its pods go with it by
// garbage collection, and whatever finalizers copse put on them must not
// hold them.
func (r *Reconciler) forget(ctx context.Context, req ctrl.Request, key string) error {
	r.Expectations.Forget(key)
	r.history.forget(key)
	r.written.Forget(key)
	_, strays, err := r.podsOf(ctx, req.Namespace, req.Name, "")
	if err != nil {
		return err
	}
	return r.releaseAll(ctx, req.Namespace, strays)
}

// planInput is what planPods decides from: the observed pods, the
// PodClique's records and whether a cause holds the plan.
func (o *observation) planInput(pclq *copsev1alpha1.PodClique, now time.Time, budget int) planInput {
	return planInput{
		desired:      int(pclq.Spec.Replicas),
		minAvailable: int(pclq.MinAvailable()),
		training:     o.workload.training(),
		templateHash: pclq.Labels[labels.PodTemplateHashKey],
		blocked:      o.creation.planHeld(),
		pods:         o.owned,
		creating:     creatingIndices(o.pending),
		deleting:     deletingUIDs(o.pending),
		vacating:     indicesOf(o.discard),
		succeeded:    o.completion.Succeeded,
		replacing:    uidSet(pclq.Status.ReplacingPods),
		ignored:      o.ignored,
		replacements: pclq.Status.PodReplacements,
		now:          now,
		budget:       budget,
	}
}

// syncExpectations folds the cache's view into the expectations store and
// returns the writes the cache does not show yet.
func (r *Reconciler) syncExpectations(ctx context.Context, key string, pclq *copsev1alpha1.PodClique, pods []podstate.Summary) expectations.Pending {
	present := make([]types.UID, 0, len(pods))
	var terminating []types.UID
	for _, p := range pods {
		present = append(present, p.UID)
		if p.Terminating {
			terminating = append(terminating, p.UID)
		}
	}
	pending := r.Expectations.Sync(key, present, terminating)
	if pending.RecordedForAnotherOwner(pclq.UID) {
		ctrl.LoggerFrom(ctx).Info("forgetting expectations of an earlier PodClique of the same name")
		r.Expectations.Forget(key)
		return expectations.Pending{}
	}
	if !pending.Empty() {
		ctrl.LoggerFrom(ctx).V(1).Info("cache lags behind this controller's writes",
			"pendingCreations", len(pending.Creations), "pendingDeletions", len(pending.Deletions))
	}
	return pending
}

// writeStatus is the only place that writes a PodClique's status, and only
// when it changed. The write carries the resourceVersion it was computed
// from: MinAvailableBreached, Succeeded and the Training records depend on
// the previous status, so a status computed from a stale PodClique must be
// refused rather than overwrite a newer one. On success pclq holds what was
// written.
func (r *Reconciler) writeStatus(ctx context.Context, pclq *copsev1alpha1.PodClique, status copsev1alpha1.PodCliqueStatus) error {
	if equality.Semantic.DeepEqual(status, pclq.Status) {
		return nil
	}
	base := client.MergeFromWithOptions(pclq.DeepCopy(), client.MergeFromWithOptimisticLock{})
	updated := pclq.DeepCopy()
	updated.Status = status
	if err := r.Client.Status().Patch(ctx, updated, base); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("writing status of PodClique %s/%s: %w", pclq.Namespace, pclq.Name, err)
	}
	r.written.Wrote(expectations.Key(pclq.Namespace, pclq.Name), updated)
	updated.DeepCopyInto(pclq)
	return nil
}

func (r *Reconciler) writeBudget() int {
	if r.WriteBudget > 0 {
		return r.WriteBudget
	}
	return int(configv1alpha1.DefaultMaxWritesPerReconcile)
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

// indicesOf are the pod indices of pods, those without one left out.
func indicesOf(pods []podstate.Summary) []int {
	var out []int
	for _, p := range pods {
		if p.HasIndex {
			out = append(out, p.Index)
		}
	}
	return out
}

func uidSet(uids []types.UID) map[types.UID]bool {
	out := make(map[types.UID]bool, len(uids))
	for _, uid := range uids {
		out[uid] = true
	}
	return out
}

// recordedSucceeded parses the written succeededIndexes; a malformed record
// releases nothing.
func recordedSucceeded(pclq *copsev1alpha1.PodClique) indexset.Set {
	set, err := indexset.Parse(pclq.Status.SucceededIndexes, int(pclq.Spec.Replicas))
	if err != nil {
		return indexset.Set{}
	}
	return set
}
