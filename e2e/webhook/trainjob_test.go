package webhook_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/trainjob"
)

const (
	validateTrainJob               = "validate.trainjobs.trainer.kubeflow.org"
	validateTrainingRuntime        = "validate.trainingruntimes.trainer.kubeflow.org"
	validateClusterTrainingRuntime = "validate.clustertrainingruntimes.trainer.kubeflow.org"
	// byCRD marks a refusal by the CRD's own schema or CEL rules, which the
	// API server applies before it calls any validating webhook.
	byCRD = ""

	trainImage = "example.com/train:1"
	// patchManager is the manager of the runtime patches the specs write.
	patchManager = "e2e.copse.dev/placement"
	// patchedPod is the path of the pod spec a runtime patch built by
	// podPatch changes.
	patchedPod = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec."
)

// stepJob is the replicated job that runs one step of a TrainJob, named and
// shaped as Kubeflow Trainer's runtimes are: one Job whose pod has the step's
// container; the trainer's pod also has an init container, an initializer's
// container mounts the initializer volume.
func stepJob(step string) jobsetv1alpha2.ReplicatedJob {
	name := map[string]string{
		trainjob.AncestorTrainer:            trainjob.NodeName,
		trainjob.AncestorDatasetInitializer: trainjob.DatasetInitializerName,
		trainjob.AncestorModelInitializer:   trainjob.ModelInitializerName,
	}[step]
	container := corev1.Container{Name: name, Image: trainImage}
	pod := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}
	if step == trainjob.AncestorTrainer {
		pod.InitContainers = []corev1.Container{{Name: "prepare", Image: trainImage}}
	} else {
		container.VolumeMounts = []corev1.VolumeMount{{Name: trainjob.InitializerVolumeName, MountPath: "/workspace"}}
		pod.Volumes = []corev1.Volume{{Name: trainjob.InitializerVolumeName,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	pod.Containers = []corev1.Container{container}
	return jobsetv1alpha2.ReplicatedJob{
		Name:     name,
		Replicas: 1,
		Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{trainjob.AncestorLabel: step}},
			Spec:       batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: pod}},
		},
	}
}

// runtimeSpec is a runtime with the ML policy (nil for none) whose template
// runs the given steps, in order.
func runtimeSpec(policy *trainerv1alpha1.MLPolicy, steps ...string) trainerv1alpha1.TrainingRuntimeSpec {
	spec := trainerv1alpha1.TrainingRuntimeSpec{MLPolicy: policy}
	for _, step := range steps {
		spec.Template.Spec.ReplicatedJobs = append(spec.Template.Spec.ReplicatedJobs, stepJob(step))
	}
	return spec
}

func torchPolicy() *trainerv1alpha1.MLPolicy {
	return &trainerv1alpha1.MLPolicy{Torch: &trainerv1alpha1.TorchMLPolicySource{}}
}

// trainJobRuntimes are the TrainingRuntimes the TrainJob specs run on, by
// name; each spec creates the one it names in its own namespace.
func trainJobRuntimes() map[string]trainerv1alpha1.TrainingRuntimeSpec {
	trainer, dataset, model := trainjob.AncestorTrainer, trainjob.AncestorDatasetInitializer, trainjob.AncestorModelInitializer
	injectIntoMissingSidecar := torchPolicy()
	injectIntoMissingSidecar.Torch.EnvInjection = &trainerv1alpha1.EnvInjection{Targets: []trainerv1alpha1.EnvInjectionTarget{
		{JobName: trainjob.NodeName, ContainerNames: []string{"sidecar"}}}}
	return map[string]trainerv1alpha1.TrainingRuntimeSpec{
		"plain":              runtimeSpec(nil, trainer),
		"torch":              runtimeSpec(torchPolicy(), dataset, model, trainer),
		"torch-inject-ghost": runtimeSpec(injectIntoMissingSidecar, trainer),
		"mpi":                runtimeSpec(&trainerv1alpha1.MLPolicy{MPI: &trainerv1alpha1.MPIMLPolicySource{}}, trainer),
		"mpi-launcher-as-node": runtimeSpec(&trainerv1alpha1.MLPolicy{MPI: &trainerv1alpha1.MPIMLPolicySource{
			RunLauncherAsNode: ptr.To(true)}}, trainer),
		"xgboost":      runtimeSpec(&trainerv1alpha1.MLPolicy{XGBoost: &trainerv1alpha1.XGBoostMLPolicySource{}}, trainer),
		"flux":         runtimeSpec(&trainerv1alpha1.MLPolicy{Flux: &trainerv1alpha1.FluxMLPolicySource{}}, trainer),
		"volcano":      withVolcano(runtimeSpec(torchPolicy(), trainer), nil, ""),
		"volcano-high": withVolcano(runtimeSpec(torchPolicy(), trainer), nil, "batch-high"),
		// torchtune runtimes name their model: torchtune-<family>-<size>.
		"torchtune-gpt2-small":  runtimeSpec(torchPolicy(), trainer),
		"torchtune-llama3.2-1b": runtimeSpec(torchPolicy(), trainer),
	}
}

