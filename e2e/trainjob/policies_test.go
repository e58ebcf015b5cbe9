package trainjob_test

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// userEnv is set by every TrainJob of these specs in spec.trainer.env.
var userEnv = corev1.EnvVar{Name: "LEARNING_RATE", Value: "0.01"}

// policy is one ML policy's case: the runtime it runs on, the TrainJob's
// size, which replicated job decides its outcome, and what copse must have
// built for it.
type policy struct {
	// shippedRuntime is a runtime Kubeflow ships; "" for a runtime without
	// mlPolicy written here.
	shippedRuntime string
	nodes          int32
	// outcomeJob is the replicated job whose pods end the TrainJob; the
	// others run until the JobSet ends (MPI's sshd nodes).
	outcomeJob string
	// trainerNodes is the TrainJob's status.numNodes.
	trainerNodes int32
	// objects checks the JobSet and the other objects of the TrainJob.
	objects func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, js *jobsetv1alpha2.JobSet)
}

// start creates the runtime the case needs in a new namespace (a copy of
// the shipped one that fails fast when failFast; the plain runtime always)
// and a TrainJob on it whose outcome job's pods exit with exitCode.
func (p policy) start(ctx context.Context, prefix string, failFast bool, exitCode string) *trainerv1alpha1.TrainJob {
	GinkgoHelper()
	namespace := env.NewNamespace(ctx, prefix)
	var tj *trainerv1alpha1.TrainJob
	switch {
	case p.shippedRuntime == "":
		createRuntime(ctx, plainRuntime(namespace, "plain"))
		tj = onTrainingRuntime(sdkTrainJob(namespace, "train", "plain", p.nodes))
	case failFast:
		createRuntime(ctx, runtimeCopy(namespace, p.shippedRuntime))
		tj = onTrainingRuntime(sdkTrainJob(namespace, "train", p.shippedRuntime, p.nodes))
	default:
		tj = sdkTrainJob(namespace, "train", p.shippedRuntime, p.nodes)
	}
	tj.Spec.Trainer.Env = []corev1.EnvVar{userEnv}
	// The other jobs' pods run until the JobSet ends.
	withPods(tj, p.outcomeJob, simulate(2*time.Second, exitCode))
	Expect(env.Client.Create(ctx, tj)).To(Succeed())
	return tj
}

// expectCarried checks that the TrainJob's condition is the JobSet's, with
// its reason and message, and returns it.
func expectCarried(ctx context.Context, tj *trainerv1alpha1.TrainJob, conditionType string, from jobsetv1alpha2.JobSetConditionType) *metav1.Condition {
	GinkgoHelper()
	got := waitCondition(ctx, tj, conditionType, wait)
	js, err := jobSetOf(ctx, tj)
	Expect(err).NotTo(HaveOccurred())
	want := jobSetCondition(js, from)
	Expect(want).NotTo(BeNil(), "JobSet %s has no %s condition", js.Name, from)
	c := condition(got, conditionType)
	Expect(c.Reason).To(Equal(want.Reason))
	Expect(c.Message).To(Equal(want.Message))
	other := trainerv1alpha1.TrainJobFailed
	if conditionType == trainerv1alpha1.TrainJobFailed {
		other = trainerv1alpha1.TrainJobComplete
	}
	Expect(condition(got, other)).To(BeNil())
	return c
}

