package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
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
	fleet := demoFleet()
	step(fmt.Sprintf("starting the local cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok, simulated NVIDIA DRA driver) "+
		"with a GB200-like fleet: %d zone(s) x %d blocks x %d NVL72 racks x %d nodes x %d GPUs",
		fleet.Zones, fleet.BlocksPerZone, fleet.RacksPerBlock, fleet.NodesPerRack, fleet.Shape.GPUs))
	c, err := cluster.Start(ctx, cluster.Options{Dir: opts.dir, Detach: true, Out: os.Stdout, Topology: &fleet, NVIDIADRA: true})
	if err != nil {
		return err
	}
	kube, err := client.New(c.RESTConfig(), client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	env := &framework.Env{Cluster: c, Client: kube, Clientset: c.Client(), Topology: c.Topology()}

	step("installing copse with Helm (chart charts/copse, local mode; the trainer.kubeflow.org CRDs applied by the demo)")
	ports, err := framework.AllocateLocalOperatorPorts()
	if err != nil {
		return err
	}
	if err := installChart(ctx, env, ports); err != nil {
		return err
	}

	// The operator's TrainJob front-end refuses to start without the JobSet
	// API, which starting the JobSet controller installs.
	step("starting the JobSet controller (sigs.k8s.io/jobset) as a local process, with its webhooks registered")
	jobset, err := startJobSet(ctx, env, opts.dir)
	if err != nil {
		return err
	}

	// Kueue's JobSet and TrainJob integrations start at once only when
	// their CRDs are there: the chart's and JobSet's, installed above.
	step(fmt.Sprintf("starting Kueue as a local process, with its webhooks registered, and its queue: ClusterQueue %s "+
		"(%d GPUs of ResourceFlavor %s) and LocalQueue %s in namespace %s", demoQueue, demoQueueGPUs, demoFlavor, demoQueue, demoNamespace))
	kueueProcess, err := startKueue(ctx, env)
	if err != nil {
		return err
	}

	step("starting copse-operator as a local process, with the chart's ServiceAccount identity")
	if err := startOperator(ctx, env, opts.dir, ports); err != nil {
		return err
	}

	step("applying the samples in " + opts.samplesDir + " to namespace " + demoNamespace)
	if err := ensureNamespace(ctx, kube, demoNamespace); err != nil {
		return err
	}
	applied, err := applySamples(ctx, kube, opts.samplesDir, demoNamespace)
	if err != nil {
		return err
	}

	step("watching the workloads and TrainJobs until every Training and TrainJob sample has ended")
	final, landed, waits, err := watch(ctx, kube, applied, opts.timeout)
	fmt.Println()
	fmt.Println(final.render(time.Now()))
	fmt.Println(summary(applied, final, waits))
	fmt.Println(landed.render())
	fmt.Printf("demo took %s\n\n", time.Since(started).Round(time.Second))
	printUsage(c, opts.dir, jobset, kueueProcess)
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

// watch redraws the tables until every applied Training workload and
// TrainJob has ended, and returns the last view, where the GPU pods landed
// and what Kueue said while queued TrainJobs waited. On a terminal it
// redraws in place every second, so the ages move; otherwise it prints the
// tables each time something other than an age changed.
func watch(ctx context.Context, c client.Client, applied []appliedObject, timeout time.Duration) (view, placements, queueWaits, error) {
	deadline := time.Now().Add(timeout)
	interactive := isTerminal(os.Stdout)
	var last view
	landed := placements{}
	waits := queueWaits{}
	var nodeList corev1.NodeList
	if err := c.List(ctx, &nodeList); err != nil {
		return last, landed, waits, fmt.Errorf("list nodes: %w", err)
	}
	nodes := make(map[string]corev1.Node, len(nodeList.Items))
	for _, n := range nodeList.Items {
		nodes[n.Name] = n
	}
	lastTable := ""
	for {
		var sets copsev1alpha1.PodCliqueSetList
		var pods corev1.PodList
		var trainJobs trainerv1alpha1.TrainJobList
		var workloads kueue.WorkloadList
		for _, list := range []client.ObjectList{&sets, &pods, &trainJobs, &workloads} {
			if err := c.List(ctx, list, client.InNamespace(demoNamespace)); err != nil {
				return last, landed, waits, fmt.Errorf("list %T: %w", list, err)
			}
		}
		landed.record(pods.Items, nodes)
		v := newView(sets.Items, pods.Items, trainJobs.Items, workloads.Items)
		waits.record(v.queued)
		if lastTable == "" || interactive || !reflect.DeepEqual(v, last) {
			if interactive && lastTable != "" {
				// Move the cursor up over the previous tables and redraw them.
				fmt.Printf("\033[%dA\033[J", countLines(lastTable)+1)
			}
			lastTable = v.render(time.Now())
			fmt.Printf("%s\n", time.Now().Format("15:04:05"))
			fmt.Print(lastTable)
		}
		last = v
		if samplesEnded(applied, sets.Items, trainJobs.Items) {
			return last, landed, waits, nil
		}
		if time.Now().After(deadline) {
			return last, landed, waits, errSamplesNotDone
		}
		select {
		case <-ctx.Done():
			return last, landed, waits, ctx.Err()
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

func printUsage(c *cluster.Cluster, dir string, jobset *framework.JobSet, kueueProcess *framework.Kueue) {
	fmt.Printf(`The cluster, the operator, the JobSet controller (%s) and Kueue (%s), both with their webhooks, keep running. To look around:

  export KUBECONFIG=%s
  alias kubectl='%s'
  kubectl get pcs -n %s                        # workloads: type, phase, restarts
  kubectl get pclq,pods -n %s -L copse.dev/attempt
  kubectl describe pcs -n %s finetune-flaky    # events: PodCliqueFailed, ReplicaRestarting, WorkloadSucceeded
  kubectl get nodes -L topology.copse.dev/block,nvidia.com/gpu.clique
  kubectl get clustertopologybindings            # the fleet's levels: zone, block, rack (NVLink clique), host
  kubectl get computedomains -A                  # multi-node NVLink domains (simulated NVIDIA DRA driver)
  kubectl get resourceslices                     # the driver's IMEX channels, one slice per GPU node
  kubectl get trainjobs -n %s                  # TrainJobs: state, runtime, nodes (deleted 10 minutes after they end)
  kubectl describe trainjob -n %s bert-crash   # status: Failed with the JobSet's reason, jobsStatus
  kubectl get jobsets,jobs -n %s               # the TrainJobs' JobSets, admitted by JobSet's own webhooks
  kubectl get pcs -n %s llama-sft              # a TrainJob on the PodCliqueSet backend: one Training PodCliqueSet
  kubectl get workloads,podgroups -n %s        # gangs (Workload API): one Workload per PodCliqueSet and TrainJob
  kubectl get podgroup -n %s gpt-pretrain-0 -o jsonpath='{.spec.schedulingConstraints}'   # packed at the NVLink clique
  kubectl get clusterqueues,localqueues -A        # Kueue's queue: quota, pending and admitted workloads
  kubectl get workloads.kueue.x-k8s.io -n %s   # Kueue's Workloads of the queued TrainJobs: admitted, finished

Operator log: %s
JobSet controller log: %s
Kueue log: %s
Tear it all down with: make demo-down
`, jobset.Version, kueueProcess.Version, c.Kubeconfig(), c.Binaries().Kubectl, demoNamespace, demoNamespace, demoNamespace,
		demoNamespace, demoNamespace, demoNamespace, demoNamespace, demoNamespace, demoNamespace, demoNamespace,
		filepath.Join(dir, "logs", "copse-operator.log"), jobset.LogPath(), kueueProcess.LogPath())
}
