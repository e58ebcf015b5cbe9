// Package kueueworkload holds the controller that speaks Kueue's Workload
// protocol for PodCliqueSets labelled kueue.x-k8s.io/queue-name
// (docs/kueue.md): it keeps one Kueue Workload per such PodCliqueSet, starts
// the PodCliqueSet when Kueue admits the Workload, suspends it when Kueue
// evicts it, gives the quota back once its pods are gone, and finishes the
// Workload when the PodCliqueSet ends. Each pass gathers the inputs, asks
// kueue.Decide for the one step to take (internal/kueue, pure), takes it,
// and records its event. It writes no PodCliqueSet status: the Admitted
// condition the step leads to is the PodCliqueSet controller's
// (kueue.AdmittedCondition); a refusal of the Workload, which only this
// controller sees, is recorded on the PodCliqueSet for it
// (kueue.WorkloadRefusedAnnotation).
package kueueworkload

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/kueueinputs"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/topology"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "kueueworkload"

// refusedRetry is how long a pass waits after the API server refused a
// Workload before it tries again: the refusal may be lifted (a quota on
// Workloads, Kueue's webhook being down) without any event copse watches.
const refusedRetry = 30 * time.Second

// Reconciler reconciles the Kueue Workloads of queued PodCliqueSets.
type Reconciler struct {
	Client client.Client
	// APIReader reads from the API server, bypassing the cache
	// (mgr.GetAPIReader): a ClusterTopologyBinding the cache misses is read
	// there before packing is left off (topology.Lookup). Nil trusts the cache.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// TopologyAwareScheduling: packing applies (the operator's
	// topologyAwareScheduling.enabled with the workload backend), so it
	// becomes the pod sets' topology requests.
	TopologyAwareScheduling bool
	// MaxPodSets is the Kueue installed's limit of pod sets
	// (kueue.ServedMaxPodSets); 0 for kueue.DefaultMaxPodSets.
	MaxPodSets int
}

// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;workloadpriorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile takes one step of the protocol for a PodCliqueSet. A request
// for a PodCliqueSet that is gone (the garbage collector's deletion of its
// Workload maps to it) still finds that Workload, to release it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("podcliqueset", req.NamespacedName)
	ctx = log.IntoContext(ctx, logger)

	pcs := &copsev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcs); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get PodCliqueSet %s: %w", req.NamespacedName, err)
		}
		pcs = nil
	}
	in, err := r.gather(ctx, req.NamespacedName, pcs)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := kueue.Decide(in)
	logger = logger.WithValues("workload", kueue.WorkloadName(req.Name), "step", d.Step, "why", d.Why)
	ctx = log.IntoContext(ctx, logger)

	written, refusal, err := r.apply(ctx, pcs, d)
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			// Decided on a stale view: the next pass reads afresh.
			logger.V(1).Info("the step met a newer object; retrying", "error", err.Error())
			return ctrl.Result{RequeueAfter: requeue.AfterConflict}, nil
		}
		return ctrl.Result{}, err
	}
	if d.Step != kueue.StepNone || refusal != nil {
		logger.Info("took a step of the Kueue protocol", "refused", refusal != nil)
	} else {
		logger.V(1).Info("nothing to write")
	}
	if pcs == nil {
		// No PodCliqueSet to record an event or a refusal on.
		return ctrl.Result{RequeueAfter: d.RetryAfter}, nil
	}
	r.recordEvent(written, d, refusal)
	if err := r.noteRefusal(ctx, written, refusal); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: requeue.AfterConflict}, nil
		}
		return ctrl.Result{}, err
	}
	if refusal != nil {
		return ctrl.Result{RequeueAfter: refusedRetry}, nil
	}
	return ctrl.Result{RequeueAfter: d.RetryAfter}, nil
}

// recordEvent records the step's event on the PodCliqueSet, or the API
// server's refusal of its Workload.
func (r *Reconciler) recordEvent(pcs *copsev1alpha1.PodCliqueSet, d kueue.Decision, refusal error) {
	switch {
	case refusal != nil:
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, kueue.EventWorkloadRefused, string(d.Step), "%s",
			kueue.RefusedMessage(pcs.Name, refusal.Error()))
	case d.Event != nil:
		eventType := corev1.EventTypeNormal
		if d.Event.Warning {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(pcs, nil, eventType, d.Event.Reason, string(d.Step), "%s", d.Event.Message)
	}
}

