package trainerparity_test

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// shippedRuntimes are the ClusterTrainingRuntimes Kubeflow Trainer v2.3.0
// installs; the suite fails when the oracle reports another set, so a
// runtime Kubeflow adds is not silently left out.
var shippedRuntimes = []string{
	"deepspeed-distributed", "jax-distributed", "mlx-distributed", "torch-distributed",
	"torch-distributed-with-cache", "torchtune-llama3.2-1b", "torchtune-llama3.2-3b",
	"torchtune-qwen2.5-1.5b", "xgboost-distributed",
}

// shape is one TrainJob written against a runtime: what a data scientist
// (or the Kubeflow SDK, or Kueue) sets. jobs are the runtime's replicated
// job names, for the shapes that patch one.
type shape struct {
	name  string
	build func(spec *trainerv1alpha1.TrainJobSpec, jobs []string)
}

var shapes = []shape{
	{"runtime only", func(*trainerv1alpha1.TrainJobSpec, []string) {}},
	{"two CPU nodes", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.Trainer = &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](2), ResourcesPerNode: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("2Gi")},
		}}
	}},
	{"GPU nodes", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		gpus := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
		s.Trainer = &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](3), ResourcesPerNode: &corev1.ResourceRequirements{Limits: gpus, Requests: gpus}}
	}},
	{"one GPU on one node", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		s.Trainer = &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](1), ResourcesPerNode: &corev1.ResourceRequirements{Limits: gpu}}
	}},
	{"processes per node and env", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.Trainer = &trainerv1alpha1.Trainer{NumProcPerNode: ptr.To[int32](2), Env: []corev1.EnvVar{
			{Name: "LEARNING_RATE", Value: "0.001"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		}}
	}},
	{"SDK-style trainer: image, command, args", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.Trainer = &trainerv1alpha1.Trainer{
			Image:    ptr.To("docker.io/example/train:1.0"),
			Command:  []string{"bash", "-c", "python train.py"},
			Args:     []string{"--epochs=3"},
			NumNodes: ptr.To[int32](2),
			ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), "nvidia.com/gpu": resource.MustParse("2"),
			}},
		}
	}},
	{"initializers", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.Initializer = &trainerv1alpha1.Initializer{
			Dataset: &trainerv1alpha1.DatasetInitializer{StorageUri: ptr.To("hf://example/dataset"),
				Env: []corev1.EnvVar{{Name: "HF_HUB_OFFLINE", Value: "0"}}, SecretRef: &corev1.LocalObjectReference{Name: "hf-token"}},
			Model: &trainerv1alpha1.ModelInitializer{StorageUri: ptr.To("hf://example/model"),
				Env: []corev1.EnvVar{{Name: "REVISION", Value: "main"}}},
		}
	}},
	{"runtime patches of two managers", func(s *trainerv1alpha1.TrainJobSpec, jobs []string) {
		s.RuntimePatches = []trainerv1alpha1.RuntimePatch{
			{Manager: "kueue.x-k8s.io/manager", TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
				Template: &trainerv1alpha1.JobSetTemplatePatch{
					Metadata: &metav1.ObjectMeta{Labels: map[string]string{"kueue.x-k8s.io/queue-name": "team-a"}},
					Spec: &trainerv1alpha1.JobSetSpecPatch{ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{
						Name: jobs[len(jobs)-1],
						Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{Template: &trainerv1alpha1.PodTemplatePatch{
							Metadata: &metav1.ObjectMeta{Labels: map[string]string{"kueue.x-k8s.io/podset": jobs[len(jobs)-1]}},
							Spec: &trainerv1alpha1.PodSpecPatch{
								NodeSelector: map[string]string{"cloud.example.com/flavor": "gb200"},
								Tolerations:  []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
							},
						}}},
					}}},
				}}},
			{Manager: "example.com/platform", TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
				Template: &trainerv1alpha1.JobSetTemplatePatch{
					Metadata: &metav1.ObjectMeta{Annotations: map[string]string{"example.com/cost-center": "42"}},
					Spec: &trainerv1alpha1.JobSetSpecPatch{ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{
						Name: jobs[0],
						Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{Template: &trainerv1alpha1.PodTemplatePatch{
							Spec: &trainerv1alpha1.PodSpecPatch{TerminationGracePeriodSeconds: ptr.To[int64](45), ServiceAccountName: ptr.To("trainer")},
						}}},
					}}},
				}}},
		}
	}},
	{"suspended", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.Suspend = ptr.To(true)
		s.Trainer = &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](2)}
	}},
	{"torchtune LoRA on one GPU", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.Trainer = &trainerv1alpha1.Trainer{
			Command:          []string{"tune", "run"},
			Args:             []string{"model.lora_attn_modules=[q_proj,v_proj]", "epochs=1"},
			ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
		}
	}},
	{"torchtune across GPUs", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.Trainer = &trainerv1alpha1.Trainer{
			Command:          []string{"tune", "run"},
			ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}},
		}
	}},
	{"a reserved variable", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.Trainer = &trainerv1alpha1.Trainer{Env: []corev1.EnvVar{
			{Name: "PET_NNODES", Value: "5"}, {Name: "DMLC_NUM_WORKER", Value: "5"}, {Name: "OMPI_MCA_orte_default_hostfile", Value: "/x"},
		}}
	}},
	{"managed by MultiKueue", func(s *trainerv1alpha1.TrainJobSpec, _ []string) {
		s.ManagedBy = ptr.To(trainerv1alpha1.ManagedByMultiKueue)
	}},
}

// runtimeVariant is a change to every shipped runtime that Kubeflow's own
// runtimes do not make, and the shapes (by name) of TrainJob to write
// against each changed runtime.
type runtimeVariant struct {
	name   string
	edit   func(runtime map[string]any)
	shapes []string
}

