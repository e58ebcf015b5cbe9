package trainjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
	pcswebhook "github.com/copse-dev/copse/internal/webhook/podcliqueset"
)

// kueueManager is the manager of the runtime patch Kueue's TrainJob webhook
// appends and its controller fills on admission.
const kueueManager = "kueue.x-k8s.io/manager"

// kueueQueued is a TrainJob as Kueue's webhook leaves it at creation: suspended,
// with Kueue's runtime patch naming the queue on the JobSet's labels.
func kueueQueued(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	tj = tj.DeepCopy()
	tj.Labels = map[string]string{kueue.QueueNameLabel: "team-a"}
	tj.Spec.Suspend = ptr.To(true)
	tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, trainerv1alpha1.RuntimePatch{
		Manager: kueueManager,
		TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{Template: &trainerv1alpha1.JobSetTemplatePatch{
			Metadata: &metav1.ObjectMeta{Labels: map[string]string{kueue.QueueNameLabel: "team-a"}},
			Spec:     &trainerv1alpha1.JobSetSpecPatch{},
		}},
	})
	return tj
}

// kueueAdmitted is the TrainJob after Kueue's RunWithPodSetsInfo and the
// unsuspend: per replicated job, the admission's pod set info in Kueue's
// patch (flavor node labels and tolerations, Kueue's pod set label, an
// admission check's annotation and scheduling gate).
func kueueAdmitted(tj *trainerv1alpha1.TrainJob, jobs ...string) *trainerv1alpha1.TrainJob {
	tj = tj.DeepCopy()
	patch := kueueRuntimePatch(tj)
	for _, name := range jobs {
		patch.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs = append(patch.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs,
			trainerv1alpha1.ReplicatedJobPatch{Name: name, Template: &trainerv1alpha1.JobTemplatePatch{
				Spec: &trainerv1alpha1.JobSpecPatch{Template: &trainerv1alpha1.PodTemplatePatch{
					Metadata: &metav1.ObjectMeta{
						Labels:      map[string]string{kueue.PodSetLabel: name},
						Annotations: map[string]string{"example.com/provisioned": "yes"},
					},
					Spec: &trainerv1alpha1.PodSpecPatch{
						NodeSelector:    map[string]string{"cloud.example.com/flavor": "spot"},
						Tolerations:     []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
						SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/provisioning"}},
					},
				}},
			}})
	}
	tj.Spec.Suspend = ptr.To(false)
	return tj
}

// kueueStopped is the TrainJob after Kueue's Stop: suspended, and its
// patch's replicated jobs cleared (RestorePodSetsInfo).
func kueueStopped(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	tj = tj.DeepCopy()
	kueueRuntimePatch(tj).TrainingRuntimeSpec.Template.Spec.ReplicatedJobs = nil
	tj.Spec.Suspend = ptr.To(true)
	return tj
}