// gather reads every input of kueue.Decide (kueueinputs.Gather): the
// packing and the pods, which the PodCliqueSet controller has from its own
// observation, are read here first.
func (r *Reconciler) gather(ctx context.Context, key client.ObjectKey, pcs *copsev1alpha1.PodCliqueSet) (kueue.Inputs, error) {
	facts := kueueinputs.Facts{MaxPodSets: r.MaxPodSets, Now: r.Clock.Now()}
	if pcs != nil {
		packing, _, err := topology.Lookup(ctx, r.Client, r.APIReader, pcs, r.TopologyAwareScheduling)
		if err != nil {
			return kueue.Inputs{}, err
		}
		pods := &corev1.PodList{}
		if err := r.Client.List(ctx, pods, client.InNamespace(pcs.Namespace),
			client.MatchingLabelsSelector{Selector: labels.SelectPodCliqueSet(pcs.Name)}); err != nil {
			return kueue.Inputs{}, fmt.Errorf("list the pods of PodCliqueSet %s/%s: %w", pcs.Namespace, pcs.Name, err)
		}
		active := 0
		for i := range pods.Items {
			if podstate.Of(&pods.Items[i]).HoldsNode() {
				active++
			}
		}
		facts.Packing, facts.PodsRemain = packing, kueue.PodsRemain(pcs, active)
	}
	return kueueinputs.Gather(ctx, r.Client, key, pcs, facts)
}

// apply takes the step. written is the PodCliqueSet as it is after the
// step (the one to write the condition on); refusal is the API server's
// refusal of a Workload, which the condition reports; err is a failure to
// retry.
func (r *Reconciler) apply(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, d kueue.Decision) (written *copsev1alpha1.PodCliqueSet, refusal, err error) {
	switch d.Step {
	case kueue.StepNone:
		return pcs, nil, nil
	case kueue.StepStart, kueue.StepStop, kueue.StepRestore:
		// An update carrying the resourceVersion the decision was made on.
		updated := d.PodCliqueSet.DeepCopy()
		if err := r.Client.Update(ctx, updated); err != nil {
			return nil, nil, fmt.Errorf("%s PodCliqueSet %s/%s: %w", d.Step, pcs.Namespace, pcs.Name, err)
		}
		return updated, nil, nil
	case kueue.StepCreateWorkload:
		if err := r.Client.Create(ctx, d.Workload.DeepCopy()); err != nil {
			if refusedByAPIServer(err) {
				return pcs, err, nil
			}
			return nil, nil, fmt.Errorf("create Workload %s/%s: %w", d.Workload.Namespace, d.Workload.Name, err)
		}
		return pcs, nil, nil
	case kueue.StepDeleteWorkload:
		err := r.Client.Delete(ctx, d.Workload, client.Preconditions{UID: &d.Workload.UID, ResourceVersion: &d.Workload.ResourceVersion})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("delete Workload %s/%s: %w", d.Workload.Namespace, d.Workload.Name, err)
		}
		return pcs, nil, nil
	case kueue.StepRemoveFinalizer:
		// The metadata, carrying the resourceVersion it was read at, as
		// Kueue's own job reconciler releases a Workload.
		if err := r.Client.Update(ctx, d.Workload.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("remove the finalizer %s of Workload %s/%s: %w",
				kueuev1beta2.ResourceInUseFinalizerName, d.Workload.Namespace, d.Workload.Name, err)
		}
		return pcs, nil, nil
	case kueue.StepClearReservation, kueue.StepFinishWorkload, kueue.StepSetPodsReady:
		// The whole status, carrying the resourceVersion it was read at: a
		// change Kueue made meanwhile makes this a conflict, never a loss.
		if err := r.Client.Status().Update(ctx, d.Workload.DeepCopy()); err != nil {
			return nil, nil, fmt.Errorf("%s: write the status of Workload %s/%s: %w", d.Step, d.Workload.Namespace, d.Workload.Name, err)
		}
		return pcs, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown step %q", d.Step)
}

// refusedByAPIServer: the API server (or an admission webhook, such as
// Kueue's) refused the object itself; retrying the same object would be
// refused again.
func refusedByAPIServer(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err)
}

// noteRefusal keeps the PodCliqueSet's kueue.WorkloadRefusedAnnotation in
// line with this pass: it quotes a refusal of the Workload's creation, and
// goes once a pass meets none (the creation went through, or the protocol
// moved on). The PodCliqueSet controller reads it into the Admitted
// condition. An update carrying the resourceVersion of pcs (the spec as
// read); it writes only when the annotation changes.
func (r *Reconciler) noteRefusal(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, refusal error) error {
	current, has := pcs.Annotations[kueue.WorkloadRefusedAnnotation]
	updated := pcs.DeepCopy()
	switch {
	case refusal != nil && current != refusal.Error():
		updated.Annotations = labels.Merge(updated.Annotations, map[string]string{kueue.WorkloadRefusedAnnotation: refusal.Error()})
	case refusal == nil && has:
		delete(updated.Annotations, kueue.WorkloadRefusedAnnotation)
	default:
		return nil
	}
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("record the Workload's refusal on PodCliqueSet %s/%s: %w", pcs.Namespace, pcs.Name, err)
	}
	return nil
}
