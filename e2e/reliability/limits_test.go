package reliability_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// Size limits (issue 10): a workload that asks for more pods than the
// operator's limits is refused when it is applied, through the real API
// server, with the field to change, the pod count and the limit, instead of
// flooding the API server with objects.
var _ = Describe("Pod limits", Label("reliability"), func() {
	const validatePodCliqueSet = "validate.podcliquesets.grove.io"
	var namespace string

	BeforeEach(func(ctx context.Context) {
		namespace = env.NewNamespace(ctx, "limits")
	})

	// expectNothingStored checks that a refused PodCliqueSet left no trace.
	expectNothingStored := func(ctx context.Context, name string) {
		GinkgoHelper()
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &copsev1alpha1.PodCliqueSet{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the refused PodCliqueSet was stored: %v", err)
		var cliques copsev1alpha1.PodCliqueList
		Expect(env.Client.List(ctx, &cliques, client.InNamespace(namespace))).To(Succeed())
		Expect(cliques.Items).To(BeEmpty())
	}

	It("refuses a Training clique of a million pods, naming the field, the pod count and the limit", func(ctx context.Context) {
		limits := env.Operator.Configuration().Limits
		pcs := framework.NewTrainingWorkers(namespace, "huge", 1, 1000000, "", 0)
		err := env.Client.Create(ctx, pcs)
		framework.ExpectAdmissionInvalid(err, validatePodCliqueSet, fmt.Sprintf(
			"spec.template.cliques[0].spec.replicas: Invalid value: 1000000: a replica of this PodCliqueSet would have 1000000 pods, "+
				"more than the operator's limit limits.maxPodsPerReplica=%d", limits.MaxPodsPerReplica))
		expectNothingStored(ctx, pcs.Name)
	})

	It("refuses a PodCliqueSet over the total limit, naming spec.replicas", func(ctx context.Context) {
		limits := env.Operator.Configuration().Limits
		pcs := framework.NewTrainingWorkers(namespace, "wide", 3, int32(limits.MaxPodsPerReplica), "", 0)
		err := env.Client.Create(ctx, pcs)
		framework.ExpectAdmissionInvalid(err, validatePodCliqueSet, fmt.Sprintf(
			"spec.replicas: Invalid value: 3: this PodCliqueSet (3 replicas of %d pods) would have %d pods, "+
				"more than the operator's limit limits.maxPodsPerPodCliqueSet=%d",
			limits.MaxPodsPerReplica, 3*limits.MaxPodsPerReplica, limits.MaxPodsPerPodCliqueSet))
		expectNothingStored(ctx, pcs.Name)
	})

	It("refuses a Training PodCliqueSet of zero replicas in the CRD, naming spec.replicas", func(ctx context.Context) {
		const rule = "spec.replicas must be at least 1 when spec.workloadType is Training: a Training workload without replicas can never succeed"
		By("as the Go client sends it: replicas 0 is left out of the JSON")
		pcs := framework.NewTrainingWorkers(namespace, "empty", 0, 2, "", 0)
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, pcs), "", "spec.replicas: Invalid value: "+rule)
		expectNothingStored(ctx, pcs.Name)

		By("as a manifest applied with kubectl says it: replicas: 0")
		manifest := &unstructured.Unstructured{}
		manifest.SetAPIVersion(copsev1alpha1.SchemeGroupVersion.String())
		manifest.SetKind("PodCliqueSet")
		manifest.SetNamespace(namespace)
		manifest.SetName("empty")
		Expect(unstructured.SetNestedField(manifest.Object, int64(0), "spec", "replicas")).To(Succeed())
		Expect(unstructured.SetNestedField(manifest.Object, string(copsev1alpha1.WorkloadTypeTraining), "spec", "workloadType")).To(Succeed())
		Expect(unstructured.SetNestedSlice(manifest.Object, []any{map[string]any{
			"name": "worker",
			"spec": map[string]any{"roleName": "worker", "replicas": int64(2), "podSpec": map[string]any{
				"containers": []any{map[string]any{"name": "main", "image": "example.com/app:1"}},
			}},
		}}, "spec", "template", "cliques")).To(Succeed())
		framework.ExpectAdmissionInvalid(env.Client.Create(ctx, manifest), "", "spec.replicas: Invalid value: "+rule)
		expectNothingStored(ctx, "empty")

		By("an Inference PodCliqueSet may have zero replicas")
		idle := servingPCS(namespace, "idle", 1)
		idle.Spec.Replicas = 0
		Expect(env.Client.Create(ctx, idle)).To(Succeed())
	})

	It("refuses scaling an Inference PodClique beyond the limit through its scale subresource", func(ctx context.Context) {
		limits := env.Operator.Configuration().Limits
		pcs := servingPCS(namespace, "serve", 2)
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())
		var worker *copsev1alpha1.PodClique
		Eventually(func(g Gomega) {
			var list copsev1alpha1.PodCliqueList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(namespace),
				client.MatchingLabels{labels.PartOfKey: pcs.Name, labels.CliqueTemplateKey: "worker"})).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			worker = &list.Items[0]
		}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())

		// scaleTo scales worker as kubectl scale does, again when the
		// controllers changed it meanwhile.
		scaleTo := func(replicas int32) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				scale := &autoscalingv1.Scale{}
				if err := env.Client.SubResource("scale").Get(ctx, worker, scale); err != nil {
					return err
				}
				scale.Spec.Replicas = replicas
				return env.Client.SubResource("scale").Update(ctx, worker, client.WithSubResourceBody(scale))
			})
		}
		err := scaleTo(int32(limits.MaxPodsPerReplica) + 1)
		framework.ExpectAdmissionInvalid(err, "validate-scale.podcliques.grove.io", fmt.Sprintf(
			"spec.replicas: Invalid value: %d: this PodClique would have %d pods, more than the operator's limit limits.maxPodsPerReplica=%d",
			limits.MaxPodsPerReplica+1, limits.MaxPodsPerReplica+1, limits.MaxPodsPerReplica))

		By("scaling within the limit is allowed")
		Expect(scaleTo(3)).To(Succeed())
	})
})
