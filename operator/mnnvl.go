package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/mnnvl"
)

// mnnvlParts are what mnnvl.enabled adds to the controllers: the
// PodCliqueSet controller's ComputeDomain row and the pod decorator that
// gives GPU containers the channel claim. Both are empty when it is off, so
// that the operator never watches a kind the cluster may not serve.
type mnnvlParts struct {
	resources  []blueprint.ReplicaResource
	decorators []blueprint.PodDecorator
}

// newMNNVLParts checks, when MNNVL is enabled, that the cluster serves
// NVIDIA's ComputeDomain kind (MNNVL is "supported", in Grove's words), and
// refuses to start otherwise, as Grove's operator does (its MNNVL preflight
// check): every pod of a group would wait for a claim template no one
// creates.
func newMNNVLParts(mapper meta.RESTMapper, cfg configv1alpha1.MNNVLConfiguration) (mnnvlParts, error) {
	if !cfg.Enabled {
		return mnnvlParts{}, nil
	}
	gvk := mnnvl.ComputeDomainGVK
	if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		return mnnvlParts{}, fmt.Errorf("MNNVL preflight check failed: mnnvl.enabled is true but the cluster does not serve the ComputeDomain CRD "+
			"(%s, %s): install NVIDIA's DRA driver with ComputeDomain support, or set mnnvl.enabled to false: %w",
			mnnvl.ComputeDomainCRD, gvk.GroupVersion(), err)
	}
	return mnnvlParts{
		resources:  []blueprint.ReplicaResource{blueprint.ComputeDomains()},
		decorators: []blueprint.PodDecorator{blueprint.MNNVLClaim()},
	}, nil
}
