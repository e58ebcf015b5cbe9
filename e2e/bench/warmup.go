package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/copse-dev/copse/e2e/framework"
)

// gcWarmUpTimeout bounds the wait for the garbage collector to learn the
// new kinds: it rediscovers the API every 30 seconds.
const gcWarmUpTimeout = 2 * time.Minute

// warmUpGarbageCollector waits until kube-controller-manager's garbage
// collector cascades deletions from copse's kinds (and JobSet's, if it
// runs). The collector watches only the kinds it found at its last
// discovery, every 30 seconds; until it has seen CRDs installed a moment
// ago, a deleted PodCliqueSet's PodCliques, or a PodClique deleted in the
// foreground, would linger for up to 30 seconds, and a restart measured
// then would measure that. Each probe creates a workload of one gated pod,
// waits for its child object, deletes the workload and waits until the
// child is gone.
func (b *Bench) warmUpGarbageCollector(ctx context.Context) error {
	start := time.Now()
	ns, err := framework.CreateNamespace(ctx, b.env.Client, "bench-warmup")
	if err != nil {
		return err
	}
	spec := framework.PodSpec(0)
	spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
	probes := []func() error{func() error {
		if err := b.env.Client.Create(ctx, trainingPCS(ns, "probe", 1, 0, nil, true)); err != nil {
			return fmt.Errorf("garbage collector warm-up: %w", err)
		}
		return b.cascades(ctx, ns, pcsGVR, "probe", pclqGVR)
	}}
	if b.env.JobSet != nil {
		probes = append(probes, func() error {
			js, err := NewJobSet(ns, "probe", 1, spec, nil, 0)
			if err != nil {
				return err
			}
			if _, err := b.dyn.Resource(framework.JobSetGVR).Namespace(ns).Create(ctx, js, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("garbage collector warm-up: %w", err)
			}
			return b.cascades(ctx, ns, framework.JobSetGVR, "probe", jobGVR)
		})
	}
	errs := make([]error, len(probes))
	var wg sync.WaitGroup
	for i, probe := range probes {
		wg.Go(func() { errs[i] = probe() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := b.env.Clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return err
	}
	b.logf("the garbage collector cascades from copse's kinds%s (after %s)",
		map[bool]string{true: " and JobSet's", false: ""}[b.env.JobSet != nil], time.Since(start).Round(100*time.Millisecond))
	return nil
}

// cascades waits for a child of the owner, deletes the owner in the
// background and waits until no child is left.
func (b *Bench) cascades(ctx context.Context, ns string, owner schema.GroupVersionResource, name string, child schema.GroupVersionResource) error {
	children := b.dyn.Resource(child).Namespace(ns)
	count := func(ctx context.Context) (int, error) {
		list, err := children.List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(list.Items), nil
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := count(ctx)
		return n > 0, err
	})
	if err != nil {
		return fmt.Errorf("garbage collector warm-up: no %s of %s %s: %w", child.Resource, owner.Resource, name, err)
	}
	background := metav1.DeletePropagationBackground
	if err := b.dyn.Resource(owner).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		return fmt.Errorf("garbage collector warm-up: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, gcWarmUpTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := count(ctx)
		return n == 0, err
	})
	if err != nil {
		return fmt.Errorf("garbage collector warm-up: the %s of deleted %s %s are still there: %w", child.Resource, owner.Resource, name, err)
	}
	return nil
}
