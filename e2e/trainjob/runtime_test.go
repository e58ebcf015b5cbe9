package trainjob_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/internal/trainjob"
)

// runtimeObject is a TrainingRuntime or a ClusterTrainingRuntime with the
// given spec; the cluster-scoped one is named after the namespace, so specs
// never share one.
func runtimeObject(clusterScoped bool, namespace string, spec trainerv1alpha1.TrainingRuntimeSpec) client.Object {
	if clusterScoped {
		return &trainerv1alpha1.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: namespace}, Spec: spec}
	}
	return &trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "runtime"}, Spec: spec}
}

// trainJobOn is a TrainJob of the namespace on the runtime object.
func trainJobOn(namespace string, rt client.Object) *trainerv1alpha1.TrainJob {
	tj := sdkTrainJob(namespace, "train", rt.GetName(), 1)
	if _, ok := rt.(*trainerv1alpha1.TrainingRuntime); ok {
		onTrainingRuntime(tj)
	}
	return tj
}

func specOf(rt client.Object) *trainerv1alpha1.TrainingRuntimeSpec {
	switch rt := rt.(type) {
	case *trainerv1alpha1.TrainingRuntime:
		return &rt.Spec
	case *trainerv1alpha1.ClusterTrainingRuntime:
		return &rt.Spec
	}
	Fail(fmt.Sprintf("%T is not a runtime", rt))
	return nil
}

// updateRuntime changes a runtime's spec.
func updateRuntime(ctx context.Context, rt client.Object, change func(*trainerv1alpha1.TrainingRuntimeSpec)) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), rt)).To(Succeed())
		change(specOf(rt))
		g.Expect(env.Client.Update(ctx, rt)).To(Succeed())
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
}

// waitInUse waits until the runtime carries the in-use finalizer.
func waitInUse(ctx context.Context, rt client.Object) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), rt)).To(Succeed())
		g.Expect(controllerutil.ContainsFinalizer(rt, trainjob.RuntimeInUseFinalizer)).To(BeTrue())
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Succeed())
}

// expectTerminating checks for a while that the runtime is being deleted
// but still there, held by its in-use finalizer.
func expectTerminating(ctx context.Context, rt client.Object) {
	GinkgoHelper()
	Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), rt)).To(Succeed())
		g.Expect(rt.GetDeletionTimestamp()).NotTo(BeNil())
		g.Expect(rt.GetFinalizers()).To(ContainElement(trainjob.RuntimeInUseFinalizer))
	}).WithContext(ctx).WithTimeout(1500 * time.Millisecond).WithPolling(poll).Should(Succeed())
}

// deletedAt polls until the TrainJob is being deleted or gone, and returns
// when that was first seen.
func deletedAt(ctx context.Context, tj *trainerv1alpha1.TrainJob, timeout time.Duration) time.Time {
	GinkgoHelper()
	var seen time.Time
	Eventually(func(g Gomega) {
		got := &trainerv1alpha1.TrainJob{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(tj), got)
		if apierrors.IsNotFound(err) {
			seen = time.Now()
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil(), "TrainJob %s is not being deleted", tj.Name)
		seen = time.Now()
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return seen
}

// ttlRuntime is the plain runtime with the given ttlSecondsAfterFinished.
func ttlRuntime(namespace string, ttl *int32) *trainerv1alpha1.TrainingRuntime {
	rt := plainRuntime(namespace, "plain")
	rt.Spec.TTLSecondsAfterFinished = ttl
	return rt
}

// completeAt runs a TrainJob on the namespace's plain runtime to Complete
// and returns the TrainJob and its Complete transition time.
func completeAt(ctx context.Context, namespace string) (*trainerv1alpha1.TrainJob, time.Time) {
	GinkgoHelper()
	tj := onTrainingRuntime(sdkTrainJob(namespace, "train", "plain", 1))
	withPods(tj, "node", simulate(time.Second, "0"))
	Expect(env.Client.Create(ctx, tj)).To(Succeed())
	got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
	return tj, condition(got, trainerv1alpha1.TrainJobComplete).LastTransitionTime.Time
}

// expectCascade checks that the TrainJob's JobSet and snapshot went with it.
func expectCascade(ctx context.Context, tj *trainerv1alpha1.TrainJob) {
	GinkgoHelper()
	expectGone(ctx, &trainerv1alpha1.TrainJob{ObjectMeta: tj.ObjectMeta}, wait)
	_, err := jobSetOf(ctx, tj)
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the JobSet outlived its TrainJob: %v", err)
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: tj.Name + trainjob.RuntimeSnapshotSuffix}, &corev1.ConfigMap{})
	}).WithContext(ctx).WithTimeout(wait).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound))
}

