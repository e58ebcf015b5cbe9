package realnode_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// lastSeen records the last state of every pod of a namespace before it
// was removed (the kubelet writes a deleted pod's final container statuses
// just before it lets the API server remove the pod), and the deletion as
// first seen: a later delete of a pod that has ended (the kubelet's own,
// or another with a grace period of 0 as the API server gives a finished
// pod) moves deletionTimestamp back, so only the first one says when the
// pod was asked to stop and with what grace.
type lastSeen struct {
	mu        sync.Mutex
	pods      map[types.UID]*corev1.Pod
	deletions map[types.UID]deletion
	history   map[types.UID][]string
}

// deletion is a pod's deletion as first seen: deletionTimestamp is the
// time of the request plus the grace period.
type deletion struct {
	at    time.Time
	grace time.Duration
}

func watchPods(ctx context.Context, namespace string) *lastSeen {
	GinkgoHelper()
	seen := &lastSeen{pods: map[types.UID]*corev1.Pod{}, deletions: map[types.UID]deletion{}, history: map[types.UID][]string{}}
	w, err := env.Clientset.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		defer w.Stop()
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok {
				seen.record(pod)
			}
		}
	}()
	return seen
}

func (s *lastSeen) record(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[pod.UID] = pod
	if _, ok := s.deletions[pod.UID]; !ok && pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		s.deletions[pod.UID] = deletion{at: pod.DeletionTimestamp.Add(-grace), grace: grace}
	}
	s.history[pod.UID] = append(s.history[pod.UID], describePodState(pod))
}

// describePodState is one line of a pod's history, printed when a spec
// fails: what the API server had at each change.
func describePodState(pod *corev1.Pod) string {
	line := fmt.Sprintf("rv=%s phase=%s", pod.ResourceVersion, pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		line += fmt.Sprintf(" deletionTimestamp=%s", pod.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	if pod.DeletionGracePeriodSeconds != nil {
		line += fmt.Sprintf(" deletionGrace=%ds", *pod.DeletionGracePeriodSeconds)
	}
	for _, c := range pod.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil {
			line += fmt.Sprintf(" %s=exit %d %s..%s", c.Name, t.ExitCode, t.StartedAt.UTC().Format(time.RFC3339), t.FinishedAt.UTC().Format(time.RFC3339))
		} else if c.State.Running != nil {
			line += fmt.Sprintf(" %s=running since %s", c.Name, c.State.Running.StartedAt.UTC().Format(time.RFC3339))
		}
	}
	return line
}

// deletionOf returns the pod's deletion as first seen, and its history.
func (s *lastSeen) deletionOf(uid types.UID) (deletion, bool, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deletions[uid]
	return d, ok, strings.Join(s.history[uid], "\n")
}

// last returns the last state seen of the pod with uid, nil if none.
func (s *lastSeen) last(uid types.UID) *corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods[uid]
}

// deleted returns the last state of the deleted pods of a clique.
func (s *lastSeen) deleted(clique string) []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range s.pods {
		if p.Labels[labels.CliqueTemplateKey] == clique && p.DeletionTimestamp != nil {
			out = append(out, p)
		}
	}
	return out
}

var _ = Describe("Termination grace on a real node", Label("realnode"), func() {
	It("lets a restart's deleted pods end within their grace period: SIGTERM first, SIGKILL at its end", func(ctx context.Context) {
		ns := env.NewNamespace(ctx, "grace")
		seen := watchPods(ctx, ns)
		// One pod fails; the replica's restart deletes the other two: one
		// ends within its 10 s grace on SIGTERM (exit 143 after 2 s), the
		// other outlasts its 2 s grace and is killed (exit 137).
		pcs := framework.NewTrainingPodCliqueSet(ns, "job", 1, 1,
			clique("failer", 1, realNodePod(5, workload("main", "--sleep", "5s", "--exit", "3"))),
			clique("graceful", 1, realNodePod(10, workload("main", "--sleep", "300s", "--linger-on-term", "2s"))),
			clique("stubborn", 1, realNodePod(2, workload("main", "--sleep", "300s", "--linger-on-term", "60s"))))
		Expect(env.Client.Create(ctx, pcs)).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(env.GetPodCliqueSet(ctx, g, ns, "job").Status.Phase).To(Equal(copsev1alpha1.PodCliqueSetPhaseFailed))
			g.Expect(env.Pods(ctx, g, ns, "job", client.MatchingLabels{labels.CliqueTemplateKey: "graceful"})).To(BeEmpty())
			g.Expect(env.Pods(ctx, g, ns, "job", client.MatchingLabels{labels.CliqueTemplateKey: "stubborn"})).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(realNodeWait).Should(Succeed())
		Expect(env.GetPodCliqueSet(ctx, Default, ns, "job").Status.RestartCount).To(Equal(int32(1)))

		By("reading, for both attempts, the final statuses the kubelet wrote before the pods went")
		for _, c := range []struct {
			clique   string
			grace    time.Duration
			exitCode int32
			atLeast  time.Duration
			before   time.Duration
		}{
			// The graceful pod's exit code (143, not 137) says it ended
			// of itself before the SIGKILL; its end is bounded by the
			// grace period plus a second, as deletionTimestamp and
			// finishedAt have whole seconds (a loaded host's kubelet may
			// send the SIGTERM seconds late).
			{clique: "graceful", grace: 10 * time.Second, exitCode: 143, atLeast: time.Second, before: 11 * time.Second},
			{clique: "stubborn", grace: 2 * time.Second, exitCode: 137, atLeast: time.Second, before: 30 * time.Second},
		} {
			pods := seen.deleted(c.clique)
			Expect(pods).To(HaveLen(2), "clique %s: one pod per attempt, deleted by the restart and by the failure", c.clique)
			for _, pod := range pods {
				status := expectWrittenByKubelet(Default, pod, "main", c.exitCode)
				deleted, ok, history := seen.deletionOf(pod.UID)
				Expect(ok).To(BeTrue(), "pod %s: no deletion seen; its history:\n%s", pod.Name, history)
				Expect(deleted.grace).To(Equal(c.grace), "pod %s was deleted with another grace period than its own; its history:\n%s", pod.Name, history)
				took := status.FinishedAt.Sub(deleted.at)
				Expect(took).To(BeNumerically(">=", c.atLeast), "pod %s ended %s after its deletion: SIGTERM was not honoured; its history:\n%s", pod.Name, took, history)
				Expect(took).To(BeNumerically("<", c.before), "pod %s ended %s after its deletion; its history:\n%s", pod.Name, took, history)
			}
		}
	})
})
