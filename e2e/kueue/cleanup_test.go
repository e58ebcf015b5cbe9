package kueue_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

// releaseQueues ends a spec that queued workloads in namespace: it deletes
// the namespace's TrainJobs (with their JobSets or PodCliqueSets) and
// PodCliqueSets, waits until Kueue's Workloads of them are gone (their
// finalizers are released only once the pods are), then deletes the queues,
// which Kueue refuses to let go while a Workload still uses them.
func releaseQueues(ctx context.Context, namespace string, queues framework.KueueQueues, wait time.Duration) {
	var trainJobs trainerv1alpha1.TrainJobList
	Expect(env.Client.List(ctx, &trainJobs, client.InNamespace(namespace))).To(Succeed())
	for i := range trainJobs.Items {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &trainJobs.Items[i], client.PropagationPolicy(metav1.DeletePropagationForeground)))).To(Succeed())
	}
	var podCliqueSets copsev1alpha1.PodCliqueSetList
	Expect(env.Client.List(ctx, &podCliqueSets, client.InNamespace(namespace))).To(Succeed())
	for i := range podCliqueSets.Items {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &podCliqueSets.Items[i]))).To(Succeed())
	}
	Eventually(func(g Gomega) {
		var workloads kueue.WorkloadList
		g.Expect(env.Client.List(ctx, &workloads, client.InNamespace(namespace))).To(Succeed())
		g.Expect(workloads.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(wait).Should(Succeed())
	Expect(framework.DeleteKueueQueues(ctx, env.Client, queues)).To(Succeed())
}
