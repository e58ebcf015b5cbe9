package realnode_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

var _ = Describe("A Training PodCliqueSet on a real node", Label("realnode"), func() {
	It("succeeds when its containers exit 0, after an init container, with what the kubelet writes", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "succeed")
		spec := realNodePod(5,
			workload("main", "--read", "/work/prepared", "--print-env", "--sleep", "1s", "--exit", "0"))
		spec.InitContainers = []corev1.Container{shell("prepare", "echo by-the-init-container > /work/prepared")}
		spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		for _, c := range []*corev1.Container{&spec.InitContainers[0], &spec.Containers[0]} {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
		}
		Expect(env.Client.Create(ctx, framework.NewTrainingPodCliqueSet(ns, "job", 1, 0, clique("worker", 2, spec)))).To(Succeed())

		Eventually(func(g Gomega) {
			pcs := expectPhase(ctx, g, ns, "job", copsev1alpha1.PodCliqueSetPhaseSucceeded)
			g.Expect(pcs.Status.RestartCount).To(BeZero())
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())

		By("reading the kubelet's statuses: the init container ended before the main one started, both exited 0")
		// copse may decide from the containers' statuses an update before
		// the kubelet writes the pods' phase.
		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			pods = env.Pods(ctx, g, ns, "job")
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s", p.Name)
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		for i := range pods {
			pod := &pods[i]
			Expect(pod.Spec.NodeName).To(Equal(env.Cluster.RealNodeNames()[0]))
			initDone := expectWrittenByKubelet(Default, pod, "prepare", 0)
			main := expectWrittenByKubelet(Default, pod, "main", 0)
			Expect(main.StartedAt.Before(&initDone.FinishedAt)).To(BeFalse(), "pod %s: main started before its init container finished", pod.Name)
			Expect(main.FinishedAt.Sub(main.StartedAt.Time)).To(BeNumerically(">=", time.Second), "pod %s: main slept 1s", pod.Name)
			out := logs(ctx, Default, pod, "main")
			Expect(out).To(ContainSubstring("/work/prepared: by-the-init-container"), "the init container's file, through the pod's volume")
			Expect(pod.Spec.Hostname).NotTo(BeEmpty(), "copse names each pod's host after its rank")
			Expect(out).To(ContainSubstring("env HOSTNAME="+pod.Spec.Hostname+"\n"), "the container runs in a UTS namespace of the pod's own, named by copse")
			Expect(out).To(HaveSuffix("exiting with code 0"))
		}
	})

	It("restarts a replica whose container exits 3, then fails it, with lastFailure from the kubelet's status", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "exit3")
		spec := realNodePod(5, workload("main", "--sleep", "2s", "--exit", "3"))
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 1, clique("worker", 1, spec))
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		var final *copsev1alpha1.PodCliqueSet
		Eventually(func(g Gomega) {
			final = env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(final.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		Expect(final.Status.RestartCount).To(Equal(int32(1)), "one restart, then the budget of 1 is spent")
		cond := failedCondition(final)
		Expect(cond).NotTo(BeNil())
		Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonMaxRestartsExceeded))

		By("recording, as lastFailure, the exit the kubelet wrote for the second attempt's pod")
		failure := final.Status.LastFailure
		Expect(failure).NotTo(BeNil())
		Expect(failure.Attempt).To(Equal(int32(1)))
		Expect(failure.Container).To(Equal("main"))
		Expect(failure.ExitCode).To(Equal(ptr.To(int32(3))))
		Expect(failure.Reason).To(Equal("Error"))
		Expect(failure.Node).To(Equal(env.Cluster.RealNodeNames()[0]))
		pod := &corev1.Pod{}
		Expect(env.Client.Get(ctx, objectKey(ns, failure.Pod), pod)).To(Succeed(), "the failed pod is kept for its logs")
		status := expectWrittenByKubelet(Default, pod, "main", 3)
		Expect(failure.FinishedAt).NotTo(BeNil())
		Expect(failure.FinishedAt.Equal(&status.FinishedAt)).To(BeTrue(), "lastFailure.finishedAt %s, the kubelet's %s", failure.FinishedAt, status.FinishedAt)
		Expect(logs(ctx, Default, pod, "main")).To(HaveSuffix("exiting with code 3"))
	})
})
