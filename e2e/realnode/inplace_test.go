package realnode_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
	"github.com/copse-dev/copse/internal/podstate"
)

// inPlaceScript appends each start's attempt to a file of the pod's
// emptyDir; in attempt 0, index 0 exits 3 after 4 s (time for the spec to
// watch the others first) and the others run on (until the restart in
// place stops them); in attempt 1 every container prints the file and
// exits 0.
const inPlaceScript = `echo "$ATTEMPT" >> /work/starts
if [ "$ATTEMPT" = 0 ] && [ "$GROVE_PCLQ_POD_INDEX" = 0 ]; then sleep 4; exit 3; fi
if [ "$ATTEMPT" = 0 ]; then sleep 300; fi
cat /work/starts; sleep 1; exit 0`

// rank is container main running script with $ATTEMPT, the pod's
// copse.dev/attempt label as its container (re)started.
func rank(script string) corev1.Container {
	main := shell("main", script)
	main.Env = []corev1.EnvVar{{Name: "ATTEMPT", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + labels.AttemptKey + "']"}}}}
	return main
}

var _ = Describe("A Training PodCliqueSet restarted in place on a real node", Label("realnode"), func() {
	It("restarts the pod that ran in its pod, its emptyDir kept, through the kubelet's RestartAllContainers, and makes the failed one anew", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "inplace")
		main := rank(inPlaceScript)
		main.VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
		spec := realNodePod(5, main)
		spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 1, clique("worker", 2, spec))
		pcs.Spec.TrainingSpec.RestartStrategy = copsev1alpha1.TrainingRestartInPlace
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		var first []corev1.Pod
		Eventually(func(g Gomega) {
			first = env.Pods(ctx, g, ns, "job")
			g.Expect(first).To(HaveLen(2))
			for _, p := range first {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			}
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		var kept corev1.Pod
		for _, p := range first {
			if p.Labels[labels.PodIndexKey] == "1" {
				kept = p
			}
		}
		Expect(kept.Name).NotTo(BeEmpty())
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		timeline := followRestart(watchCtx, ns, kept.Name, "1")

		final := &copsev1alpha1.PodCliqueSet{}
		Eventually(func(g Gomega) {
			final = expectPhase(ctx, g, ns, "job", copsev1alpha1.PodCliqueSetPhaseSucceeded)
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		Expect(final.Status.RestartCount).To(Equal(int32(1)))
		Expect(final.Status.ReplicaRecreations).To(ConsistOf(And(HaveField("InPlace", BeTrue()), HaveField("BarrierLiftedAt", Not(BeNil())))))

		By("reading the kept pod: the same pod on the same node, every container restarted once by the kubelet, its volume kept")
		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			pods = env.Pods(ctx, g, ns, "job")
			g.Expect(pods).To(HaveLen(2))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s", p.Name)
			}
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		var after corev1.Pod
		for _, p := range pods {
			if p.UID == kept.UID {
				after = p
			}
		}
		Expect(after.Name).To(Equal(kept.Name), "the pod that ran was kept")
		Expect(after.Spec.NodeName).To(Equal(kept.Spec.NodeName))
		Expect(after.Labels[labels.AttemptKey]).To(Equal("1"))
		for _, statuses := range [][]corev1.ContainerStatus{after.Status.InitContainerStatuses, after.Status.ContainerStatuses} {
			for _, cs := range statuses {
				Expect(cs.RestartCount).To(Equal(int32(1)), "container %s", cs.Name)
				Expect(cs.LastTerminationState.Terminated).NotTo(BeNil(), "container %s", cs.Name)
				Expect(cs.LastTerminationState.Terminated.Reason).To(Equal(podstate.ReasonRestartingAllContainers), "container %s", cs.Name)
			}
		}
		Expect(strings.Fields(logs(ctx, Default, &after, "main"))).To(HaveExactElements("0", "1"), "the emptyDir holds both starts")

		By("timing the kubelet's half of the restart in place, which the simulated kubelet reproduces")
		var seen restartTimeline
		stopWatch() // the pod succeeded: its restart is long over
		Eventually(timeline).WithTimeout(realNodeWait).Should(Receive(&seen))
		fmt.Fprintf(GinkgoWriter, "the kept pod from its move:\n%s\n", strings.Join(seen.history, "\n"))
		Expect(seen.complete()).To(BeTrue(), "the watch saw every step: %s", seen)
		Expect(seen.restarting).To(BeTemporally(">", seen.moved), "the kubelet restarts the pod after the move")
		Expect(seen.rerun).To(BeTemporally(">=", seen.stopped))
		fmt.Fprintf(GinkgoWriter, "calibration: restart in place on a real kubelet: %s\n", seen)
		AddReportEntry("restart in place on a real kubelet", seen.String())

		By("ending copse's restart agent with exit 0 when the kubelet stops it at the pod's end: it handles SIGTERM, so no failure rule ever sees a 137 of copse's")
		for _, p := range pods {
			Expect(p.Status.InitContainerStatuses).To(ContainElement(And(HaveField("Name", labels.RestartAgentContainer),
				HaveField("State.Terminated.ExitCode", BeEquivalentTo(0)))), "pod %s", p.Name)
		}
	})
})