// withVolcano gives a runtime Kubeflow's podGroupPolicy.volcano, the
// Volcano queue annotation on its JobSet when queue is not nil, and its
// trainer's pods a priority class when priorityClass is not "".
func withVolcano(spec trainerv1alpha1.TrainingRuntimeSpec, queue *string, priorityClass string) trainerv1alpha1.TrainingRuntimeSpec {
	spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}}
	if queue != nil {
		spec.Template.Annotations = map[string]string{trainjob.VolcanoQueueAnnotation: *queue}
	}
	spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.PriorityClassName = priorityClass
	return spec
}

// createTrainingRuntime creates the runtime of trainJobRuntimes named name in
// namespace.
func createTrainingRuntime(ctx context.Context, namespace, name string) {
	GinkgoHelper()
	spec, ok := trainJobRuntimes()[name]
	Expect(ok).To(BeTrue(), "no runtime %q in trainJobRuntimes", name)
	rt := &trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: spec}
	Expect(env.Client.Create(ctx, rt)).To(Succeed(), "TrainingRuntime %s", name)
}

// newTrainJob is a TrainJob on the TrainingRuntime named runtime, overriding
// only the trainer's image.
func newTrainJob(namespace, name, runtime string) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: runtime, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer:    &trainerv1alpha1.Trainer{Image: ptr.To(trainImage)},
		},
	}
}

// podPatch is a runtime patch of manager that changes the pod spec of the
// replicated job named job.
func podPatch(manager, job string, spec trainerv1alpha1.PodSpecPatch) trainerv1alpha1.RuntimePatch {
	return trainerv1alpha1.RuntimePatch{
		Manager: manager,
		TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{Template: &trainerv1alpha1.JobSetTemplatePatch{
			Spec: &trainerv1alpha1.JobSetSpecPatch{ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{
				Name: job,
				Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{
					Template: &trainerv1alpha1.PodTemplatePatch{Spec: &spec},
				}},
			}}},
		}},
	}
}

// withPodPatch gives a TrainJob one runtime patch of the trainer's pod.
func withPodPatch(spec trainerv1alpha1.PodSpecPatch) func(*trainerv1alpha1.TrainJob) {
	return func(tj *trainerv1alpha1.TrainJob) {
		tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{podPatch(patchManager, trainjob.NodeName, spec)}
	}
}

// suspendedWithPodPatch is withPodPatch on a suspended TrainJob, whose
// runtime patches may change as far as the webhook is concerned.
func suspendedWithPodPatch(spec trainerv1alpha1.PodSpecPatch) func(*trainerv1alpha1.TrainJob) {
	return func(tj *trainerv1alpha1.TrainJob) {
		withPodPatch(spec)(tj)
		tj.Spec.Suspend = ptr.To(true)
	}
}

// patchedPodSpec is the pod spec the TrainJob's first runtime patch changes.
func patchedPodSpec(tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.PodSpecPatch {
	return tj.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
}

// envVar is a one-variable env list.
func envVar(name, value string) []corev1.EnvVar { return []corev1.EnvVar{{Name: name, Value: value}} }

// warningRecorder keeps the warnings the API server sends.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (r *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// take returns the warnings recorded since the last take.
func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	taken := r.warnings
	r.warnings = nil
	return taken
}

