package trainjob

import (
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
	pcswebhook "github.com/copse-dev/copse/internal/webhook/podcliqueset"
)

// torchRuntime is a torch ClusterTrainingRuntime of backend with a trainer
// job "node" and, with initializer, a dataset initializer before it.
func torchRuntime(backend trainerv1alpha1.RuntimeBackend, initializer bool) trainjob.Runtime {
	job := func(name, step, container string) jobsetv1alpha2.ReplicatedJob {
		return jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: 1, Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainjob.AncestorLabel: step}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: container, Image: "registry.example/" + container}},
			}}},
		}}
	}
	spec := trainerv1alpha1.TrainingRuntimeSpec{Backend: backend,
		MLPolicy: &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), Torch: &trainerv1alpha1.TorchMLPolicySource{}}}
	if initializer {
		spec.Template.Spec.ReplicatedJobs = append(spec.Template.Spec.ReplicatedJobs,
			job(trainjob.DatasetInitializerName, trainjob.AncestorDatasetInitializer, trainjob.DatasetInitializerName))
	}
	spec.Template.Spec.ReplicatedJobs = append(spec.Template.Spec.ReplicatedJobs, job(trainjob.NodeName, trainjob.AncestorTrainer, trainjob.NodeName))
	return trainjob.Runtime{Kind: trainerv1alpha1.ClusterTrainingRuntimeKind, Name: "torch", Spec: spec}
}

func namedTrainJob(length int, nodes int32) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Name: "t" + strings.Repeat("x", length-1), Namespace: "ml"},
		Spec: trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "torch"},
			Trainer: &trainerv1alpha1.Trainer{NumNodes: ptr.To(nodes)}},
	}
}

func TestValidateBackendNames(t *testing.T) {
	cases := []struct {
		name    string
		runtime trainjob.Runtime
		nodes   int32
		// limit is the longest name admitted: worked out by hand from the
		// names the backend makes.
		limit int
	}{
		// <tj>-0-node-99999: the PodCliqueSet webhook keeps room for five
		// digits of pod index.
		{"PodCliqueSet backend, a trainer job", torchRuntime(trainerv1alpha1.RuntimeBackendPodCliqueSet, false), 2, 63 - len("-0-node-99999")},
		// <tj>-0-dataset-initializer-99999
		{"PodCliqueSet backend, with an initializer", torchRuntime(trainerv1alpha1.RuntimeBackendPodCliqueSet, true), 2, 63 - len("-0-dataset-initializer-99999")},
		// JobSet's pod names: <tj>-node-0-<last index>-xxxxx
		{"JobSet backend, 2 nodes", torchRuntime(trainerv1alpha1.RuntimeBackendJobSet, false), 2, 63 - len("-node-0-1-abcde")},
		{"JobSet backend, 16 nodes", torchRuntime(trainerv1alpha1.RuntimeBackendJobSet, false), 16, 63 - len("-node-0-15-abcde")},
		{"JobSet backend, with an initializer", torchRuntime(trainerv1alpha1.RuntimeBackendJobSet, true), 2, 63 - len("-dataset-initializer-0-0-abcde")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			backend := string(trainjob.BackendOf(&tc.runtime.Spec))
			if errs := validateBackendNames(namedTrainJob(tc.limit, tc.nodes), tc.runtime); len(errs) > 0 {
				t.Errorf("a name of %d characters, the limit, refused: %v", tc.limit, errs)
			}
			errs := validateBackendNames(namedTrainJob(tc.limit+1, tc.nodes), tc.runtime)
			if len(errs) != 1 {
				t.Fatalf("a name of %d characters: %v, want one error", tc.limit+1, errs)
			}
			msg := errs[0].Error()
			for _, want := range []string{"metadata.name", "must be no more than " + strconv.Itoa(tc.limit) + " characters",
				"ClusterTrainingRuntime torch", "whose backend is " + backend} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
		})
	}
}

// TestValidateBackendNamesAgreesWithThePodCliqueSetWebhook: the TrainJob
// webhook admits exactly the names whose PodCliqueSet the PodCliqueSet
// webhook admits. The reported case: a TrainJob of 56 characters.
func TestValidateBackendNamesAgreesWithThePodCliqueSetWebhook(t *testing.T) {
	for _, initializer := range []bool{false, true} {
		runtime := torchRuntime(trainerv1alpha1.RuntimeBackendPodCliqueSet, initializer)
		for length := 20; length <= 63; length++ {
			tj := namedTrainJob(length, 2)
			plan, err := trainjob.PlanPodCliqueSet(tj, runtime, trainjob.KeepTopology(nil))
			if err != nil {
				t.Fatal(err)
			}
			pcs := trainjob.BuildPodCliqueSet(plan)
			pcswebhook.Default(pcs)
			pcsRefused := len(pcswebhook.ValidateCreate(pcs)) > 0
			tjRefused := len(validateBackendNames(tj, runtime)) > 0
			if pcsRefused != tjRefused {
				t.Errorf("initializer %v, a name of %d: the PodCliqueSet webhook refuses: %v (%v), the TrainJob webhook refuses: %v",
					initializer, length, pcsRefused, pcswebhook.ValidateCreate(pcs), tjRefused)
			}
			if length == 56 && !tjRefused {
				t.Errorf("the reported TrainJob of 56 characters is admitted")
			}
		}
	}
}
