package topology

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// ConstraintPaths lists the field path of every topologyConstraint the
// PodCliqueSet sets, broadest scope first: the template's, then each scaling
// group's, then each clique's.
func ConstraintPaths(pcs *copsev1alpha1.PodCliqueSet) []*field.Path {
	var out []*field.Path
	for _, s := range scopes(pcs) {
		if s.constraint != nil {
			out = append(out, s.path)
		}
	}
	return out
}