// gangShapes are the shapes run against the podGroupPolicy variants: node
// counts, resources (minMember, minResources), initializers (in the gang
// too), runtime patches (JobSet annotations, pod templates), a suspension.
var gangShapes = []string{"runtime only", "two CPU nodes", "GPU nodes", "one GPU on one node", "initializers",
	"runtime patches of two managers", "suspended"}

// runtimeVariants give the shipped runtimes Kubeflow's podGroupPolicy
// coscheduling and volcano, which none of them sets: Kubeflow builds the
// scheduler's PodGroup and marks the pods, and refuses a Volcano TrainJob
// with an empty queue or a PriorityClass that does not exist (the oracle's
// cluster has none).
var runtimeVariants = []runtimeVariant{
	{"coscheduling", func(rt map[string]any) {
		setNested(rt, map[string]any{"coscheduling": map[string]any{"scheduleTimeoutSeconds": 120}}, "spec", "podGroupPolicy")
	}, gangShapes},
	{"coscheduling with the default timeout", func(rt map[string]any) {
		setNested(rt, map[string]any{"coscheduling": map[string]any{}}, "spec", "podGroupPolicy")
	}, []string{"two CPU nodes"}},
	{"volcano with a queue and a network topology", func(rt map[string]any) {
		setNested(rt, map[string]any{"volcano": map[string]any{"networkTopology": map[string]any{"mode": "soft", "highestTierAllowed": 2}}},
			"spec", "podGroupPolicy")
		setNested(rt, "research", "spec", "template", "metadata", "annotations", "scheduling.volcano.sh/queue-name")
	}, gangShapes},
	{"volcano, its last job of a system priority class", func(rt map[string]any) {
		setNested(rt, map[string]any{"volcano": map[string]any{}}, "spec", "podGroupPolicy")
		setPriorityClass(rt, -1, "system-node-critical")
	}, []string{"two CPU nodes"}},
	{"volcano, a priority class that does not exist", func(rt map[string]any) {
		setNested(rt, map[string]any{"volcano": map[string]any{}}, "spec", "podGroupPolicy")
		setPriorityClass(rt, 0, "batch-high")
	}, []string{"two CPU nodes"}},
	{"volcano, an empty queue", func(rt map[string]any) {
		setNested(rt, map[string]any{"volcano": map[string]any{}}, "spec", "podGroupPolicy")
		setNested(rt, "", "spec", "template", "metadata", "annotations", "scheduling.volcano.sh/queue-name")
	}, []string{"two CPU nodes"}},
}

// variantCases are the cases of every variant of a runtime.
func variantCases(runtime map[string]any) ([]parityCase, error) {
	var out []parityCase
	for _, v := range runtimeVariants {
		changed, err := deepCopyJSON(runtime)
		if err != nil {
			return nil, err
		}
		v.edit(changed)
		for _, s := range shapes {
			if !slices.Contains(v.shapes, s.name) {
				continue
			}
			c, err := newCase(changed, s)
			if err != nil {
				return nil, err
			}
			c.Name = unstructuredString(runtime, "metadata", "name") + " + " + v.name + " / " + s.name
			out = append(out, c)
		}
	}
	return out, nil
}

// setNested sets a value at a path of a JSON object, making the objects on
// the way.
func setNested(obj map[string]any, value any, fields ...string) {
	for _, f := range fields[:len(fields)-1] {
		next, ok := obj[f].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[f] = next
		}
		obj = next
	}
	obj[fields[len(fields)-1]] = value
}

// setPriorityClass gives the pods of a runtime's replicated job (by index,
// -1 for the last) a priority class.
func setPriorityClass(runtime map[string]any, index int, name string) {
	jobs, _ := nested(runtime, "spec", "template", "spec", "replicatedJobs").([]any)
	if index < 0 {
		index += len(jobs)
	}
	job, _ := jobs[index].(map[string]any)
	setNested(job, name, "template", "spec", "template", "spec", "priorityClassName")
}

// parityCase is one (runtime, TrainJob) pair.
type parityCase struct {
	Name     string         `json:"name"`
	Runtime  map[string]any `json:"runtime"`
	TrainJob map[string]any `json:"trainJob"`
}

// newCase writes shape against runtime as a TrainJob in namespace "team-a"
// with a fixed UID, so both sides own their objects the same way.
func newCase(runtime map[string]any, s shape) (parityCase, error) {
	name := unstructuredString(runtime, "metadata", "name")
	tj := trainerv1alpha1.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainerv1alpha1.SchemeGroupVersion.String(), Kind: "TrainJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "team-a", UID: types.UID("7c1f3b9e-0000-4000-8000-000000000001")},
		Spec:       trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{Name: name}},
	}
	s.build(&tj.Spec, replicatedJobNames(runtime))
	raw, err := json.Marshal(tj)
	if err != nil {
		return parityCase{}, err
	}
	obj := map[string]any{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return parityCase{}, err
	}
	delete(obj, "status")
	return parityCase{Name: name + " / " + s.name, Runtime: runtime, TrainJob: obj}, nil
}

func replicatedJobNames(runtime map[string]any) []string {
	var names []string
	jobs, _ := nested(runtime, "spec", "template", "spec", "replicatedJobs").([]any)
	for _, job := range jobs {
		if m, ok := job.(map[string]any); ok {
			if n, ok := m["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	return slices.Clip(names)
}

func nested(obj map[string]any, fields ...string) any {
	var current any = obj
	for _, f := range fields {
		m, ok := current.(map[string]any)
		if !ok {
			return nil
		}
		current = m[f]
	}
	return current
}

func unstructuredString(obj map[string]any, fields ...string) string {
	s, _ := nested(obj, fields...).(string)
	return s
}
