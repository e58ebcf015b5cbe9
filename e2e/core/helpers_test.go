package core_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/framework"
)

const (
	shortWait = 30 * time.Second
	longWait  = 2 * time.Minute
)

var (
	podSpec        = framework.PodSpec
	cliqueTemplate = framework.CliqueTemplate
	newPCS         = framework.NewPodCliqueSet
	isReady        = framework.IsReady
)

func podsOf(ctx context.Context, g Gomega, namespace, pcsName string, extra ...client.ListOption) []corev1.Pod {
	return env.LivePods(ctx, g, namespace, pcsName, extra...)
}

func getPCS(ctx context.Context, g Gomega, namespace, name string) *copsev1alpha1.PodCliqueSet {
	return env.GetPodCliqueSet(ctx, g, namespace, name)
}

func envOf(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}
