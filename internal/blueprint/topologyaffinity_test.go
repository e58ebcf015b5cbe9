package blueprint

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/topology"
)

const (
	blockKey = "example.com/block"
	rackKey  = "example.com/rack"
	hostKey  = "kubernetes.io/hostname"
)

func TestGangTopologyKey(t *testing.T) {
	pcs := testPCS() // leader standalone; group serve (decode) of 3 replicas, minAvailable 2
	cases := []struct {
		name    string
		packing topology.Resolved
		want    map[string]string // gang name -> key
	}{
		{name: "no packing", want: map[string]string{"llm-0": "", "llm-0-serve-2": ""}},
		{
			name:    "replica only: a scaled gang of a group without a constraint takes the replica's constraint",
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey, PreferredKey: rackKey}},
			want:    map[string]string{"llm-0": blockKey, "llm-0-serve-2": blockKey},
		},
		{
			name: "a group that only prefers a domain: its scaled gangs take its constraint, which requires none (Grove's TAS23)",
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey, PreferredKey: rackKey},
				ScalingGroups: map[string]topology.Pack{"serve": {PreferredKey: hostKey}}},
			want: map[string]string{"llm-0": blockKey, "llm-0-serve-2": ""},
		},
		{
			name: "the scaling group's key wins for its scaled gangs",
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey},
				ScalingGroups: map[string]topology.Pack{"serve": {RequiredKey: rackKey}}},
			want: map[string]string{"llm-0": blockKey, "llm-0-serve-2": rackKey},
		},
		{
			name:    "a preferred key alone packs no gang",
			packing: topology.Resolved{ScalingGroups: map[string]topology.Pack{"serve": {PreferredKey: rackKey}}},
			want:    map[string]string{"llm-0": "", "llm-0-serve-2": ""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, g := range ReplicaGangs(pcs, 0, nil, tc.packing) {
				got[g.Name] = g.TopologyKey
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("gang keys (-want +got):\n%s", diff)
			}
			for _, tmpl := range TemplateMinCounts(ReplicaGangs(pcs, 0, nil, tc.packing)) {
				if want := GangTopologyKey(tc.packing, tmpl.Template, "serve"); tmpl.TopologyKey != want {
					t.Errorf("template %s key %q, want %q", tmpl.Template, tmpl.TopologyKey, want)
				}
			}
		})
	}
	if key := GangTopologyKey(topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey}}, PreludeTemplate, ""); key != "" {
		t.Errorf("the prelude is never packed by its PodGroup, got %q", key)
	}
}

func TestHeldToBaseGang(t *testing.T) {
	packed := topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey}}
	cases := []struct {
		packing  topology.Resolved
		template string
		want     bool
	}{
		{packed, ScaledTemplate("serve"), true},
		{packed, BaseTemplate, false},
		{packed, PreludeTemplate, false},
		{topology.Resolved{Replica: topology.Pack{PreferredKey: blockKey}}, ScaledTemplate("serve"), false},
		{topology.Resolved{ScalingGroups: map[string]topology.Pack{"serve": {RequiredKey: rackKey}}}, ScaledTemplate("serve"), false},
	}
	for _, tc := range cases {
		if got := HeldToBaseGang(tc.packing, tc.template); got != tc.want {
			t.Errorf("HeldToBaseGang(%+v, %s) = %t, want %t", tc.packing, tc.template, got, tc.want)
		}
	}
}

func term(key string, selector map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: selector}}
}

func weighted(key string, selector map[string]string) corev1.WeightedPodAffinityTerm {
	return corev1.WeightedPodAffinityTerm{Weight: PreferredPackingWeight, PodAffinityTerm: term(key, selector)}
}

