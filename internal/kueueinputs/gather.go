// Package kueueinputs reads, from the cache, what kueue.Decide decides on for
// a queued PodCliqueSet. Two controllers read the same inputs: the
// kueueworkload controller, which takes the protocol's step, and the
// PodCliqueSet controller, which writes the Admitted condition that step
// leads to (kueue.AdmittedCondition). Both read them here, so that both
// decide on the same view.
package kueueinputs

import (
	"context"
	"fmt"
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/topology"
)

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=resourceflavors;workloadpriorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// Facts are the inputs the caller has already observed for the
// PodCliqueSet: its packing (topology.Lookup), which becomes its pod sets'
// topology requests, and whether pods of its run remain (kueue.PodsRemain).
type Facts struct {
	Packing    topology.Resolved
	PodsRemain bool
	// MaxPodSets is the Kueue's limit of pod sets (kueue.Inputs).
	MaxPodSets int
	Now        time.Time
}

// Gather reads every input of kueue.Decide for the PodCliqueSet of key: pcs,
// nil when it is gone (only an orphaned Workload is read then). The Workload
// of its name is its own when pcs controls it, an orphan when its controller
// is a PodCliqueSet of that name that is gone (kueue.Orphaned), and takes
// the name otherwise. The ResourceFlavors of the admission, the priority
// (WorkloadPriorityClass or PriorityClass) and the refusal recorded on pcs
// complete the inputs; a flavor or a class that does not exist is left for
// Decide to report, and only a failed read is an error.
func Gather(ctx context.Context, c client.Reader, key client.ObjectKey, pcs *copsev1alpha1.PodCliqueSet, facts Facts) (kueue.Inputs, error) {
	in := kueue.Inputs{PodCliqueSet: pcs, MaxPodSets: facts.MaxPodSets, Now: facts.Now}
	found := &kueuev1beta2.Workload{}
	wlKey := client.ObjectKey{Namespace: key.Namespace, Name: kueue.WorkloadName(key.Name)}
	switch err := c.Get(ctx, wlKey, found); {
	case apierrors.IsNotFound(err):
		found = nil
	case err != nil:
		return in, fmt.Errorf("get Workload %s: %w", wlKey, err)
	}
	switch {
	case found == nil:
	case pcs != nil && metav1.IsControlledBy(found, pcs):
		in.Workload = found
	case kueue.Orphaned(found, key.Name, pcs):
		in.Orphan, in.WorkloadNameTaken = found, pcs != nil
	default:
		in.WorkloadNameTaken = pcs != nil
	}
	if pcs == nil {
		return in, nil
	}

	requests, inexpressible := kueue.TopologyRequests(pcs, facts.Packing)
	in.Topology, in.TopologyErr = requests, inexpressible.ToAggregate()
	in.PodsRemain = facts.PodsRemain
	in.Refusal = pcs.Annotations[kueue.WorkloadRefusedAnnotation]

	in.Flavors = kueue.Flavors{}
	for _, name := range kueue.FlavorNames(in.Workload) {
		flavor := &kueuev1beta2.ResourceFlavor{}
		if err := c.Get(ctx, client.ObjectKey{Name: string(name)}, flavor); err != nil {
			if apierrors.IsNotFound(err) {
				continue // Decide waits for it.
			}
			return in, fmt.Errorf("get ResourceFlavor %s: %w", name, err)
		}
		in.Flavors[name] = &flavor.Spec
	}

	var err error
	in.Priority, in.PriorityErr, err = priority(ctx, c, pcs)
	return in, err
}

// priority resolves the Workload's priority from the classes in the
// cluster. A class that does not exist is resolveErr (Decide reports it);
// err is a failed read.
func priority(ctx context.Context, c client.Reader, pcs *copsev1alpha1.PodCliqueSet) (p kueue.Priority, resolveErr, err error) {
	var wpc *kueuev1beta2.WorkloadPriorityClass
	if name := pcs.Labels[kueue.PriorityClassLabel]; name != "" {
		wpc = &kueuev1beta2.WorkloadPriorityClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, wpc); err != nil {
			if !apierrors.IsNotFound(err) {
				return p, nil, fmt.Errorf("get WorkloadPriorityClass %s: %w", name, err)
			}
			wpc = nil
		}
	}
	classes := &schedulingv1.PriorityClassList{}
	if err := c.List(ctx, classes); err != nil {
		return p, nil, fmt.Errorf("list PriorityClasses: %w", err)
	}
	p, resolveErr = kueue.ResolvePriority(pcs, wpc, classes.Items)
	return p, resolveErr, nil
}
