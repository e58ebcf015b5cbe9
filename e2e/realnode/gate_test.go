package realnode_test

import (
	"context"
	"fmt"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/blueprint"
	"github.com/copse-dev/copse/internal/labels"
)

var _ = Describe("The startup gate on a real node", Label("realnode"), func() {
	It("holds a clique's containers until the annotation opens it, through the downward-API file the kubelet refreshes", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "gate")
		// The leader turns Ready (a real exec readiness probe) only after
		// 8 seconds, so that the worker's gate is seen closed first.
		leader := shell("main", "sleep 8; touch /tmp/ready; exec copse-workload --sleep 15s")
		leader.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}},
			PeriodSeconds: 1,
		}
		worker := workload("main", "--sleep", "1s", "--exit", "0")
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 0,
			clique("leader", 1, realNodePod(5, leader)), clique("worker", 1, realNodePod(5, worker)))
		pcs.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("seeing the worker's gate container run on the real node, and nothing else of the worker")
		Eventually(func(g Gomega) {
			pod := cliquePod(ctx, g, ns, "job", "worker")
			g.Expect(pod.Annotations).To(HaveKeyWithValue(labels.StartupGateAnnotation, labels.StartupGateClosed))
			g.Expect(pod.Status.InitContainerStatuses).NotTo(BeEmpty())
			gate := pod.Status.InitContainerStatuses[0]
			g.Expect(gate.Name).To(Equal(blueprint.StartupGateContainer))
			g.Expect(gate.State.Running).NotTo(BeNil(), "the gate container runs")
			g.Expect(gate.ContainerID).To(HavePrefix("containerd://"))
			g.Expect(pod.Status.ContainerStatuses[0].State.Running).To(BeNil())
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		Consistently(func(g Gomega) {
			pod := cliquePod(ctx, g, ns, "job", "worker")
			if pod.Annotations[labels.StartupGateAnnotation] == labels.StartupGateClosed {
				g.Expect(pod.Status.ContainerStatuses[0].State.Running).To(BeNil(), "the worker started behind a closed gate")
				g.Expect(pod.Status.ContainerStatuses[0].State.Terminated).To(BeNil(), "the worker ran behind a closed gate")
			}
		}).WithContext(ctx).WithTimeout(3 * time.Second).Should(Succeed())

		By("opening the gate once the leader is Ready, and seeing the kubelet let the gate container end")
		var opened time.Time
		Eventually(func(g Gomega) {
			pod := cliquePod(ctx, g, ns, "job", "worker")
			g.Expect(pod.Annotations).To(HaveKeyWithValue(labels.StartupGateAnnotation, labels.StartupGateOpen))
		}).WithContext(ctx).WithTimeout(realNodeWait).WithPolling(200 * time.Millisecond).Should(Succeed())
		opened = time.Now()
		var gateDone *corev1.ContainerStateTerminated
		Eventually(func(g Gomega) {
			pod := cliquePod(ctx, g, ns, "job", "worker")
			gateDone = expectWrittenByKubelet(g, pod, blueprint.StartupGateContainer, 0)
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		delay := gateDone.FinishedAt.Sub(opened).Round(time.Second)
		AddReportEntry("gate opened to gate container finished", delay.String())
		fmt.Fprintf(GinkgoWriter, "the gate container ended %s after the annotation was seen open\n", delay)

		By("running the worker to its end, and the workload to Succeeded")
		Eventually(func(g Gomega) {
			expectPhase(ctx, g, ns, "job", copsev1alpha1.PodCliqueSetPhaseSucceeded)
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		pods := env.Pods(ctx, Default, ns, "job")
		Expect(pods).To(HaveLen(2))
		for i := range pods {
			if pods[i].Labels[labels.CliqueTemplateKey] != "worker" {
				continue
			}
			main := expectWrittenByKubelet(Default, &pods[i], "main", 0)
			Expect(main.StartedAt.Before(&gateDone.FinishedAt)).To(BeFalse(), "the worker started before its gate ended")
		}
	})
})
