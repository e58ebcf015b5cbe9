package blueprint

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/copse-dev/copse/internal/topology"
)

func TestBaseGangHoldKey(t *testing.T) {
	pcs := testPCS() // leader standalone; group serve (decode) of 3 replicas, minAvailable 2
	pcsg := ScalingGroup(pcs, 0, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 1)
	packed := topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey}, ScalingGroups: map[string]topology.Pack{"serve": {RequiredKey: rackKey}}}
	cases := []struct {
		name    string
		packing topology.Resolved
		build   func(topology.Resolved) (string, error)
		want    string
	}{
		{name: "a scaled gang's clique of a packed replica: held at the replica's key", packing: packed, want: blockKey,
			build: func(p topology.Resolved) (string, error) {
				pclq := GroupedPodClique(pcs, pcsg, 2, pcs.Spec.Template.Cliques[1], p)
				id, err := IdentityOf(pclq)
				return BaseGangHoldKey(pclq, id), err
			}},
		{name: "a group replica in the base gang: not held", packing: packed,
			build: func(p topology.Resolved) (string, error) {
				pclq := GroupedPodClique(pcs, pcsg, 0, pcs.Spec.Template.Cliques[1], p)
				id, err := IdentityOf(pclq)
				return BaseGangHoldKey(pclq, id), err
			}},
		{name: "a standalone clique: not held", packing: packed,
			build: func(p topology.Resolved) (string, error) {
				pclq := StandalonePodClique(pcs, 0, pcs.Spec.Template.Cliques[0], 1, p)
				id, err := IdentityOf(pclq)
				return BaseGangHoldKey(pclq, id), err
			}},
		{name: "a scaled gang of a replica not packed: not held",
			packing: topology.Resolved{ScalingGroups: map[string]topology.Pack{"serve": {RequiredKey: rackKey}}},
			build: func(p topology.Resolved) (string, error) {
				pclq := GroupedPodClique(pcs, pcsg, 2, pcs.Spec.Template.Cliques[1], p)
				id, err := IdentityOf(pclq)
				return BaseGangHoldKey(pclq, id), err
			}},
		{name: "a group replica that became a scaled gang (minAvailable lowered): held, from its gang label", packing: packed, want: blockKey,
			build: func(p topology.Resolved) (string, error) {
				pclq := GroupedPodClique(pcs, pcsg, 0, pcs.Spec.Template.Cliques[1], p)
				pclq.Labels["grove.io/podgang"] = "llm-0-serve-0"
				id, err := IdentityOf(pclq)
				return BaseGangHoldKey(pclq, id), err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.build(tc.packing)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("BaseGangHoldKey = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBaseGangHold(t *testing.T) {
	cases := []struct {
		name       string
		boundNodes []map[string]string
		want       map[string]string
		wait       bool
	}{
		{name: "no base pod bound: wait", wait: true},
		{name: "bound: the base gang's domain", boundNodes: []map[string]string{{blockKey: "b1", hostKey: "n1"}, {blockKey: "b1", hostKey: "n2"}},
			want: map[string]string{blockKey: "b1"}},
		{name: "a node without the key is skipped", boundNodes: []map[string]string{{hostKey: "n1"}, {blockKey: "b2"}},
			want: map[string]string{blockKey: "b2"}},
		{name: "bound, but no node has the key (the binding changed): no hold, no wait", boundNodes: []map[string]string{{hostKey: "n1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, wait := BaseGangHold(blockKey, tc.boundNodes)
			if diff := cmp.Diff(tc.want, got); diff != "" || wait != tc.wait {
				t.Errorf("BaseGangHold: hold (-want +got):\n%s wait %t, want %t", diff, wait, tc.wait)
			}
		})
	}
}

func TestPodHeldInTheBaseGangsDomain(t *testing.T) {
	pcs := testPCS()
	pcsg := ScalingGroup(pcs, 0, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0], 1)
	pclq := GroupedPodClique(pcs, pcsg, 2, pcs.Spec.Template.Cliques[1], topology.Resolved{Replica: topology.Pack{RequiredKey: blockKey}})
	pclq.Spec.PodSpec.NodeSelector = map[string]string{"gpu": "b200"}
	id, err := IdentityOf(pclq)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := Pod(PodContext{PodCliqueSet: pcs, PodClique: pclq, Identity: id, HoldIn: map[string]string{blockKey: "b1"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"gpu": "b200", blockKey: "b1"}, pod.Spec.NodeSelector); diff != "" {
		t.Errorf("node selector (-want +got):\n%s", diff)
	}
	if _, found := pod.Annotations["copse.dev/replica-domain-key"]; found {
		t.Errorf("the PodClique's bookkeeping annotation was copied to the pod: %v", pod.Annotations)
	}
	if pclq.Spec.PodSpec.NodeSelector[blockKey] != "" {
		t.Errorf("the PodClique's template was changed: %v", pclq.Spec.PodSpec.NodeSelector)
	}
}
