package training_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// incompleteGangTimeout is the training suite's
// scheduler.incompleteGangTimeout (suite_test.go).
const incompleteGangTimeout = 15 * time.Second

// nowhere is a node selector no node of the cluster matches.
var nowhere = map[string]string{"copse.dev/e2e-nowhere": "true"}

// describeGangs says, for a failure message, where the workload's pods
// and PodGroups are: each pod's attempt, node, phase, scheduling gates and
// PodScheduled condition, and each PodGroup's minCount and conditions.
func describeGangs(ctx context.Context, g Gomega, namespace, name string) string {
	var parts []string
	for _, p := range env.Pods(ctx, g, namespace, name) {
		part := fmt.Sprintf("pod %s attempt %s on %q %s gates=%d", p.Name, p.Labels[labels.AttemptKey], p.Spec.NodeName, p.Status.Phase, len(p.Spec.SchedulingGates))
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				part += fmt.Sprintf(" PodScheduled=%s %s %q", c.Status, c.Reason, c.Message)
			}
		}
		if p.DeletionTimestamp != nil {
			part += " deleting"
		}
		parts = append(parts, part)
	}
	var groups schedulingv1beta1.PodGroupList
	g.Expect(env.Client.List(ctx, &groups, client.InNamespace(namespace))).To(Succeed())
	for _, pg := range groups.Items {
		part := "PodGroup " + pg.Name
		if gang := pg.Spec.SchedulingPolicy.Gang; gang != nil {
			part += fmt.Sprintf(" minCount=%d", gang.MinCount)
		}
		for _, c := range pg.Status.Conditions {
			part += fmt.Sprintf(" %s=%s %s at %s %q", c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message)
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

func gangsScheduled(ctx context.Context, g Gomega, namespace, name string) *metav1.Condition {
	return meta.FindStatusCondition(env.GetPodCliqueSet(ctx, g, namespace, name).Status.Conditions, copsev1alpha1.ConditionTypePodGangsScheduled)
}

// setNodeSelector sets the node selector of a clique's pods in the
// PodCliqueSet's template (allowed while it is suspended and not running).
func setNodeSelector(ctx context.Context, namespace, name, clique string, selector map[string]string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pcs := env.GetPodCliqueSet(ctx, g, namespace, name)
		patch := client.MergeFrom(pcs.DeepCopy())
		for _, c := range pcs.Spec.Template.Cliques {
			if c.Name == clique {
				c.Spec.PodSpec.NodeSelector = selector
			}
		}
		g.Expect(env.Client.Patch(ctx, pcs, patch)).To(Succeed())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

var _ = Describe("A gang placed with the wrong mix", Label("training"), func() {
	It("is reported, its pods recreated after the bound without a restart, and after a suspension its new run's gangs are described", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "wrong-mix")
		leader := framework.CliqueTemplate("leader", 1, framework.PodSpec(0))
		leader.Spec.PodSpec.NodeSelector = nowhere
		worker := framework.CliqueTemplate("worker", 4, framework.PodSpec(0))
		worker.Spec.MinAvailable = ptr.To[int32](3)
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 0, leader, worker)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		By("the scheduler fills the gang's minCount with workers; the leader cannot be placed: reported, naming the leader")
		Eventually(func(g Gomega) {
			cond := gangsScheduled(ctx, g, ns, "job")
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonGangPlacedIncomplete))
			g.Expect(cond.Message).To(ContainSubstring("job-0-leader (0 of minAvailable 1 placed)"))
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhasePending))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("after scheduler.incompleteGangTimeout, the replica's pods are recreated, freeing the nodes, and no restart is counted")
		Eventually(func(g Gomega) {
			got := env.GetPodCliqueSet(ctx, g, ns, "job")
			g.Expect(got.Status.ReplicaRecreations).To(ContainElement(And(
				HaveField("Reason", copsev1alpha1.RecreationReasonIncompletePlacement), HaveField("Attempt", BeNumerically(">=", 1)))))
			g.Expect(got.Status.RestartCount).To(BeZero())
			g.Expect(failedCondition(got)).To(BeNil())
			g.Expect(env.EventsWithReason(ctx, g, ns, "GangPlacedIncomplete")).NotTo(BeEmpty())
			for _, p := range env.Pods(ctx, g, ns, "job") {
				g.Expect(p.Labels[labels.AttemptKey]).NotTo(Equal("0"), "pod %s of the first run is still there", p.Name)
			}
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("suspended, the leader's node selector fixed, and resumed: the new run is placed whole")
		setSuspend(ctx, ns, "job", true)
		Eventually(func(g Gomega) {
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty())
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.StartTime).To(BeNil())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		setNodeSelector(ctx, ns, "job", "leader", nil)
		setSuspend(ctx, ns, "job", false)
		Eventually(func(g Gomega) {
			cond := gangsScheduled(ctx, g, ns, "job")
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonAllGangsScheduled), "PodGangsScheduled: %s; %s", cond.Message, describeGangs(ctx, g, ns, "job"))
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseRunning))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		By("suspended again, every pod sent nowhere, resumed: the condition describes the new run, not the kept PodGroup's old verdict")
		setSuspend(ctx, ns, "job", true)
		Eventually(func(g Gomega) {
			g.Expect(activePods(ctx, g, ns, "job")).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
		setNodeSelector(ctx, ns, "job", "leader", nowhere)
		setNodeSelector(ctx, ns, "job", "worker", nowhere)
		setSuspend(ctx, ns, "job", false)
		Eventually(func(g Gomega) {
			cond := gangsScheduled(ctx, g, ns, "job")
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "PodGangsScheduled %s: %s", cond.Reason, cond.Message)
			g.Expect(cond.Reason).To(Equal(copsev1alpha1.ReasonGangUnschedulable))
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	})
})
