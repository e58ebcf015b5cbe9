package inference_test

import (
	"context"
	"slices"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/copse-dev/copse/e2e/framework"
	"github.com/copse-dev/copse/internal/blueprint"
)

// startsBefore is one ordering Grove's startup-ordering scenarios check:
// the pods whose names contain after became Ready no earlier than the
// minAvailable-th pod whose name contains before.
type startsBefore struct {
	before       string
	minAvailable int
	after        string
	// gated: every pod of after carries copse's startup gate.
	gated bool
}

// Grove's startup-ordering scenarios (operator/e2e/tests/startup_ordering_test.go):
// each workload's 10 pods become Ready, and the Ready times of the cliques'
// pods follow the order, as Grove checks them.
var _ = Describe("Grove startup ordering scenarios", Label("inference"), func() {
	It("SO1-SO4: starts InOrder and Explicit cliques, of full and of minAvailable workloads, in order", func(ctx context.Context) {
		namespace := env.NewNamespace(ctx, "grove-so")
		inOrder := ptr.To(grovecorev1alpha1.CliqueStartupTypeInOrder)
		explicit := ptr.To(grovecorev1alpha1.CliqueStartupTypeExplicit)
		// Grove's workloads 3-6; within a scaled group replica (sg-x-1 of
		// the minAvailable workloads) Grove orders only that replica's own
		// cliques.
		withinGroups := []startsBefore{
			{"-pc-a-", 1, "-sg-x-", false},
			{"-sg-x-0-pc-b-", 1, "-sg-x-0-pc-c-", true},
			{"-sg-x-1-pc-b-", 1, "-sg-x-1-pc-c-", true},
		}
		scenarios := []struct {
			name  string
			shape groveShape
			order []startsBefore
		}{
			{"so1", groveShape{minA: 2, minC: 3, minGroup: 2, startup: inOrder},
				[]startsBefore{{"-pc-a-", 2, "-pc-b-", true}, {"-pc-b-", 2, "-pc-c-", true}}},
			{"so2", groveShape{minA: 1, minC: 1, minGroup: 1, startup: inOrder}, withinGroups},
			{"so3", groveShape{minA: 2, minC: 3, minGroup: 2, startup: explicit, startsAfter: map[string][]string{"pc-c": {"pc-a"}, "pc-b": {"pc-c"}}},
				[]startsBefore{{"-pc-a-", 2, "-pc-c-", true}, {"-pc-a-", 2, "-pc-b-", true}, {"-pc-c-", 6, "-pc-b-", true}}},
			{"so4", groveShape{minA: 1, minC: 1, minGroup: 1, startup: explicit, startsAfter: map[string][]string{"pc-b": {"pc-a"}, "pc-c": {"pc-b"}}}, withinGroups},
		}
		for _, s := range scenarios {
			Expect(env.Client.Create(ctx, groveWorkload(namespace, s.name, s.shape, framework.PodSpec(0)))).To(Succeed())
		}
		for _, s := range scenarios {
			By(strings.ToUpper(s.name) + ": all 10 pods Ready, in order")
			pods := env.ReadyPods(ctx, namespace, s.name, 10, groveWait)
			for _, o := range s.order {
				before, after := podsNamed(pods, o.before), podsNamed(pods, o.after)
				Expect(len(before)).To(BeNumerically(">=", o.minAvailable), "pods of %s", o.before)
				Expect(after).NotTo(BeEmpty(), "pods of %s", o.after)
				nth := readyTimes(before)[o.minAvailable-1]
				first := readyTimes(after)[0]
				Expect(first).NotTo(BeTemporally("<", nth), "%s: a pod of %s was Ready at %s, before %d pod(s) of %s were (%s)", s.name, o.after, first, o.minAvailable, o.before, nth)
				for _, p := range after {
					if !o.gated {
						break
					}
					Expect(p.Spec.InitContainers).NotTo(BeEmpty(), "pod %s starts after %s: it has the startup gate", p.Name, o.before)
					Expect(p.Spec.InitContainers[0].Name).To(Equal(blueprint.StartupGateContainer))
				}
			}
		}
	})
})

// podsNamed are the pods whose name contains part.
func podsNamed(pods []corev1.Pod, part string) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if strings.Contains(p.Name, part) {
			out = append(out, p)
		}
	}
	return out
}

// readyTimes are the times the pods' Ready condition became True, earliest
// first.
func readyTimes(pods []corev1.Pod) []time.Time {
	var out []time.Time
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, c.LastTransitionTime.Time)
			}
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}
