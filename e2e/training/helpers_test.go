package training_test

import (
	"cmp"
	"context"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

const longWait = 2 * time.Minute

// runningPods waits until the replica's current attempt has n ready pods
// and returns them, ordered by pod index.
func runningPods(ctx context.Context, namespace, pcsName string, replica, attempt string, n int) []corev1.Pod {
	GinkgoHelper()
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		pods = env.LivePods(ctx, g, namespace, pcsName, client.MatchingLabels{labels.ReplicaKey: replica, labels.AttemptKey: attempt})
		g.Expect(pods).To(HaveLen(n))
		for i := range pods {
			g.Expect(framework.IsReady(&pods[i])).To(BeTrue(), "pod %s not ready", pods[i].Name)
		}
	}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		i, _ := labels.Index(a.Labels, labels.PodIndexKey)
		j, _ := labels.Index(b.Labels, labels.PodIndexKey)
		return cmp.Compare(i, j)
	})
	return pods
}

// activePods are the pods of a PodCliqueSet that have not ended.
func activePods(ctx context.Context, g Gomega, namespace, pcsName string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range env.Pods(ctx, g, namespace, pcsName) {
		if !framework.IsTerminal(&p) {
			out = append(out, p)
		}
	}
	return out
}

func failedCondition(pcs *copsev1alpha1.PodCliqueSet) *metav1.Condition {
	return meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed)
}

// expectNoOrphans checks that every pod of the PodCliqueSet is controlled by
// a PodClique that exists.
func expectNoOrphans(ctx context.Context, namespace, pcsName string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for _, pod := range env.Pods(ctx, g, namespace, pcsName) {
			owner := metav1.GetControllerOf(&pod)
			g.Expect(owner).NotTo(BeNil(), "pod %s has no controller", pod.Name)
			pclq := &copsev1alpha1.PodClique{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: owner.Name}, pclq)).To(Succeed(), "pod %s: owner %s", pod.Name, owner.Name)
			g.Expect(pclq.UID).To(Equal(owner.UID), "pod %s belongs to a PodClique that no longer exists", pod.Name)
		}
	}).WithContext(ctx).WithTimeout(longWait).Should(Succeed())
}

// restartOperatorIfKilled is the AfterEach of the specs that kill the
// operator: a spec that failed before restarting it must not leave the next
// one without an operator.
func restartOperatorIfKilled(ctx context.Context) {
	if ok, _ := env.Operator.Running(); !ok {
		Expect(env.Operator.Restart(ctx)).To(Succeed())
	}
}
