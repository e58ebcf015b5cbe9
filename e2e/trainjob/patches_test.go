package trainjob_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

const (
	placementManager = "e2e.copse.dev/placement"
	teamLabel        = "e2e.copse.dev/team"
	trainJobWebhook  = "validate.trainjobs.trainer.kubeflow.org"
)

var dedicatedToleration = corev1.Toleration{Key: "e2e.copse.dev/dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

// placementPatch labels the trainer's pods with a team and keeps them on one
// rack, tolerating a taint the nodes could have.
func placementPatch(team, rack string) trainerv1alpha1.RuntimePatch {
	return trainerv1alpha1.RuntimePatch{
		Manager: placementManager,
		TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{Template: &trainerv1alpha1.JobSetTemplatePatch{
			Spec: &trainerv1alpha1.JobSetSpecPatch{ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{
				Name: "node",
				Template: &trainerv1alpha1.JobTemplatePatch{Spec: &trainerv1alpha1.JobSpecPatch{
					Template: &trainerv1alpha1.PodTemplatePatch{
						Metadata: &metav1.ObjectMeta{Labels: map[string]string{teamLabel: team}},
						Spec: &trainerv1alpha1.PodSpecPatch{
							NodeSelector: map[string]string{cluster.LabelRack: rack},
							Tolerations:  []corev1.Toleration{dedicatedToleration},
						},
					},
				}},
			}}},
		}},
	}
}

// lastRack is the rack label of the cluster's last node.
func lastRack(ctx context.Context) string {
	GinkgoHelper()
	nodes := &corev1.NodeList{}
	Expect(env.Client.List(ctx, nodes, client.MatchingLabels{cluster.LabelType: cluster.TypeKwok})).To(Succeed())
	Expect(nodes.Items).NotTo(BeEmpty())
	return nodes.Items[len(nodes.Items)-1].Labels[cluster.LabelRack]
}

// expectPlaced checks that the pods carry the placement patch and run on
// its rack.
func expectPlaced(ctx context.Context, pods []corev1.Pod, team, rack string) {
	GinkgoHelper()
	for _, p := range pods {
		Expect(p.Labels).To(HaveKeyWithValue(teamLabel, team), "pod %s", p.Name)
		Expect(p.Spec.NodeSelector).To(HaveKeyWithValue(cluster.LabelRack, rack), "pod %s", p.Name)
		Expect(p.Spec.Tolerations).To(ContainElement(dedicatedToleration), "pod %s", p.Name)
		node := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node)).To(Succeed())
		Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelRack, rack), "pod %s runs on node %s", p.Name, node.Name)
	}
}

// patchTime is the time of the TrainJob's runtime patch of a manager.
func patchTime(tj *trainerv1alpha1.TrainJob, manager string) *metav1.Time {
	GinkgoHelper()
	for _, p := range tj.Spec.RuntimePatches {
		if p.Manager == manager {
			return p.Time
		}
	}
	Fail("no runtime patch of manager " + manager)
	return nil
}

// placedTrainJob creates, in a new namespace, a torch TrainJob of nodes
// pods that run until deleted, with the placement patch of team "vision" on
// the cluster's last rack.
func placedTrainJob(ctx context.Context, prefix string, nodes int32) (*trainerv1alpha1.TrainJob, string) {
	GinkgoHelper()
	rack := lastRack(ctx)
	tj := sdkTrainJob(env.NewNamespace(ctx, prefix), "train", "torch-distributed", nodes)
	tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, placementPatch("vision", rack))
	Expect(env.Client.Create(ctx, tj)).To(Succeed())
	return tj, rack
}

var _ = Describe("runtimePatches", Label("trainjob"), func() {
	It("reach the pods: labels, nodeSelector and tolerations", func(ctx context.Context) {
		tj, rack := placedTrainJob(ctx, "patch", 2)

		expectPlaced(ctx, runningPods(ctx, tj, "node", 2), "vision", rack)
	})

	It("are refused to change while the TrainJob runs", func(ctx context.Context) {
		tj, rack := placedTrainJob(ctx, "patch-running", 1)
		runningPods(ctx, tj, "node", 1)

		got := getTrainJob(ctx, tj)
		got.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{placementPatch("audio", rack)}
		framework.ExpectAdmissionInvalid(env.Client.Update(ctx, got), trainJobWebhook,
			"spec.runtimePatches", "only be modified when the TrainJob is suspended")
		Expect(getTrainJob(ctx, tj).Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs[0].
			Template.Spec.Template.Metadata.Labels).To(HaveKeyWithValue(teamLabel, "vision"))
	})

	It("change while the TrainJob is suspended, stamped with the time of the change, and the resumed JobSet carries them", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "patch-suspended")
		rack := lastRack(ctx)
		tj := sdkTrainJob(ns, "train", "torch-distributed", 2)
		tj.Spec.Suspend = ptr.To(true)
		withPods(tj, "node", simulate(2*time.Second, "0"))
		tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, placementPatch("vision", rack))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		By("stamping every patch with its creation time")
		created := getTrainJob(ctx, tj)
		simulationTime, placementTime := patchTime(created, simulationManager), patchTime(created, placementManager)
		Expect(simulationTime).NotTo(BeNil())
		Expect(placementTime).NotTo(BeNil())
		Expect(placementTime.Time).To(BeTemporally("~", created.CreationTimestamp.Time, time.Second))
		js := waitJobSet(ctx, tj)
		Expect(js.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels).To(HaveKeyWithValue(teamLabel, "vision"))

		By("changing the placement patch while suspended, sending no times")
		time.Sleep(time.Until(placementTime.Add(1100 * time.Millisecond))) // times are stored in whole seconds
		Eventually(func(g Gomega) {
			got := getTrainJob(ctx, tj)
			for i := range got.Spec.RuntimePatches {
				got.Spec.RuntimePatches[i].Time = nil
				if got.Spec.RuntimePatches[i].Manager == placementManager {
					got.Spec.RuntimePatches[i] = placementPatch("audio", rack)
				}
			}
			g.Expect(env.Client.Update(ctx, got)).To(Succeed())
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		updated := getTrainJob(ctx, tj)
		Expect(patchTime(updated, simulationManager)).To(HaveValue(Equal(*simulationTime)), "the unchanged patch keeps its time")
		Expect(patchTime(updated, placementManager).Time).To(BeTemporally(">", placementTime.Time), "the changed patch has a new time")

		By("rebuilding the JobSet with the change, and running pods with it once resumed")
		Eventually(func(g Gomega) {
			js, err := jobSetOf(ctx, tj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(js.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels).To(HaveKeyWithValue(teamLabel, "audio"))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		setSuspend(ctx, tj, false)
		expectPlaced(ctx, runningPods(ctx, tj, "node", 2), "audio", rack)
		waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
	})
})
