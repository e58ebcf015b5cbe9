package kueue

import (
	"fmt"
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/topology"
)

const (
	blockKey = "example.com/block"
	rackKey  = "example.com/rack"
	hostKey  = "kubernetes.io/hostname"
)

// set is a PodCliqueSet of replicas replicas with the given cliques
// (name, pods) and scaling groups.
func set(replicas int32, cliques map[string]int32, order []string, groups ...grovecorev1alpha1.PodCliqueScalingGroupConfig) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{}
	pcs.Name = "llm"
	pcs.Spec.Replicas = replicas
	for _, name := range order {
		pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques,
			&grovecorev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovecorev1alpha1.PodCliqueSpec{Replicas: cliques[name]}})
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = groups
	return pcs
}

func group(name string, replicas, minAvailable int32, cliques ...string) grovecorev1alpha1.PodCliqueScalingGroupConfig {
	return grovecorev1alpha1.PodCliqueScalingGroupConfig{Name: name, CliqueNames: cliques, Replicas: ptr.To(replicas), MinAvailable: ptr.To(minAvailable)}
}

// packed is a resolution with the given required keys: replica, then
// scaling groups and cliques by name.
func packed(replica string, groups, cliques map[string]string) topology.Resolved {
	out := topology.Resolved{TopologyName: "fleet", Replica: topology.Pack{RequiredKey: replica},
		ScalingGroups: map[string]topology.Pack{}, Cliques: map[string]topology.Pack{}}
	for g, k := range groups {
		out.ScalingGroups[g] = topology.Pack{RequiredKey: k}
	}
	for c, k := range cliques {
		out.Cliques[c] = topology.Pack{RequiredKey: k}
	}
	return out
}

func required(key string) *kueue.PodSetTopologyRequest {
	return &kueue.PodSetTopologyRequest{Required: ptr.To(key)}
}

func sliced(key string, size int32) *kueue.PodSetTopologyRequest {
	return &kueue.PodSetTopologyRequest{PodSetSliceRequiredTopology: ptr.To(key), PodSetSliceSize: ptr.To(size), PodIndexLabel: ptr.To(PodSetIndexLabel)}
}

func layer(key string, size int32) kueue.PodsetSliceRequiredTopologyConstraint {
	return kueue.PodsetSliceRequiredTopologyConstraint{Topology: key, Size: size}
}

// layered is a pod set divided into slices at several levels, the broadest
// first.
func layered(layers ...kueue.PodsetSliceRequiredTopologyConstraint) *kueue.PodSetTopologyRequest {
	return &kueue.PodSetTopologyRequest{PodsetSliceRequiredTopologyConstraints: layers, PodIndexLabel: ptr.To(PodSetIndexLabel)}
}

func grouped(key, name string) *kueue.PodSetTopologyRequest {
	return &kueue.PodSetTopologyRequest{Required: ptr.To(key), PodSetGroupName: ptr.To(name)}
}

