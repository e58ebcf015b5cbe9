package podcliqueset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
	"github.com/copse-dev/copse/internal/requeue"
	"github.com/copse-dev/copse/internal/topology"
)

// topologyNameIndex indexes PodCliqueSets by the ClusterTopologyBinding
// their constraints name (topology.TopologyName).
const topologyNameIndex = "copse.dev/topologyName"

// ControllerName names the controller in logs and metrics.
const ControllerName = "podcliqueset"

// SetupWithManager registers the controller. It reacts to the PodCliqueSet
// and to every kind of the resource table; each object reaches the
// PodCliqueSet its part-of label names, so that a PodClique of a scaling
// group wakes its PodCliqueSet as a standalone one does (a grouped clique
// finishing last must complete the workload). Pods are watched for what
// changes a decision: their phase, their start and their deletion. A
// ClusterTopologyBinding wakes the PodCliqueSets that name it, so one
// created, changed or deleted later is reported in their condition and
// applied to the PodGroups and PodCliques they create from then on (a
// PodGroup's topology constraint is immutable: existing ones keep theirs).
// With Kueue, the Kueue Workloads PodCliqueSets control wake them too.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrentReconciles int) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &copsev1alpha1.PodCliqueSet{}, topologyNameIndex,
		func(obj client.Object) []string {
			pcs, ok := obj.(*copsev1alpha1.PodCliqueSet)
			if !ok {
				return nil
			}
			if name := topology.TopologyName(pcs); name != "" {
				return []string{name}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("index PodCliqueSets by topologyName: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&copsev1alpha1.PodCliqueSet{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(toPodCliqueSet), builder.WithPredicates(podProgressed())).
		Watches(&copsev1alpha1.ClusterTopologyBinding{}, handler.EnqueueRequestsFromMapFunc(r.namingPodCliqueSets)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles})
	for _, row := range r.resources() {
		b = b.Watches(row.NewObject(), handler.EnqueueRequestsFromMapFunc(toPodCliqueSet))
	}
	if r.Kueue {
		// Kueue's admissions and evictions change the Admitted condition.
		// A Workload of a PodCliqueSet that is gone maps to its name, so a
		// new PodCliqueSet of that name sees its name freed.
		b = b.Owns(&kueuev1beta2.Workload{})
	}
	return b.Complete(r)
}

// toPodCliqueSet maps an object copse generated to its PodCliqueSet through
// the part-of label.
func toPodCliqueSet(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[labels.PartOfKey]
	if name == "" || obj.GetLabels()[labels.ManagedByKey] != labels.ManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// namingPodCliqueSets maps a ClusterTopologyBinding to the PodCliqueSets
// whose constraints name it.
func (r *Reconciler) namingPodCliqueSets(ctx context.Context, binding client.Object) []reconcile.Request {
	var list copsev1alpha1.PodCliqueSetList
	if err := r.Client.List(ctx, &list, client.MatchingFields{topologyNameIndex: binding.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "list the PodCliqueSets naming a ClusterTopologyBinding", "clusterTopologyBinding", binding.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, pcs := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pcs)})
	}
	return out
}

// podProgressed passes pod deletions and the updates that can change a
// decision: a new phase, a first container start (podstate's Started, the
// one definition of "started" the decisions read), readiness (a rolling
// update waits for gangs to be available), a deletion timestamp (an awaited
// pod may become overdue). A pod's other status updates do not matter to
// the PodCliqueSet.
func podProgressed() predicate.Funcs {
	return requeue.UpdatesOf(requeue.UpdatesAndDeletions, func(oldPod, newPod *corev1.Pod) bool {
		was, is := podstate.Of(oldPod), podstate.Of(newPod)
		// Scheduling is progress too: PodGangsScheduled is read from
		// whether each pod was placed or refused by the scheduler.
		// A restart in place waits for its kept pods to be orphaned, adopted
		// into the new attempt and held at their gates.
		return was.Phase != is.Phase || was.Started != is.Started || was.Ready != is.Ready || was.Terminating != is.Terminating ||
			was.Scheduled != is.Scheduled || (was.Unschedulable == "") != (is.Unschedulable == "") ||
			was.ControllerUID != is.ControllerUID || was.Attempt != is.Attempt || was.GateHolding != is.GateHolding
	})
}
