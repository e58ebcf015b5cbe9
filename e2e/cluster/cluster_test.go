package cluster_test

import (
	"context"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/copse-dev/copse/e2e/cluster"
)

var _ = Describe("Local cluster", Label("cluster"), func() {
	var ns string

	BeforeEach(func(ctx context.Context) {
		ns = createNamespace(ctx)
	})

	It("creates the simulated GPU nodes with topology labels and GPU allocatable", func(ctx context.Context) {
		topo := testCluster.Topology()
		placements := topo.Placements()
		Expect(placements).To(HaveLen(16), "default topology: 1 zone x 2 blocks x 2 racks x 4 nodes")

		cliques := map[string]int{}
		for _, p := range placements {
			node, err := client.CoreV1().Nodes().Get(ctx, p.NodeName(), metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelZone, p.ZoneName()))
			Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelBlock, p.BlockName()))
			Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelRack, p.RackName()))
			Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelGPUClique, p.CliqueName()))
			Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelHostname, node.Name))
			Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelInstanceType, "sim-gb200"))
			Expect(node.Labels).To(HaveKeyWithValue("type", "kwok"))

			gpus := node.Status.Allocatable[cluster.ResourceGPU]
			Expect(gpus.Value()).To(BeEquivalentTo(4))
			pods := node.Status.Allocatable[corev1.ResourcePods]
			Expect(pods.Value()).To(BeEquivalentTo(110))
			Expect(node.Spec.Taints).To(BeEmpty(), "workloads must schedule without tolerations")
			Expect(node.Spec.Unschedulable).To(BeFalse())
			Expect(nodeCondition(node, corev1.NodeReady)).To(Equal(corev1.ConditionTrue))
			cliques[p.CliqueName()]++
		}
		Expect(cliques).To(HaveLen(4), "one clique per rack")
		for clique, n := range cliques {
			Expect(n).To(Equal(4), "nodes in clique %s", clique)
		}
	})

	It("runs a pod for its run-duration, then ends it Succeeded with exit code 0", func(ctx context.Context) {
		pod := simPod("job", corev1.RestartPolicyNever, map[string]string{
			cluster.AnnotationRunDuration: "2s",
			cluster.AnnotationExitCode:    "0",
		})
		pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: pod.Spec.Containers[0].Image}}
		createPod(ctx, ns, pod)

		By("running init containers to completion, then the main container")
		running := waitForPod(ctx, ns, "job", 30*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning
		})
		Expect(running.Status.PodIP).NotTo(BeEmpty())
		Expect(running.Status.HostIP).NotTo(BeEmpty())
		Expect(podCondition(running, corev1.PodReady)).To(Equal(corev1.ConditionTrue))
		Expect(running.Status.InitContainerStatuses).To(HaveLen(1))
		initState := running.Status.InitContainerStatuses[0].State.Terminated
		Expect(initState).NotTo(BeNil())
		Expect(initState.ExitCode).To(BeZero())
		Expect(initState.Reason).To(Equal("Completed"))
		Expect(running.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
		Expect(running.Status.ContainerStatuses[0].Ready).To(BeTrue())

		By("ending it after run-duration")
		done := waitForPod(ctx, ns, "job", 15*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded
		})
		term := done.Status.ContainerStatuses[0].State.Terminated
		Expect(term).NotTo(BeNil())
		Expect(term.ExitCode).To(BeZero())
		Expect(term.Reason).To(Equal("Completed"))
		Expect(term.FinishedAt.Sub(term.StartedAt.Time)).To(BeNumerically(">=", 2*time.Second))
		Expect(podCondition(done, corev1.PodReady)).To(Equal(corev1.ConditionFalse))
	})

	It("ends a pod Failed with the annotated exit code", func(ctx context.Context) {
		createPod(ctx, ns, simPod("fails", corev1.RestartPolicyNever, map[string]string{
			cluster.AnnotationRunDuration: "2s",
			cluster.AnnotationExitCode:    "3",
		}))
		done := waitForPod(ctx, ns, "fails", 30*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodFailed
		})
		term := done.Status.ContainerStatuses[0].State.Terminated
		Expect(term).NotTo(BeNil())
		Expect(term.ExitCode).To(BeEquivalentTo(3))
		Expect(term.Reason).To(Equal("Error"))
	})

	DescribeTable("picks the exit code of the pod's attempt from exit-codes-by-attempt",
		func(ctx context.Context, label, attempt string, wantPhase corev1.PodPhase, wantCode int) {
			pod := simPod("attempt-"+attempt+"-"+strings.Split(label, ".")[0], corev1.RestartPolicyNever, map[string]string{
				cluster.AnnotationRunDuration:        "1s",
				cluster.AnnotationExitCode:           "9", // overridden
				cluster.AnnotationExitCodesByAttempt: "1, 2,0",
			})
			pod.Labels = map[string]string{label: attempt}
			createPod(ctx, ns, pod)
			done := waitForPod(ctx, ns, pod.Name, 30*time.Second, func(p *corev1.Pod) bool {
				return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			})
			Expect(done.Status.Phase).To(Equal(wantPhase))
			Expect(done.Status.ContainerStatuses[0].State.Terminated.ExitCode).To(BeEquivalentTo(wantCode))
		},
		Entry("first run", "copse.dev/attempt", "0", corev1.PodFailed, 1),
		Entry("second run", "copse.dev/attempt", "1", corev1.PodFailed, 2),
		Entry("third run", "copse.dev/attempt", "2", corev1.PodSucceeded, 0),
		Entry("later runs repeat the last entry", "copse.dev/attempt", "5", corev1.PodSucceeded, 0),
		Entry("a JobSet's second run, by its restart-attempt label", "jobset.sigs.k8s.io/restart-attempt", "1", corev1.PodFailed, 2),
		Entry("a JobSet's third run", "jobset.sigs.k8s.io/restart-attempt", "2", corev1.PodSucceeded, 0),
	)

	It("keeps a pod without run-duration running", func(ctx context.Context) {
		createPod(ctx, ns, simPod("server", corev1.RestartPolicyAlways, nil))
		waitForPod(ctx, ns, "server", 30*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning
		})
		Consistently(func(g Gomega) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, "server", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(p.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
			g.Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeZero())
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})

	It("starts a pod annotated start-duration that long after it started, whatever updates it gets meanwhile", func(ctx context.Context) {
		createPod(ctx, ns, simPod("slow", corev1.RestartPolicyAlways, map[string]string{cluster.AnnotationStartDuration: "3s"}))
		initialized := waitForPod(ctx, ns, "slow", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.StartTime != nil })
		Expect(initialized.Status.Phase).To(Equal(corev1.PodPending))

		By("labelling the pod every half second while it starts, as a controller might")
		Consistently(func(g Gomega) {
			patch := []byte(`{"metadata":{"labels":{"touched":"` + strconv.FormatInt(time.Now().UnixNano(), 10) + `"}}}`)
			p, err := client.CoreV1().Pods(ns).Patch(ctx, "slow", types.MergePatchType, patch, metav1.PatchOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
			g.Expect(p.Status.ContainerStatuses[0].State.Waiting).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(2500 * time.Millisecond).WithPolling(500 * time.Millisecond).Should(Succeed())

		started := waitForPod(ctx, ns, "slow", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		Expect(started.Status.ContainerStatuses[0].Ready).To(BeTrue())
		runningAt := started.Status.ContainerStatuses[0].State.Running.StartedAt.Time
		Expect(runningAt.Sub(started.Status.StartTime.Time)).To(BeNumerically(">=", 3*time.Second), "started before its start-duration")
		Expect(runningAt.Sub(started.Status.StartTime.Time)).To(BeNumerically("<=", 5*time.Second), "the updates restarted its start-duration")
	})

	DescribeTable("applies the restart policy when containers exit",
		func(ctx context.Context, policy corev1.RestartPolicy, duration, code string, want corev1.PodPhase) {
			createPod(ctx, ns, simPod("p", policy, map[string]string{
				cluster.AnnotationRunDuration: duration,
				cluster.AnnotationExitCode:    code,
			}))
			if want != corev1.PodRunning {
				done := waitForPod(ctx, ns, "p", 30*time.Second, func(p *corev1.Pod) bool {
					return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
				})
				Expect(done.Status.Phase).To(Equal(want))
				Expect(done.Status.ContainerStatuses[0].RestartCount).To(BeZero())
				return
			}
			// A restarted container: running again, one restart counted, and
			// the exit recorded in lastState.
			restarted := waitForPod(ctx, ns, "p", 30*time.Second, func(p *corev1.Pod) bool {
				cs := p.Status.ContainerStatuses
				return len(cs) == 1 && cs[0].RestartCount >= 1 && cs[0].State.Running != nil
			})
			Expect(restarted.Status.Phase).To(Equal(corev1.PodRunning))
			last := restarted.Status.ContainerStatuses[0].LastTerminationState.Terminated
			Expect(last).NotTo(BeNil())
			Expect(last.ExitCode).To(BeEquivalentTo(mustAtoi(code)))
		},
		Entry("Never, exit 0: Succeeded", corev1.RestartPolicyNever, "1500ms", "0", corev1.PodSucceeded),
		Entry("OnFailure, exit 0: Succeeded", corev1.RestartPolicyOnFailure, "1s", "0", corev1.PodSucceeded),
		Entry("OnFailure, exit 2: restarted", corev1.RestartPolicyOnFailure, "1s", "2", corev1.PodRunning),
		Entry("Always, exit 0: restarted", corev1.RestartPolicyAlways, "1s", "0", corev1.PodRunning),
		Entry("Always, exit 1: restarted", corev1.RestartPolicyAlways, "1s", "1", corev1.PodRunning),
	)

	It("keeps a deleted running pod for its grace period", func(ctx context.Context) {
		createPod(ctx, ns, simPod("graceful", corev1.RestartPolicyAlways, nil))
		waitForPod(ctx, ns, "graceful", 30*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning
		})

		deleted := time.Now()
		Expect(client.CoreV1().Pods(ns).Delete(ctx, "graceful", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](3)})).To(Succeed())
		Consistently(func(g Gomega) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, "graceful", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.DeletionTimestamp).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(1200 * time.Millisecond).WithPolling(200 * time.Millisecond).Should(Succeed())

		Eventually(func() bool {
			_, err := client.CoreV1().Pods(ns).Get(ctx, "graceful", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
		Expect(time.Since(deleted)).To(BeNumerically(">=", 2500*time.Millisecond), "gone before its grace period")
	})

	It("runs a never-ready pod without making it Ready", func(ctx context.Context) {
		createPod(ctx, ns, simPod("unready", corev1.RestartPolicyNever, map[string]string{cluster.AnnotationNeverReady: "true"}))
		waitForPod(ctx, ns, "unready", 30*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning
		})
		Consistently(func(g Gomega) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, "unready", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
			g.Expect(p.Status.ContainerStatuses[0].Ready).To(BeFalse())
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady {
					g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
				}
			}
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})

	It("keeps a deleted pod of an unreachable node terminating until the node answers", func(ctx context.Context) {
		createPod(ctx, ns, simPod("lost", corev1.RestartPolicyNever, map[string]string{cluster.AnnotationUnreachable: "true"}))
		waitForPod(ctx, ns, "lost", 30*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning
		})
		Expect(client.CoreV1().Pods(ns).Delete(ctx, "lost", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)})).To(Succeed())
		Consistently(func(g Gomega) {
			p, err := client.CoreV1().Pods(ns).Get(ctx, "lost", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithContext(ctx).WithTimeout(4 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		patch := []byte(`{"metadata":{"annotations":{"` + cluster.AnnotationUnreachable + `":"false"}}}`)
		_, err := client.CoreV1().Pods(ns).Patch(ctx, "lost", types.MergePatchType, patch, metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			_, err := client.CoreV1().Pods(ns).Get(ctx, "lost", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
	})

	It("deletes unbound and terminal pods at once", func(ctx context.Context) {
		unbound := simPod("unbound", corev1.RestartPolicyNever, nil)
		unbound.Spec.NodeSelector = map[string]string{"no-such-label": "x"}
		createPod(ctx, ns, unbound)
		createPod(ctx, ns, simPod("finished", corev1.RestartPolicyNever, map[string]string{cluster.AnnotationRunDuration: "0s"}))
		waitForPod(ctx, ns, "finished", 30*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded
		})

		for _, name := range []string{"unbound", "finished"} {
			Expect(client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)})).To(Succeed())
			Eventually(func() bool {
				_, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithContext(ctx).WithTimeout(3*time.Second).Should(BeTrue(), "pod %s", name)
		}
	})

	It("garbage-collects dependents of a deleted owner", func(ctx context.Context) {
		owner, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: "dependent",
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
				}},
			},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		Expect(client.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "dependent", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(BeTrue())
	})

	It("schedules a gang onto the nodes of one GPU clique", func(ctx context.Context) {
		// Fill two of the four nodes of the first rack. The scheduler scores
		// empty nodes alike and breaks ties in node order, so without the
		// topology constraint three whole-node pods would land on the two
		// free nodes of that rack plus one node of the next: split.
		const crowded = "zone-0.block-0.rack-0"
		for _, n := range []string{"gpu-z0-b0-r0-n0", "gpu-z0-b0-r0-n1"} {
			blocker := simPod("blocker-"+n, corev1.RestartPolicyAlways, nil)
			blocker.Spec.NodeName = n
			blocker.Spec.Containers[0].Resources.Limits = corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("4")}
			createPod(ctx, ns, blocker)
		}

		// Each pod takes a whole node.
		createGang(ctx, ns, "trio", 3, 4)
		var pods []corev1.Pod
		Eventually(func(g Gomega) {
			pods = gangPods(ctx, g, ns, "trio")
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s not bound", p.Name)
			}
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		cliques := map[string]bool{}
		nodes := map[string]bool{}
		for _, p := range pods {
			node, err := client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			cliques[node.Labels[cluster.LabelGPUClique]] = true
			nodes[node.Name] = true
		}
		Expect(cliques).To(HaveLen(1), "gang spread over cliques %v", cliques)
		Expect(cliques).NotTo(HaveKey(crowded), "the crowded clique has room for only two of the pods")
		Expect(nodes).To(HaveLen(3))
	})

	It("holds a gang that fits no clique until AddNodes makes room, then binds all of it", func(ctx context.Context) {
		// 5 whole nodes; every clique has 4.
		createGang(ctx, ns, "five", 5, 4)

		By("leaving every pod pending: no partial placement")
		Eventually(func(g Gomega) {
			pg, err := client.SchedulingV1beta1().PodGroups(ns).Get(ctx, "five", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			cond := apimeta.FindStatusCondition(pg.Status.Conditions, schedulingv1beta1.PodGroupInitiallyScheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		Consistently(func(g Gomega) {
			for _, p := range gangPods(ctx, g, ns, "five") {
				g.Expect(p.Spec.NodeName).To(BeEmpty(), "pod %s bound although the gang cannot fit", p.Name)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("adding a fifth node to one rack")
		added, err := testCluster.AddNodes(ctx, cluster.NodeGroup{Zone: 0, Block: 1, Rack: 1, Count: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(added).To(Equal([]string{"gpu-z0-b1-r1-n4"}))
		DeferCleanup(func(ctx context.Context) {
			deletePodsNow(ctx, ns)
			Expect(testCluster.RemoveNodes(ctx, added...)).To(Succeed())
			_, err := client.CoreV1().Nodes().Get(ctx, added[0], metav1.GetOptions{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "node %s still exists", added[0])
		})

		Eventually(func(g Gomega) {
			pods := gangPods(ctx, g, ns, "five")
			g.Expect(pods).To(HaveLen(5))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s not bound", p.Name)
				node, err := client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(node.Labels).To(HaveKeyWithValue(cluster.LabelGPUClique, "zone-0.block-1.rack-1"))
			}
		}).WithContext(ctx).WithTimeout(60 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
})

// createNamespace makes a namespace for one spec and waits until pods can be
// created in it (the serviceaccount controller must add "default" first).
// Cleanup force-deletes its pods so that their GPUs are free for the next
// spec at once, instead of after a 30s grace period.
func createNamespace(ctx context.Context) string {
	created, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "cluster-e2e-"},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	ns := created.Name
	Eventually(func() error {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	DeferCleanup(func(ctx context.Context) {
		deletePodsNow(ctx, ns)
		Expect(client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
	})
	return ns
}

func deletePodsNow(ctx context.Context, ns string) {
	Expect(client.CoreV1().Pods(ns).DeleteCollection(ctx,
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})).To(Succeed())
	Eventually(func(g Gomega) {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(list.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
}

func simPod(name string, policy corev1.RestartPolicy, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy: policy,
			Containers:    []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

func createPod(ctx context.Context, ns string, pod *corev1.Pod) {
	_, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// waitForPod polls until cond holds and returns the pod as it was then.
func waitForPod(ctx context.Context, ns, name string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	var pod *corev1.Pod
	Eventually(func(g Gomega) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		pod = p
		g.Expect(cond(p)).To(BeTrue(), "pod %s/%s: phase %s, status %+v", ns, name, p.Status.Phase, p.Status.ContainerStatuses)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	return pod
}

// createGang creates a Workload with one gang template constrained to a GPU
// clique, its PodGroup, and size pods of gpus GPUs each that join it.
func createGang(ctx context.Context, ns, name string, size int32, gpus int64) {
	policy := schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: size}}
	constraints := &schedulingv1beta1.PodGroupSchedulingConstraints{
		Topology: []schedulingv1beta1.TopologyConstraint{{Key: cluster.LabelGPUClique}},
	}
	_, err := client.SchedulingV1beta1().Workloads(ns).Create(ctx, &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedulingv1beta1.WorkloadSpec{
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
				Name: "workers", SchedulingPolicy: policy, SchedulingConstraints: constraints,
			}},
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = client.SchedulingV1beta1().PodGroups(ns).Create(ctx, &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:           &schedulingv1beta1.WorkloadReference{WorkloadName: name, TemplateName: "workers"},
			SchedulingPolicy:      policy,
			SchedulingConstraints: constraints,
		},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	for i := range size {
		pod := simPod(name+"-"+string(rune('a'+i)), corev1.RestartPolicyNever, nil)
		pod.Labels = map[string]string{"gang": name}
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(name)}
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Limits: corev1.ResourceList{cluster.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
		}
		createPod(ctx, ns, pod)
	}
}

func gangPods(ctx context.Context, g Gomega, ns, name string) []corev1.Pod {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{"gang": name}).String(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	return list.Items
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	Expect(err).NotTo(HaveOccurred())
	return n
}
