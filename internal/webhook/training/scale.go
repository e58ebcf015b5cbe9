package training

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podcount"
	"github.com/copse-dev/copse/internal/webhook/rules"
)

var scaleReplicasPath = field.NewPath("spec", "replicas")

// ScaleValidator is the validating webhook of the scale subresource of
// PodCliques or PodCliqueScalingGroups (`kubectl scale`, autoscalers). The
// API server sends it autoscaling/v1 Scale objects, which carry the replica
// count but no owner references, so it reads the scaled object to find its
// PodCliqueSet. As the object's own webhook does for spec updates, it
// forbids changing the replica count of an object of a Training
// PodCliqueSet, and scaling an object up beyond the operator's limit on the
// pods of one PodCliqueSet replica.
type ScaleValidator struct {
	// Kind is the scaled kind, "PodClique" or "PodCliqueScalingGroup".
	Kind string
	// NewObject returns an empty object of Kind to read the scaled object into.
	NewObject func() client.Object
	// Reader reads the scaled object and its owners; see OwningPodCliqueSet
	// for why it should not be a cache.
	Reader client.Reader
	// Limits are the operator's limits on pods.
	Limits configv1alpha1.LimitsConfiguration
	// KueueEnabled is kueue.enabled: an object of a queued PodCliqueSet is
	// not scaled beyond what its Workload holds quota for (QueuedScale).
	KueueEnabled bool
}

var _ admission.Validator[*autoscalingv1.Scale] = ScaleValidator{}

// ValidateCreate implements admission.Validator; the scale subresource is
// never created.
func (ScaleValidator) ValidateCreate(context.Context, *autoscalingv1.Scale) (admission.Warnings, error) {
	return nil, nil
}

// ValidateUpdate implements admission.Validator.
func (v ScaleValidator) ValidateUpdate(ctx context.Context, old, scale *autoscalingv1.Scale) (admission.Warnings, error) {
	if old.Spec.Replicas == scale.Spec.Replicas {
		return nil, nil
	}
	key := client.ObjectKey{Namespace: scale.Namespace, Name: scale.Name}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		// The request names the scaled object even if the Scale does not.
		key = client.ObjectKey{Namespace: req.Namespace, Name: req.Name}
	}
	if v.Reader == nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("no API reader to find the PodCliqueSet of %s %s", v.Kind, key))
	}
	target := v.NewObject()
	if err := v.Reader.Get(ctx, key, target); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: the update fails on its own.
			return nil, nil
		}
		return nil, apierrors.NewInternalError(err)
	}
	owner, err := OwningPodCliqueSet(ctx, v.Reader, target)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if owner.IsTraining() {
		return nil, rules.ToAdmissionError(v.Kind, key.Name, field.ErrorList{ReplicasImmutable(scaleReplicasPath, owner)})
	}
	errs := append(v.validateQueued(old.Spec.Replicas, scale.Spec.Replicas, target, owner),
		v.validateSize(old.Spec.Replicas, scale.Spec.Replicas, target, owner)...)
	return nil, rules.ToAdmissionError(v.Kind, key.Name, errs)
}

// validateQueued applies QueuedScale to scaling target (of owner, nil if
// none) from oldReplicas to replicas, as the kinds' own ValidateQueued
// rules do for spec updates.
func (v ScaleValidator) validateQueued(oldReplicas, replicas int32, target client.Object, owner *copsev1alpha1.PodCliqueSet) field.ErrorList {
	if owner == nil {
		return nil
	}
	switch target := target.(type) {
	case *copsev1alpha1.PodClique:
		template := target.Labels[labels.CliqueTemplateKey]
		return QueuedScale(scaleReplicasPath, owner, v.KueueEnabled, oldReplicas, replicas,
			AdmittedCliqueReplicas(owner, template), fmt.Sprintf("clique %q", template))
	case *copsev1alpha1.PodCliqueScalingGroup:
		admitted, group := AdmittedGroupReplicas(owner, target.Spec.CliqueNames)
		return QueuedScale(scaleReplicasPath, owner, v.KueueEnabled, oldReplicas, replicas, admitted, fmt.Sprintf("scaling group %q", group))
	}
	return nil
}

// validateSize applies the operator's pod limit to scaling target (of
// owner, nil if none) from oldReplicas to replicas, as the kinds' own
// ValidateSize rules do for spec updates: a PodClique's replicas are its
// pods; a PodCliqueScalingGroup's pods are its replicas times the pods of
// one group replica, from owner's template (without an owner the group gets
// no PodCliques, so nothing is checked).
func (v ScaleValidator) validateSize(oldReplicas, replicas int32, target client.Object, owner *copsev1alpha1.PodCliqueSet) field.ErrorList {
	switch target := target.(type) {
	case *copsev1alpha1.PodClique:
		return rules.PodCliqueWithinLimit(int64(max(oldReplicas, 0)), int64(max(replicas, 0)), scaleReplicasPath, v.Limits)
	case *copsev1alpha1.PodCliqueScalingGroup:
		if owner == nil {
			return nil
		}
		before, _ := podcount.ScalingGroup(&owner.Spec, target.Spec.CliqueNames, oldReplicas)
		pods, perGroupReplica := podcount.ScalingGroup(&owner.Spec, target.Spec.CliqueNames, replicas)
		return rules.ScalingGroupWithinLimit(before, pods, perGroupReplica, scaleReplicasPath, replicas, v.Limits)
	}
	return nil
}

// ValidateDelete implements admission.Validator; the scale subresource is
// never deleted.
func (ScaleValidator) ValidateDelete(context.Context, *autoscalingv1.Scale) (admission.Warnings, error) {
	return nil, nil
}

// NewPodClique and NewPodCliqueScalingGroup are ScaleValidator.NewObject
// functions.
func NewPodClique() client.Object { return &copsev1alpha1.PodClique{} }

// NewPodCliqueScalingGroup: see NewPodClique.
func NewPodCliqueScalingGroup() client.Object { return &copsev1alpha1.PodCliqueScalingGroup{} }
