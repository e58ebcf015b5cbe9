// Command copse-cluster runs copse's local test cluster (see
// docs/local-cluster.md) in the background, for manual work against the same
// control plane the e2e suites use.
//
//	copse-cluster up [--dir D] [--zones N --blocks-per-zone N --racks-per-block N --nodes-per-rack N --gpus-per-node N] [--nvidia-dra] [--kueue] [--real-nodes N]
//	copse-cluster status [--dir D]
//	copse-cluster down [--dir D]
//	copse-cluster build [--parallel N]
//	copse-cluster tool BINARY
//	copse-cluster kubectl [--dir D] -- ARGS...
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/copse-dev/copse/e2e/cluster"
	"github.com/copse-dev/copse/e2e/framework"
)

const usage = `usage: copse-cluster <command> [flags]

commands:
  up      start a cluster in the background (refuses if one already runs in --dir)
  status  report whether each component of the cluster is alive
  down    stop the cluster and remove its directory
  build   build and cache every pinned tool (hack/tools/*), two at a time, and print their paths
  tool    print the path of one pinned binary, building its tool first if needed:
          tool BINARY (e.g. helm, controller-gen, crdgen, jobset-controller, trainer-oracle)
  kubectl run the cluster's kubectl (v1.37) against it: kubectl [--dir D] -- ARGS...

Run "copse-cluster <command> -h" for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "up":
		err = up(ctx, args)
	case "down":
		err = down(args)
	case "status":
		err = status(args)
	case "build":
		err = build(ctx, args)
	case "tool":
		err = tool(ctx, args)
	case "kubectl":
		err = kubectl(ctx, args)
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "copse-cluster:", err)
		os.Exit(1)
	}
}

// dirFlag registers --dir with the CLI's default cluster directory.
func dirFlag(fs *flag.FlagSet) *string {
	def, err := cluster.DefaultDir()
	if err != nil {
		def = ""
	}
	return fs.String("dir", def, "cluster directory (state, logs, kubeconfig)")
}

func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := dirFlag(fs)
	def := cluster.DefaultTopology()
	zones := fs.Int("zones", def.Zones, "zones")
	blocks := fs.Int("blocks-per-zone", def.BlocksPerZone, "blocks per zone")
	racks := fs.Int("racks-per-block", def.RacksPerBlock, "racks (NVLink domains) per block")
	nodes := fs.Int("nodes-per-rack", def.NodesPerRack, "nodes per rack")
	gpus := fs.Int("gpus-per-node", def.Shape.GPUs, "nvidia.com/gpu per node")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long each component may take to become healthy")
	nvidiaDRA := fs.Bool("nvidia-dra", false, "run the simulated NVIDIA DRA driver: ComputeDomain CRD, channel DeviceClass, channel ResourceSlices per GPU node, ComputeDomain controller")
	withKueue := fs.Bool("kueue", false, "run Kueue (sigs.k8s.io/kueue, pinned in hack/tools/kueue) with its CRDs and webhooks: integrations batch/job, JobSet and TrainJob")
	realNodes := fs.Int("real-nodes", 0, "real nodes to start next to the simulated ones: a kubelet, containerd and runc each, running real containers (root, cgroups and overlayfs needed; docs/local-cluster.md)")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("no --dir given and no user cache directory to default to")
	}

	topo := def
	topo.Zones, topo.BlocksPerZone, topo.RacksPerBlock, topo.NodesPerRack = *zones, *blocks, *racks, *nodes
	topo.Shape.GPUs = *gpus
	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{
		Dir:              *dir,
		Topology:         &topo,
		Detach:           true,
		ComponentTimeout: *timeout,
		NVIDIADRA:        *nvidiaDRA,
		RealNodes:        *realNodes,
	})
	if errors.Is(err, cluster.ErrAlreadyRunning) {
		return fmt.Errorf("%w\nit stays usable (KUBECONFIG=%s); to replace it run: copse-cluster down --dir %s",
			err, filepath.Join(*dir, "kubeconfig"), *dir)
	}
	if err != nil {
		return err
	}
	if *withKueue {
		if err := startKueue(ctx, c); err != nil {
			return fmt.Errorf("%w\nthe cluster runs without Kueue (KUBECONFIG=%s); stop it with: copse-cluster down --dir %s",
				err, c.Kubeconfig(), c.Dir())
		}
	}
	fmt.Printf(`cluster is up in %s (%s): %d nodes

  export KUBECONFIG=%s
  %s get nodes -L %s,%s

