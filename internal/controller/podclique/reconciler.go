package podclique

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/metrics"
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

// Reconcile is one pass: read the PodClique, then observe (every read),
// planPass (pure: the status, its events, the claims and the pod writes),
// one Writer.Execute (status first, with the optimistic lock, so the
// records an act depends on are durable before it), and settle (what the
// writes did: events, the creation attempt's record, the requeue).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// controller-runtime's logger already names the PodClique (namespace, name).
	r.once.Do(r.init)
	key := expectations.Key(req.Namespace, req.Name)
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
	o, err := r.observe(ctx, key, pclq, r.Clock.Now(), r.writeBudget())
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := planPass(pclq, o, passConfig{budget: r.writeBudget(), decorators: r.Decorators})
	out := r.writer(len(plan.Pods)).Execute(ctx, plan.PassPlan)
	r.settle(ctx, key, plan, out)
	return resultOf(plan, out)
}

// writer is the one writer of a pass: status, events, claims, pods. The
// pod writes were budgeted by the decision (planPods, releasesOf,
// gatesToOpen), so the writer's budget is the claims' own plus those.
func (r *Reconciler) writer(podWrites int) children.Writer {
	return children.Writer{Client: r.Client, Scheme: r.Scheme, Recorder: r.Recorder, Written: &r.written,
		Expectations: r.Expectations, Budget: r.writeBudget() + podWrites, OnCut: metrics.WriteBudgetCut("PodClique")}
}

// settle keeps this process's records of what the writes did (the
// clique's creation burst, the write-budget metric) and logs it.
func (r *Reconciler) settle(ctx context.Context, key string, plan passPlan, out children.Outcome) {
	log := ctrl.LoggerFrom(ctx)
	if plan.cutShort && !out.CutShort {
		metrics.WriteBudgetCut("PodClique")()
	}
	if plan.holdReason != "" {
		log.V(1).Info("creating no pods", "reason", plan.holdReason, "planned", len(plan.pods.create))
	}
	tally := tallyPods(plan.Pods, out)
	if t := tally[stepCreate]; t.started() {
		r.history.burst(key, len(t.errs) == 0)
	}
	for _, step := range []string{stepAdopt, stepDelete, stepRelease, stepOpenGates, stepCreate} {
		switch t := tally[step]; {
		case t.done > 0 || len(t.errs) > 0:
			log.Info("pod writes", "step", step, "done", t.done, "planned", t.planned, "failed", len(t.errs))
		case t.planned > 0:
			log.V(1).Info("pod writes left for the next pass", "step", step, "planned", t.planned)
		}
	}
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
	gone := &copsev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
	plan := children.PassPlan{Observed: gone}
	for _, p := range strays {
		if p.HasOutcomeFinalizer {
			plan.Pods = append(plan.Pods, children.PodWrite{Op: children.PodRelease, Step: stepRelease, Pod: p})
		}
	}
	return r.writer(len(plan.Pods)).Execute(ctx, plan).Err()
}

func (r *Reconciler) writeBudget() int {
	if r.WriteBudget > 0 {
		return r.WriteBudget
	}
	return int(configv1alpha1.DefaultMaxWritesPerReconcile)
}
