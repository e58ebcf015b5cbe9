package scheduler

import (
	"context"
	"errors"
	"fmt"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
)

// Workload is the backend for Kubernetes' native gang scheduling
// (scheduling.k8s.io/v1beta1): one Workload per PodCliqueSet whose pod-group
// templates describe the gang shapes, and one PodGroup per gang. Pods join a
// PodGroup through spec.schedulingGroup, and kube-scheduler binds all of a
// PodGroup's minCount pods or none.
type Workload struct {
	Client client.Client
	Scheme *runtime.Scheme
}

// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=workloads;podgroups,verbs=get;list;watch;create;update;patch;delete

// Name implements Backend.
func (w *Workload) Name() string { return BackendWorkload }

// PodsJoinGangs implements Backend.
func (w *Workload) PodsJoinGangs() bool { return true }

// SyncGangs implements Backend.
func (w *Workload) SyncGangs(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, gangs []Gang) error {
	if err := w.syncWorkload(ctx, pcs, gangs); err != nil {
		return err
	}
	return w.syncPodGroups(ctx, pcs, gangs)
}

func (w *Workload) syncWorkload(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, gangs []Gang) error {
	desired := &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pcs.Namespace,
			Name:      pcs.Name,
			Labels:    labels.Merge(labels.ForPodCliqueSet(pcs.Name), map[string]string{labels.ComponentKey: labels.ComponentWorkload}),
		},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{
				APIGroup: copsev1alpha1.GroupName, Kind: "PodCliqueSet", Name: pcs.Name,
			},
		},
	}
	for _, tmpl := range TemplateMinCounts(gangs) {
		desired.Spec.PodGroupTemplates = append(desired.Spec.PodGroupTemplates, schedulingv1beta1.PodGroupTemplate{
			Name:             tmpl.Template,
			SchedulingPolicy: gangPolicy(tmpl.MinCount),
		})
	}
	if len(desired.Spec.PodGroupTemplates) == 0 {
		// A PodCliqueSet scaled to zero has no gangs; a Workload needs a template.
		desired.Spec.PodGroupTemplates = []schedulingv1beta1.PodGroupTemplate{{Name: BaseTemplate, SchedulingPolicy: gangPolicy(1)}}
	}
	if err := controllerutil.SetControllerReference(pcs, desired, w.Scheme); err != nil {
		return fmt.Errorf("owner reference on Workload %s/%s: %w", pcs.Namespace, pcs.Name, err)
	}

	existing := &schedulingv1beta1.Workload{}
	err := w.Client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		if err := w.Client.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Workload %s/%s: %w", desired.Namespace, desired.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get Workload %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	if apiequality.Semantic.DeepEqual(existing.Spec.PodGroupTemplates, desired.Spec.PodGroupTemplates) {
		return nil
	}
	// The Workload API keeps pod-group templates immutable; a change of
	// gang shape (a new minAvailable) applies to PodGroups created from now
	// on, which carry their own policy. Log it rather than fail every sync.
	log.FromContext(ctx).Info("Workload pod-group templates differ from the PodCliqueSet's gangs; existing PodGroups keep theirs",
		"workload", client.ObjectKeyFromObject(existing))
	return nil
}

func (w *Workload) syncPodGroups(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, gangs []Gang) error {
	var existing schedulingv1beta1.PodGroupList
	if err := w.Client.List(ctx, &existing, client.InNamespace(pcs.Namespace),
		client.MatchingLabels(labels.Merge(labels.ForPodCliqueSet(pcs.Name), map[string]string{labels.ComponentKey: labels.ComponentPodGroup}))); err != nil {
		return fmt.Errorf("list PodGroups of %s/%s: %w", pcs.Namespace, pcs.Name, err)
	}
	existingByName := map[string]*schedulingv1beta1.PodGroup{}
	for i := range existing.Items {
		if metav1.IsControlledBy(&existing.Items[i], pcs) {
			existingByName[existing.Items[i].Name] = &existing.Items[i]
		}
	}

	var errs []error
	wanted := map[string]bool{}
	for _, gang := range gangs {
		wanted[gang.Name] = true
		if _, ok := existingByName[gang.Name]; ok {
			continue
		}
		pg := podGroupFor(pcs, gang)
		if err := controllerutil.SetControllerReference(pcs, pg, w.Scheme); err != nil {
			errs = append(errs, fmt.Errorf("owner reference on PodGroup %s: %w", gang.Name, err))
			continue
		}
		if err := w.Client.Create(ctx, pg); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("create PodGroup %s/%s: %w", pg.Namespace, pg.Name, err))
		}
	}
	for name, pg := range existingByName {
		if wanted[name] {
			continue
		}
		err := w.Client.Delete(ctx, pg, client.Preconditions{UID: &pg.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete PodGroup %s/%s: %w", pg.Namespace, pg.Name, err))
		}
	}
	return errors.Join(errs...)
}

// ReplicaGangObjects implements Backend: the replica's PodGroups.
func (w *Workload) ReplicaGangObjects(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, replica int) ([]client.Object, error) {
	var list schedulingv1beta1.PodGroupList
	if err := w.Client.List(ctx, &list, client.InNamespace(pcs.Namespace), client.MatchingLabelsSelector{Selector: labels.SelectReplica(pcs.Name, replica)}); err != nil {
		return nil, fmt.Errorf("list PodGroups of %s/%s replica %d: %w", pcs.Namespace, pcs.Name, replica, err)
	}
	var out []client.Object
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], pcs) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

func podGroupFor(pcs *copsev1alpha1.PodCliqueSet, gang Gang) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pcs.Namespace,
			Name:      gang.Name,
			Labels: labels.Merge(labels.ForReplica(pcs.Name, gang.ReplicaIndex), map[string]string{
				labels.ComponentKey: labels.ComponentPodGroup,
			}),
		},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:      &schedulingv1beta1.WorkloadReference{WorkloadName: pcs.Name, TemplateName: gang.Template},
			SchedulingPolicy: gangPolicy(gang.MinCount),
		},
	}
}

func gangPolicy(minCount int32) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: max(minCount, 1)}}
}
