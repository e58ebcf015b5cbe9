package framework

import (
	"context"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
)

// CreateClusterTopologyBinding creates a ClusterTopologyBinding of levels,
// deleted after the spec.
func (e *Env) CreateClusterTopologyBinding(ctx context.Context, name string, levels []grovecorev1alpha1.TopologyLevel) *copsev1alpha1.ClusterTopologyBinding {
	ginkgo.GinkgoHelper()
	b := &copsev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	b.Spec.Levels = levels
	gomega.Expect(e.Client.Create(ctx, b)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		gomega.Expect(client.IgnoreNotFound(e.Client.Delete(ctx, b))).To(gomega.Succeed())
	})
	return b
}

// ExpectPodCliqueSetCondition waits up to timeout until the PodCliqueSet's
// condition has status and reason, and returns it.
func (e *Env) ExpectPodCliqueSetCondition(ctx context.Context, namespace, name, condType string,
	status metav1.ConditionStatus, reason string, timeout time.Duration) *metav1.Condition {
	ginkgo.GinkgoHelper()
	var cond *metav1.Condition
	gomega.Eventually(func(g gomega.Gomega) {
		cond = apimeta.FindStatusCondition(e.GetPodCliqueSet(ctx, g, namespace, name).Status.Conditions, condType)
		g.Expect(cond).NotTo(gomega.BeNil(), "no condition %s", condType)
		g.Expect(cond.Status).To(gomega.Equal(status), "%s: %s", condType, cond.Message)
		g.Expect(cond.Reason).To(gomega.Equal(reason), "%s: %s", condType, cond.Message)
	}).WithContext(ctx).WithTimeout(timeout).Should(gomega.Succeed())
	return cond
}

// CreatePodCliqueSet creates pcs for the spec: after the spec it is
// deleted and its pods are waited out (up to drain), so that the next spec
// finds the nodes free.
func (e *Env) CreatePodCliqueSet(ctx context.Context, pcs *copsev1alpha1.PodCliqueSet, drain time.Duration) {
	ginkgo.GinkgoHelper()
	gomega.Expect(e.Client.Create(ctx, pcs)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		gomega.Expect(client.IgnoreNotFound(e.Client.Delete(ctx, pcs))).To(gomega.Succeed())
		gomega.Eventually(func(g gomega.Gomega) {
			g.Expect(e.Pods(ctx, g, pcs.Namespace, pcs.Name)).To(gomega.BeEmpty())
		}).WithContext(ctx).WithTimeout(drain).Should(gomega.Succeed())
	})
}