var _ = Describe("The runtime snapshot", Label("trainjob"), func() {
	DescribeTable("keeps a TrainJob on the runtime as it was created, after the runtime changed",
		func(ctx context.Context, clusterScoped bool) {
			ns := env.NewNamespace(ctx, "snapshot")
			spec := runtimeCopy(ns, "torch-distributed").Spec
			spec.MLPolicy.NumNodes = ptr.To[int32](2)
			spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "registry.example/torch:v1"
			rt := runtimeObject(clusterScoped, ns, spec)
			Expect(env.Client.Create(ctx, rt)).To(Succeed())
			DeferCleanup(func(ctx context.Context) {
				Expect(client.IgnoreNotFound(env.Client.Delete(ctx, rt))).To(Succeed())
			})
			tj := trainJobOn(ns, rt)
			tj.Spec.Trainer = nil // the runtime decides the node count and image
			tj.Spec.Suspend = ptr.To(true)
			withPods(tj, "node", simulate(2*time.Second, "0"))
			Expect(env.Client.Create(ctx, tj)).To(Succeed())

			By("freezing the runtime into a ConfigMap owned by the TrainJob")
			js := waitJobSet(ctx, tj)
			Expect(*js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism).To(BeEquivalentTo(2))
			snapshot := &corev1.ConfigMap{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tj.Name + "-runtime-snapshot"}, snapshot)).To(Succeed())
			Expect(metav1.IsControlledBy(snapshot, getTrainJob(ctx, tj))).To(BeTrue(), "the snapshot is not controlled by the TrainJob")
			Expect(snapshot.Data).To(HaveKeyWithValue(trainjob.RuntimeSnapshotKey, ContainSubstring("registry.example/torch:v1")))

			By("changing the runtime's image and node count while the TrainJob is suspended")
			updateRuntime(ctx, rt, func(spec *trainerv1alpha1.TrainingRuntimeSpec) {
				spec.MLPolicy.NumNodes = ptr.To[int32](3)
				spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "registry.example/torch:v2"
			})

			By("resuming: the rebuilt JobSet and its pods are the original runtime's")
			setSuspend(ctx, tj, false)
			pods := runningPods(ctx, tj, "node", 2)
			for _, p := range pods {
				Expect(p.Spec.Containers[0].Image).To(Equal("registry.example/torch:v1"), "pod %s", p.Name)
			}
			js, err := jobSetOf(ctx, tj)
			Expect(err).NotTo(HaveOccurred())
			Expect(js.Spec.Suspend).To(HaveValue(BeFalse()))
			Expect(*js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism).To(BeEquivalentTo(2))
			got := waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
			Expect(got.Status.NumNodes).To(HaveValue(BeEquivalentTo(2)))
			Expect(podsOf(ctx, tj)).To(HaveLen(2))
		},
		Entry("of a TrainingRuntime", false),
		Entry("of a ClusterTrainingRuntime", true))
})

