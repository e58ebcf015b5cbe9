package framework

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// kueueQueuesActiveTimeout bounds the wait for Kueue to find new queues
// usable; it takes a second or so.
const kueueQueuesActiveTimeout = time.Minute

// KueueQueues is a set of Kueue queue objects a spec, the demo or the
// benchmark submits workloads to: one ResourceFlavor, one ClusterQueue
// whose quota is all of that flavor, a LocalQueue of the same name in each
// namespace pointing at it, and WorkloadPriorityClasses.
type KueueQueues struct {
	// ClusterQueue names the ClusterQueue and every LocalQueue.
	ClusterQueue string
	// Flavor is the ResourceFlavor the quota is in.
	Flavor KueueFlavor
	// Quota is the ClusterQueue's nominal quota of each resource (cpu,
	// memory, nvidia.com/gpu, ...). Kueue admits a workload only if every
	// resource its pods request is covered, so list them all.
	Quota corev1.ResourceList
	// PreemptLowerPriority lets a workload preempt lower-priority workloads
	// of the same ClusterQueue (preemption.withinClusterQueue: LowerPriority);
	// otherwise it waits for quota.
	PreemptLowerPriority bool
	// Namespaces get a LocalQueue each.
	Namespaces []string
	// PriorityClasses are WorkloadPriorityClasses to create, by name.
	PriorityClasses map[string]int32
}

// KueueFlavor is a ResourceFlavor: where admitted pods go (nodeLabels,
// tolerations) and, with TopologyName, the Kueue Topology it packs
// workloads in.
type KueueFlavor struct {
	Name         string
	NodeLabels   map[string]string
	Tolerations  []corev1.Toleration
	TopologyName string
}

// Objects returns the queue objects, in the order they are created: the
// ResourceFlavor, the ClusterQueue, the LocalQueues, the
// WorkloadPriorityClasses.
func (q KueueQueues) Objects() []client.Object {
	flavor := &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: q.Flavor.Name},
		Spec:       kueue.ResourceFlavorSpec{NodeLabels: q.Flavor.NodeLabels, Tolerations: q.Flavor.Tolerations},
	}
	if q.Flavor.TopologyName != "" {
		flavor.Spec.TopologyName = ptr.To(kueue.TopologyReference(q.Flavor.TopologyName))
	}
	// Kueue wants the flavor's resources in the order of coveredResources.
	names := make([]corev1.ResourceName, 0, len(q.Quota))
	for name := range q.Quota {
		names = append(names, name)
	}
	slices.Sort(names)
	quotas := make([]kueue.ResourceQuota, 0, len(names))
	for _, name := range names {
		quotas = append(quotas, kueue.ResourceQuota{Name: name, NominalQuota: q.Quota[name]})
	}
	cq := &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: q.ClusterQueue},
		Spec: kueue.ClusterQueueSpec{
			// Every namespace may use it; the LocalQueues say which do.
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: names,
				Flavors:          []kueue.FlavorQuotas{{Name: kueue.ResourceFlavorReference(q.Flavor.Name), Resources: quotas}},
			}},
		},
	}
	if q.PreemptLowerPriority {
		cq.Spec.Preemption = &kueue.ClusterQueuePreemption{WithinClusterQueue: kueue.PreemptionPolicyLowerPriority}
	}
	objects := []client.Object{flavor, cq}
	for _, ns := range q.Namespaces {
		objects = append(objects, &kueue.LocalQueue{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: q.ClusterQueue},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(q.ClusterQueue)},
		})
	}
	for _, name := range slices.Sorted(maps.Keys(q.PriorityClasses)) {
		objects = append(objects, &kueue.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: q.PriorityClasses[name]})
	}
	return objects
}

// CreateKueueQueues creates q's objects and waits until Kueue reports the
// ClusterQueue and every LocalQueue active, so that what is submitted next
// is admitted on its merits rather than held for an inactive queue.
func CreateKueueQueues(ctx context.Context, c client.Client, q KueueQueues) error {
	for _, obj := range q.Objects() {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	return WaitKueueQueuesActive(ctx, c, q)
}

// WaitKueueQueuesActive waits until the ClusterQueue and the LocalQueues of
// q have the condition Active=True.
func WaitKueueQueuesActive(ctx context.Context, c client.Client, q KueueQueues) error {
	var problem string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, kueueQueuesActiveTimeout, true, func(ctx context.Context) (bool, error) {
		cq := &kueue.ClusterQueue{}
		if err := c.Get(ctx, client.ObjectKey{Name: q.ClusterQueue}, cq); err != nil {
			return false, err
		}
		if problem = inactive("ClusterQueue "+cq.Name, cq.Status.Conditions, kueue.ClusterQueueActive); problem != "" {
			return false, nil
		}
		for _, ns := range q.Namespaces {
			lq := &kueue.LocalQueue{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: q.ClusterQueue}, lq); err != nil {
				return false, err
			}
			if problem = inactive("LocalQueue "+ns+"/"+lq.Name, lq.Status.Conditions, kueue.LocalQueueActive); problem != "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		if problem != "" {
			return fmt.Errorf("Kueue's queues not active after %s: %s", kueueQueuesActiveTimeout, problem)
		}
		return fmt.Errorf("Kueue's queues not active: %w", err)
	}
	return nil
}

// inactive returns "" when conditions hold activeType=True, and otherwise
// what they say instead.
func inactive(what string, conditions []metav1.Condition, activeType string) string {
	active := apimeta.FindStatusCondition(conditions, activeType)
	switch {
	case active == nil:
		return what + " has no Active condition yet"
	case active.Status != metav1.ConditionTrue:
		return fmt.Sprintf("%s is not active (%s: %s)", what, active.Reason, active.Message)
	}
	return ""
}

// DeleteKueueQueues deletes q's objects, those that exist, and waits until
// the cluster-scoped ones (the ClusterQueue and the ResourceFlavor, which
// Kueue keeps while workloads use them) are gone, so that a later spec may
// reuse the names. Delete the workloads first.
func DeleteKueueQueues(ctx context.Context, c client.Client, q KueueQueues) error {
	objects := q.Objects()
	slices.Reverse(objects)
	var errs []error
	for _, obj := range objects {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %T %s: %w", obj, client.ObjectKeyFromObject(obj), err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, obj := range objects {
		if obj.GetNamespace() != "" {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, kueueQueuesActiveTimeout, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			return fmt.Errorf("%T %s not deleted (Kueue keeps it while workloads use it): %w", obj, obj.GetName(), err)
		}
	}
	return nil
}
