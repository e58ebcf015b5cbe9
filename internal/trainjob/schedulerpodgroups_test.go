package trainjob

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// gangRuntime is a torch runtime of one dataset initializer (1 CPU) and a
// trainer node requesting 4 CPUs, 8Gi and 2 GPUs, with a podGroupPolicy.
func gangRuntime(policy *trainerv1alpha1.PodGroupPolicy) Runtime {
	initializer := replicatedJob("dataset-initializer", AncestorDatasetInitializer, DatasetInitializerName)
	initializer.Template.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	node := replicatedJob("node", AncestorTrainer, NodeName)
	node.Template.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"), "nvidia.com/gpu": resource.MustParse("2")}
	rt := runtimeWith(&trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), Torch: &trainerv1alpha1.TorchMLPolicySource{}}, initializer, node)
	rt.Spec.PodGroupPolicy = policy
	return rt
}

func gangTrainJob(nodes int32) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "tj", Namespace: "ns", UID: "uid-1"},
		Spec: trainerv1alpha1.TrainJobSpec{Trainer: &trainerv1alpha1.Trainer{NumNodes: ptr.To(nodes)}}}
}

// TestSchedulerPodGroups: a runtime's coscheduling or volcano policy gives
// the JobSet backend the scheduler's PodGroup for the whole TrainJob and
// marks every pod as its member; other policies give neither.
func TestSchedulerPodGroups(t *testing.T) {
	cases := []struct {
		name    string
		policy  *trainerv1alpha1.PodGroupPolicy
		edit    func(*Runtime)
		wantPG  map[string]any // the PodGroup's apiVersion, kind and spec; nil for none
		podMeta map[string]string
	}{
		{name: "no podGroupPolicy: no PodGroup, pods unmarked"},
		{name: "workload: copse's Workload PodGroups, none of another scheduler",
			policy: &trainerv1alpha1.PodGroupPolicy{Workload: &trainerv1alpha1.WorkloadPodGroupPolicySource{}}},
		{name: "coscheduling: every pod of every job in one gang, their requests summed, the timeout",
			policy: &trainerv1alpha1.PodGroupPolicy{Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptr.To[int32](90)}},
			wantPG: map[string]any{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "spec": map[string]any{
				"minMember":              int64(4),
				"minResources":           map[string]any{"cpu": "13", "memory": "24Gi", "nvidia.com/gpu": "6"},
				"scheduleTimeoutSeconds": int64(90),
			}},
			podMeta: map[string]string{"label " + CoschedulingPodGroupLabel: "tj"}},
		{name: "coscheduling without a timeout (a runtime the API server did not default): 60 seconds",
			policy: &trainerv1alpha1.PodGroupPolicy{Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{}},
			wantPG: map[string]any{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "spec": map[string]any{
				"minMember":              int64(4),
				"minResources":           map[string]any{"cpu": "13", "memory": "24Gi", "nvidia.com/gpu": "6"},
				"scheduleTimeoutSeconds": int64(60),
			}},
			podMeta: map[string]string{"label " + CoschedulingPodGroupLabel: "tj"}},
		{name: "volcano: the queue of the JobSet annotation, the last job's priority class, the network topology",
			policy: &trainerv1alpha1.PodGroupPolicy{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{
				NetworkTopology: &trainerv1alpha1.VolcanoNetworkTopology{Mode: "soft", HighestTierAllowed: ptr.To(2)}}},
			edit: func(rt *Runtime) {
				rt.Spec.Template.Annotations = map[string]string{VolcanoQueueAnnotation: "research"}
				rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = "low"
				rt.Spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.PriorityClassName = "high"
			},
			wantPG: map[string]any{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "spec": map[string]any{
				"minMember":         int64(4),
				"minResources":      map[string]any{"cpu": "13", "memory": "24Gi", "nvidia.com/gpu": "6"},
				"queue":             "research",
				"priorityClassName": "high",
				"networkTopology":   map[string]any{"mode": "soft", "highestTierAllowed": int64(2)},
			}},
			podMeta: map[string]string{"annotation " + VolcanoGroupNameAnnotation: "tj"}},
		{name: "volcano without a queue: none in the PodGroup",
			policy: &trainerv1alpha1.PodGroupPolicy{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}},
			wantPG: map[string]any{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "spec": map[string]any{
				"minMember":    int64(4),
				"minResources": map[string]any{"cpu": "13", "memory": "24Gi", "nvidia.com/gpu": "6"},
			}},
			podMeta: map[string]string{"annotation " + VolcanoGroupNameAnnotation: "tj"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := gangRuntime(tc.policy)
			if tc.edit != nil {
				tc.edit(&rt)
			}
			objects, err := BuildJobSetObjects(gangTrainJob(3), rt)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if pg := objects.SchedulerPodGroup; pg != nil {
				got = map[string]any{"apiVersion": pg.GetAPIVersion(), "kind": pg.GetKind(), "spec": pg.Object["spec"]}
				if pg.GetName() != "tj" || pg.GetNamespace() != "ns" {
					t.Errorf("PodGroup %s/%s, want ns/tj", pg.GetNamespace(), pg.GetName())
				}
				if owners := pg.GetOwnerReferences(); len(owners) != 1 || !ptr.Deref(owners[0].Controller, false) || owners[0].UID != "uid-1" {
					t.Errorf("PodGroup owners %+v, want the TrainJob as controller", owners)
				}
			}
			if diff := cmp.Diff(tc.wantPG, got); diff != "" {
				t.Errorf("PodGroup (-want +got):\n%s", diff)
			}
			for _, rjob := range objects.JobSet.Spec.ReplicatedJobs {
				pod := rjob.Template.Spec.Template
				gotMeta := map[string]string{}
				for _, key := range []string{CoschedulingPodGroupLabel, VolcanoGroupNameAnnotation} {
					if v, ok := pod.Labels[key]; ok {
						gotMeta["label "+key] = v
					}
					if v, ok := pod.Annotations[key]; ok {
						gotMeta["annotation "+key] = v
					}
				}
				if diff := cmp.Diff(tc.podMeta, gotMeta, cmpEmptyMapsEqual); diff != "" {
					t.Errorf("pods of %s (-want +got):\n%s", rjob.Name, diff)
				}
			}
		})
	}
}