func TestTopologyAffinity(t *testing.T) {
	pcs := testPCS() // leader standalone; group serve (decode) of 3 replicas, minAvailable 2
	pcsg := ScalingGroup(pcs, 0, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 1)
	leader := func(p topology.Resolved) *copsev1alpha1.PodClique {
		return StandalonePodClique(pcs, 0, pcs.Spec.Template.Cliques[0], 1, p)
	}
	decode := func(j int32) func(topology.Resolved) *copsev1alpha1.PodClique {
		return func(p topology.Resolved) *copsev1alpha1.PodClique {
			return GroupedPodClique(pcs, pcsg, j, pcs.Spec.Template.Cliques[1], p)
		}
	}
	leaderPods := map[string]string{"grove.io/podclique": "llm-0-leader", "copse.dev/attempt": "1"}
	baseGangPods := map[string]string{"grove.io/podgang": "llm-0", "copse.dev/attempt": "1"}
	groupReplica0Pods := map[string]string{"grove.io/podcliquescalinggroup": "llm-0-serve", "grove.io/podcliquescalinggroup-replica-index": "0", "copse.dev/attempt": "1"}
	decode0Pods := map[string]string{"grove.io/podclique": "llm-0-serve-0-decode", "copse.dev/attempt": "1"}
	decode2Pods := map[string]string{"grove.io/podclique": "llm-0-serve-2-decode", "copse.dev/attempt": "1"}
	scaledGangPods := map[string]string{"grove.io/podgang": "llm-0-serve-2", "copse.dev/attempt": "1"}

	cases := []struct {
		name      string
		build     func(topology.Resolved) *copsev1alpha1.PodClique
		packing   topology.Resolved
		required  []corev1.PodAffinityTerm
		preferred []corev1.WeightedPodAffinityTerm
	}{
		{name: "no packing, no affinity", build: leader},
		{
			name:     "a replica's required key is its PodGroup's, and a term over the gang's pods for pods placed after the gang",
			build:    leader,
			packing:  topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey}},
			required: []corev1.PodAffinityTerm{term(blockKey, baseGangPods)},
		},
		{
			name:  "a clique narrower than its gang: a required term over its PodClique's pods",
			build: leader,
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey},
				Cliques: map[string]topology.Pack{"leader": {RequiredKey: hostKey}}},
			required: []corev1.PodAffinityTerm{term(blockKey, baseGangPods), term(hostKey, leaderPods)},
		},
		{
			name:  "a clique at its gang's key: redundant, the gang's term only",
			build: leader,
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: rackKey},
				Cliques: map[string]topology.Pack{"leader": {RequiredKey: rackKey}}},
			required: []corev1.PodAffinityTerm{term(rackKey, baseGangPods)},
		},
		{
			name:      "a replica's preferred key: a preferred term over the base gang's pods",
			build:     leader,
			packing:   topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey, PreferredKey: rackKey}},
			required:  []corev1.PodAffinityTerm{term(blockKey, baseGangPods)},
			preferred: []corev1.WeightedPodAffinityTerm{weighted(rackKey, baseGangPods)},
		},
		{
			name:      "a clique's preferred key: a preferred term over its PodClique's pods",
			build:     leader,
			packing:   topology.Resolved{Cliques: map[string]topology.Pack{"leader": {PreferredKey: hostKey}}},
			preferred: []corev1.WeightedPodAffinityTerm{weighted(hostKey, leaderPods)},
		},
		{
			name:  "a group replica inside the base gang: the group's required key is a term over the group replica's pods",
			build: decode(0),
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey},
				ScalingGroups: map[string]topology.Pack{"serve": {RequiredKey: rackKey}},
				Cliques:       map[string]topology.Pack{"decode": {RequiredKey: hostKey}}},
			required: []corev1.PodAffinityTerm{term(blockKey, baseGangPods), term(rackKey, groupReplica0Pods), term(hostKey, decode0Pods)},
		},
		{
			name:  "a group replica with a gang of its own: the group's key is its PodGroup's (the base gang's domain is its node selector); the clique's is a term",
			build: decode(2),
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey},
				ScalingGroups: map[string]topology.Pack{"serve": {RequiredKey: rackKey}},
				Cliques:       map[string]topology.Pack{"decode": {RequiredKey: hostKey}}},
			required: []corev1.PodAffinityTerm{term(rackKey, scaledGangPods), term(hostKey, decode2Pods)},
		},
		{
			name:     "a scaled gang of a group without a constraint: keyed at the replica's key, its own term for late pods",
			build:    decode(2),
			packing:  topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey}},
			required: []corev1.PodAffinityTerm{term(blockKey, scaledGangPods)},
		},
		{
			name:  "a scaled gang of a group that only prefers: no key of its own, preferring its replica's and its group's domains",
			build: decode(2),
			packing: topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey, PreferredKey: rackKey},
				ScalingGroups: map[string]topology.Pack{"serve": {PreferredKey: hostKey}}},
			preferred: []corev1.WeightedPodAffinityTerm{weighted(rackKey, baseGangPods),
				weighted(hostKey, map[string]string{"grove.io/podcliquescalinggroup": "llm-0-serve", "grove.io/podcliquescalinggroup-replica-index": "2", "copse.dev/attempt": "1"})},
		},
		{
			name:     "a scaled gang of an unpacked replica: only its group's key",
			build:    decode(2),
			packing:  topology.Resolved{ScalingGroups: map[string]topology.Pack{"serve": {RequiredKey: rackKey}}},
			required: []corev1.PodAffinityTerm{term(rackKey, scaledGangPods)},
		},
		{
			name:  "a preferred key equal to a required one of the same pods: no term",
			build: decode(0),
			packing: topology.Resolved{ScalingGroups: map[string]topology.Pack{"serve": {RequiredKey: rackKey, PreferredKey: rackKey}},
				Cliques: map[string]topology.Pack{"decode": {PreferredKey: rackKey}}},
			required: []corev1.PodAffinityTerm{term(rackKey, groupReplica0Pods)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pclq := tc.build(tc.packing)
			required, preferred := TopologyAffinity(pcs, pclq, tc.packing)
			if diff := cmp.Diff(tc.required, required); diff != "" {
				t.Errorf("required (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.preferred, preferred); diff != "" {
				t.Errorf("preferred (-want +got):\n%s", diff)
			}
			var podAffinity *corev1.PodAffinity
			if a := pclq.Spec.PodSpec.Affinity; a != nil {
				podAffinity = a.PodAffinity
			}
			if len(required)+len(preferred) == 0 {
				if podAffinity != nil {
					t.Errorf("no term, yet the pod template has pod affinity %+v", podAffinity)
				}
				return
			}
			if podAffinity == nil || len(podAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != len(required) ||
				len(podAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != len(preferred) {
				t.Errorf("the PodClique's pod template carries %+v, want the terms", podAffinity)
			}
		})
	}
}

func TestTopologyAffinityKeepsTheUsersAffinity(t *testing.T) {
	pcs := testPCS()
	own := corev1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}}
	ownPreferred := corev1.WeightedPodAffinityTerm{Weight: 5, PodAffinityTerm: own}
	nodeAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gpu", Operator: corev1.NodeSelectorOpExists}}}}}}
	antiAffinity := &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{ownPreferred}}
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.Affinity = &corev1.Affinity{
		NodeAffinity:    nodeAffinity,
		PodAffinity:     &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{own}, PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{ownPreferred}},
		PodAntiAffinity: antiAffinity,
	}
	packing := topology.Resolved{Cliques: map[string]topology.Pack{"leader": {RequiredKey: rackKey, PreferredKey: hostKey}}}
	pclq := StandalonePodClique(pcs, 0, pcs.Spec.Template.Cliques[0], 0, packing)
	leaderPods := map[string]string{"grove.io/podclique": "llm-0-leader", "copse.dev/attempt": "0"}
	want := &corev1.Affinity{
		NodeAffinity: nodeAffinity,
		PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  []corev1.PodAffinityTerm{own, term(rackKey, leaderPods)},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{ownPreferred, weighted(hostKey, leaderPods)},
		},
		PodAntiAffinity: antiAffinity,
	}
	if diff := cmp.Diff(want, pclq.Spec.PodSpec.Affinity); diff != "" {
		t.Errorf("affinity (-want +got):\n%s", diff)
	}
	if got := pcs.Spec.Template.Cliques[0].Spec.PodSpec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution; len(got) != 1 {
		t.Errorf("the PodCliqueSet's template was changed: %+v", got)
	}
}
