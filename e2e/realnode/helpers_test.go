package realnode_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/labels"
)

// realNodeWait bounds what a real node takes: starting containers of
// images it holds, and the kubelet's status and sync periods.
const realNodeWait = 3 * time.Minute

// workload is a container of the workload image (copse-workload, see
// e2e/cmd/copse-workload) with these arguments.
func workload(name string, args ...string) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           env.Cluster.NodeImages().Workload,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            args,
	}
}

// shell is a container of the workload image running a busybox shell
// command.
func shell(name, script string) corev1.Container {
	c := workload(name)
	c.Command = []string{"sh", "-c", script}
	return c
}

// realNodePod is a pod spec that runs on the real node: it selects and
// tolerates it. grace is its termination grace period.
func realNodePod(grace int64, containers ...corev1.Container) corev1.PodSpec {
	selector, toleration := cluster.RealNodePlacement()
	return corev1.PodSpec{
		NodeSelector:                  selector,
		Tolerations:                   []corev1.Toleration{toleration},
		TerminationGracePeriodSeconds: ptr.To(grace),
		RestartPolicy:                 corev1.RestartPolicyNever,
		// The test pods talk to no API server.
		AutomountServiceAccountToken: ptr.To(false),
		Containers:                   containers,
	}
}

func clique(name string, replicas int32, spec corev1.PodSpec) *grovecorev1alpha1.PodCliqueTemplateSpec {
	return framework.CliqueTemplate(name, replicas, spec)
}

// terminated is the terminated state of the named container (init
// containers included), or nil.
func terminated(pod *corev1.Pod, container string) *corev1.ContainerStateTerminated {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range statuses {
			if s.Name == container {
				return s.State.Terminated
			}
		}
	}
	return nil
}

// expectWrittenByKubelet checks what only a kubelet writes into a
// terminated container's status: the runtime's container ID, the start and
// finish times in order, and the reason the kubelet derives from the exit
// code (Completed for 0, Error otherwise).
func expectWrittenByKubelet(g Gomega, pod *corev1.Pod, container string, exitCode int32) *corev1.ContainerStateTerminated {
	t := terminated(pod, container)
	g.Expect(t).NotTo(BeNil(), "pod %s: container %s has not terminated", pod.Name, container)
	g.Expect(t.ExitCode).To(Equal(exitCode), "pod %s: container %s", pod.Name, container)
	reason := "Completed"
	if exitCode != 0 {
		reason = "Error"
	}
	g.Expect(t.Reason).To(Equal(reason), "pod %s: container %s", pod.Name, container)
	g.Expect(t.ContainerID).To(HavePrefix("containerd://"), "pod %s: container %s", pod.Name, container)
	g.Expect(t.StartedAt.IsZero()).To(BeFalse(), "pod %s: container %s has no startedAt", pod.Name, container)
	g.Expect(t.FinishedAt.IsZero()).To(BeFalse(), "pod %s: container %s has no finishedAt", pod.Name, container)
	g.Expect(t.FinishedAt.Before(&t.StartedAt)).To(BeFalse(), "pod %s: container %s finished before it started", pod.Name, container)
	return t
}

// logs is what a container of a pod printed, read through the API server
// from the kubelet.
func logs(ctx context.Context, g Gomega, pod *corev1.Pod, container string) string {
	stream, err := env.Clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = stream.Close() }()
	data, err := io.ReadAll(stream)
	g.Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(data))
}

func failedCondition(pcs *copsev1alpha1.PodCliqueSet) *metav1.Condition {
	return meta.FindStatusCondition(pcs.Status.Conditions, copsev1alpha1.ConditionTypeFailed)
}

func objectKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}

// cliquePod returns the one live pod of a clique of replica 0, failing g
// when there is not exactly one.
func cliquePod(ctx context.Context, g Gomega, namespace, pcsName, clique string) *corev1.Pod {
	pods := env.LivePods(ctx, g, namespace, pcsName, client.MatchingLabels{labels.CliqueTemplateKey: clique})
	g.Expect(pods).To(HaveLen(1), "clique %s", clique)
	return &pods[0]
}

// expectPhase fails g until the PodCliqueSet reaches phase, and stops
// trying, with its status, when it reaches another terminal phase.
func expectPhase(ctx context.Context, g Gomega, namespace, name string, phase copsev1alpha1.PodCliqueSetPhase) *copsev1alpha1.PodCliqueSet {
	pcs := env.GetPodCliqueSet(ctx, g, namespace, name)
	if pcs.Status.Phase != phase && pcs.Status.Phase.IsTerminal() {
		StopTrying(fmt.Sprintf("PodCliqueSet %s/%s is %s, not %s: conditions %+v, lastFailure %+v",
			namespace, name, pcs.Status.Phase, phase, pcs.Status.Conditions, pcs.Status.LastFailure)).Now()
	}
	g.Expect(pcs.Status.Phase).To(Equal(phase))
	return pcs
}