// warningClient is a client whose every request's warnings go to the
// returned recorder.
func warningClient() (client.Client, *warningRecorder) {
	GinkgoHelper()
	recorder := &warningRecorder{}
	config := env.Cluster.RESTConfig()
	config.WarningHandler = recorder
	c, err := client.New(config, client.Options{Scheme: framework.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c, recorder
}

// createQueuedTrainJob creates a suspended TrainJob on the "plain" runtime
// whose runtime patch selects the a100 pool, as a queue leaves one it has
// not admitted yet.
func createQueuedTrainJob(ctx context.Context, namespace, name string) *trainerv1alpha1.TrainJob {
	GinkgoHelper()
	createTrainingRuntime(ctx, namespace, "plain")
	tj := newTrainJob(namespace, name, "plain")
	suspendedWithPodPatch(trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": "a100"}})(tj)
	Expect(env.Client.Create(ctx, tj)).To(Succeed())
	return tj
}

var _ = Describe("TrainJob admission", Label("webhook"), func() {
	var namespace string

	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "trainjob")
	})

	It("accepts a valid TrainJob on a TrainingRuntime and on a ClusterTrainingRuntime, stamping its runtime patch", func(ctx context.Context) {
		createTrainingRuntime(ctx, namespace, "torch")
		tj := newTrainJob(namespace, "finetune", "torch")
		tj.Spec.Trainer.Env = envVar("LOG_LEVEL", "debug")
		tj.Spec.Trainer.NumNodes = ptr.To[int32](2)
		tj.Spec.Initializer = &trainerv1alpha1.Initializer{
			Dataset: &trainerv1alpha1.DatasetInitializer{StorageUri: ptr.To("hf://org/set")},
			Model:   &trainerv1alpha1.ModelInitializer{StorageUri: ptr.To("hf://org/model")},
		}
		tj.Spec.ActiveDeadlineSeconds = 3600
		withPodPatch(trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": "a100"}})(tj)
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		stored := &trainerv1alpha1.TrainJob{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(tj), stored)).To(Succeed())
		Expect(stored.Spec.RuntimePatches[0].Time).NotTo(BeNil(), "the defaulting webhook stamps each runtime patch")
		Expect(stored.Spec.ManagedBy).To(Equal(ptr.To(trainerv1alpha1.ManagedByTrainJobController)))

		clusterRuntime := &trainerv1alpha1.ClusterTrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Name: namespace + "-torch"}, Spec: trainJobRuntimes()["torch"]}
		Expect(env.Client.Create(ctx, clusterRuntime)).To(Succeed())
		onCluster := newTrainJob(namespace, "on-cluster-runtime", clusterRuntime.Name)
		onCluster.Spec.RuntimeRef.Kind = nil // ClusterTrainingRuntime is the default
		Expect(env.Client.Create(ctx, onCluster)).To(Succeed())
	})

	DescribeTable("refuses a TrainJob on create, naming the field",
		func(ctx context.Context, runtime string, change func(*trainerv1alpha1.TrainJob), webhook string, fragments ...string) {
			createTrainingRuntime(ctx, namespace, runtime)
			tj := newTrainJob(namespace, "train", runtime)
			change(tj)
			framework.ExpectAdmissionInvalid(env.Client.Create(ctx, tj), webhook, fragments...)
		},
		// The CRD's rules.
		Entry("a name that is not an RFC 1035 label", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Name = "1-train"
		}, byCRD, "metadata.name must match RFC 1035 DNS label format"),
		Entry("a name longer than 63 characters", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Name = longName(64)
		}, byCRD, "metadata.name must be no more than 63 characters"),
		Entry("activeDeadlineSeconds below 1", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.ActiveDeadlineSeconds = -5
		}, byCRD, "spec.activeDeadlineSeconds: Invalid value: -5: spec.activeDeadlineSeconds in body should be greater than or equal to 1"),
		Entry("a managedBy no controller answers to", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.ManagedBy = ptr.To("example.com/other-controller")
		}, byCRD, `spec.managedBy: Invalid value: "example.com/other-controller": ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue if set`),
		Entry("a dataset storageUri that is not a URI", "torch", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Initializer = &trainerv1alpha1.Initializer{Dataset: &trainerv1alpha1.DatasetInitializer{StorageUri: ptr.To("bucket/set")}}
		}, byCRD, `spec.initializer.dataset.storageUri: Invalid value: "bucket/set": storageUri may be empty, or it must be a valid URI (scheme://...)`),
		Entry("a model storageUri that is not a URI", "torch", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Initializer = &trainerv1alpha1.Initializer{Model: &trainerv1alpha1.ModelInitializer{StorageUri: ptr.To("org/model")}}
		}, byCRD, `spec.initializer.model.storageUri: Invalid value: "org/model": storageUri may be empty, or it must be a valid URI (scheme://...)`),

		// The webhook's rules, which need the runtime.
		Entry("a runtime that does not exist", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.RuntimeRef.Name = "absent"
		}, validateTrainJob, "spec.runtimeRef: Invalid value", `trainingruntimes.trainer.kubeflow.org "absent" not found: the runtime must exist before the TrainJob`),
		Entry("a variable the torch policy sets", "torch", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: trainjob.TorchEnvNumNodes, Value: "4"}}
		}, validateTrainJob, "spec.trainer.env: Invalid value", "must not have reserved envs, invalid envs configured: [PET_NNODES]"),
		Entry("a variable the MPI policy sets", "mpi", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.Env = envVar(trainjob.OpenMPIEnvHostfile, "/etc/hosts")
		}, validateTrainJob, "spec.trainer.env: Invalid value", "must not have reserved envs, invalid envs configured: [OMPI_MCA_orte_default_hostfile]"),
		Entry("a variable the XGBoost policy sets", "xgboost", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: trainjob.XGBoostEnvNumWorker, Value: "8"}}
		}, validateTrainJob, "spec.trainer.env[1]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime"),
		Entry("a dataset initializer the runtime does not have", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Initializer = &trainerv1alpha1.Initializer{Dataset: &trainerv1alpha1.DatasetInitializer{StorageUri: ptr.To("hf://org/set")}}
		}, validateTrainJob, "spec.runtimeRef: Invalid value", "must have dataset-initializer job when trainJob is configured with input datasetConfig"),
		Entry("a model initializer the runtime does not have", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Initializer = &trainerv1alpha1.Initializer{Model: &trainerv1alpha1.ModelInitializer{StorageUri: ptr.To("hf://org/model")}}
		}, validateTrainJob, "spec.runtimeRef: Invalid value", "must have model-initializer job when trainJob is configured with input modelConfig"),
		Entry("a runtime patch of a replicated job the runtime does not have", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{
				podPatch(patchManager, "ghost", trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": "a100"}})}
		}, validateTrainJob, "spec.runtimePatches: Invalid value", "must not have replicatedJob that doesn't exist in the runtime: ghost"),
		Entry("a runtime patch of a container the job does not have", "plain", withPodPatch(trainerv1alpha1.PodSpecPatch{
			Containers: []trainerv1alpha1.ContainerPatch{{Name: "sidecar", Env: envVar("A", "1")}},
		}), validateTrainJob, "spec.runtimePatches: Invalid value", "must not have container that doesn't exist in the runtime job node"),
		Entry("a runtime patch of an init container the job does not have", "plain", withPodPatch(trainerv1alpha1.PodSpecPatch{
			InitContainers: []trainerv1alpha1.ContainerPatch{{Name: "warmup", Env: envVar("A", "1")}},
		}), validateTrainJob, "spec.runtimePatches: Invalid value", "must not have initContainer that doesn't exist in the runtime job node"),
		Entry("a runtime patch of the node container's env", "plain", withPodPatch(trainerv1alpha1.PodSpecPatch{
			Containers: []trainerv1alpha1.ContainerPatch{{Name: trainjob.NodeName, Env: envVar("A", "1")}},
		}), validateTrainJob, "spec.runtimePatches: Invalid value", "must not have envs for the dataset-initializer, model-initializer, node containers"),
		Entry("a runtime patch of an initializer container's env", "torch", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{podPatch(patchManager, trainjob.DatasetInitializerName, trainerv1alpha1.PodSpecPatch{
				Containers: []trainerv1alpha1.ContainerPatch{{Name: trainjob.DatasetInitializerName, Env: envVar("A", "1")}}})}
		}, validateTrainJob, "spec.runtimePatches: Invalid value", "must not have envs for the dataset-initializer, model-initializer, node containers"),
		Entry("a runtime patch manager that is not a domain-prefixed path", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{
				podPatch(patchManager, trainjob.NodeName, trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": "a100"}}),
				podPatch("kueue", trainjob.NodeName, trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": "h100"}}),
			}
		}, validateTrainJob, `spec.runtimePatches[1].manager: Invalid value: "kueue": must be a domain-prefixed path`),
		Entry("torchtune with a model it does not support", "torchtune-gpt2-small", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.Command = []string{"tune", "run"}
		}, validateTrainJob, `spec.runtimeRef.name: Invalid value: "torchtune-gpt2-small": must have a supported pretrained model, invalid model configured: gpt2/SMALL`),
		Entry("torchtune on two nodes with a one-node model", "torchtune-llama3.2-1b", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.Command = []string{"tune", "run"}
			tj.Spec.Trainer.NumNodes = ptr.To[int32](2)
		}, validateTrainJob, "spec.trainer.numNodes: Invalid value: 2: must be 1 for llama3_2/1B model"),
		Entry("torchtune args setting a config the runtime owns", "torchtune-llama3.2-1b", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.Command = []string{"tune", "run"}
			tj.Spec.Trainer.Args = []string{"batch_size=8", "output_dir=/tmp/out"}
		}, validateTrainJob, `spec.trainer.args[1]: Invalid value: "output_dir=/tmp/out": must not set immutable config "output_dir" in trainer args`),
		Entry("MPI on two nodes when the runtime runs the launcher as a node but has no launcher job", "mpi-launcher-as-node", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.NumNodes = ptr.To[int32](2)
		}, validateTrainJob, "spec.trainer.numNodes: Invalid value: 2: must be 1 when the MPI runtime runs the launcher as a node but lacks the launcher or the node job"),
		Entry("Flux with no process per node", "flux", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.NumProcPerNode = ptr.To[int32](0)
		}, validateTrainJob, "spec.trainer.numProcPerNode: Invalid value: 0: must be greater than or equal to 1 for Flux TrainJob"),
		Entry("a torch runtime injecting variables into a container it does not have", "torch-inject-ghost", func(*trainerv1alpha1.TrainJob) {},
			validateTrainJob, "spec.runtimeRef: Invalid value", `envInjection target podSet "node" container "sidecar" not found in runtime template`),
		// Kubeflow Trainer's Volcano rules: the PodGroup would carry them.
		Entry("on a Volcano runtime, an empty Volcano queue (a runtime patch's JobSet annotation)", "volcano", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{{Manager: patchManager, TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
				Template: &trainerv1alpha1.JobSetTemplatePatch{Metadata: &metav1.ObjectMeta{
					Annotations: map[string]string{trainjob.VolcanoQueueAnnotation: ""}}}}}}
		}, validateTrainJob, `spec.annotations[scheduling.volcano.sh/queue-name]: Invalid value: "": Volcano queue name must not be empty`),
		Entry("on a Volcano runtime, pods of a PriorityClass that does not exist", "volcano-high", func(*trainerv1alpha1.TrainJob) {},
			validateTrainJob, `spec.templateSpec.priorityClassName: Invalid value: "batch-high": PriorityClass "batch-high" doesn't exist`),
	)

	DescribeTable("refuses a change to a TrainJob, naming the field",
		func(ctx context.Context, runtime string, prepare, change func(*trainerv1alpha1.TrainJob), webhook string, fragments ...string) {
			createTrainingRuntime(ctx, namespace, runtime)
			tj := newTrainJob(namespace, "train", runtime)
			prepare(tj)
			Expect(env.Client.Create(ctx, tj)).To(Succeed())
			framework.ExpectAdmissionInvalid(update(ctx, tj, change), webhook, fragments...)
		},
		// The CRD's transition rules.
		Entry("the runtime", "plain", func(*trainerv1alpha1.TrainJob) {}, func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.RuntimeRef.Name = "other"
		}, byCRD, "spec.runtimeRef: Invalid value: field is immutable"),
		Entry("the initializer", "torch", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Initializer = &trainerv1alpha1.Initializer{Dataset: &trainerv1alpha1.DatasetInitializer{StorageUri: ptr.To("hf://org/set")}}
		}, func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Initializer.Dataset.StorageUri = ptr.To("hf://org/other-set")
		}, byCRD, "spec.initializer: Invalid value: field is immutable"),
		Entry("the trainer", "plain", func(*trainerv1alpha1.TrainJob) {}, func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.Trainer.Image = ptr.To("example.com/train:2")
		}, byCRD, "spec.trainer: Invalid value: field is immutable"),
		Entry("activeDeadlineSeconds", "plain", func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.ActiveDeadlineSeconds = 100
		}, func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.ActiveDeadlineSeconds = 200
		}, byCRD, "spec.activeDeadlineSeconds: Invalid value: 200: field is immutable"),
		Entry("managedBy", "plain", func(*trainerv1alpha1.TrainJob) {}, func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.ManagedBy = ptr.To(trainerv1alpha1.ManagedByMultiKueue)
		}, byCRD, `spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable`),
		// A runtime patch's pod spec, even while the TrainJob is suspended:
		// only scheduling (node selector, affinity, tolerations, gates) may
		// change.
		Entry("a runtime patch's serviceAccountName", "plain",
			suspendedWithPodPatch(trainerv1alpha1.PodSpecPatch{ServiceAccountName: ptr.To("trainer")}),
			func(tj *trainerv1alpha1.TrainJob) { patchedPodSpec(tj).ServiceAccountName = ptr.To("trainer-2") },
			byCRD, patchedPod+`serviceAccountName: Invalid value: "trainer-2": field is immutable`),
		Entry("a runtime patch's volumes", "plain",
			suspendedWithPodPatch(trainerv1alpha1.PodSpecPatch{Volumes: []corev1.Volume{{Name: "scratch",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}),
			func(tj *trainerv1alpha1.TrainJob) {
				patchedPodSpec(tj).Volumes[0].EmptyDir.Medium = corev1.StorageMediumMemory
			},
			byCRD, patchedPod+"volumes: Invalid value: field is immutable"),
		Entry("a runtime patch's initContainers", "plain",
			suspendedWithPodPatch(trainerv1alpha1.PodSpecPatch{InitContainers: []trainerv1alpha1.ContainerPatch{{Name: "prepare", Env: envVar("A", "1")}}}),
			func(tj *trainerv1alpha1.TrainJob) { patchedPodSpec(tj).InitContainers[0].Env = envVar("A", "2") },
			byCRD, patchedPod+"initContainers: Invalid value: field is immutable"),
		Entry("a runtime patch's containers", "plain",
			suspendedWithPodPatch(trainerv1alpha1.PodSpecPatch{Containers: []trainerv1alpha1.ContainerPatch{{Name: trainjob.NodeName,
				SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000)}}}}),
			func(tj *trainerv1alpha1.TrainJob) {
				patchedPodSpec(tj).Containers[0].SecurityContext.RunAsUser = ptr.To[int64](1001)
			},
			byCRD, patchedPod+"containers: Invalid value: field is immutable"),
		Entry("a runtime patch's imagePullSecrets", "plain",
			suspendedWithPodPatch(trainerv1alpha1.PodSpecPatch{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}}),
			func(tj *trainerv1alpha1.TrainJob) { patchedPodSpec(tj).ImagePullSecrets[0].Name = "registry-2" },
			byCRD, patchedPod+"imagePullSecrets: Invalid value: field is immutable"),
		Entry("a runtime patch's securityContext", "plain",
			suspendedWithPodPatch(trainerv1alpha1.PodSpecPatch{SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}}),
			func(tj *trainerv1alpha1.TrainJob) { patchedPodSpec(tj).SecurityContext.RunAsUser = ptr.To[int64](1001) },
			byCRD, patchedPod+"securityContext: Invalid value: field is immutable"),
		Entry("a runtime patch's terminationGracePeriodSeconds", "plain",
			suspendedWithPodPatch(trainerv1alpha1.PodSpecPatch{TerminationGracePeriodSeconds: ptr.To[int64](30)}),
			func(tj *trainerv1alpha1.TrainJob) {
				patchedPodSpec(tj).TerminationGracePeriodSeconds = ptr.To[int64](60)
			},
			byCRD, patchedPod+"terminationGracePeriodSeconds: Invalid value: 60: field is immutable"),

		// The webhook's.
		Entry("a runtime patch of a TrainJob that is not suspended", "plain",
			withPodPatch(trainerv1alpha1.PodSpecPatch{NodeSelector: map[string]string{"pool": "a100"}}),
			func(tj *trainerv1alpha1.TrainJob) { patchedPodSpec(tj).NodeSelector["pool"] = "h100" },
			validateTrainJob, "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended before or after the update"),
	)

	It("accepts a change of a runtime patch's scheduling while the TrainJob is suspended", func(ctx context.Context) {
		tj := createQueuedTrainJob(ctx, namespace, "queued")
		Expect(update(ctx, tj, func(tj *trainerv1alpha1.TrainJob) {
			patchedPodSpec(tj).NodeSelector["pool"] = "h100"
			patchedPodSpec(tj).Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}
		})).To(Succeed())
	})

	// The manager is the key of the runtimePatches list: the API server
	// matches old and new entries by it, so a renamed manager is an entry
	// removed and another added, and the manager's own "self == oldSelf"
	// rule (Kubeflow Trainer's) never sees two different values.
	It("treats a renamed runtime patch manager as a new patch, which only a suspended TrainJob may take", func(ctx context.Context) {
		tj := createQueuedTrainJob(ctx, namespace, "renamed")
		Expect(update(ctx, tj, func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.RuntimePatches[0].Manager = "e2e.copse.dev/other"
		})).To(Succeed())
		Expect(tj.Spec.RuntimePatches).To(HaveLen(1))
		Expect(tj.Spec.RuntimePatches[0].Manager).To(Equal("e2e.copse.dev/other"))

		Expect(update(ctx, tj, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(false) })).To(Succeed())
		framework.ExpectAdmissionInvalid(update(ctx, tj, func(tj *trainerv1alpha1.TrainJob) {
			tj.Spec.RuntimePatches[0].Manager = "e2e.copse.dev/third"
		}), validateTrainJob, "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended")
	})

	It("refuses a trainerStatus without lastUpdatedTime, naming the field", func(ctx context.Context) {
		createTrainingRuntime(ctx, namespace, "plain")
		tj := newTrainJob(namespace, "progress", "plain")
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		progress := func(status string) error {
			return env.Client.Status().Patch(ctx, tj, client.RawPatch(types.MergePatchType, []byte(`{"status":{"trainerStatus":`+status+`}}`)))
		}
		framework.ExpectAdmissionInvalid(progress(`{"progressPercentage":40}`), byCRD,
			"status.trainerStatus: Invalid value: lastUpdatedTime is required when trainerStatus is present")
		Expect(progress(`{"progressPercentage":40,"lastUpdatedTime":"2026-01-02T03:04:05Z"}`)).To(Succeed())
	})

	It("accepts a valid runtime of either kind without a warning", func(ctx context.Context) {
		c, warnings := warningClient()
		spec := trainJobRuntimes()["torch"]
		spec.TTLSecondsAfterFinished = ptr.To[int32](60)
		spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Workload: &trainerv1alpha1.WorkloadPodGroupPolicySource{}}
		Expect(c.Create(ctx, &trainerv1alpha1.TrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "torch"}, Spec: spec})).To(Succeed())
		Expect(c.Create(ctx, &trainerv1alpha1.ClusterTrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Name: namespace + "-torch"}, Spec: *spec.DeepCopy()})).To(Succeed())
		Expect(warnings.take()).To(BeEmpty())
	})

	It("accepts a runtime of either kind whose TTL is under a minute, with a warning naming spec.ttlSecondsAfterFinished", func(ctx context.Context) {
		c, warnings := warningClient()
		spec := trainJobRuntimes()["torch"]
		spec.TTLSecondsAfterFinished = ptr.To[int32](30)
		want := ConsistOf(ContainSubstring("spec.ttlSecondsAfterFinished is 30s: finished TrainJobs of this runtime are deleted"))
		Expect(c.Create(ctx, &trainerv1alpha1.TrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "short-ttl"}, Spec: spec})).To(Succeed())
		Expect(warnings.take()).To(want, "TrainingRuntime")
		Expect(c.Create(ctx, &trainerv1alpha1.ClusterTrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Name: namespace + "-short-ttl"}, Spec: *spec.DeepCopy()})).To(Succeed())
		Expect(warnings.take()).To(want, "ClusterTrainingRuntime")
	})

	DescribeTable("refuses a runtime of either kind, naming the field",
		func(ctx context.Context, webhook bool, change func(*trainerv1alpha1.TrainingRuntimeSpec), fragments ...string) {
			spec := runtimeSpec(torchPolicy(), trainjob.AncestorTrainer)
			change(&spec)
			namespaced, cluster := byCRD, byCRD
			if webhook {
				namespaced, cluster = validateTrainingRuntime, validateClusterTrainingRuntime
			}
			framework.ExpectAdmissionInvalid(env.Client.Create(ctx, &trainerv1alpha1.TrainingRuntime{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "runtime"}, Spec: spec}), namespaced, fragments...)
			framework.ExpectAdmissionInvalid(env.Client.Create(ctx, &trainerv1alpha1.ClusterTrainingRuntime{
				ObjectMeta: metav1.ObjectMeta{Name: namespace + "-runtime"}, Spec: *spec.DeepCopy()}), cluster, fragments...)
		},
		// The CRD's rules.
		Entry("two ML frameworks", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.MLPolicy.MPI = &trainerv1alpha1.MPIMLPolicySource{}
		}, "spec.mlPolicy: Invalid value: Only one of the policy can be configured"),
		Entry("torch variables injected into the node container, which always has them", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.MLPolicy.Torch.EnvInjection = &trainerv1alpha1.EnvInjection{Targets: []trainerv1alpha1.EnvInjectionTarget{
				{JobName: trainjob.NodeName, ContainerNames: []string{"sidecar", trainjob.NodeName}}}}
		}, "spec.mlPolicy.torch.envInjection.targets[0].containerNames: Invalid value: "+
			"containerNames must not include the main node container because PET_* envs are always injected into it"),
		Entry("Flux with no process per node", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.MLPolicy = &trainerv1alpha1.MLPolicy{Flux: &trainerv1alpha1.FluxMLPolicySource{NumProcPerNode: ptr.To[int32](0)}}
		}, "spec.mlPolicy.flux.numProcPerNode: Invalid value: 0: NumProcPerNode in fluxPolicy must be >= 1"),
		Entry("an MPI implementation other than OpenMPI", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.MLPolicy = &trainerv1alpha1.MLPolicy{MPI: &trainerv1alpha1.MPIMLPolicySource{
				MPIImplementation: ptr.To(trainerv1alpha1.MPIImplementationIntel)}}
		}, `spec.mlPolicy.mpi.mpiImplementation: Unsupported value: "Intel": supported values: "OpenMPI", ""`),
		Entry("a negative TTL", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.TTLSecondsAfterFinished = ptr.To[int32](-1)
		}, "spec.ttlSecondsAfterFinished: Invalid value: -1: spec.ttlSecondsAfterFinished in body should be greater than or equal to 0"),
		Entry("a JobSet-level TTL", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.TTLSecondsAfterFinished = ptr.To[int32](600)
		}, "spec.template.spec.ttlSecondsAfterFinished: Invalid value: "+
			"template.spec.ttlSecondsAfterFinished must not be set: a JobSet-level TTL deletes the JobSet under its TrainJob"),
		Entry("a Job-level deadline", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](3600)
		}, "spec.template.spec.replicatedJobs: Invalid value: "+
			"template.spec.replicatedJobs[].template.spec.activeDeadlineSeconds must not be set"),
		Entry("a Job-level TTL", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.TTLSecondsAfterFinished = ptr.To[int32](600)
		}, "spec.template.spec.replicatedJobs: Invalid value: "+
			"template.spec.replicatedJobs[].template.spec.ttlSecondsAfterFinished must not be set"),
		Entry("a Job's own scheduling", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Scheduling = &batchv1.JobSchedulingConfiguration{}
		}, "spec.template.spec.replicatedJobs: Invalid value: "+
			"template.spec.replicatedJobs[].template.spec.scheduling and .template.spec.schedulingGroup must not be set"),
		Entry("a pod's own scheduling group", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("by-hand")}
		}, "spec.template.spec.replicatedJobs: Invalid value: "+
			"template.spec.replicatedJobs[].template.spec.scheduling and .template.spec.schedulingGroup must not be set"),
		Entry("two gang schedulers", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{
				Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{},
				Workload:     &trainerv1alpha1.WorkloadPodGroupPolicySource{},
			}
		}, "spec.podGroupPolicy: Invalid value: podGroupPolicy: only one of coscheduling, volcano and workload may be set"),

		// The webhook's.
		Entry("a trainer step of two Jobs", true, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Replicas = 2
		}, "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: always must be 1"),
		Entry("a trainer step without its node container", true, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Name = "trainer"
		}, `spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers: Invalid value: ["trainer"]: must contain the required container for the ancestor: trainer`),
		Entry("on the PodCliqueSet backend, a JobSet failure rule that restarts one job", true, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
			s.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 3, Rules: []jobsetv1alpha2.FailurePolicyRule{
				{Name: "failFast", Action: jobsetv1alpha2.FailJobSet}, {Name: "retryJob", Action: jobsetv1alpha2.RestartJob}}}
		}, "spec.template.spec.failurePolicy.rules[1].action: Forbidden: not expressible on the PodCliqueSet backend: a PodCliqueSet restarts the whole replica, not one job"),
		Entry("on the PodCliqueSet backend, a pod failure rule that Ignores", true, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionIgnore,
					OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}}}
		}, "spec.template.spec.replicatedJobs[0].template.spec.podFailurePolicy.rules[0].action: Forbidden: not expressible on the PodCliqueSet backend"),
		Entry("on the PodCliqueSet backend, Job pod retries", true, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
			s.Template.Spec.ReplicatedJobs[0].Template.Spec.BackoffLimit = ptr.To[int32](6)
		}, "spec.template.spec.replicatedJobs[0].template.spec.backoffLimit: Forbidden: not expressible on the PodCliqueSet backend"),
		Entry("on the PodCliqueSet backend, coscheduling", true, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
			s.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{}}
		}, "spec.podGroupPolicy.coscheduling: Forbidden: not expressible on the PodCliqueSet backend"),
		Entry("on the PodCliqueSet backend, volcano", true, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
			s.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{Volcano: &trainerv1alpha1.VolcanoPodGroupPolicySource{}}
		}, "spec.podGroupPolicy.volcano: Forbidden: not expressible on the PodCliqueSet backend"),
		Entry("a backend copse does not have", false, func(s *trainerv1alpha1.TrainingRuntimeSpec) {
			s.Backend = "Deployment"
		}, `spec.backend: Unsupported value: "Deployment"`),
	)

	It("accepts on the PodCliqueSet backend what it expresses: maxRestarts, success policy, dependsOn, backoffLimit 0", func(ctx context.Context) {
		spec := trainJobRuntimes()["torch"]
		spec.Backend = trainerv1alpha1.RuntimeBackendPodCliqueSet
		spec.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: 3}
		spec.Template.Spec.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll}
		spec.Template.Spec.ReplicatedJobs[0].Template.Spec.BackoffLimit = ptr.To[int32](0)
		Expect(env.Client.Create(ctx, &trainerv1alpha1.TrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "on-pcs"}, Spec: spec})).To(Succeed())
	})
})