var (
	torchPolicy = policy{shippedRuntime: "torch-distributed", nodes: 2, outcomeJob: "node", trainerNodes: 2,
		objects: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, js *jobsetv1alpha2.JobSet) {
			node := expectPods(g, js, "node", 2)
			g.Expect(envOf(nodeContainer(g, node))).To(And(
				HaveKeyWithValue(trainjob.TorchEnvNumNodes, haveValue("2")),
				HaveKeyWithValue(trainjob.TorchEnvNumProcPerNode, haveValue("1")), // one per CPU of resourcesPerNode
				HaveKeyWithValue(trainjob.TorchEnvNodeRank, haveCompletionIndex()),
				HaveKeyWithValue(trainjob.TorchEnvMasterAddr, haveValue(firstNode(tj))),
				HaveKeyWithValue(trainjob.TorchEnvMasterPort, haveValue("29500")),
				HaveKeyWithValue(userEnv.Name, haveValue(userEnv.Value)),
			))
			g.Expect(podDNSNames(ctx, g, tj, "node")).To(ContainElement(firstNode(tj)), "the master address names no pod")
		}}
	deepSpeedPolicy = policy{shippedRuntime: "deepspeed-distributed", nodes: 3, outcomeJob: "launcher", trainerNodes: 3,
		objects: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, js *jobsetv1alpha2.JobSet) {
			expectPods(g, js, "node", 2) // the launcher is the third node
			launcher := expectPods(g, js, "launcher", 1)
			g.Expect(envOf(nodeContainer(g, launcher))).To(And(
				HaveKeyWithValue(trainjob.OpenMPIEnvHostfile, haveValue("/etc/mpi/hostfile")),
				HaveKeyWithValue(trainjob.OpenMPIEnvKeepFQDN, haveValue("true")),
				HaveKeyWithValue(trainjob.OpenMPIEnvDefaultSlots, haveValue("1")),
				HaveKeyWithValue(trainjob.OpenMPIEnvRSHArgs, haveValue("-o ConnectionAttempts=10")),
				HaveKeyWithValue(userEnv.Name, haveValue(userEnv.Value)),
			))
			g.Expect(launcher.Template.Spec.Template.Spec.Volumes).To(ContainElements(
				HaveField("ConfigMap.Name", tj.Name+trainjob.MPIHostfileConfigMapSuffix),
				HaveField("Secret.SecretName", tj.Name+trainjob.MPISSHAuthSecretSuffix)))
			owner := getTrainJob(ctx, tj)

			secret := &corev1.Secret{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: tj.Name + trainjob.MPISSHAuthSecretSuffix}, secret)).To(Succeed())
			g.Expect(metav1.IsControlledBy(secret, owner)).To(BeTrue(), "the SSH Secret is not controlled by the TrainJob")
			g.Expect(secret.Type).To(Equal(corev1.SecretTypeSSHAuth))
			g.Expect(secret.Immutable).To(HaveValue(BeTrue()))
			g.Expect(secret.Data).To(And(HaveKeyWithValue(corev1.SSHAuthPrivateKey, ContainSubstring("PRIVATE KEY")),
				HaveKeyWithValue(trainjob.MPISSHPublicKeyKey, Not(BeEmpty()))))

			hostfile := &corev1.ConfigMap{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: tj.Name + trainjob.MPIHostfileConfigMapSuffix}, hostfile)).To(Succeed())
			g.Expect(metav1.IsControlledBy(hostfile, owner)).To(BeTrue(), "the hostfile is not controlled by the TrainJob")
			var want []string
			for _, name := range podDNSNames(ctx, g, tj, "node", "launcher") {
				want = append(want, name+" slots=1")
			}
			g.Expect(want).To(HaveLen(3))
			g.Expect(strings.Split(strings.TrimSuffix(hostfile.Data["hostfile"], "\n"), "\n")).To(ConsistOf(want),
				"one line per training pod, naming it as the headless service does")
		}}
	jaxPolicy = policy{shippedRuntime: "jax-distributed", nodes: 2, outcomeJob: "node", trainerNodes: 2,
		objects: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, js *jobsetv1alpha2.JobSet) {
			node := expectPods(g, js, "node", 2)
			g.Expect(envOf(nodeContainer(g, node))).To(And(
				HaveKeyWithValue("JAX_NUM_PROCESSES", haveValue("2")),
				HaveKeyWithValue("JAX_PROCESS_ID", haveCompletionIndex()),
				HaveKeyWithValue("JAX_COORDINATOR_ADDRESS", haveValue(firstNode(tj)+":29500")),
				HaveKeyWithValue(userEnv.Name, haveValue(userEnv.Value)),
			))
			g.Expect(podDNSNames(ctx, g, tj, "node")).To(ContainElement(firstNode(tj)), "the coordinator names no pod")
		}}
	xgboostPolicy = policy{shippedRuntime: "xgboost-distributed", nodes: 2, outcomeJob: "node", trainerNodes: 2,
		objects: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, js *jobsetv1alpha2.JobSet) {
			node := expectPods(g, js, "node", 2)
			g.Expect(envOf(nodeContainer(g, node))).To(And(
				HaveKeyWithValue(trainjob.XGBoostEnvTrackerURI, haveValue(firstNode(tj))),
				HaveKeyWithValue(trainjob.XGBoostEnvTrackerPort, haveValue("29500")),
				HaveKeyWithValue(trainjob.XGBoostEnvTaskID, haveCompletionIndex()),
				HaveKeyWithValue(trainjob.XGBoostEnvNumWorker, haveValue("2")), // one per node without GPUs
				HaveKeyWithValue(userEnv.Name, haveValue(userEnv.Value)),
			))
			g.Expect(podDNSNames(ctx, g, tj, "node")).To(ContainElement(firstNode(tj)), "the tracker names no pod")
		}}
	plainPolicy = policy{nodes: 2, outcomeJob: "node", trainerNodes: 2,
		objects: func(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, js *jobsetv1alpha2.JobSet) {
			node := expectPods(g, js, "node", 2)
			g.Expect(nodeContainer(g, node).Env).To(Equal([]corev1.EnvVar{userEnv}), "no framework adds env")
			g.Expect(nodeContainer(g, node).Command).To(Equal(tj.Spec.Trainer.Command))
			g.Expect(podDNSNames(ctx, g, tj, "node")).To(HaveLen(2))
		}}
)