stop it with: copse-cluster down --dir %s
`, c.Dir(), time.Since(began).Round(100*time.Millisecond), len(topo.Placements()),
		c.Kubeconfig(), c.Binaries().Kubectl, cluster.LabelGPUClique, cluster.LabelInstanceType, c.Dir())
	return nil
}

// startKueue runs Kueue next to the cluster c, detached, as one of its
// components, so that `status` lists it and `down` stops it.
func startKueue(ctx context.Context, c *cluster.Cluster) error {
	kube, err := client.New(c.RESTConfig(), client.Options{Scheme: framework.Scheme()})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	env := &framework.Env{Cluster: c, Client: kube, Clientset: c.Client(), Topology: c.Topology()}
	_, err = framework.StartKueueDetached(ctx, env, os.Stdout)
	return err
}

func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := dirFlag(fs)
	_ = fs.Parse(args)
	c, err := cluster.Load(*dir)
	if errors.Is(err, cluster.ErrNoCluster) {
		fmt.Printf("no cluster in %s\n", *dir)
		return nil
	}
	if err != nil {
		return err
	}
	if err := c.Stop(); err != nil {
		return err
	}
	fmt.Printf("stopped cluster in %s and removed it\n", *dir)
	return nil
}

func status(args []string) error {
	fs := flag.NewFlagSet("status", flag.ExitOnError)
	dir := dirFlag(fs)
	_ = fs.Parse(args)
	c, err := cluster.Load(*dir)
	if err != nil {
		return err
	}
	fmt.Printf("cluster %s\napiserver %s\nkubeconfig %s\n\n", c.Dir(), c.APIServerURL(), c.Kubeconfig())
	dead := printComponents(os.Stdout, c.Components())
	if dead > 0 {
		return fmt.Errorf("%d component(s) not running; see their logs, then run: copse-cluster down --dir %s", dead, c.Dir())
	}
	return nil
}

// kubectl runs the kubectl built with the cluster, with its kubeconfig, and
// exits with kubectl's own exit code.
func kubectl(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("kubectl", flag.ExitOnError)
	dir := dirFlag(fs)
	_ = fs.Parse(args)
	c, err := cluster.Load(*dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, c.Binaries().Kubectl, append([]string{"--kubeconfig", c.Kubeconfig()}, fs.Args()...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			os.Exit(exitErr.ExitCode())
		}
		return fmt.Errorf("run kubectl: %w", err)
	}
	return nil
}

func printComponents(w io.Writer, comps []cluster.ComponentStatus) (dead int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tSTATE\tLOG")
	for _, s := range comps {
		state := "alive"
		if !s.Alive {
			state = "dead (" + s.Exit + ")"
			dead++
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.Name, s.PID, state, s.Log)
	}
	_ = tw.Flush()
	return dead
}

// build builds every pinned tool and prints each binary's path.
func build(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	parallel := fs.Int("parallel", 2, "how many tools build at once")
	_ = fs.Parse(args)
	tools, err := cluster.EnsureTools(ctx, *parallel, os.Stderr)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	defer func() { _ = tw.Flush() }()
	for _, built := range tools {
		for _, bin := range slices.Sorted(maps.Keys(built.Binaries)) {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", bin, built.Version, built.Path(bin))
		}
	}
	return nil
}

// tool prints the path of one pinned binary (for the Makefile), building
// its tool first if needed; progress goes to stderr.
func tool(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tool", flag.ExitOnError)
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("usage: copse-cluster tool BINARY")
	}
	path, err := cluster.EnsureToolBinary(ctx, fs.Arg(0), os.Stderr)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}
