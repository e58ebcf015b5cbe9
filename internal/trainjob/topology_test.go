package trainjob

import (
	"strings"
	"testing"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/topology"
	pcswebhook "github.com/copse-dev/copse/internal/webhook/podcliqueset"
)

const rackKey = "topology.copse.dev/rack"

func topologyBinding(name string, levels ...string) copsev1alpha1.ClusterTopologyBinding {
	b := copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i := 0; i+1 < len(levels); i += 2 {
		b.Spec.Levels = append(b.Spec.Levels, grovecorev1alpha1.TopologyLevel{
			Domain: grovecorev1alpha1.TopologyDomain(levels[i]), Key: levels[i+1]})
	}
	return b
}

// packedRuntime is a torch runtime on the PodCliqueSet backend with a
// dataset initializer, its trainer packed at level ("" for none).
func packedRuntime(level string) Runtime {
	rt := onPodCliqueSet(runtimeWith(torchPolicy(),
		replicatedJob("dataset-initializer", AncestorDatasetInitializer, DatasetInitializerName),
		dependsOn(replicatedJob("node", AncestorTrainer, NodeName), jobsetv1alpha2.DependencyComplete, "dataset-initializer")))
	if level != "" {
		rt.Spec.PodGroupPolicy.Workload.TopologyConstraint = &trainerv1alpha1.WorkloadTopologyConstraint{Level: level}
	}
	return rt
}

func TestPodCliqueSetTopology(t *testing.T) {
	fleet := topologyBinding("fleet", "zone", "topology.kubernetes.io/zone", "rack", rackKey, "host", "kubernetes.io/hostname")
	cases := []struct {
		name     string
		level    string
		bindings []copsev1alpha1.ClusterTopologyBinding
		want     *grovecorev1alpha1.TopologyConstraint
		// wantBinding is the binding the PodCliqueSet's constraint must
		// resolve against to the level's key (topology.Resolve).
		wantBinding string
		wantErr     []string
	}{
		{name: "no level: no constraint", bindings: []copsev1alpha1.ClusterTopologyBinding{fleet}},
		{name: "the level's domain in the binding that has the key",
			level:    rackKey,
			bindings: []copsev1alpha1.ClusterTopologyBinding{topologyBinding("other", "zone", "topology.kubernetes.io/zone"), fleet},
			want: &grovecorev1alpha1.TopologyConstraint{TopologyName: "fleet",
				Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}},
			wantBinding: "fleet"},
		{name: "the first binding by name wins",
			level:    rackKey,
			bindings: []copsev1alpha1.ClusterTopologyBinding{fleet, topologyBinding("a-fleet", "nvl", rackKey)},
			want: &grovecorev1alpha1.TopologyConstraint{TopologyName: "a-fleet",
				Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "nvl"}},
			wantBinding: "a-fleet"},
		{name: "no binding has the key",
			level:    "example.com/pod",
			bindings: []copsev1alpha1.ClusterTopologyBinding{fleet},
			wantErr: []string{"ClusterTrainingRuntime rt: ", `spec.podGroupPolicy.workload.topologyConstraint.level "example.com/pod"`,
				"is the key of no level of any ClusterTopologyBinding"}},
		{name: "no binding at all", level: rackKey,
			wantErr: []string{`spec.podGroupPolicy.workload.topologyConstraint.level "topology.copse.dev/rack"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objects, err := BuildPodCliqueSetObjects(pcsTrainJob(3), packedRuntime(tc.level), tc.bindings)
			if len(tc.wantErr) > 0 {
				if !IsTopologyUnresolved(err) || IsUnsupported(err) {
					t.Fatalf("err = %v, want a TopologyUnresolvedError", err)
				}
				for _, fragment := range tc.wantErr {
					if !strings.Contains(err.Error(), fragment) {
						t.Errorf("err = %q, want it to contain %q", err, fragment)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pcs := objects.PodCliqueSet
			if diff := cmp.Diff(tc.want, pcs.Spec.Template.TopologyConstraint); diff != "" {
				t.Errorf("spec.template.topologyConstraint (-want +got):\n%s", diff)
			}
			for _, c := range pcs.Spec.Template.Cliques {
				if c.TopologyConstraint != nil {
					t.Errorf("clique %s has constraint %+v, want only the template's", c.Name, c.TopologyConstraint)
				}
			}
			if tc.wantBinding == "" {
				return
			}
			// What the PodCliqueSet controller and webhook will make of it:
			// the replica packed at the runtime's key, admitted.
			var binding *copsev1alpha1.ClusterTopologyBinding
			for i := range tc.bindings {
				if tc.bindings[i].Name == tc.wantBinding {
					binding = &tc.bindings[i]
				}
			}
			resolved, problems := topology.Resolve(pcs, binding)
			if len(problems) > 0 || resolved.Replica.RequiredKey != tc.level {
				t.Errorf("topology.Resolve = %+v, %v; want the replica packed at %s", resolved.Replica, problems, tc.level)
			}
			if errs := pcswebhook.ValidateTopology(pcs, binding, true); len(errs) > 0 {
				t.Errorf("the webhook would refuse the PodCliqueSet: %v", errs)
			}
		})
	}
}

// TestPodCliqueSetKeepsItsTopology: once the PodCliqueSet exists its packing
// is kept as it is, whatever the ClusterTopologyBindings became (deleted,
// renamed, a new one first by name with the key): KeepTopology never reads
// them, where resolving again would fail or name another binding.
func TestPodCliqueSetKeepsItsTopology(t *testing.T) {
	kept := &grovecorev1alpha1.TopologyConstraint{TopologyName: "fleet",
		Pack: &grovecorev1alpha1.TopologyPackConstraint{RequiredDomain: "rack"}}
	for _, want := range []*grovecorev1alpha1.TopologyConstraint{kept, nil} {
		plan, err := PlanPodCliqueSet(pcsTrainJob(3), packedRuntime(rackKey), KeepTopology(want))
		if err != nil {
			t.Fatalf("keeping %+v: the build failed: %v", want, err)
		}
		if diff := cmp.Diff(want, BuildPodCliqueSet(plan).Spec.Template.TopologyConstraint); diff != "" {
			t.Errorf("spec.template.topologyConstraint (-want +got):\n%s", diff)
		}
	}
	if _, err := PlanPodCliqueSet(pcsTrainJob(3), packedRuntime(rackKey), ResolveTopologyAgainst(nil)); !IsTopologyUnresolved(err) {
		t.Errorf("resolving again without the binding: err = %v, want TopologyUnresolved", err)
	}
	plan, err := PlanPodCliqueSet(pcsTrainJob(3), packedRuntime(rackKey), ResolveTopologyAgainst(
		[]copsev1alpha1.ClusterTopologyBinding{topologyBinding("a-fleet", "nvl", rackKey), topologyBinding("fleet", "rack", rackKey)}))
	if err != nil || plan.TopologyConstraint.TopologyName != "a-fleet" {
		t.Errorf("resolving again with a new binding first by name: %+v, %v; want a-fleet (which the immutable constraint would refuse)", plan, err)
	}
}
