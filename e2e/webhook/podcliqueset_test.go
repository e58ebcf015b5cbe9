package webhook_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

const validatePodCliqueSet = "validate.podcliquesets.grove.io"

var _ = Describe("PodCliqueSet admission", Label("webhook"), func() {
	var namespace string

	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "pcs")
	})

	// stored reads back what the API server stored for pcs.
	stored := func(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet) *copsev1alpha1.PodCliqueSet {
		got := &copsev1alpha1.PodCliqueSet{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), got)).To(Succeed())
		return got
	}

	It("stores an Inference PodCliqueSet with Grove's defaults", func(ctx context.Context) {
		pcs := newPodCliqueSet(namespace, "serve", "")
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		got := stored(ctx, pcs)
		Expect(got.Spec.WorkloadType).To(Equal(copsev1alpha1.WorkloadTypeInference))
		Expect(got.Spec.UpdateStrategy).To(Equal(&grovecorev1alpha1.PodCliqueSetUpdateStrategy{Type: grovecorev1alpha1.RollingRecreateStrategy}))
		template := got.Spec.Template
		Expect(template.TerminationDelay).To(Equal(&metav1.Duration{Duration: 4 * time.Hour}))
		Expect(template.StartupType).To(Equal(ptr.To(grovecorev1alpha1.CliqueStartupTypeAnyOrder)))
		Expect(template.HeadlessServiceConfig).To(Equal(&grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: true}))
		for _, c := range template.Cliques {
			Expect(c.Spec.MinAvailable).To(Equal(ptr.To(c.Spec.Replicas)), "clique %s: minAvailable defaults to replicas", c.Name)
			Expect(c.Spec.PodSpec.RestartPolicy).To(Equal(corev1.RestartPolicyAlways), "clique %s", c.Name)
			Expect(c.Spec.PodSpec.TerminationGracePeriodSeconds).To(Equal(ptr.To[int64](30)), "clique %s", c.Name)
		}
		group := template.PodCliqueScalingGroupConfigs[0]
		Expect(group.Replicas).To(Equal(ptr.To[int32](1)))
		Expect(group.MinAvailable).To(Equal(ptr.To[int32](1)))
	})

	It("stores a Training PodCliqueSet with no termination delay and pods that are not restarted in place", func(ctx context.Context) {
		pcs := newPodCliqueSet(namespace, "train", copsev1alpha1.WorkloadTypeTraining)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		got := stored(ctx, pcs)
		Expect(got.Spec.Template.TerminationDelay).To(Equal(&metav1.Duration{}))
		for _, c := range got.Spec.Template.Cliques {
			Expect(c.Spec.PodSpec.RestartPolicy).To(Equal(corev1.RestartPolicyNever), "clique %s", c.Name)
		}
	})

	It("keeps the values the user set", func(ctx context.Context) {
		pcs := newPodCliqueSet(namespace, "custom", copsev1alpha1.WorkloadTypeTraining)
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: 30 * time.Minute}
		pcs.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](2)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		got := stored(ctx, pcs)
		Expect(got.Spec.Template.TerminationDelay).To(Equal(&metav1.Duration{Duration: 30 * time.Minute}))
		Expect(got.Spec.Template.Cliques[1].Spec.MinAvailable).To(Equal(ptr.To[int32](2)))
	})

	It("keeps a restart policy the user set on an Inference PodCliqueSet", func(ctx context.Context) {
		pcs := newPodCliqueSet(namespace, "custom-inference", copsev1alpha1.WorkloadTypeInference)
		pcs.Spec.Template.Cliques[1].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		got := stored(ctx, pcs)
		Expect(got.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy).To(Equal(corev1.RestartPolicyAlways))
		Expect(got.Spec.Template.Cliques[1].Spec.PodSpec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	})

	DescribeTable("rejects an invalid PodCliqueSet, naming the field and the rule",
		func(ctx context.Context, change func(*copsev1alpha1.PodCliqueSet), fragments ...string) {
			pcs := newPodCliqueSet(namespace, "invalid", "")
			change(pcs)
			expectDenial(env.Client.Create(ctx, pcs), validatePodCliqueSet, fragments...)
		},
		Entry("a Training clique restarted in place by the kubelet", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
			p.Spec.Template.Cliques[1].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyAlways
		}, `spec.template.cliques[1].spec.podSpec.restartPolicy: Invalid value: "Always": must be Never when the workload is Training`),
		Entry("minAvailable above replicas", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](5)
		}, "spec.template.cliques[1].spec.minAvailable: Invalid value: 5: must not be greater than spec.template.cliques[1].spec.replicas (3)"),
		Entry("a clique name that cannot be part of a hostname", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Name = "Leader_0"
		}, `spec.template.cliques[0].name: Invalid value: "Leader_0": a lowercase RFC 1123 label`),
		Entry("a scaling group naming a missing clique", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"worker", "ghost"}
		}, `spec.template.podCliqueScalingGroups[0].cliqueNames[1]: Invalid value: "ghost": must name a clique of spec.template.cliques`),
		Entry("a clique in two scaling groups", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs,
				grovecorev1alpha1.PodCliqueScalingGroupConfig{Name: "prefill", CliqueNames: []string{"worker"}})
		}, `spec.template.podCliqueScalingGroups[1].cliqueNames[0]: Invalid value: "worker": clique already belongs to spec.template.podCliqueScalingGroups[0]`),
		Entry("a cycle of startsAfter", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeExplicit)
			p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"worker"}
			p.Spec.Template.Cliques[1].Spec.StartsAfter = []string{"leader"}
		}, `spec.template.cliques[0].spec.startsAfter: Invalid value: "leader -> worker -> leader": startsAfter must not form a cycle`),
		Entry("pod hostnames longer than a DNS label", func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Name = longName(55)
		}, `spec.template.cliques[0].name: Invalid value: "`+longName(55)+`": generated pod hostnames such as`, "over the limit of 63"),
	)

	It("accepts a new pod template and rejects changes to what is fixed at creation", func(ctx context.Context) {
		pcs := newPodCliqueSet(namespace, "evolve", "")
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		Expect(update(ctx, pcs, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "example.com/llm:2"
		})).To(Succeed())

		expectDenial(update(ctx, pcs, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, clique("router", 1))
		}), validatePodCliqueSet, `spec.template.cliques[2].name: Forbidden: cliques cannot be added or renamed after creation`)

		expectDenial(update(ctx, pcs, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.RoleName = "trainer"
		}), validatePodCliqueSet, `spec.template.cliques[1].spec.roleName: Invalid value: "trainer": field is immutable`)

		expectDenial(update(ctx, pcs, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
		}), validatePodCliqueSet, `spec.template.cliqueStartupType: Invalid value: "CliqueStartupTypeInOrder": field is immutable`)

		expectDenial(update(ctx, pcs, func(p *copsev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"worker", "leader"}
		}), validatePodCliqueSet, "spec.template.podCliqueScalingGroups[0].cliqueNames", "the members of a scaling group cannot change")
	})
})
