package reliability_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

const longWait = 2 * time.Minute

// servingPCS is an Inference PodCliqueSet of one replica: a leader and
// workers pods that run until deleted.
func servingPCS(namespace, name string, workers int32) *copsev1alpha1.PodCliqueSet {
	return framework.NewPodCliqueSet(namespace, name, 1,
		framework.CliqueTemplate("leader", 1, framework.PodSpec(0)),
		framework.CliqueTemplate("worker", workers, framework.PodSpec(0)))
}

// readyPods waits until the PodCliqueSet has n live pods, all ready, and
// returns them.
func readyPods(ctx context.Context, namespace, pcsName string, n int) []corev1.Pod {
	GinkgoHelper()
	return env.ReadyPods(ctx, namespace, pcsName, n, longWait)
}

// podIdentities maps each pod's name to its UID and resourceVersion: equal
// identities mean the very same pods, untouched.
func podIdentities(pods []corev1.Pod) map[string]string {
	out := make(map[string]string, len(pods))
	for _, p := range pods {
		out[p.Name] = string(p.UID) + "@" + p.ResourceVersion
	}
	return out
}

func uids(pods []corev1.Pod) []types.UID {
	out := make([]types.UID, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.UID)
	}
	return out
}
