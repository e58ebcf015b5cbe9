package trainjob_test

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	copselabels "github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/trainjob"
)

// expectResolvable checks that a DNS name a TrainJob's pods are given
// resolves to the pod: it is the pod's hostname under its subdomain, and the
// subdomain is a headless Service of the pod's namespace that selects it.
func expectResolvable(ctx context.Context, g Gomega, pod *corev1.Pod, name string) {
	g.Expect(podDNSName(pod)).To(Equal(name), "pod %s", pod.Name)
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: pod.Spec.Subdomain}, svc)).To(Succeed())
	g.Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone), "Service %s is not headless", svc.Name)
	g.Expect(labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels))).To(BeTrue(),
		"Service %s does not select pod %s", svc.Name, pod.Name)
}

// podWithIndex is the pod of a clique with the given pod index label.
func podWithIndex(g Gomega, pods []corev1.Pod, index string) *corev1.Pod {
	i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Labels[copselabels.PodIndexKey] == index })
	g.Expect(i).To(BeNumerically(">=", 0), "no pod with index %s", index)
	return &pods[i]
}

var _ = Describe("A TrainJob on the PodCliqueSet backend", Label("trainjob"), func() {
	It("runs a torch TrainJob as one Training PodCliqueSet whose node clique's pods find the master by DNS, to Complete with jobsStatus", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "pcs-torch")
		createRuntime(ctx, withBackend(runtimeCopy(ns, "torch-distributed"), trainerv1alpha1.RuntimeBackendPodCliqueSet))
		tj := onTrainingRuntime(sdkTrainJob(ns, "mnist", "torch-distributed", 2))
		withPods(tj, trainjob.NodeName, simulate(4*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		By("building one Training PodCliqueSet, owned by the TrainJob, with a node clique of numNodes pods")
		pcs := waitPodCliqueSet(ctx, tj)
		Expect(pcs.Spec.WorkloadType).To(Equal(copsev1alpha1.WorkloadTypeTraining))
		Expect(pcs.Spec.Replicas).To(BeEquivalentTo(1))
		Expect(pcs.Spec.Template.Cliques).To(HaveLen(1))
		node := cliqueTemplate(Default, pcs, trainjob.NodeName)
		Expect(node.Spec.Replicas).To(BeEquivalentTo(2))
		Expect(node.Spec.MinAvailable).To(HaveValue(BeEquivalentTo(2)))
		nodeEnv := envOf(containerNamed(Default, &node.Spec.PodSpec, trainjob.NodeName))
		master := "mnist-0-node-0.mnist-0"
		Expect(nodeEnv).To(HaveKeyWithValue(trainjob.TorchEnvMasterAddr, haveValue(master)))
		Expect(nodeEnv).To(HaveKeyWithValue(trainjob.TorchEnvNumNodes, haveValue("2")))
		Expect(nodeEnv).To(HaveKeyWithValue(trainjob.TorchEnvNodeRank,
			HaveField("ValueFrom.FieldRef.FieldPath", trainjob.PodCliqueSetPodIndexFieldPath)))
		_, err := jobSetOf(ctx, tj)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a TrainJob on the PodCliqueSet backend got a JobSet: %v", err)

		By("giving the pods the PodCliqueSet's identities: PET_MASTER_ADDR resolves to the pod of index 0, ranks are the pod indices")
		Eventually(func(g Gomega) {
			pods := cliquePodsOf(ctx, tj, trainjob.NodeName)
			g.Expect(pods).To(HaveLen(2))
			expectResolvable(ctx, g, podWithIndex(g, pods, "0"), master)
			expectResolvable(ctx, g, podWithIndex(g, pods, "1"), "mnist-0-node-1.mnist-0")
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("becoming Complete with JobSet's reason once the PodCliqueSet succeeded, the node job counted as one succeeded Job")
		got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
		c := condition(got, trainerv1alpha1.TrainJobComplete)
		Expect(c.Reason).To(Equal("AllJobsCompleted"))
		Expect(c.Message).To(ContainSubstring("restarts: 0"))
		Expect(got.Status.NumNodes).To(HaveValue(BeEquivalentTo(2)))
		Expect(got.Status.JobsStatus).To(ConsistOf(And(HaveField("Name", trainjob.NodeName),
			HaveField("Succeeded", HaveValue(BeEquivalentTo(1))), HaveField("Failed", HaveValue(BeEquivalentTo(0))),
			HaveField("Active", HaveValue(BeEquivalentTo(0))))))
		pcs, err = podCliqueSetOf(ctx, tj)
		Expect(err).NotTo(HaveOccurred())
		Expect(pcs.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded))

		By("counting it in copse_trainjobs, scraped from the operator: Complete, on the PodCliqueSet backend")
		Eventually(func(g Gomega) {
			m, err := framework.ScrapeMetrics(ctx, env.Operator.MetricsURL())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m.SumBy("copse_trainjobs", map[string]string{"namespace": ns}, "backend", "state")).To(
				Equal(map[string]float64{"PodCliqueSet/Complete": 1}))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	})

	It("lists the PodCliqueSet's pods in an MPI TrainJob's hostfile, with its SSH Secret mounted on launcher and nodes", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "pcs-mpi")
		createRuntime(ctx, withBackend(runtimeCopy(ns, "deepspeed-distributed"), trainerv1alpha1.RuntimeBackendPodCliqueSet))
		tj := onTrainingRuntime(sdkTrainJob(ns, "ds", "deepspeed-distributed", 3))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		pcs := waitPodCliqueSet(ctx, tj)
		By("mapping Kubeflow's MPI template: the launcher succeeds the workload, and starts after the nodes are ready")
		Expect(pcs.Spec.TrainingSpec.SuccessPolicy).To(HaveValue(HaveField("TargetCliques", ConsistOf(trainjob.LauncherName))))
		Expect(cliqueTemplate(Default, pcs, trainjob.LauncherName).Spec.StartsAfter).To(ConsistOf(trainjob.NodeName))

		By("writing a hostfile of the node pods' DNS names, each resolving to its pod")
		hostfile := &corev1.ConfigMap{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tj.Name + trainjob.MPIHostfileConfigMapSuffix}, hostfile)).To(Succeed())
		var hosts []string
		for _, line := range strings.Split(strings.TrimSpace(hostfile.Data["hostfile"]), "\n") {
			hosts = append(hosts, strings.Fields(line)[0])
		}
		// deepspeed-distributed runs the launcher as one of the numNodes.
		Expect(hosts).To(Equal([]string{"ds-0-node-0.ds-0", "ds-0-node-1.ds-0", "ds-0-launcher-0.ds-0"}))
		Eventually(func(g Gomega) {
			nodes := cliquePodsOf(ctx, tj, trainjob.NodeName)
			g.Expect(nodes).To(HaveLen(2))
			expectResolvable(ctx, g, podWithIndex(g, nodes, "0"), hosts[0])
			expectResolvable(ctx, g, podWithIndex(g, nodes, "1"), hosts[1])
			launchers := cliquePodsOf(ctx, tj, trainjob.LauncherName)
			g.Expect(launchers).To(HaveLen(1))
			expectResolvable(ctx, g, podWithIndex(g, launchers, "0"), hosts[2])
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("mounting the one SSH Secret on launcher and nodes")
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tj.Name + trainjob.MPISSHAuthSecretSuffix}, &corev1.Secret{})).To(Succeed())
		for _, clique := range []string{trainjob.LauncherName, trainjob.NodeName} {
			spec := cliqueTemplate(Default, pcs, clique).Spec.PodSpec
			Expect(spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", tj.Name+trainjob.MPISSHAuthSecretSuffix)), "clique %s", clique)
		}
	})
})
