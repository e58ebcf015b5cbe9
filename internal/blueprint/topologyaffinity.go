package blueprint

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/topology"
)

// PreferredPackingWeight is the weight of the preferred pod affinity term of
// a preferred pack domain: the most a term may weigh, so that packing wins
// over the scheduler's spreading scores.
const PreferredPackingWeight = 100

// TopologyAffinity returns the pod affinity packing adds to the pods of
// pclq, a PodClique built for pcs (its labels say where it sits). The
// kube-scheduler packs a whole gang through its PodGroup's topology key
// (GangTopologyKey) but knows nothing narrower, so:
//
//   - the gang's key is also a required term over the pods of the gang, for
//     the pods placed after the gang (replacements), which join no PodGroup;
//   - a scaling group's required key, for a group replica inside the base
//     gang, is a required term over the pods of that group replica (a group
//     replica with a gang of its own is packed by its PodGroup);
//   - a clique's required key is a required term over the pods of the
//     PodClique;
//   - a preferred key, of the replica (pods of the replica's base gang), the
//     scaling group or the clique, is a preferred term of weight
//     PreferredPackingWeight over the same pods.
//
// A term whose key a broader required packing of the same pods already
// guarantees (the gang's term, or a broader scope's) is left out. The
// replica's scope does not reach the prelude, which is outside every gang
// and packed only by its own clique's constraint. Selectors include the run
// (attempt), so an earlier run's pods never attract a new one.
func TopologyAffinity(pcs *copsev1alpha1.PodCliqueSet, pclq *copsev1alpha1.PodClique, packing topology.Resolved) (
	required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
	if packing.IsZero() {
		return nil, nil
	}
	l := pclq.Labels
	replica, _ := labels.Index(l, labels.ReplicaKey)
	attempt := l[labels.AttemptKey]
	group := ""
	if l[labels.ScalingGroupKey] != "" {
		group = scalingGroupOfClique(pcs, l[labels.CliqueTemplateKey])
	}
	gangTemplate := BaseTemplate
	switch gang := l[labels.PodGangKey]; {
	case gang == naming.PreludeGang(pcs.Name, replica):
		gangTemplate = PreludeTemplate
	case group != "" && gang != naming.BaseGang(pcs.Name, replica):
		gangTemplate = ScaledTemplate(group)
	}

	// covered holds the keys a broader required packing of these pods
	// already guarantees.
	covered := map[string]bool{"": true}
	if gangKey := GangTopologyKey(packing, gangTemplate, group); gangKey != "" {
		// The PodGroup packs the pods the scheduler places as a gang. A pod
		// created once the gang has been placed (a replacement, a late pod:
		// PodContext.GangPlaced) joins no PodGroup and is placed on its own;
		// this term keeps it in the domain of its gang's other pods.
		required = append(required, affinityTerm(gangKey, map[string]string{labels.PodGangKey: l[labels.PodGangKey], labels.AttemptKey: attempt}))
		covered[gangKey] = true
	}
	scope := func(p topology.Pack, selector map[string]string, requiredTerm bool) {
		if requiredTerm && !covered[p.RequiredKey] {
			required = append(required, affinityTerm(p.RequiredKey, selector))
		}
		covered[p.RequiredKey] = true
		if !covered[p.PreferredKey] {
			preferred = append(preferred, corev1.WeightedPodAffinityTerm{Weight: PreferredPackingWeight, PodAffinityTerm: affinityTerm(p.PreferredKey, selector)})
		}
	}
	if gangTemplate != PreludeTemplate {
		// The replica's required key is the base gang's PodGroup key; a
		// scaled gang's pods are created with a node selector for the base
		// gang's domain of it (BaseGangHoldKey), so no term is needed. Pod
		// affinity could not say it: the scheduler counts only existing
		// pods that match every required term of a pod, and no pod is both
		// in the base gang and in a scaled gang's narrower scopes.
		scope(packing.Replica, map[string]string{labels.PodGangKey: naming.BaseGang(pcs.Name, replica), labels.AttemptKey: attempt}, false)
	}
	if group != "" {
		scope(packing.ScalingGroups[group], map[string]string{
			labels.ScalingGroupKey:        l[labels.ScalingGroupKey],
			labels.ScalingGroupReplicaKey: l[labels.ScalingGroupReplicaKey],
			labels.AttemptKey:             attempt,
		}, true)
	}
	scope(packing.Cliques[l[labels.CliqueTemplateKey]], map[string]string{labels.PodCliqueKey: pclq.Name, labels.AttemptKey: attempt}, true)
	return required, preferred
}

// addTopologyAffinity appends TopologyAffinity's terms to the PodClique's
// pod template, after the user's own terms, which are all kept.
func addTopologyAffinity(pcs *copsev1alpha1.PodCliqueSet, pclq *copsev1alpha1.PodClique, packing topology.Resolved) {
	required, preferred := TopologyAffinity(pcs, pclq, packing)
	if len(required) == 0 && len(preferred) == 0 {
		return
	}
	spec := &pclq.Spec.PodSpec
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.PodAffinity == nil {
		spec.Affinity.PodAffinity = &corev1.PodAffinity{}
	}
	pa := spec.Affinity.PodAffinity
	pa.RequiredDuringSchedulingIgnoredDuringExecution = append(slices.Clone(pa.RequiredDuringSchedulingIgnoredDuringExecution), required...)
	pa.PreferredDuringSchedulingIgnoredDuringExecution = append(slices.Clone(pa.PreferredDuringSchedulingIgnoredDuringExecution), preferred...)
}

func affinityTerm(key string, selector map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}
}

// scalingGroupOfClique is the name of the scaling group config whose
// cliques include clique, "" when none does.
func scalingGroupOfClique(pcs *copsev1alpha1.PodCliqueSet, clique string) string {
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if slices.Contains(g.CliqueNames, clique) {
			return g.Name
		}
	}
	return ""
}
