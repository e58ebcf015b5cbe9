package trainjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

func replicatedJob(name, step string, containers ...string) jobsetv1alpha2.ReplicatedJob {
	rjob := jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: 1}
	if step != "" {
		rjob.Template.Labels = map[string]string{AncestorLabel: step}
	}
	for _, c := range containers {
		rjob.Template.Spec.Template.Spec.Containers = append(rjob.Template.Spec.Template.Spec.Containers, corev1.Container{Name: c})
	}
	return rjob
}

func runtimeWith(policy *trainerv1alpha1.MLPolicy, jobs ...jobsetv1alpha2.ReplicatedJob) Runtime {
	spec := trainerv1alpha1.TrainingRuntimeSpec{MLPolicy: policy,
		PodGroupPolicy: &trainerv1alpha1.PodGroupPolicy{Workload: &trainerv1alpha1.WorkloadPodGroupPolicySource{}}}
	spec.Template.Spec.ReplicatedJobs = jobs
	return Runtime{Kind: trainerv1alpha1.ClusterTrainingRuntimeKind, Name: "rt", Spec: spec}
}

func TestApplyPodGroupPolicy(t *testing.T) {
	cases := []struct {
		name    string
		runtime Runtime
		nodes   int32
		want    []PodGroupPlan
		groups  map[string]string // replicated job -> pod group
	}{
		{"torch: one gang of every trainer node",
			runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), Torch: &trainerv1alpha1.TorchMLPolicySource{}},
				replicatedJob("node", AncestorTrainer, NodeName)),
			4,
			[]PodGroupPlan{{Template: TrainerGroup, Name: "tj-trainer", MinCount: 4}},
			map[string]string{"node": "tj-trainer"}},
		{"MPI with the launcher training: launcher and nodes in one gang of numNodes pods",
			runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), MPI: &trainerv1alpha1.MPIMLPolicySource{
				NumProcPerNode: ptr.To[int32](1), RunLauncherAsNode: ptr.To(true), SSHAuthMountPath: ptr.To("/root/.ssh"),
				MPIImplementation: ptr.To(trainerv1alpha1.MPIImplementationOpenMPI)}},
				replicatedJob("node", "", NodeName), replicatedJob("launcher", AncestorTrainer, NodeName)),
			4,
			[]PodGroupPlan{{Template: TrainerGroup, Name: "tj-trainer", MinCount: 4}},
			map[string]string{"node": "tj-trainer", "launcher": "tj-trainer"}},
		{"initializers in a basic group of their own, the trainer in its gang",
			runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), Torch: &trainerv1alpha1.TorchMLPolicySource{}},
				replicatedJob("dataset-initializer", AncestorDatasetInitializer, DatasetInitializerName),
				replicatedJob("model-initializer", AncestorModelInitializer, ModelInitializerName),
				replicatedJob("node", AncestorTrainer, NodeName)),
			2,
			[]PodGroupPlan{{Template: InitializerGroup, Name: "tj-initializer"}, {Template: TrainerGroup, Name: "tj-trainer", MinCount: 2}},
			map[string]string{"dataset-initializer": "tj-initializer", "model-initializer": "tj-initializer", "node": "tj-trainer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns"},
				Spec: trainerv1alpha1.TrainJobSpec{Trainer: &trainerv1alpha1.Trainer{NumNodes: ptr.To(tc.nodes)}}}
			plan, err := PlanJobSet(tj, tc.runtime)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, plan.PodGroups); diff != "" {
				t.Errorf("pod groups (-want +got):\n%s", diff)
			}
			for _, rjob := range plan.Spec.ReplicatedJobs {
				got := ptr.Deref(rjob.Template.Spec.Template.Spec.SchedulingGroup, corev1.PodSchedulingGroup{})
				if ptr.Deref(got.PodGroupName, "") != tc.groups[rjob.Name] {
					t.Errorf("job %s joins %q, want %q", rjob.Name, ptr.Deref(got.PodGroupName, ""), tc.groups[rjob.Name])
				}
			}
			workload := BuildWorkload(plan)
			if len(workload.Spec.PodGroupTemplates) != len(tc.want) {
				t.Errorf("Workload has %d templates, want %d", len(workload.Spec.PodGroupTemplates), len(tc.want))
			}
			for i, pg := range BuildPodGroups(plan, "workload-uid") {
				if pg.Spec.WorkloadRef.TemplateName != tc.want[i].Template || !metav1.IsControlledBy(pg, tj) ||
					pg.OwnerReferences[1].UID != "workload-uid" {
					t.Errorf("PodGroup %s: template %s, owners %v", pg.Name, pg.Spec.WorkloadRef.TemplateName, pg.OwnerReferences)
				}
				if gang := pg.Spec.SchedulingPolicy.Gang; (gang == nil) != (tc.want[i].MinCount == 0) {
					t.Errorf("PodGroup %s: policy %+v, want gang of %d", pg.Name, pg.Spec.SchedulingPolicy, tc.want[i].MinCount)
				}
			}
		})
	}
}

func TestNoPodGroupsWithoutTheWorkloadPolicy(t *testing.T) {
	rt := runtimeWith(&trainerv1alpha1.MLPolicy{Torch: &trainerv1alpha1.TorchMLPolicySource{}}, replicatedJob("node", AncestorTrainer, NodeName))
	rt.Spec.PodGroupPolicy = nil
	plan, err := PlanJobSet(&trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj"}}, rt)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.PodGroups) != 0 || BuildWorkload(plan) != nil || plan.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.SchedulingGroup != nil {
		t.Errorf("a runtime without podGroupPolicy.workload got pod groups %v", plan.PodGroups)
	}
}

// TestTrainerGangTopology: the runtime's
// podGroupPolicy.workload.topologyConstraint.level becomes the trainer gang's
// required topology key, on its PodGroup and its Workload template alike;
// the initializers' basic group gets none.
func TestTrainerGangTopology(t *testing.T) {
	const rack = "topology.copse.dev/rack"
	rt := runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), Torch: &trainerv1alpha1.TorchMLPolicySource{}},
		replicatedJob("dataset-initializer", AncestorDatasetInitializer, DatasetInitializerName),
		replicatedJob("node", AncestorTrainer, NodeName))
	rt.Spec.PodGroupPolicy.Workload.TopologyConstraint = &trainerv1alpha1.WorkloadTopologyConstraint{Level: rack}
	tj := &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns"},
		Spec: trainerv1alpha1.TrainJobSpec{Trainer: &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](3)}}}
	plan, err := PlanJobSet(tj, rt)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*schedulingv1beta1.PodGroupSchedulingConstraints{
		TrainerGroup:     {Topology: []schedulingv1beta1.TopologyConstraint{{Key: rack}}},
		InitializerGroup: nil,
	}
	pgs := BuildPodGroups(plan, "workload-uid")
	if len(pgs) != len(want) {
		t.Fatalf("%d PodGroups, want %d", len(pgs), len(want))
	}
	for _, pg := range pgs {
		if diff := cmp.Diff(want[pg.Spec.WorkloadRef.TemplateName], pg.Spec.SchedulingConstraints); diff != "" {
			t.Errorf("PodGroup %s constraints (-want +got):\n%s", pg.Name, diff)
		}
	}
	for _, tmpl := range BuildWorkload(plan).Spec.PodGroupTemplates {
		if diff := cmp.Diff(want[tmpl.Name], tmpl.SchedulingConstraints); diff != "" {
			t.Errorf("Workload template %s constraints (-want +got):\n%s", tmpl.Name, diff)
		}
	}
}