var _ = Describe("A runtime in use", Label("trainjob"), func() {
	It("stays while a TrainJob that has not finished uses it, and goes once it finished", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "in-use")
		rt := plainRuntime(ns, "plain")
		createRuntime(ctx, rt)
		tj := onTrainingRuntime(sdkTrainJob(ns, "train", "plain", 1))
		withPods(tj, "node", simulate(4*time.Second, "0"))
		Expect(env.Client.Create(ctx, tj)).To(Succeed())
		waitInUse(ctx, rt)

		Expect(env.Client.Delete(ctx, rt)).To(Succeed())
		expectTerminating(ctx, rt)
		Expect(condition(getTrainJob(ctx, tj), trainerv1alpha1.TrainJobComplete)).To(BeNil(),
			"the TrainJob finished before the runtime was seen held")

		waitCondition(ctx, tj, trainerv1alpha1.TrainJobComplete, wait)
		expectGone(ctx, rt, wait)
	})

	DescribeTable("stays while a TrainJob that has not finished uses it, and goes once the TrainJob is deleted",
		func(ctx context.Context, clusterScoped bool) {
			ns := env.NewNamespace(ctx, "in-use-deleted")
			rt := runtimeObject(clusterScoped, ns, plainRuntime(ns, "plain").Spec)
			Expect(env.Client.Create(ctx, rt)).To(Succeed())
			tj := trainJobOn(ns, rt) // its pods run until deleted
			Expect(env.Client.Create(ctx, tj)).To(Succeed())
			waitInUse(ctx, rt)

			Expect(env.Client.Delete(ctx, rt)).To(Succeed())
			expectTerminating(ctx, rt)

			Expect(env.Client.Delete(ctx, tj)).To(Succeed())
			expectGone(ctx, rt, wait)
		},
		Entry("a TrainingRuntime", false),
		Entry("a ClusterTrainingRuntime", true))
})

var _ = Describe("ttlSecondsAfterFinished of the runtime", Label("trainjob"), func() {
	It("deletes a finished TrainJob at once with a TTL of 0", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "ttl-zero")
		createRuntime(ctx, ttlRuntime(ns, ptr.To[int32](0)))
		tj, finished := completeAt(ctx, ns)
		Expect(deletedAt(ctx, tj, wait)).To(BeTemporally("<=", finished.Add(3*time.Second)))
		expectCascade(ctx, tj)
	})

	It("keeps a finished TrainJob without a TTL", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "ttl-unset")
		createRuntime(ctx, ttlRuntime(ns, nil))
		tj, _ := completeAt(ctx, ns)
		Consistently(func(g Gomega) {
			got := getTrainJob(ctx, tj)
			g.Expect(got.DeletionTimestamp).To(BeNil())
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())
	})

	It("deletes a finished TrainJob on time across an operator restart", func(ctx context.Context) {
		DeferCleanup(func(ctx context.Context) {
			// A failed spec must not leave the next one without an operator.
			if ok, _ := env.Operator.Running(); !ok {
				Expect(env.Operator.Restart(ctx)).To(Succeed())
			}
		})
		ns := env.NewNamespace(ctx, "ttl-restart")
		const ttl = 10
		createRuntime(ctx, ttlRuntime(ns, ptr.To[int32](ttl)))
		tj, finished := completeAt(ctx, ns)

		By("killing the operator after the TrainJob completed, and starting it again before the TTL passed")
		Expect(env.Operator.Kill()).To(Succeed())
		Expect(env.Operator.Restart(ctx)).To(Succeed())
		Expect(time.Now()).To(BeTemporally("<", finished.Add(ttl*time.Second)), "the restart took longer than the TTL")
		Expect(getTrainJob(ctx, tj).DeletionTimestamp).To(BeNil())

		deleted := deletedAt(ctx, tj, wait)
		Expect(deleted).To(BeTemporally(">=", finished.Add(ttl*time.Second)), "deleted before its TTL")
		Expect(deleted).To(BeTemporally("<=", finished.Add((ttl+3)*time.Second)), "deleted late")
		expectCascade(ctx, tj)
	})
})