func TestTopologyRequests(t *testing.T) {
	one := map[string]int32{"worker": 4}
	leaderWorkers := map[string]int32{"leader": 1, "worker": 4}
	tests := []struct {
		name    string
		pcs     *copsev1alpha1.PodCliqueSet
		packing topology.Resolved
		want    map[string]*kueue.PodSetTopologyRequest
		errs    []string
	}{
		{
			name:    "no packing",
			pcs:     set(2, one, []string{"worker"}),
			packing: topology.Resolved{},
			want:    map[string]*kueue.PodSetTopologyRequest{},
		},
		{
			name:    "one replica of one clique packed at rack: the pod set in one rack",
			pcs:     set(1, one, []string{"worker"}),
			packing: packed(rackKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": required(rackKey)},
		},
		{
			name:    "three replicas packed at rack: each replica's four pods are a slice in one rack",
			pcs:     set(3, one, []string{"worker"}),
			packing: packed(rackKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": sliced(rackKey, 4)},
		},
		{
			name: "an autoscaled clique: each replica's slice is its maxReplicas, as the Workload counts it",
			pcs: func() *copsev1alpha1.PodCliqueSet {
				p := set(2, one, []string{"worker"})
				p.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 6}
				return p
			}(),
			packing: packed(rackKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": sliced(rackKey, 6)},
		},
		{
			name: "an autoscaled scaling group: its replicas past the template, scaled gangs, are in the replica's block too",
			pcs: func() *copsev1alpha1.PodCliqueSet {
				g := group("workers", 1, 1, "worker")
				g.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 3}
				return set(2, one, []string{"worker"}, g)
			}(),
			packing: packed(blockKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": sliced(blockKey, 12)},
		},
		{
			name:    "replica at block, clique at host over the same pods: the narrower holds both",
			pcs:     set(2, one, []string{"worker"}),
			packing: packed(blockKey, nil, map[string]string{"worker": hostKey}),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": sliced(hostKey, 4)},
		},
		{
			name:    "one replica at block, clique at host",
			pcs:     set(1, one, []string{"worker"}),
			packing: packed(blockKey, nil, map[string]string{"worker": hostKey}),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": required(hostKey)},
		},
		{
			name:    "a leader of one pod and its workers packed at rack: a pod set group",
			pcs:     set(1, leaderWorkers, []string{"leader", "worker"}),
			packing: packed(rackKey, nil, nil),
			want: map[string]*kueue.PodSetTopologyRequest{
				"leader": grouped(rackKey, "copse-replica"), "worker": grouped(rackKey, "copse-replica")},
		},
		{
			name:    "a clique packed at rack beside an unpacked one",
			pcs:     set(1, leaderWorkers, []string{"leader", "worker"}),
			packing: packed("", nil, map[string]string{"worker": rackKey}),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": required(rackKey)},
		},
		{
			name:    "a one-pod clique's own packing always holds",
			pcs:     set(3, leaderWorkers, []string{"leader", "worker"}),
			packing: packed("", nil, map[string]string{"leader": hostKey}),
			want:    map[string]*kueue.PodSetTopologyRequest{},
		},
		{
			name:    "leader and workers of two replicas: no pair per replica in Kueue",
			pcs:     set(2, leaderWorkers, []string{"leader", "worker"}),
			packing: packed(rackKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{},
			errs: []string{"spec.template.topologyConstraint: Forbidden: Kueue cannot express this packing: each replica's pods of cliques leader, worker " +
				"share one example.com/rack domain, and there are 2 such groups of pods: Kueue packs pod sets together only in pairs of whole pod sets where one is a single pod (podSetGroupName)"},
		},
		{
			name:    "three cliques in one gang",
			pcs:     set(1, map[string]int32{"router": 1, "prefill": 2, "decode": 4}, []string{"router", "prefill", "decode"}),
			packing: packed(rackKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{},
			errs: []string{"spec.template.topologyConstraint: Forbidden: Kueue cannot express this packing: each replica's pods of cliques decode, prefill, router " +
				"share one example.com/rack domain, and that is 3 pod sets: Kueue packs pod sets together only in pairs of whole pod sets where one is a single pod (podSetGroupName)"},
		},
		{
			name:    "two cliques of several pods in one gang",
			pcs:     set(1, map[string]int32{"prefill": 2, "decode": 4}, []string{"prefill", "decode"}),
			packing: packed(rackKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{},
			errs: []string{"spec.template.topologyConstraint: Forbidden: Kueue cannot express this packing: each replica's pods of cliques decode, prefill " +
				"share one example.com/rack domain, and neither pod set is a single pod: Kueue packs pod sets together only in pairs of whole pod sets where one is a single pod (podSetGroupName)"},
		},
		{
			name:    "a paired pod set packed narrower than its pair",
			pcs:     set(1, leaderWorkers, []string{"leader", "worker"}),
			packing: packed(rackKey, nil, map[string]string{"worker": hostKey}),
			want:    map[string]*kueue.PodSetTopologyRequest{"leader": grouped(rackKey, "copse-replica")},
			errs: []string{"spec.template.cliques[1].topologyConstraint: Forbidden: Kueue cannot express this packing: clique worker is packed with clique leader " +
				"in one example.com/rack domain (podSetGroupName), and a grouped pod set takes no narrower requirement (kubernetes.io/hostname)"},
		},
		{
			name: "each scaling-group replica at rack: slices of the group replica's pods",
			pcs: set(2, map[string]int32{"router": 2, "worker": 4}, []string{"router", "worker"},
				group("workers", 3, 1, "worker")),
			packing: packed("", map[string]string{"workers": rackKey}, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": sliced(rackKey, 4)},
		},
		{
			name: "a pair in a scaling group of one replica",
			pcs: set(1, map[string]int32{"leader": 1, "worker": 3}, []string{"leader", "worker"},
				group("model", 1, 1, "leader", "worker")),
			packing: packed("", map[string]string{"model": rackKey}, nil),
			want: map[string]*kueue.PodSetTopologyRequest{
				"leader": grouped(rackKey, "copse-scaling-group-model"), "worker": grouped(rackKey, "copse-scaling-group-model")},
		},
		{
			name: "the replica's and the group's pairs over the same pods: the group's, narrower, holds",
			pcs: set(1, map[string]int32{"leader": 1, "worker": 3}, []string{"leader", "worker"},
				group("model", 1, 1, "leader", "worker")),
			packing: packed(blockKey, map[string]string{"model": rackKey}, nil),
			want: map[string]*kueue.PodSetTopologyRequest{
				"leader": grouped(rackKey, "copse-scaling-group-model"), "worker": grouped(rackKey, "copse-scaling-group-model")},
		},
		{
			name:    "template at block, group of three, one in the base gang: the scaled gangs are held in the base gang's block",
			pcs:     set(1, one, []string{"worker"}, group("workers", 3, 1, "worker")),
			packing: packed(blockKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": required(blockKey)},
		},
		{
			name:    "template at block, group of three, two in the base gang: one block still",
			pcs:     set(1, one, []string{"worker"}, group("workers", 3, 2, "worker")),
			packing: packed(blockKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": required(blockKey)},
		},
		{
			name:    "two replicas at block with scaled gangs: each replica's every group replica a slice in one block",
			pcs:     set(2, one, []string{"worker"}, group("workers", 3, 1, "worker")),
			packing: packed(blockKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": sliced(blockKey, 12)},
		},
		{
			name:    "one replica at block, scaled gangs at rack: required block, slices at rack",
			pcs:     set(1, one, []string{"worker"}, group("workers", 3, 1, "worker")),
			packing: packed(blockKey, map[string]string{"workers": rackKey}, nil),
			want: map[string]*kueue.PodSetTopologyRequest{"worker": {Required: ptr.To(blockKey),
				PodSetSliceRequiredTopology: ptr.To(rackKey), PodSetSliceSize: ptr.To[int32](4), PodIndexLabel: ptr.To(PodSetIndexLabel)}},
		},
		{
			name:    "one replica at block, every group replica at rack: required block, slices at rack",
			pcs:     set(1, one, []string{"worker"}, group("workers", 2, 2, "worker")),
			packing: packed(blockKey, map[string]string{"workers": rackKey}, nil),
			want: map[string]*kueue.PodSetTopologyRequest{"worker": {Required: ptr.To(blockKey),
				PodSetSliceRequiredTopology: ptr.To(rackKey), PodSetSliceSize: ptr.To[int32](4), PodIndexLabel: ptr.To(PodSetIndexLabel)}},
		},
		{
			name:    "two replicas at block, every group replica at rack: two levels of slices (Kueue v0.19's multi-layer)",
			pcs:     set(2, one, []string{"worker"}, group("workers", 2, 2, "worker")),
			packing: packed(blockKey, map[string]string{"workers": rackKey}, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": layered(layer(blockKey, 8), layer(rackKey, 4))},
		},
		{
			name:    "two replicas at block, group replicas at rack, each PodClique on one host: the PodClique's key for the group replica's run",
			pcs:     set(2, one, []string{"worker"}, group("workers", 2, 2, "worker")),
			packing: packed(blockKey, map[string]string{"workers": rackKey}, map[string]string{"worker": hostKey}),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": layered(layer(blockKey, 8), layer(hostKey, 4))},
		},
		{
			name:    "two replicas at block, group replicas at block too: the narrower runs hold already, one level",
			pcs:     set(2, one, []string{"worker"}, group("workers", 2, 2, "worker")),
			packing: packed(blockKey, map[string]string{"workers": blockKey}, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"worker": sliced(blockKey, 8)},
		},
		{
			name:    "one replica at block, group replicas at rack, PodCliques at host: required block, one level of slices (the PodClique's)",
			pcs:     set(1, one, []string{"worker"}, group("workers", 3, 1, "worker")),
			packing: packed(blockKey, map[string]string{"workers": rackKey}, map[string]string{"worker": hostKey}),
			want: map[string]*kueue.PodSetTopologyRequest{"worker": {Required: ptr.To(blockKey),
				PodSetSliceRequiredTopology: ptr.To(hostKey), PodSetSliceSize: ptr.To[int32](4), PodIndexLabel: ptr.To(PodSetIndexLabel)}},
		},
		{
			name: "the prelude is outside the gang",
			pcs: func() *copsev1alpha1.PodCliqueSet {
				p := set(1, map[string]int32{"init": 2, "trainer": 4}, []string{"init", "trainer"})
				p.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
				p.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{StartsAfterSucceeded: []copsev1alpha1.CliqueSuccessDependency{
					{Clique: "trainer", Cliques: []string{"init"}}}}
				return p
			}(),
			packing: packed(rackKey, nil, nil),
			want:    map[string]*kueue.PodSetTopologyRequest{"trainer": required(rackKey)},
		},
		{
			name: "preferred: the narrowest over the clique, the replica's except for the prelude",
			pcs:  set(1, map[string]int32{"router": 2, "worker": 4}, []string{"router", "worker"}),
			packing: func() topology.Resolved {
				r := packed("", nil, nil)
				r.Replica.PreferredKey = blockKey
				r.Cliques["worker"] = topology.Pack{PreferredKey: rackKey}
				return r
			}(),
			want: map[string]*kueue.PodSetTopologyRequest{
				"router": {Preferred: ptr.To(blockKey)}, "worker": {Preferred: ptr.To(rackKey)}},
		},
		{
			name: "preferred gives way to a requirement",
			pcs:  set(1, one, []string{"worker"}),
			packing: func() topology.Resolved {
				r := packed(blockKey, nil, nil)
				r.Replica.PreferredKey = rackKey
				return r
			}(),
			want: map[string]*kueue.PodSetTopologyRequest{"worker": required(blockKey)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := TopologyRequests(tt.pcs, tt.packing)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			var texts []string
			for _, e := range errs {
				texts = append(texts, e.Error())
			}
			if diff := cmp.Diff(tt.errs, texts); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodSetIndex(t *testing.T) {
	pcs := set(2, map[string]int32{"router": 2, "worker": 4}, []string{"router", "worker"}, group("workers", 3, 1, "worker"))
	tests := []struct {
		clique                    string
		replica, groupReplica, at int
		want                      int
		ok                        bool
	}{
		{"router", 0, 0, 1, 1, true},
		{"router", 1, 0, 0, 2, true},
		{"worker", 0, 0, 3, 3, true},
		{"worker", 0, 2, 0, 8, true},
		{"worker", 1, 0, 0, 12, true},
		{"worker", 1, 2, 3, 23, true},
		{"worker", 0, 3, 0, 0, false}, // a group replica past the template
		{"worker", 0, 0, 4, 0, false}, // a pod past the clique's template
		{"router", 2, 0, 0, 0, false}, // a replica past the set's
		{"nobody", 0, 0, 0, 0, false},
	}
	autoscaled := pcs.DeepCopy()
	autoscaled.Spec.Template.Cliques[1].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 5}
	autoscaled.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}
	for _, tt := range []struct {
		replica, groupReplica, at, want int
		ok                              bool
	}{
		{0, 0, 4, 4, true},  // a pod the autoscaler added
		{0, 3, 0, 15, true}, // a group replica the autoscaler added
		{1, 0, 0, 20, true}, // replica 1 starts after 4 group replicas of 5 pods
		{0, 0, 5, 0, false}, // past maxReplicas
		{0, 4, 0, 0, false}, // past the group's maxReplicas
	} {
		got, ok := PodSetIndex(autoscaled, "worker", tt.replica, tt.groupReplica, tt.at)
		if got != tt.want || ok != tt.ok {
			t.Errorf("autoscaled: PodSetIndex(worker, replica %d, group replica %d, pod %d) = %d, %v; want %d, %v",
				tt.replica, tt.groupReplica, tt.at, got, ok, tt.want, tt.ok)
		}
	}
	for _, tt := range tests {
		got, ok := PodSetIndex(pcs, tt.clique, tt.replica, tt.groupReplica, tt.at)
		if got != tt.want || ok != tt.ok {
			t.Errorf("PodSetIndex(%s, replica %d, group replica %d, pod %d) = %d, %v; want %d, %v",
				tt.clique, tt.replica, tt.groupReplica, tt.at, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPodSetIndexDecorator(t *testing.T) {
	pcs := set(2, map[string]int32{"router": 2, "worker": 4}, []string{"router", "worker"}, group("workers", 3, 1, "worker"))
	decorate := func(pcs *copsev1alpha1.PodCliqueSet, id blueprint.CliqueIdentity, index int) map[string]string {
		pod := &corev1.Pod{}
		if err := PodSetIndexDecorator().Decorate(pod, blueprint.PodContext{PodCliqueSet: pcs, Identity: id, Index: index}); err != nil {
			t.Fatal(err)
		}
		return pod.Labels
	}
	worker := blueprint.CliqueIdentity{Clique: "worker", Replica: 1, ScalingGroup: "llm-1-workers", ScalingGroupReplica: 2}
	if got := decorate(pcs, worker, 3); got != nil {
		t.Errorf("a PodCliqueSet without the queue label: labels %v, want none", got)
	}
	pcs.Labels = map[string]string{QueueNameLabel: "team-a"}
	if got := decorate(pcs, worker, 3)[PodSetIndexLabel]; got != "23" {
		t.Errorf("worker of replica 1, group replica 2, pod 3: %s = %q, want 23", PodSetIndexLabel, got)
	}
	if got := decorate(pcs, worker, 4); got != nil {
		t.Errorf("a pod past the template: labels %v, want none", got)
	}
}

// cliqueRuns on scopes copse's packing does not make today: the layers
// Kueue cannot take are refused, naming the broadest scope's field.
func TestCliqueRunsRefusesWhatKueueCannotLayer(t *testing.T) {
	shape := podSetShape{replicas: 1, groupReplicas: 1, pods: 48}
	runsOf := func(key string, depth, size int) []packedScope {
		var out []packedScope
		for start := 0; start < shape.count(); start += size {
			out = append(out, packedScope{key: key, depth: depth, path: cliquesPath.Index(depth), unit: "run",
				pods: map[string]podRange{"worker": {start, min(start+size, shape.count())}}})
		}
		return out
	}
	tests := []struct {
		name       string
		scopes     []packedScope
		wantLayers []string
		wantErr    string
	}{
		{name: "two nested levels", scopes: append(runsOf(blockKey, 0, 24), runsOf(rackKey, 1, 12)...), wantLayers: []string{blockKey + "/24", rackKey + "/12"}},
		{name: "three nested levels, Kueue's most; runs of one pod always hold",
			scopes:     append(append(append(runsOf(blockKey, 0, 24), runsOf(rackKey, 1, 12)...), runsOf("example.com/tray", 2, 6)...), runsOf(hostKey, 3, 1)...),
			wantLayers: []string{blockKey + "/24", rackKey + "/12", "example.com/tray/6"}},
		{name: "runs that do not cover the pod set in one size", scopes: runsOf(rackKey, 1, 5),
			wantErr: "spec.template.cliques[1]: Forbidden: Kueue cannot express this packing of clique worker's 48 pods: it asks for runs of 5 pods in one example.com/rack domain (each run) and 3 pods"},
		{name: "levels whose runs do not nest", scopes: append(runsOf(blockKey, 0, 24), runsOf(rackKey, 1, 16)...),
			wantErr: "a Kueue pod set is divided into at most 3 levels of slices"},
		{name: "four levels", scopes: append(append(append(runsOf("a", 0, 24), runsOf("b", 1, 12)...), runsOf("c", 2, 6)...), runsOf("d", 3, 2)...),
			wantErr: "at most 3 levels of slices"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, layers, err := cliqueRuns("worker", shape, tc.scopes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range layers {
				got = append(got, fmt.Sprintf("%s/%d", l.key, l.pods["worker"].size()))
			}
			if diff := cmp.Diff(tc.wantLayers, got); diff != "" {
				t.Errorf("layers (-want +got):\n%s", diff)
			}
		})
	}
}
