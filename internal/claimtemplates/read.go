// Package claimtemplates reads the ResourceClaimTemplate objects a
// PodCliqueSet's resourceSharing names (resourcesharing.ExternalTemplates),
// for the three levels that build claims from them. It is the one read of
// resourceSharing; the builders in internal/resourcesharing are pure.
package claimtemplates

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/resourcesharing"
)

// Read reads the ResourceClaimTemplate objects the references of pcs need
// (resourcesharing.ExternalTemplates). missing lists those that do not
// exist: the claims made from them wait, and so do the pods that need those
// claims, until the template is created (Grove retries with back-off, as a
// controller that returns an error does).
func Read(ctx context.Context, reader client.Reader, pcs *copsev1alpha1.PodCliqueSet) (resourcesharing.External, []types.NamespacedName, error) {
	keys := resourcesharing.ExternalTemplates(pcs)
	if len(keys) == 0 {
		return nil, nil, nil
	}
	out := resourcesharing.External{}
	var missing []types.NamespacedName
	for _, key := range keys {
		template := &resourcev1.ResourceClaimTemplate{}
		if err := reader.Get(ctx, key, template); err != nil {
			if apierrors.IsNotFound(err) {
				missing = append(missing, key)
				continue
			}
			return nil, nil, fmt.Errorf("read ResourceClaimTemplate %s: %w", key, err)
		}
		out[key] = template.Spec.Spec
	}
	return out, missing, nil
}

// MissingError says which templates a level's claims wait for; nil when
// none.
func MissingError(missing []types.NamespacedName) error {
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("resourceSharing names ResourceClaimTemplates that do not exist: %v; their claims, and the pods that need them, wait until they are created", missing)
}
