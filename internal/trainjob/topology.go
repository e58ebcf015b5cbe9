package trainjob

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// topologyLevelPath is the runtime field that names the trainer gang's
// topology level (a node label key).
var topologyLevelPath = field.NewPath("spec", "podGroupPolicy", "workload", "topologyConstraint", "level")

// TopologyUnresolvedError says the runtime's topology level is the key of
// no ClusterTopologyBinding level, so the PodCliqueSet backend cannot name
// it in a PodCliqueSet's topologyConstraint. Unlike UnsupportedError it is
// not final: a binding created later resolves it.
type TopologyUnresolvedError struct {
	Message string
}

func (e *TopologyUnresolvedError) Error() string { return e.Message }

// IsTopologyUnresolved reports whether err is, or wraps, a
// TopologyUnresolvedError.
func IsTopologyUnresolved(err error) bool {
	var unresolved *TopologyUnresolvedError
	return errors.As(err, &unresolved)
}

// topologyLevel is the runtime's topology level, "" when it sets none.
func topologyLevel(policy *trainerv1alpha1.PodGroupPolicy) string {
	if policy == nil || policy.Workload == nil || policy.Workload.TopologyConstraint == nil {
		return ""
	}
	return policy.Workload.TopologyConstraint.Level
}

// TopologySource is where PlanPodCliqueSet takes the replica's packing
// from: resolved against the cluster's ClusterTopologyBindings
// (ResolveTopologyAgainst), or kept as the TrainJob's PodCliqueSet has it
// (KeepTopology).
type TopologySource struct {
	keep     bool
	kept     *grovecorev1alpha1.TopologyConstraint
	bindings []copsev1alpha1.ClusterTopologyBinding
}

// ResolveTopologyAgainst resolves the runtime's topology level against
// bindings: for a TrainJob whose PodCliqueSet does not exist yet.
func ResolveTopologyAgainst(bindings []copsev1alpha1.ClusterTopologyBinding) TopologySource {
	return TopologySource{bindings: bindings}
}

// KeepTopology keeps the packing a TrainJob's PodCliqueSet was created with,
// its spec.template.topologyConstraint (nil for none). A TrainJob keeps the
// placement it started with: the constraint is immutable on the
// PodCliqueSet, so a rebuild (suspend, resume, a runtime patch) must carry
// it unchanged, and a ClusterTopologyBinding deleted, renamed or added later
// must not stop the rebuild. The bindings are not read again.
func KeepTopology(existing *grovecorev1alpha1.TopologyConstraint) TopologySource {
	return TopologySource{keep: true, kept: existing}
}

// topologyConstraint is the replica's packing from source for the runtime's
// level ("" for none).
func (source TopologySource) topologyConstraint(level string, runtime Runtime) (*grovecorev1alpha1.TopologyConstraint, error) {
	switch {
	case source.keep:
		return source.kept.DeepCopy(), nil
	case level == "":
		return nil, nil
	}
	return ResolveTopologyLevel(level, source.bindings, runtime)
}

// ResolveTopologyLevel turns a node label key into a PodCliqueSet
// topologyConstraint: the first binding by name with a level of that key
// gives topologyName (the binding) and pack.required (the level's domain).
// runtime names the runtime in the error when no binding has the key.
func ResolveTopologyLevel(level string, bindings []copsev1alpha1.ClusterTopologyBinding, runtime Runtime) (*grovecorev1alpha1.TopologyConstraint, error) {
	sorted := slices.Clone(bindings)
	slices.SortFunc(sorted, func(a, b copsev1alpha1.ClusterTopologyBinding) int { return strings.Compare(a.Name, b.Name) })
	for _, b := range sorted {
		for _, l := range b.Spec.Levels {
			if l.Key == level {
				return &grovecorev1alpha1.TopologyConstraint{
					TopologyName: b.Name,
					Pack:         &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: l.Domain},
				}, nil
			}
		}
	}
	return nil, &TopologyUnresolvedError{Message: fmt.Sprintf(
		"%s %s: %s %q is the key of no level of any ClusterTopologyBinding; the PodCliqueSet backend packs by a "+
			"binding's level, so the PodCliqueSet is built once a ClusterTopologyBinding has a level with this key",
		runtime.Kind, runtime.Name, topologyLevelPath, level)}
}
