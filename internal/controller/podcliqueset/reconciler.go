// Package podcliqueset holds the PodCliqueSet controller. For each replica it
// keeps the objects of the resource table (a headless Service, one
// PodClique per standalone clique, one PodCliqueScalingGroup per scaling
// group, the scheduler backend's gangs); it recreates a replica whose gang
// stayed broken for longer than terminationDelay, or, for Training, whose
// run failed, within the restart budget; it ends a Training workload
// Succeeded or Failed; and it is the only writer of PodCliqueSet status.
package podcliqueset

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/go-logr/logr"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/expectations"
	"github.com/copse-dev/copse/internal/metrics"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/scheduler"
)

// Reconciler reconciles PodCliqueSets.
type Reconciler struct {
	Client client.Client
	// APIReader reads from the API server, bypassing the cache
	// (mgr.GetAPIReader): a member the cache misses is confirmed deleted
	// there before the replica restarts for it.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	Backend   scheduler.Backend
	// Resources are the resource table's rows beyond copse's own and the
	// backend's: optional features' per-replica kinds, such as MNNVL's
	// ComputeDomains (blueprint.ComputeDomains). They come first, so that a
	// replica's run gets them before its PodCliques make pods.
	Resources []blueprint.ReplicaResource
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// WriteBudget bounds the objects one pass creates and deletes; 0 means the
	// configuration's default.
	WriteBudget int
	// IncompleteGangTimeout is how long a gang placed with a clique below
	// its minAvailable may hold its nodes before the replica's pods are
	// recreated (the configuration's scheduler.incompleteGangTimeout); 0
	// means never.
	IncompleteGangTimeout time.Duration
	// InPlaceRestartTimeout is how long a restart in place may keep its
	// barrier before the replica is recreated (the configuration's
	// scheduler.inPlaceRestartTimeout); 0 means never.
	InPlaceRestartTimeout time.Duration
	// TopologyAwareScheduling: topologyConstraints are applied (the
	// operator configuration's topologyAwareScheduling.enabled, with the
	// Workload scheduler backend); otherwise none is, and a PodCliqueSet
	// with constraints says so in its TopologyLevelsUnavailable condition.
	TopologyAwareScheduling bool
	// Kueue is the operator configuration's kueue.enabled: a PodCliqueSet
	// labelled kueue.x-k8s.io/queue-name gets its Admitted condition here
	// (observeAdmission), and its Kueue Workload's changes wake it.
	Kueue bool
	// KueueMaxPodSets is the Kueue installed's limit of pod sets
	// (kueue.ServedMaxPodSets); 0 for kueue.DefaultMaxPodSets.
	KueueMaxPodSets int

	written expectations.WrittenVersions
}

// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques;podcliquescalinggroups,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Reconcile runs one pass of the flow described in docs/architecture.md:
//
//	observe   every read of the pass: the resource table's objects and the
//	          pods from the cache, the API server's word on missing
//	          members, Kueue's inputs, the nodes a restart in place keeps
//	plan      everything the pass writes, decided from those facts alone
//	          (planPass: pure, fuzzed)
//	execute   one writer (children.Writer.Execute): the status with an
//	          optimistic lock, then the events of its transitions, the
//	          objects and the pods its decisions name, then settle's
//	          status.lastErrors
//
// Every destructive write follows a durable decision: it is planned from
// the status this pass writes and made only once that write succeeded, so
// a crash at any line resumes the same decision.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("podcliqueset", req.NamespacedName)
	ctx = log.IntoContext(ctx, logger)
	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcs); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.String())
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pcs.DeletionTimestamp.IsZero() {
		// Children go with it through their owner references.
		return ctrl.Result{}, nil
	}
	if r.written.Behind(req.String(), pcs) {
		logger.V(1).Info("the cache has not caught up with the last status write yet")
		return ctrl.Result{RequeueAfter: requeue.CacheCatchUp}, nil
	}
	f, err := r.observe(ctx, pcs, r.Clock.Now())
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("observe %s: %w", req.NamespacedName, err)
	}
	plan := planPass(f, r.config())
	logPlan(logger, plan)
	return resultOf(plan, r.writer().Execute(ctx, plan.PassPlan))
}

// config is the operator configuration a pass decides with.
func (r *Reconciler) config() passConfig {
	return passConfig{rows: r.resources(), gangKind: r.gangKind(),
		incompleteGangTimeout: r.IncompleteGangTimeout, inPlaceRestartTimeout: r.InPlaceRestartTimeout}
}

// writer is the one writer of the pass: status, events, objects, pods.
func (r *Reconciler) writer() children.Writer {
	return children.Writer{Client: r.Client, Scheme: r.Scheme, Recorder: r.Recorder, Written: &r.written,
		Budget: r.writeBudget(), OnCut: metrics.WriteBudgetCut("PodCliqueSet")}
}

// logPlan says what the pass's pod writes are for, by step and kind.
func logPlan(logger logr.Logger, plan passPlan) {
	if len(plan.Pods) == 0 {
		return
	}
	counts := map[string]int{}
	for _, p := range plan.Pods {
		counts[p.Step+"/"+string(p.Op)]++
	}
	logger.V(1).Info("pod writes planned", "writes", counts)
}

// gangKind is the resource table row whose objects are the scheduler's
// gangs, "" when the backend has none.
func (r *Reconciler) gangKind() string {
	if r.Backend.Name() == scheduler.BackendWorkload {
		return scheduler.PodGroupKind
	}
	return ""
}

func (r *Reconciler) writeBudget() int {
	if r.WriteBudget > 0 {
		return r.WriteBudget
	}
	return int(configv1alpha1.DefaultMaxWritesPerReconcile)
}

// isFailing: the Failed condition is True, the workload's failure is decided.
func isFailing(pcs *copsev1alpha1.PodCliqueSet) bool {
	return meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed)
}

// successCriteriaMet: the SuccessCriteriaMet condition is True, the
// workload's success is decided.
func successCriteriaMet(pcs *copsev1alpha1.PodCliqueSet) bool {
	return meta.IsStatusConditionTrue(pcs.Status.Conditions, copsev1alpha1.ConditionTypeSuccessCriteriaMet)
}
