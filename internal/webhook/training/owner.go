// Package training holds what the PodClique and PodCliqueScalingGroup
// webhooks need for GREP-0285's Training rules: finding the PodCliqueSet an
// object belongs to, the rules' messages, and the validation of the scale
// subresource, through which replica counts change without a spec update
// (the Training rules and the operator's pod limits).
package training

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// maxOwnerHops bounds the walk up the controller owner references: a
// PodClique is controlled by a PodCliqueScalingGroup, which is controlled by
// the PodCliqueSet.
const maxOwnerHops = 2

// OwningPodCliqueSet returns the PodCliqueSet that controls obj, directly (a
// standalone PodClique, a PodCliqueScalingGroup) or through the
// PodCliqueScalingGroup that controls it (a PodClique of a scaling group).
//
// Each step follows the controller owner reference and reads the owner by
// the reference's name, accepting it only when its UID is the reference's:
// a namesake created after the owner was deleted is not the owner. Names
// are never parsed.
//
// It returns nil, and no error, when there is no such PodCliqueSet: obj has
// no controller, or one of another kind, or an owner on the way is gone or
// has been replaced by a namesake. Such an object is not part of a live
// PodCliqueSet (an orphan, or on its way out with its owner), so no Training
// rule applies to it. An error means the owner could not be read; callers
// must not admit on it.
//
// reader should read from the API server, not from an informer cache (in
// the operator, the manager's GetAPIReader()): with a cache, an owner
// created a moment ago may not be in it yet, and it would be taken for gone,
// which lets a change through that the rule forbids. Owner lookups are rare
// (only for the changes a Training rule concerns), so the cost of a live read
// does not matter.
func OwningPodCliqueSet(ctx context.Context, reader client.Reader, obj client.Object) (*copsev1alpha1.PodCliqueSet, error) {
	if reader == nil {
		return nil, fmt.Errorf("no API reader to find the owner of %s/%s", obj.GetNamespace(), obj.GetName())
	}
	current := obj
	for range maxOwnerHops {
		ref := metav1.GetControllerOfNoCopy(current)
		if ref == nil || !isGroveKind(ref) {
			return nil, nil
		}
		var owner client.Object
		switch ref.Kind {
		case "PodCliqueSet":
			owner = &copsev1alpha1.PodCliqueSet{}
		case "PodCliqueScalingGroup":
			owner = &copsev1alpha1.PodCliqueScalingGroup{}
		default:
			return nil, nil
		}
		// Owner references are namespaced: the owner is in obj's namespace.
		key := client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}
		if err := reader.Get(ctx, key, owner); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("reading %s %s, the owner of %s: %w", ref.Kind, key, client.ObjectKeyFromObject(current), err)
		}
		if owner.GetUID() != ref.UID {
			return nil, nil
		}
		if pcs, ok := owner.(*copsev1alpha1.PodCliqueSet); ok {
			return pcs, nil
		}
		current = owner
	}
	return nil, nil
}

func isGroveKind(ref *metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == copsev1alpha1.GroupName
}
