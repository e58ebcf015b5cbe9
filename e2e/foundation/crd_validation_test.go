package foundation_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

func minimalPCS(namespace, name string, workloadType copsev1alpha1.WorkloadType) *copsev1alpha1.PodCliqueSet {
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	pcs.Spec.WorkloadType = workloadType
	pcs.Spec.Replicas = 1
	pcs.Spec.Template.Cliques = []*grovecorev1alpha1.PodCliqueTemplateSpec{{
		Name: "worker",
		Spec: grovecorev1alpha1.PodCliqueSpec{
			RoleName: "worker",
			Replicas: 2,
			PodSpec:  corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.com/train:1"}}},
		},
	}}
	return pcs
}

var _ = Describe("grove.io CRDs", Label("foundation"), func() {
	var namespace string

	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "crd")
	})

	It("stores a Training PodCliqueSet and applies the schema defaults", func(ctx context.Context) {
		pcs := minimalPCS(namespace, "train", copsev1alpha1.WorkloadTypeTraining)
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRuntime: &metav1.Duration{Duration: 90 * time.Minute}}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		got := &copsev1alpha1.PodCliqueSet{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), got)).To(Succeed())
		Expect(got.Spec.WorkloadType).To(Equal(copsev1alpha1.WorkloadTypeTraining))
		Expect(got.Spec.TrainingSpec).NotTo(BeNil())
		Expect(got.Spec.TrainingSpec.MaxRuntime.Duration).To(Equal(90 * time.Minute))
		Expect(got.Spec.TrainingSpec.MaxRestarts).To(Equal(ptr.To[int32](0)), "maxRestarts defaults to 0")
		Expect(got.Spec.Template.StartupType).To(Equal(ptr.To(grovecorev1alpha1.CliqueStartupTypeAnyOrder)), "Grove's default for cliqueStartupType")
		Expect(got.Spec.Replicas).To(Equal(int32(1)))
	})

	It("defaults workloadType to Inference", func(ctx context.Context) {
		pcs := minimalPCS(namespace, "serve", "")
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		got := &copsev1alpha1.PodCliqueSet{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), got)).To(Succeed())
		Expect(got.Spec.WorkloadType).To(Equal(copsev1alpha1.WorkloadTypeInference))
		Expect(got.Spec.TrainingSpec).To(BeNil())
	})

	It("rejects trainingSpec on an Inference PodCliqueSet, naming the field", func(ctx context.Context) {
		pcs := minimalPCS(namespace, "serve-with-training", copsev1alpha1.WorkloadTypeInference)
		pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](1)}
		err := env.Client.Create(ctx, pcs)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.trainingSpec"))
		Expect(err.Error()).To(ContainSubstring("allowed only when spec.workloadType is Training"))
	})

	It("rejects a change of workloadType, naming the field", func(ctx context.Context) {
		pcs := minimalPCS(namespace, "flip", copsev1alpha1.WorkloadTypeTraining)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeInference
		err := env.Client.Update(ctx, pcs)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.workloadType"))
		Expect(err.Error()).To(ContainSubstring("immutable"))
	})

	It("rejects a replica change on a Training PodCliqueSet", func(ctx context.Context) {
		pcs := minimalPCS(namespace, "fixed", copsev1alpha1.WorkloadTypeTraining)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		pcs.Spec.Replicas = 2
		err := env.Client.Update(ctx, pcs)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("spec.replicas is immutable when spec.workloadType is Training"))
	})

	It("rejects autoscaling on a Training PodCliqueSet", func(ctx context.Context) {
		pcs := minimalPCS(namespace, "scaled", copsev1alpha1.WorkloadTypeTraining)
		pcs.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovecorev1alpha1.AutoScalingConfig{MaxReplicas: 4}
		err := env.Client.Create(ctx, pcs)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("autoScalingConfig is not allowed when spec.workloadType is Training"))
	})

	DescribeTable("rejects bad trainingSpec values, naming the field",
		func(ctx context.Context, mutate func(*copsev1alpha1.TrainingSpec), wantField, wantRule string) {
			pcs := minimalPCS(namespace, "bad-training", copsev1alpha1.WorkloadTypeTraining)
			pcs.Spec.TrainingSpec = &copsev1alpha1.TrainingSpec{}
			mutate(pcs.Spec.TrainingSpec)
			err := env.Client.Create(ctx, pcs)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			Expect(err.Error()).To(ContainSubstring(wantField))
			Expect(err.Error()).To(ContainSubstring(wantRule))
		},
		Entry("negative maxRestarts", func(ts *copsev1alpha1.TrainingSpec) { ts.MaxRestarts = ptr.To[int32](-1) },
			"spec.trainingSpec.maxRestarts", "greater than or equal to 0"),
		Entry("zero maxRuntime", func(ts *copsev1alpha1.TrainingSpec) { ts.MaxRuntime = &metav1.Duration{} },
			"spec.trainingSpec.maxRuntime", "must be a positive duration"),
	)

	It("keeps a Grove manifest's fields when applied unchanged", func(ctx context.Context) {
		pcs := minimalPCS(namespace, "grove-manifest", "")
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: 4 * time.Hour}
		pcs.Spec.Template.HeadlessServiceConfig = &grovecorev1alpha1.HeadlessServiceConfig{PublishNotReadyAddresses: true}
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovecorev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "decode", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
		}}
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		got := &copsev1alpha1.PodCliqueSet{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), got)).To(Succeed())
		Expect(got.Spec.Template.TerminationDelay.Duration).To(Equal(4 * time.Hour))
		Expect(got.Spec.Template.PodCliqueScalingGroupConfigs).To(HaveLen(1))
		Expect(got.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames).To(Equal([]string{"worker"}))
	})
})
