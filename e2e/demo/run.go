package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

const (
	releaseName      = "copse"
	releaseNamespace = "copse-system"
	demoNamespace    = "demo"
)

type demoOptions struct {
	dir, samplesDir string
	timeout         time.Duration
}

// run is the whole show; see the package comment.
func run(ctx context.Context, opts demoOptions) error {
	started := time.Now()
	step("starting the local cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok) with simulated GPU nodes")
	c, err := cluster.Start(ctx, cluster.Options{Dir: opts.dir, Detach: true, Out: os.Stdout})
	if err != nil {
		return err
	}
	kube, err := client.New(c.RESTConfig(), client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	env := &framework.Env{Cluster: c, Client: kube, Clientset: c.Client(), Topology: c.Topology()}

	step("installing copse with Helm (chart charts/copse, local mode)")
	ports, err := framework.AllocateLocalOperatorPorts()
	if err != nil {
		return err
	}
	if err := installChart(ctx, env, ports); err != nil {
		return err
	}

	step("starting copse-operator as a local process, with the chart's ServiceAccount identity")
	if err := startOperator(ctx, env, opts.dir, ports); err != nil {
		return err
	}

	step("starting the JobSet controller (sigs.k8s.io/jobset) as a local process, with its webhooks registered")
	jobset, err := startJobSet(ctx, env, opts.dir)
	if err != nil {
		return err
	}

	step("applying the samples in " + opts.samplesDir + " to namespace " + demoNamespace)
	if err := ensureNamespace(ctx, kube, demoNamespace); err != nil {
		return err
	}
	if _, err := applySamples(ctx, kube, opts.samplesDir, demoNamespace); err != nil {
		return err
	}

	step("watching the workloads until every Training sample has ended")
	final, err := watch(ctx, kube, opts.timeout)
	fmt.Println()
	fmt.Println(final)
	fmt.Printf("demo took %s\n\n", time.Since(started).Round(time.Second))
	printUsage(c, opts.dir, jobset)
	return err
}

func step(msg string) { fmt.Printf("\n==> %s\n", msg) }

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// watch redraws the table every second until every Training workload is
// terminal, and returns the last table.
func watch(ctx context.Context, c client.Client, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	interactive := isTerminal(os.Stdout)
	last := ""
	for {
		var sets copsev1alpha1.PodCliqueSetList
		var pods corev1.PodList
		if err := c.List(ctx, &sets, client.InNamespace(demoNamespace)); err != nil {
			return last, fmt.Errorf("list PodCliqueSets: %w", err)
		}
		if err := c.List(ctx, &pods, client.InNamespace(demoNamespace)); err != nil {
			return last, fmt.Errorf("list pods: %w", err)
		}
		table := tableString(rowsOf(sets.Items, pods.Items))
		if table != last {
			if interactive && last != "" {
				// Move the cursor up over the previous table and redraw it.
				fmt.Printf("\033[%dA\033[J", countLines(last)+1)
			}
			fmt.Printf("%s\n", time.Now().Format("15:04:05"))
			fmt.Print(table)
			last = table
		}
		if len(sets.Items) > 0 && trainingDone(sets.Items) {
			return last, nil
		}
		if time.Now().After(deadline) {
			return last, errTrainingNotDone
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func countLines(s string) int {
	n := 0
	for _, r := range s {
		if r == '\n' {
			n++
		}
	}
	return n
}

func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func printUsage(c *cluster.Cluster, dir string, jobset *framework.JobSet) {
	fmt.Printf(`The cluster, the operator and the JobSet controller (%s, with its webhooks) keep running. To look around:

  export KUBECONFIG=%s
  alias kubectl='%s'
  kubectl get pcs -n %s                     # workloads: type, phase, restarts
  kubectl get pclq,pods -n %s -L copse.dev/attempt
  kubectl describe pcs -n %s finetune-flaky # events: PodCliqueFailed, ReplicaRestarting, WorkloadSucceeded
  kubectl get nodes -L nvidia.com/gpu.clique
  kubectl get jobsets -A                      # JobSets, admitted by JobSet's own webhooks

Operator log: %s
JobSet controller log: %s
Tear it all down with: make demo-down
`, jobset.Version, c.Kubeconfig(), c.Binaries().Kubectl, demoNamespace, demoNamespace, demoNamespace,
		filepath.Join(dir, "logs", "copse-operator.log"), jobset.LogPath)
}
