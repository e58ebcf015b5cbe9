package trainjob_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	tjcontroller "github.com/copse-dev/copse/internal/controller/trainjob"
	"github.com/copse-dev/copse/internal/trainjob"
)

// copse writes a TrainJob's backend object by server-side apply: the fields
// of the build are its field manager's, and a field the build stops setting
// goes from the object (docs/trainjob.md#how-copse-writes-a-build).
var _ = DescribeTable("A TrainJob's backend object, applied server-side", Label("trainjob"),
	func(ctx context.Context, b backend) {
		ns := env.NewNamespace(ctx, "apply")
		b.torchRuntime(ctx, ns, nil)
		tj := torchTrainJob(ns, 1)
		tj.Spec.Suspend = ptr.To(true)
		tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, placementPatch("vision", lastRack(ctx)))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())

		By("its fields are the field manager copse-trainjob's, applied, the runtime patch's among them")
		Eventually(func(g Gomega) {
			obj := b.object(tj)
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			g.Expect(obj.GetManagedFields()).To(ContainElement(And(HaveField("Manager", tjcontroller.FieldOwner),
				HaveField("Operation", metav1.ManagedFieldsOperationApply))), "managedFields of %s", obj.GetName())
			g.Expect(b.podLabels(ctx, g, tj, trainjob.NodeName)).To(HaveKeyWithValue(teamLabel, "vision"))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())

		By("the patch dropped while suspended: its label goes from the object")
		Eventually(func(g Gomega) {
			got := getTrainJob(ctx, tj)
			var kept []trainerv1alpha1.RuntimePatch
			for _, p := range got.Spec.RuntimePatches {
				if p.Manager != placementManager {
					p.Time = nil
					kept = append(kept, p)
				}
			}
			got.Spec.RuntimePatches = kept
			g.Expect(env.Client.Update(ctx, got)).To(Succeed())
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(b.podLabels(ctx, g, tj, trainjob.NodeName)).NotTo(HaveKey(teamLabel))
		}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
	},
	Entry("JobSet backend", jobSetBackend),
	Entry("PodCliqueSet backend", podCliqueSetBackend),
)