func kueueRuntimePatch(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.RuntimePatch {
	for i := range tj.Spec.RuntimePatches {
		if tj.Spec.RuntimePatches[i].Manager == kueueManager {
			return &tj.Spec.RuntimePatches[i]
		}
	}
	return nil
}

// kueueRuntimes are runtimes of every shape whose pod counts Kueue computes:
// initializers, the trainer's node count from the TrainJob, an MPI launcher
// apart from the nodes or one of them, a Job that runs more than one pod.
func kueueRuntimes() map[string]Runtime {
	parallel := replicatedJob("warmup", "", "warmup")
	parallel.Template.Spec.Parallelism = ptr.To[int32](3)
	parallel.Template.Spec.Completions = ptr.To[int32](3)
	return map[string]Runtime{
		"initializers and torch": onPodCliqueSet(runtimeWith(torchPolicy(),
			replicatedJob("dataset-initializer", AncestorDatasetInitializer, DatasetInitializerName),
			replicatedJob("model-initializer", AncestorModelInitializer, ModelInitializerName),
			dependsOn(replicatedJob("node", AncestorTrainer, NodeName), jobsetv1alpha2.DependencyComplete, "dataset-initializer", "model-initializer"))),
		"MPI, launcher apart": onPodCliqueSet(runtimeWith(mpiPolicy(false),
			replicatedJob("launcher", AncestorTrainer, NodeName), replicatedJob("node", "", NodeName))),
		"MPI, launcher as a node": onPodCliqueSet(runtimeWith(mpiPolicy(true),
			replicatedJob("launcher", AncestorTrainer, NodeName), replicatedJob("node", "", NodeName))),
		"a Job of three pods": onPodCliqueSet(runtimeWith(nil, parallel, replicatedJob("node", AncestorTrainer, NodeName))),
	}
}

// TestKueuePodSetsEqualTheCliques: Kueue's TrainJob integration counts a
// TrainJob's pods by building its JobSet with Kubeflow Trainer's runtime
// code, one pod set per replicated job named after it, of replicas ×
// min(parallelism, completions) pods (the JobSet backend's build is that
// JobSet: e2e/trainerparity). The PodCliqueSet backend must run exactly
// those pods: one clique per replicated job, of the same name and count.
func TestKueuePodSetsEqualTheCliques(t *testing.T) {
	for name, rt := range kueueRuntimes() {
		t.Run(name, func(t *testing.T) {
			tj := kueueQueued(pcsTrainJob(4))
			jobSetRuntime := Runtime{Kind: rt.Kind, Name: rt.Name, Spec: *rt.Spec.DeepCopy()}
			jobSetRuntime.Spec.Backend = ""
			jobSet, err := BuildJobSetObjects(tj, jobSetRuntime)
			if err != nil {
				t.Fatal(err)
			}
			kueuePodSets := map[string]int32{}
			for _, rjob := range jobSet.JobSet.Spec.ReplicatedJobs {
				perJob := ptr.Deref(rjob.Template.Spec.Parallelism, 1)
				perJob = min(perJob, ptr.Deref(rjob.Template.Spec.Completions, perJob))
				kueuePodSets[rjob.Name] = rjob.Replicas * perJob
			}
			objects, err := BuildPodCliqueSetObjects(tj, rt, nil)
			if err != nil {
				t.Fatal(err)
			}
			cliques := map[string]int32{}
			for _, clique := range objects.PodCliqueSet.Spec.Template.Cliques {
				cliques[clique.Name] = clique.Spec.Replicas
			}
			if diff := cmp.Diff(kueuePodSets, cliques); diff != "" {
				t.Errorf("cliques differ from Kueue's pod sets (-kueue +cliques):\n%s", diff)
			}
		})
	}
}

// TestKueueQueuesTheTrainJobNotItsPodCliqueSet: Kueue's patch puts its queue
// label on the JobSet's labels (as Kubeflow Trainer copies it, and Kueue
// leaves a JobSet whose owner it manages alone). The TrainJob's
// PodCliqueSet does not carry it: the TrainJob is what Kueue queues, and
// copse queues a PodCliqueSet with that label itself.
func TestKueueQueuesTheTrainJobNotItsPodCliqueSet(t *testing.T) {
	rt := kueueRuntimes()["initializers and torch"]
	tj := kueueQueued(pcsTrainJob(2))
	objects, err := BuildPodCliqueSetObjects(tj, rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := objects.PodCliqueSet.Labels[kueue.QueueNameLabel]; ok {
		t.Errorf("the TrainJob's PodCliqueSet carries %s=%s: it would be queued a second time", kueue.QueueNameLabel, v)
	}
	jobSetRuntime := Runtime{Kind: rt.Kind, Name: rt.Name, Spec: *rt.Spec.DeepCopy()}
	jobSetRuntime.Spec.Backend = ""
	jobSet, err := BuildJobSetObjects(tj, jobSetRuntime)
	if err != nil {
		t.Fatal(err)
	}
	if jobSet.JobSet.Labels[kueue.QueueNameLabel] != "team-a" {
		t.Errorf("JobSet labels %v: Kubeflow Trainer's JobSet carries the patch's labels", jobSet.JobSet.Labels)
	}
}

// TestKueueAdmissionAndPreemptionOnThePodCliqueSetBackend follows a queued
// TrainJob through what Kueue writes: created suspended, admitted (its
// patch carries each pod set's scheduling directives and the TrainJob is
// resumed), preempted (suspended, and the patch cleared). Each rebuilt
// PodCliqueSet must be one the PodCliqueSet webhook admits as an update of
// the last, at the moment copse writes it.
func TestKueueAdmissionAndPreemptionOnThePodCliqueSetBackend(t *testing.T) {
	rt := kueueRuntimes()["MPI, launcher apart"]
	build := func(tj *trainerv1alpha1.TrainJob) *copsev1alpha1.PodCliqueSet {
		t.Helper()
		objects, err := BuildPodCliqueSetObjects(tj, rt, nil)
		if err != nil {
			t.Fatal(err)
		}
		pcs := objects.PodCliqueSet
		pcswebhook.Default(pcs)
		return pcs
	}
	// rebuilt is the update copse sends: the stored object with the new
	// build's spec, defaulted by the webhook.
	rebuilt := func(stored, built *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
		out := stored.DeepCopy()
		out.Spec = *built.Spec.DeepCopy()
		out.Labels, out.Annotations = built.Labels, built.Annotations
		return out
	}

	queued := kueueQueued(pcsTrainJob(2))
	created := build(queued)
	if errs := pcswebhook.ValidateCreate(created); len(errs) > 0 {
		t.Fatalf("the queued TrainJob's PodCliqueSet is refused: %v", errs)
	}
	if !created.IsSuspended() {
		t.Fatal("the queued TrainJob's PodCliqueSet is not suspended")
	}

	admittedTJ := kueueAdmitted(queued, "launcher", "node")
	admitted := rebuilt(created, build(admittedTJ))
	if errs := pcswebhook.ValidateUpdate(created, admitted); len(errs) > 0 {
		t.Errorf("the admission (patch and resume in one write) is refused: %v", errs)
	}
	for _, clique := range admitted.Spec.Template.Cliques {
		spec := clique.Spec.PodSpec
		if clique.Labels[kueue.PodSetLabel] != clique.Name || clique.Annotations["example.com/provisioned"] != "yes" ||
			spec.NodeSelector["cloud.example.com/flavor"] != "spot" || len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "spot" ||
			len(spec.SchedulingGates) != 1 || spec.SchedulingGates[0].Name != "example.com/provisioning" {
			t.Errorf("clique %s lacks the admission's directives: labels %v annotations %v nodeSelector %v tolerations %v gates %v",
				clique.Name, clique.Labels, clique.Annotations, spec.NodeSelector, spec.Tolerations, spec.SchedulingGates)
		}
	}

	running := admitted.DeepCopy()
	running.Status.StartTime = &metav1.Time{}
	stopped := build(kueueStopped(admittedTJ))
	if errs := pcswebhook.ValidateUpdate(running, rebuilt(running, stopped)); len(errs) == 0 {
		t.Error("suspending a running PodCliqueSet and restoring its templates in one write is admitted; " +
			"copse's two steps (decideRebuild) assume it is not")
	}
	suspendOnly := running.DeepCopy()
	suspendOnly.Spec.Suspend = ptr.To(true)
	if errs := pcswebhook.ValidateUpdate(running, suspendOnly); len(errs) > 0 {
		t.Errorf("suspending alone is refused: %v", errs)
	}
	goingAway := suspendOnly.DeepCopy()
	if errs := pcswebhook.ValidateUpdate(goingAway, rebuilt(goingAway, stopped)); len(errs) == 0 {
		t.Error("restoring the templates while the pods still go away (startTime set) is admitted")
	}
	gone := suspendOnly.DeepCopy()
	gone.Status.StartTime = nil
	restored := rebuilt(gone, stopped)
	if errs := pcswebhook.ValidateUpdate(gone, restored); len(errs) > 0 {
		t.Errorf("restoring the templates once the pods are gone is refused: %v", errs)
	}
	if diff := cmp.Diff(created.Spec.Template, restored.Spec.Template); diff != "" {
		t.Errorf("the restored templates differ from those before the admission (-before +restored):\n%s", diff)
	}
	if errs := pcswebhook.ValidateUpdate(restored, rebuilt(restored, build(admittedTJ))); len(errs) > 0 {
		t.Errorf("the second admission is refused: %v", errs)
	}
}
