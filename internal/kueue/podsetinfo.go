package kueue

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// PodSetInfo is what an admission changes in the pod template of one pod
// set (one clique): labels, annotations, nodeSelector, tolerations and
// scheduling gates. They are all scheduling directives, which a suspended
// Training PodCliqueSet that is not running may change (docs/training.md).
type PodSetInfo struct {
	// Name is the pod set's, the clique's name.
	Name            string
	Labels          map[string]string
	Annotations     map[string]string
	NodeSelector    map[string]string
	Tolerations     []corev1.Toleration
	SchedulingGates []corev1.PodSchedulingGate
}

// ErrConflict marks a permanent error: what the admission asks for
// contradicts the template (a label, annotation or node selector key set to
// another value), so the PodCliqueSet cannot start with it. The Workload is
// finished (FailedToStart) rather than retried.
var ErrConflict = errors.New("the admission conflicts with the pod template")

// ErrFlavorNotFound marks a ResourceFlavor the admission names that could
// not be read: retried, as the flavor may appear.
var ErrFlavorNotFound = errors.New("ResourceFlavor not found")

// Flavors are the ResourceFlavors an admission names, by name, as read.
type Flavors map[kueue.ResourceFlavorReference]*kueue.ResourceFlavorSpec

// FlavorNames are the ResourceFlavors wl's admission assigns, sorted, each
// once.
func FlavorNames(wl *kueue.Workload) []kueue.ResourceFlavorReference {
	if wl == nil || wl.Status.Admission == nil {
		return nil
	}
	seen := map[kueue.ResourceFlavorReference]bool{}
	for _, assignment := range wl.Status.Admission.PodSetAssignments {
		for _, flavor := range assignment.Flavors {
			seen[flavor] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// AdmissionInfos are the PodSetInfos of wl's admission, one per pod set
// assignment: the node labels and tolerations of the flavors assigned to it,
// the label kueue.x-k8s.io/podset naming it, what a topology assignment
// needs on the pods (TopologyInfo), and the podSetUpdates the admission
// checks give it. A flavor missing from flavors is
// ErrFlavorNotFound; two updates that disagree are ErrConflict.
func AdmissionInfos(wl *kueue.Workload, flavors Flavors) ([]PodSetInfo, error) {
	if wl.Status.Admission == nil {
		return nil, nil
	}
	infos := make([]PodSetInfo, 0, len(wl.Status.Admission.PodSetAssignments))
	for _, assignment := range wl.Status.Admission.PodSetAssignments {
		info := PodSetInfo{Name: string(assignment.Name), Labels: map[string]string{PodSetLabel: string(assignment.Name)}}
		// Resources in a stable order, so that tolerations keep theirs.
		resources := slices.Sorted(maps.Keys(assignment.Flavors))
		used := map[kueue.ResourceFlavorReference]bool{}
		for _, resource := range resources {
			name := assignment.Flavors[resource]
			if used[name] {
				continue
			}
			used[name] = true
			flavor := flavors[name]
			if flavor == nil {
				return nil, fmt.Errorf("pod set %q: %w: %q", assignment.Name, ErrFlavorNotFound, name)
			}
			update := PodSetInfo{NodeSelector: flavor.NodeLabels, Tolerations: flavor.Tolerations}
			if err := info.merge(update, fmt.Sprintf("ResourceFlavor %q", name)); err != nil {
				return nil, err
			}
		}
		if err := info.merge(TopologyInfo(wl, &assignment), "the topology assignment"); err != nil {
			return nil, err
		}
		for _, check := range wl.Status.AdmissionChecks {
			for _, update := range check.PodSetUpdates {
				if update.Name != assignment.Name {
					continue
				}
				fromCheck := PodSetInfo{Labels: update.Labels, Annotations: update.Annotations,
					NodeSelector: update.NodeSelector, Tolerations: update.Tolerations}
				if err := info.merge(fromCheck, fmt.Sprintf("admission check %q", check.Name)); err != nil {
					return nil, err
				}
			}
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// merge adds o to info: map entries that info does not have, tolerations
// and scheduling gates it does not hold yet. A key both set to different
// values is ErrConflict, naming the field and source, which says where o
// comes from.
func (info *PodSetInfo) merge(o PodSetInfo, source string) error {
	for _, m := range []struct {
		field string
		into  *map[string]string
		from  map[string]string
	}{
		{"labels", &info.Labels, o.Labels},
		{"annotations", &info.Annotations, o.Annotations},
		{"nodeSelector", &info.NodeSelector, o.NodeSelector},
	} {
		for _, key := range slices.Sorted(maps.Keys(m.from)) {
			value := m.from[key]
			if have, set := (*m.into)[key]; set && have != value {
				return fmt.Errorf("%w: %s sets %s[%s] to %q, but it is %q", ErrConflict, source, m.field, key, value, have)
			}
			if *m.into == nil {
				*m.into = map[string]string{}
			}
			(*m.into)[key] = value
		}
	}
	for _, t := range o.Tolerations {
		if !slices.ContainsFunc(info.Tolerations, func(have corev1.Toleration) bool { return sameToleration(have, t) }) {
			info.Tolerations = append(info.Tolerations, t)
		}
	}
	for _, g := range o.SchedulingGates {
		if !slices.Contains(info.SchedulingGates, g) {
			info.SchedulingGates = append(info.SchedulingGates, g)
		}
	}
	return nil
}

// Merge is pcs with each PodSetInfo merged into the clique template of the
// same name: what the pods of an admitted run are built from. A key the
// template already sets to another value, or a pod set without a clique, is
// ErrConflict naming the field.
func Merge(pcs *copsev1alpha1.PodCliqueSet, infos []PodSetInfo) (*copsev1alpha1.PodCliqueSet, error) {
	out := pcs.DeepCopy()
	for _, info := range infos {
		i, clique := cliqueNamed(out, info.Name)
		if clique == nil {
			return nil, fmt.Errorf("%w: the admission has pod set %q, which names no clique of %s", ErrConflict, info.Name, CliquesPath)
		}
		spec := &clique.Spec.PodSpec
		template := PodSetInfo{Labels: clique.Labels, Annotations: clique.Annotations, NodeSelector: spec.NodeSelector,
			Tolerations: spec.Tolerations, SchedulingGates: spec.SchedulingGates}
		if err := template.merge(info, "the admission"); err != nil {
			return nil, fmt.Errorf("%s (clique %q): %w", CliquesPath.Index(i), clique.Name, err)
		}
		clique.Labels, clique.Annotations = template.Labels, template.Annotations
		spec.NodeSelector, spec.Tolerations, spec.SchedulingGates = template.NodeSelector, template.Tolerations, template.SchedulingGates
	}
	return out, nil
}

// Restore is pcs with each clique template's labels, annotations,
// nodeSelector, tolerations and scheduling gates set back to those of the
// Workload's pod set of the same name: what they were before the admission
// was merged in. changed is false when nothing differs.
func Restore(pcs *copsev1alpha1.PodCliqueSet, wl *kueue.Workload) (out *copsev1alpha1.PodCliqueSet, changed bool) {
	out = pcs.DeepCopy()
	for i := range wl.Spec.PodSets {
		podSet := &wl.Spec.PodSets[i]
		_, clique := cliqueNamed(out, string(podSet.Name))
		if clique == nil {
			continue
		}
		spec, saved := &clique.Spec.PodSpec, &podSet.Template
		if !maps.Equal(clique.Labels, saved.Labels) {
			clique.Labels, changed = maps.Clone(saved.Labels), true
		}
		if !maps.Equal(clique.Annotations, saved.Annotations) {
			clique.Annotations, changed = maps.Clone(saved.Annotations), true
		}
		if !maps.Equal(spec.NodeSelector, saved.Spec.NodeSelector) {
			spec.NodeSelector, changed = maps.Clone(saved.Spec.NodeSelector), true
		}
		if !slices.EqualFunc(spec.Tolerations, saved.Spec.Tolerations, sameToleration) {
			spec.Tolerations, changed = slices.Clone(saved.Spec.Tolerations), true
		}
		if !slices.Equal(spec.SchedulingGates, saved.Spec.SchedulingGates) {
			spec.SchedulingGates, changed = slices.Clone(saved.Spec.SchedulingGates), true
		}
	}
	return out, changed
}

// CarriesAdmission reports whether pcs's clique templates still carry an
// admission merged into them: some template has the label
// kueue.x-k8s.io/podset, which Merge adds and the Workload's pod set
// template (wl, nil when there is none) does not have. Restore removes it;
// so it marks, in the API server, a start that has not been undone.
func CarriesAdmission(pcs *copsev1alpha1.PodCliqueSet, wl *kueue.Workload) bool {
	saved := map[string]bool{}
	if wl != nil {
		for _, podSet := range wl.Spec.PodSets {
			_, saved[string(podSet.Name)] = podSet.Template.Labels[PodSetLabel]
		}
	}
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique == nil {
			continue
		}
		if _, merged := clique.Labels[PodSetLabel]; merged && !saved[clique.Name] {
			return true
		}
	}
	return false
}

func cliqueNamed(pcs *copsev1alpha1.PodCliqueSet, name string) (int, *grovecorev1alpha1.PodCliqueTemplateSpec) {
	for i, clique := range pcs.Spec.Template.Cliques {
		if clique != nil && clique.Name == name {
			return i, clique
		}
	}
	return -1, nil
}

func sameToleration(a, b corev1.Toleration) bool {
	return a.Key == b.Key && a.Operator == b.Operator && a.Value == b.Value && a.Effect == b.Effect &&
		((a.TolerationSeconds == nil) == (b.TolerationSeconds == nil)) &&
		(a.TolerationSeconds == nil || *a.TolerationSeconds == *b.TolerationSeconds)
}
