package training_test

import (
	"context"
	"reflect"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Admission of changes to Training workloads (GREP-0285, "Validating
// Webhook"): neither scaled nor rolled out, at any level. Some rules are the
// CRD's CEL rules, the others the operator's validating webhooks; each
// assertion says which, and checks that the message names the field.
var _ = Describe("Training admission (webhook)", Label("training"), Ordered, func() {
	const (
		validatePodCliqueSet          = "validate.podcliquesets.grove.io"
		validatePodClique             = "validate.podcliques.grove.io"
		validatePodCliqueScalingGroup = "validate.podcliquescalinggroups.grove.io"
		validatePodCliqueScale        = "validate-scale.podcliques.grove.io"
		childrenWait                  = 2 * time.Minute
	)

	var (
		namespace string
		// The Training PodCliqueSet "job" and its children: the standalone
		// PodClique of clique "leader", the PodCliqueScalingGroup "decode",
		// and the PodClique of clique "worker" in that group.
		job                        *copsev1alpha1.PodCliqueSet
		jobLeader, jobWorker       *copsev1alpha1.PodClique
		jobDecode                  *copsev1alpha1.PodCliqueScalingGroup
		serve                      *copsev1alpha1.PodCliqueSet
		serveLeader                *copsev1alpha1.PodClique
		trainingOwner              string
		replicasImmutableInWebhook string
	)

	// newSet is a PodCliqueSet with a standalone clique "leader" (1 pod)
	// and a clique "worker" (2 pods) in scaling group "decode". Its pods
	// carry no simulation annotations, so they run until deleted.
	newSet := func(name string, workloadType copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
		pcs := framework.NewPodCliqueSet(namespace, name, 1,
			framework.CliqueTemplate("leader", 1, framework.PodSpec(0)),
			framework.CliqueTemplate("worker", 2, framework.PodSpec(0)))
		pcs.Spec.WorkloadType = workloadType
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "decode", CliqueNames: []string{"worker"}},
		}
		return pcs
	}

	// podCliqueOf waits for the PodClique of clique in pcs, found by label.
	podCliqueOf := func(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, clique string) *copsev1alpha1.PodClique {
		GinkgoHelper()
		var found *copsev1alpha1.PodClique
		Eventually(func(g Gomega) {
			var list copsev1alpha1.PodCliqueList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(namespace),
				client.MatchingLabels{labels.PartOfKey: pcs.Name, labels.CliqueTemplateKey: clique})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1), "PodCliques of clique %s", clique)
			found = &list.Items[0]
		}).WithContext(ctx).WithTimeout(childrenWait).Should(Succeed())
		return found
	}

	scalingGroupOf := func(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueScalingGroup {
		GinkgoHelper()
		var found *copsev1alpha1.PodCliqueScalingGroup
		Eventually(func(g Gomega) {
			var list copsev1alpha1.PodCliqueScalingGroupList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{labels.PartOfKey: pcs.Name})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			found = &list.Items[0]
			g.Expect(found.OwnerReferences).To(ContainElement(HaveField("UID", pcs.UID)))
		}).WithContext(ctx).WithTimeout(childrenWait).Should(Succeed())
		return found
	}

	BeforeAll(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "admission")
		trainingOwner = "the owning PodCliqueSet " + namespace + "/job has workloadType Training"
		replicasImmutableInWebhook = "spec.replicas: Forbidden: is immutable because " + trainingOwner

		job = newSet("job", copsev1alpha1.WorkloadTypeTraining)
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		serve = newSet("serve", copsev1alpha1.WorkloadTypeInference)
		Expect(env.Client.Create(ctx, serve)).To(Succeed())

		jobLeader = podCliqueOf(ctx, job, "leader")
		jobDecode = scalingGroupOf(ctx, job)
		jobWorker = podCliqueOf(ctx, job, "worker")
		serveLeader = podCliqueOf(ctx, serve, "leader")
	})

	It("rejects a replica change of the PodCliqueSet, its PodCliqueScalingGroup and its PodCliques", func(ctx context.Context) {
		By("the PodCliqueSet: the CRD's CEL rule")
		err := webhookSpecUpdate(ctx, job, func(p *copsev1alpha1.PodCliqueSet) { p.Spec.Replicas = 2 })
		framework.ExpectAdmissionInvalid(err, "", "spec.replicas", "spec.replicas is immutable when spec.workloadType is Training")

		By("a clique and the scaling group in the PodCliqueSet's template")
		err = webhookSpecUpdate(ctx, job, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.Replicas = 2
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](2)
		})
		framework.ExpectAdmissionInvalid(err, validatePodCliqueSet,
			"spec.template.cliques[0].spec.replicas: Forbidden: is immutable when spec.workloadType is Training",
			"spec.template.podCliqueScalingGroups[0].replicas: Forbidden: is immutable when spec.workloadType is Training")

		By("the PodCliqueScalingGroup")
		err = webhookSpecUpdate(ctx, jobDecode, func(p *copsev1alpha1.PodCliqueScalingGroup) { p.Spec.Replicas = 2 })
		framework.ExpectAdmissionInvalid(err, validatePodCliqueScalingGroup, replicasImmutableInWebhook)

		By("the standalone PodClique")
		err = webhookSpecUpdate(ctx, jobLeader, func(p *copsev1alpha1.PodClique) { p.Spec.Replicas = 2 })
		framework.ExpectAdmissionInvalid(err, validatePodClique, replicasImmutableInWebhook)

		By("the PodClique of the scaling group, whose owner is found through the group")
		err = webhookSpecUpdate(ctx, jobWorker, func(p *copsev1alpha1.PodClique) { p.Spec.Replicas = 1 })
		framework.ExpectAdmissionInvalid(err, validatePodClique, replicasImmutableInWebhook)

		By("the PodClique's scale subresource, as kubectl scale does")
		scale := &autoscalingv1.Scale{}
		Expect(env.Client.SubResource("scale").Get(ctx, jobLeader, scale)).To(Succeed())
		scale.Spec.Replicas = 3
		err = env.Client.SubResource("scale").Update(ctx, jobLeader, client.WithSubResourceBody(scale))
		framework.ExpectAdmissionInvalid(err, validatePodCliqueScale, replicasImmutableInWebhook)

		By("nothing changed")
		leader, decode := fresh(jobLeader), fresh(jobDecode)
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(jobLeader), leader)).To(Succeed())
		Expect(leader.Spec.Replicas).To(Equal(int32(1)))
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(jobDecode), decode)).To(Succeed())
		Expect(decode.Spec.Replicas).To(Equal(int32(1)))
		current := env.GetPodCliqueSet(ctx, Default, namespace, job.Name)
		Expect(current.Spec.Replicas).To(Equal(int32(1)))
	})

	It("rejects a pod template change, which would need a rolling update", func(ctx context.Context) {
		err := webhookSpecUpdate(ctx, job, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Image = "example.com/app:2"
		})
		framework.ExpectAdmissionInvalid(err, validatePodCliqueSet, "spec.template.cliques[1].spec.podSpec: Forbidden: "+
			"pod template changes are not allowed when spec.workloadType is Training "+
			"(they would need a rolling update, which Training workloads do not do)")

		err = webhookSpecUpdate(ctx, job, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels = map[string]string{"team": "research"}
		})
		framework.ExpectAdmissionInvalid(err, validatePodCliqueSet, "spec.template.cliques[0].labels: Forbidden: pod template changes are not allowed")
	})

	It("rejects autoscaling on a clique of the PodCliqueSet and on a PodClique", func(ctx context.Context) {
		By("a clique of the PodCliqueSet: the CRD's CEL rule")
		err := webhookSpecUpdate(ctx, job, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 2}
		})
		framework.ExpectAdmissionInvalid(err, "", "spec.template.cliques",
			"spec.template.cliques[].spec.autoScalingConfig is not allowed when spec.workloadType is Training")

		By("a PodClique")
		err = webhookSpecUpdate(ctx, jobLeader, func(p *copsev1alpha1.PodClique) {
			p.Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 2}
		})
		framework.ExpectAdmissionInvalid(err, validatePodClique, "spec.autoScalingConfig: Forbidden: is not allowed because "+trainingOwner)
	})

	It("rejects a kubelet restart policy, and changes of a Training PodClique's pods or minAvailable", func(ctx context.Context) {
		By("a new Training PodCliqueSet whose pods would restart in place")
		always := newSet("restarts-in-place", copsev1alpha1.WorkloadTypeTraining)
		always.Spec.Template.Cliques[1].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyAlways
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, always), validatePodCliqueSet,
			`spec.template.cliques[1].spec.podSpec.restartPolicy: Invalid value: "Always": must be Never when the workload is Training`)

		By("direct edits of a Training PodClique")
		err := webhookSpecUpdate(ctx, jobWorker, func(p *copsev1alpha1.PodClique) {
			p.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyAlways
		})
		framework.ExpectAdmissionInvalid(err, validatePodClique, "spec.podSpec.restartPolicy", "must be Never", "spec.podSpec: Forbidden: is immutable because "+trainingOwner)
		err = webhookSpecUpdate(ctx, jobLeader, func(p *copsev1alpha1.PodClique) {
			p.Spec.PodSpec.Containers[0].Image = "example.com/app:2"
		})
		framework.ExpectAdmissionInvalid(err, validatePodClique, "spec.podSpec: Forbidden: is immutable because "+trainingOwner)
		err = webhookSpecUpdate(ctx, jobWorker, func(p *copsev1alpha1.PodClique) { p.Spec.MinAvailable = ptr.To[int32](1) })
		framework.ExpectAdmissionInvalid(err, validatePodClique, "spec.minAvailable: Forbidden: is immutable because "+trainingOwner)
	})

	It("keeps the Training workload running, with the pods it was created with", func(ctx context.Context) {
		Eventually(func(g Gomega) {
			pods := env.LivePods(ctx, g, namespace, job.Name)
			g.Expect(pods).To(HaveLen(3))
			for i := range pods {
				g.Expect(framework.IsReady(&pods[i])).To(BeTrue(), "pod %s", pods[i].Name)
			}
		}).WithContext(ctx).WithTimeout(childrenWait).Should(Succeed())
	})

	It("accepts the same changes on an Inference PodCliqueSet in the same namespace", func(ctx context.Context) {
		Expect(webhookSpecUpdate(ctx, serveLeader, func(p *copsev1alpha1.PodClique) { p.Spec.Replicas = 2 })).To(Succeed())
		Expect(webhookSpecUpdate(ctx, serve, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Image = "example.com/app:2"
		})).To(Succeed())
	})
})

// webhookSpecUpdate reads the latest version of obj, applies change to it
// and updates it, again on a conflict: the operator's controllers write
// these objects too. obj itself is left as it was, so that a refused change
// does not linger in it.
func webhookSpecUpdate[T client.Object](ctx context.Context, obj T, change func(T)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := fresh(obj)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
			return err
		}
		change(latest)
		return env.Client.Update(ctx, latest)
	})
}

// fresh returns a new, empty object of obj's type: decoding into it leaves
// nothing from an earlier read.
func fresh[T client.Object](obj T) T {
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(T)
}