var cmpEmptyMapsEqual = cmp.FilterValues(func(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 },
	cmp.Comparer(func(_, _ map[string]string) bool { return true }))

// TestVolcanoAdmission: Kubeflow Trainer's admission rules of a Volcano
// TrainJob, each naming the field.
func TestVolcanoAdmission(t *testing.T) {
	volcano := &trainerv1alpha1.PodGroupPolicy{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}}
	existing := map[string]bool{"high": true}
	exists := func(name string) (bool, error) { return existing[name], nil } //nolint:unparam // the lookup VolcanoPriorityClassErrors takes
	cases := []struct {
		name   string
		policy *trainerv1alpha1.PodGroupPolicy
		edit   func(*Runtime)
		want   []string // field: detail fragment
	}{
		{name: "a queue and an existing priority class: admitted", policy: volcano, edit: func(rt *Runtime) {
			rt.Spec.Template.Annotations = map[string]string{VolcanoQueueAnnotation: "research"}
			rt.Spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.PriorityClassName = "high"
		}},
		{name: "an empty queue", policy: volcano, edit: func(rt *Runtime) {
			rt.Spec.Template.Annotations = map[string]string{VolcanoQueueAnnotation: ""}
		}, want: []string{"spec.annotations[scheduling.volcano.sh/queue-name]: must not be empty"}},
		{name: "a priority class that does not exist", policy: volcano, edit: func(rt *Runtime) {
			rt.Spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.PriorityClassName = "batch"
		}, want: []string{`spec.templateSpec.priorityClassName: PriorityClass "batch" doesn't exist`}},
		{name: "a system priority class first: the jobs after it are not checked (as Trainer)", policy: volcano, edit: func(rt *Runtime) {
			rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = "system-node-critical"
			rt.Spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.PriorityClassName = "batch"
		}},
		{name: "coscheduling: neither rule applies",
			policy: &trainerv1alpha1.PodGroupPolicy{Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{}},
			edit: func(rt *Runtime) {
				rt.Spec.Template.Annotations = map[string]string{VolcanoQueueAnnotation: ""}
				rt.Spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.PriorityClassName = "batch"
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := gangRuntime(tc.policy)
			tc.edit(&rt)
			plan, err := NewPlan(gangTrainJob(2), rt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range append(Validate(plan), VolcanoPriorityClassErrors(plan, exists)...) {
				got = append(got, e.Field+": "+e.Detail)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors %q, want %q", got, tc.want)
			}
			for i, want := range tc.want {
				field, detail, _ := strings.Cut(want, ": ")
				if !strings.HasPrefix(got[i], field+": ") || !strings.Contains(got[i], detail) {
					t.Errorf("error %q, want %q", got[i], want)
				}
			}
		})
	}
}

// TestSchedulerPodGroupSpecDiffers: what the scheduler or the API server
// defaulted is no difference, quantities compare by value.
func TestSchedulerPodGroupSpecDiffers(t *testing.T) {
	pg := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	}
	desired := pg(map[string]any{"minMember": int64(3), "minResources": map[string]any{"cpu": "1500m", "memory": "1Gi"}})
	cases := []struct {
		name     string
		existing map[string]any
		want     bool
	}{
		{"the same", map[string]any{"minMember": int64(3), "minResources": map[string]any{"cpu": "1500m", "memory": "1Gi"}}, false},
		{"the same quantities written otherwise, a field the scheduler defaulted",
			map[string]any{"minMember": int64(3), "minResources": map[string]any{"cpu": "1.5", "memory": "1024Mi"}, "queue": "default"}, false},
		{"another member count", map[string]any{"minMember": int64(2), "minResources": map[string]any{"cpu": "1500m", "memory": "1Gi"}}, true},
		{"another quantity", map[string]any{"minMember": int64(3), "minResources": map[string]any{"cpu": "2", "memory": "1Gi"}}, true},
		{"a resource less", map[string]any{"minMember": int64(3), "minResources": map[string]any{"cpu": "1500m"}}, true},
		{"no spec", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SchedulerPodGroupSpecDiffers(pg(tc.existing), desired); got != tc.want {
				t.Errorf("differs = %v, want %v", got, tc.want)
			}
		})
	}
}
