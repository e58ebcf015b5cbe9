package webhook_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

var _ = Describe("PodClique and PodCliqueScalingGroup admission", Label("webhook"), func() {
	var namespace string

	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "pclq")
	})

	newPodClique := func(name string, replicas, minAvailable int32) *copsev1alpha1.PodClique {
		return &copsev1alpha1.PodClique{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: grovecorev1alpha1.PodCliqueSpec{RoleName: "worker", Replicas: replicas,
				MinAvailable: ptr.To(minAvailable), PodSpec: podSpec()},
		}
	}
	newScalingGroup := func(name string, replicas, minAvailable int32, cliques ...string) *copsev1alpha1.PodCliqueScalingGroup {
		return &copsev1alpha1.PodCliqueScalingGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec: grovecorev1alpha1.PodCliqueScalingGroupSpec{Replicas: replicas,
				MinAvailable: ptr.To(minAvailable), CliqueNames: cliques},
		}
	}

	It("bounds a PodClique's minAvailable by its replicas, on create and on scale-down", func(ctx context.Context) {
		expectDenial(env.Client.Create(ctx, newPodClique("too-few", 2, 3)), "validate.podcliques.grove.io",
			"spec.minAvailable: Invalid value: 3: must not be greater than spec.replicas (2)")

		pclq := newPodClique("worker", 3, 2)
		Expect(env.Client.Create(ctx, pclq)).To(Succeed())
		Expect(update(ctx, pclq, func(p *copsev1alpha1.PodClique) { p.Spec.Replicas = 4 })).To(Succeed())
		expectDenial(update(ctx, pclq, func(p *copsev1alpha1.PodClique) { p.Spec.Replicas = 1 }), "validate.podcliques.grove.io",
			"spec.minAvailable: Invalid value: 2: must not be greater than spec.replicas (1)")
	})

	It("bounds a PodCliqueScalingGroup's replicas and requires distinct cliques", func(ctx context.Context) {
		expectDenial(env.Client.Create(ctx, newScalingGroup("empty", 0, 1, "worker")), "validate.podcliquescalinggroups.grove.io",
			"spec.replicas: Invalid value: 0: must be at least 1")
		expectDenial(env.Client.Create(ctx, newScalingGroup("twice", 1, 1, "worker", "worker")), "validate.podcliquescalinggroups.grove.io",
			`spec.cliqueNames[1]: Duplicate value: "worker"`)

		pcsg := newScalingGroup("decode", 2, 2, "worker")
		Expect(env.Client.Create(ctx, pcsg)).To(Succeed())
		Expect(update(ctx, pcsg, func(p *copsev1alpha1.PodCliqueScalingGroup) { p.Spec.Replicas = 3 })).To(Succeed())
		expectDenial(update(ctx, pcsg, func(p *copsev1alpha1.PodCliqueScalingGroup) { p.Spec.Replicas = 1 }),
			"validate.podcliquescalinggroups.grove.io", "spec.minAvailable: Invalid value: 2: must not be greater than spec.replicas (1)")
	})
})
