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
// NVIDIA's ComputeDomain kind, and refuses to start otherwise: every GPU pod
// would wait for a claim template no one creates.
func newMNNVLParts(mapper meta.RESTMapper, cfg configv1alpha1.MNNVLConfiguration) (mnnvlParts, error) {
	if !cfg.Enabled {
		return mnnvlParts{}, nil
	}
	gvk := mnnvl.ComputeDomainGVK
	if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		return mnnvlParts{}, fmt.Errorf("mnnvl.enabled is true but the cluster does not serve %s (%v): install NVIDIA's DRA driver "+
			"with ComputeDomain support (the CRD %s), or set mnnvl.enabled to false", gvk, err, mnnvl.ComputeDomainCRD)
	}
	return mnnvlParts{
		resources:  []blueprint.ReplicaResource{blueprint.ComputeDomains()},
		decorators: []blueprint.PodDecorator{blueprint.MNNVLClaim()},
	}, nil
}