// expectPods checks that a replicated job runs one Job of n pods.
func expectPods(g Gomega, js *jobsetv1alpha2.JobSet, name string, n int32) *jobsetv1alpha2.ReplicatedJob {
	rjob := replicatedJob(g, js, name)
	g.Expect(rjob.Replicas).To(BeEquivalentTo(1), "replicas of %s", name)
	g.Expect(rjob.Template.Spec.Parallelism).To(HaveValue(Equal(n)), "parallelism of %s", name)
	g.Expect(rjob.Template.Spec.Completions).To(HaveValue(Equal(n)), "completions of %s", name)
	return rjob
}

// firstNode is the DNS name of the trainer's first pod, every framework's
// rendezvous.
func firstNode(tj *trainerv1alpha1.TrainJob) string {
	return tj.Name + "-node-0-0." + tj.Name
}

// podDNSNames are the DNS names of the pods of the given replicated jobs.
func podDNSNames(ctx context.Context, g Gomega, tj *trainerv1alpha1.TrainJob, jobs ...string) []string {
	pods := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, pods, client.InNamespace(tj.Namespace),
		client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: tj.Name})).To(Succeed())
	var names []string
	for i := range pods.Items {
		if slices.Contains(jobs, pods.Items[i].Labels[jobsetv1alpha2.ReplicatedJobNameKey]) {
			names = append(names, podDNSName(&pods.Items[i]))
		}
	}
	return names
}

var policyEntries = []TableEntry{
	Entry("torch-distributed", torchPolicy),
	Entry("deepspeed-distributed (OpenMPI)", deepSpeedPolicy),
	Entry("jax-distributed", jaxPolicy),
	Entry("xgboost-distributed", xgboostPolicy),
	Entry("a TrainingRuntime without mlPolicy", plainPolicy),
}

var _ = Describe("A TrainJob per ML policy", Label("trainjob"), func() {
	DescribeTable("builds the policy's objects and runs to Complete with its JobSet's reason",
		func(ctx context.Context, p policy) {
			tj := p.start(ctx, "complete", false, "0")

			By("creating the JobSet and the policy's objects")
			waitJobSet(ctx, tj)
			Eventually(func(g Gomega) {
				js, err := jobSetOf(ctx, tj)
				g.Expect(err).NotTo(HaveOccurred())
				p.objects(ctx, g, tj, js)
			}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

			By("carrying the JobSet's Completed condition over as Complete")
			c := expectCarried(ctx, tj, trainerv1alpha1.TrainJobComplete, jobsetv1alpha2.JobSetCompleted)
			Expect(c.Reason).To(Equal("AllJobsCompleted"))
			Expect(getTrainJob(ctx, tj).Status.NumNodes).To(HaveValue(Equal(p.trainerNodes)))
		}, policyEntries)

	DescribeTable("fails with its JobSet's reason and message when a pod exits non-zero",
		func(ctx context.Context, p policy) {
			tj := p.start(ctx, "failed", true, "3")

			expectCarried(ctx, tj, trainerv1alpha1.TrainJobFailed, jobsetv1alpha2.JobSetFailed)
			js, err := jobSetOf(ctx, tj)
			Expect(err).NotTo(HaveOccurred())
			Expect(js.Spec.FailurePolicy).To(BeNil(), "the runtime's JobSet fails at its first failed Job")
			Eventually(func(g Gomega) {
				g.Expect(getTrainJob(ctx, tj).Status.JobsStatus).To(ContainElement(And(
					HaveField("Name", p.outcomeJob), HaveField("Failed", HaveValue(BeEquivalentTo(1))))))
			}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		}, policyEntries)
})