// peerCrashScript is a rank of a distributed job: in attempt 0, index 0
// fails after 4 s and index 1's old process crashes 2 s later, as a rank
// does whose peer is gone (a rendezvous or NCCL connection lost), often
// after copse moved it to the restart but before the kubelet restarted it;
// index 2 runs on. In attempt 1 every rank exits 0.
const peerCrashScript = `if [ "$ATTEMPT" = 0 ] && [ "$GROVE_PCLQ_POD_INDEX" = 0 ]; then sleep 4; exit 3; fi
if [ "$ATTEMPT" = 0 ] && [ "$GROVE_PCLQ_POD_INDEX" = 1 ]; then sleep 6; exit 1; fi
if [ "$ATTEMPT" = 0 ]; then sleep 300; fi
sleep 1; exit 0`

var _ = Describe("A rank whose old process crashes after its peer, during a restart in place on a real node", Label("realnode"), func() {
	It("is the previous attempt's failure: one incident is one restart, and the job succeeds with maxRestarts 1", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "peercrash")
		main := rank(peerCrashScript)
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 1, clique("worker", 3, realNodePod(5, main)))
		pcs.Spec.TrainingSpec.RestartStrategy = copsev1alpha1.TrainingRestartInPlace
		seen := watchPods(ctx, ns)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		var crashing corev1.Pod
		Eventually(func(g Gomega) {
			for _, p := range env.Pods(ctx, g, ns, "job") {
				if p.Labels[labels.PodIndexKey] == "1" {
					crashing = p
				}
			}
			g.Expect(crashing.Name).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())

		final := &copsev1alpha1.PodCliqueSet{}
		Eventually(func(g Gomega) {
			final = env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(final.Status.Phase).To(BeElementOf(copsev1alpha1.PodCliqueSetPhaseSucceeded, copsev1alpha1.PodCliqueSetPhaseFailed))
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		Expect(final.Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseSucceeded), "conditions %+v", final.Status.Conditions)
		Expect(final.Status.RestartCount).To(Equal(int32(1)), "one incident, one restart")
		Expect(final.Status.ReplicaRecreations).To(ConsistOf(HaveField("InPlace", BeTrue())))

		end := seen.last(crashing.UID)
		Expect(end).NotTo(BeNil())
		fmt.Fprintf(GinkgoWriter, "the crashing rank's pod, last seen: phase %s, attempt %q, restarts at move %q, container restarts %d\n",
			end.Status.Phase, end.Labels[labels.AttemptKey], end.Annotations[labels.RestartsAtMoveAnnotation], podstate.ContainerRestarts(end))
	})
})
