package podcliqueset

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/mnnvl"
	"github.com/copse-dev/copse/internal/naming"
)

// groupAnnotation is one place a grove.io/mnnvl-group annotation may be
// set: the PodCliqueSet's metadata, a clique template or a scaling group
// config.
type groupAnnotation struct {
	path *field.Path
	// key matches the same place in another version of the object: the
	// clique's or scaling group's name ("" for the metadata).
	key         string
	annotations map[string]string
}

func (a groupAnnotation) value() (string, bool) {
	v, ok := a.annotations[mnnvl.GroupAnnotation]
	return v, ok
}

// groupAnnotations are the places of pcs that may carry a group.
func groupAnnotations(pcs *copsev1alpha1.PodCliqueSet) []groupAnnotation {
	out := []groupAnnotation{{
		path:        field.NewPath("metadata", "annotations").Key(mnnvl.GroupAnnotation),
		annotations: pcs.Annotations,
	}}
	for i, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			out = append(out, groupAnnotation{
				path: cliquesPath.Index(i).Child("annotations").Key(mnnvl.GroupAnnotation),
				key:  "clique/" + clique.Name, annotations: clique.Annotations,
			})
		}
	}
	for g, group := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		out = append(out, groupAnnotation{
			path: groupsPath.Index(g).Child("annotations").Key(mnnvl.GroupAnnotation),
			key:  "group/" + group.Name, annotations: group.Annotations,
		})
	}
	return out
}

// DefaultMNNVLGroup gives a new PodCliqueSet that names no MNNVL group on
// its metadata the operator's mnnvl.defaultGroup (mnnvl.WithDefaultGroup;
// none when the option is empty). A PodCliqueSet a TrainJob controls is
// left as built: it takes the TrainJob's group, which the TrainJob got when
// it was created. Call it on creation only: the annotation is immutable.
func DefaultMNNVLGroup(pcs *copsev1alpha1.PodCliqueSet, defaultGroup string) {
	if owner := metav1.GetControllerOf(pcs); owner != nil && owner.Kind == "TrainJob" &&
		strings.HasPrefix(owner.APIVersion, trainerv1alpha1.GroupName+"/") {
		return
	}
	pcs.Annotations, _ = mnnvl.WithDefaultGroup(pcs.Annotations, defaultGroup)
}

// ValidateMNNVL applies the MNNVL rules (Grove's GREP-417) to a new
// PodCliqueSet, or to an update from old (nil on create). enabled is the
// operator configuration's mnnvl.enabled.
//
// On create, each grove.io/mnnvl-group annotation must be "none" or a
// group name (mnnvl.ValidateGroup); a group other than "none" needs MNNVL
// enabled; and the ComputeDomain names must fit a DNS label like every name
// copse generates. A clique without GPUs may name or inherit a group, as in
// Grove: its pods are left out. On update the annotations are immutable,
// whatever else changes; a changed spec is held to the name rule again,
// while the values, already admitted, are not (so that turning MNNVL off
// never blocks updates of existing objects).
func ValidateMNNVL(old, pcs *copsev1alpha1.PodCliqueSet, enabled bool) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = append(errs, validateGroupsUnchanged(old, pcs)...)
		if equality.Semantic.DeepEqual(old.Spec, pcs.Spec) {
			return errs
		}
	}
	if old == nil {
		for _, a := range groupAnnotations(pcs) {
			if value, ok := a.value(); ok {
				if err := mnnvl.ValidateGroup(a.path, value, enabled); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return append(errs, validateComputeDomainNames(pcs)...)
}

// validateGroupsUnchanged keeps every group annotation as it was created:
// set, unset and value alike. Cliques and scaling groups are matched by
// name; added or removed ones are refused by the other update rules.
func validateGroupsUnchanged(old, pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	before := map[string]groupAnnotation{}
	for _, a := range groupAnnotations(old) {
		before[a.key] = a
	}
	var errs field.ErrorList
	for _, a := range groupAnnotations(pcs) {
		was, existed := before[a.key]
		if !existed {
			continue
		}
		if err := mnnvl.ValidateGroupUnchanged(a.path, was.annotations, a.annotations); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// validateComputeDomainNames refuses a group whose ComputeDomain name in
// the last replica would exceed a DNS label, at the annotation the group
// comes from (the nearest one of its first GPU clique).
func validateComputeDomainNames(pcs *copsev1alpha1.PodCliqueSet) field.ErrorList {
	lastReplica := max(int(pcs.Spec.Replicas), 1) - 1
	reported := map[string]bool{}
	var errs field.ErrorList
	for _, group := range mnnvl.ReplicaGroups(pcs) {
		name := mnnvl.ComputeDomainName(pcs.Name, lastReplica, group)
		if len(name) <= naming.MaxLabelLength || reported[group] {
			continue
		}
		reported[group] = true
		errs = append(errs, field.Invalid(groupSourcePath(pcs, group), group, fmt.Sprintf(
			"the ComputeDomain name %q would be %d characters, over the limit of %d: shorten the group or the PodCliqueSet name by %d character(s)",
			name, len(name), naming.MaxLabelLength, len(name)-naming.MaxLabelLength)))
	}
	return errs
}

// groupSourcePath is the annotation that gives group to the first GPU
// clique in it.
func groupSourcePath(pcs *copsev1alpha1.PodCliqueSet, group string) *field.Path {
	places := groupAnnotations(pcs)
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil || !mnnvl.RequestsGPUs(&clique.Spec.PodSpec) || mnnvl.CliqueGroup(pcs, clique.Name) != group {
			continue
		}
		// The nearest place: the clique, its scaling group, the metadata.
		for _, key := range []string{"clique/" + clique.Name, "group/" + scalingGroupOfClique(pcs)[clique.Name]} {
			for _, a := range places {
				if _, set := a.value(); set && a.key == key {
					return a.path
				}
			}
		}
		break
	}
	return places[0].path
}
