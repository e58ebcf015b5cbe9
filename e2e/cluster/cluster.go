package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/copse-dev/copse/e2e/process"
)

// defaultComponentTimeout bounds the wait for a component to become healthy
// when Options.ComponentTimeout is zero.
const defaultComponentTimeout = 2 * time.Minute

// ErrAlreadyRunning is returned by Start when the directory belongs to a
// cluster whose processes are still alive.
var ErrAlreadyRunning = errors.New("cluster already running")

// Options configure Start. The zero value is a usable default.
type Options struct {
	// Dir holds the cluster's data, logs, kubeconfigs and state file. Empty
	// means a fresh temporary directory. A directory left by a stopped
	// cluster is reused; one whose processes still run is refused.
	Dir string
	// KeepDir keeps Dir after Stop (logs for a post-mortem, say).
	KeepDir bool
	// Topology of the initial nodes; nil means DefaultTopology(). A
	// topology with zero counts starts without nodes.
	Topology *Topology
	// Detach lets the processes outlive the calling process (the CLI's up).
	// Otherwise they are killed when it dies, even without Stop.
	Detach bool
	// Binaries to run; nil means EnsureBinaries.
	Binaries *Binaries
	// Out receives progress lines; nil means os.Stderr. Use io.Discard to
	// silence it, or GinkgoWriter in suites.
	Out io.Writer
	// ComponentTimeout bounds the wait for each component to become healthy,
	// at start and after RestartAPIServer; zero means 2 minutes.
	ComponentTimeout time.Duration
	// NVIDIADRA runs the simulated NVIDIA DRA driver (package nvidiadra) as
	// a component: the ComputeDomain CRD, the channel DeviceClass, a
	// ResourceSlice of channels per GPU node (nodes added later included)
	// and the ComputeDomain controller. Its binary is built from the working
	// tree on first use unless Binaries names one.
	NVIDIADRA bool
	// RealNodes starts that many real nodes (realnode.go) next to the
	// simulated ones: a kubelet, containerd and runc each, running real
	// containers. Start fails, saying why, on a host that cannot run them
	// (RealNodeSupport).
	RealNodes int
}

// Cluster is a running (or, after Load, previously started) local cluster.
type Cluster struct {
	dir      string
	keepDir  bool
	layout   layout
	state    state
	topology Topology
	out      io.Writer

	timeout    time.Duration // Options.ComponentTimeout
	restConfig *rest.Config
	client     kubernetes.Interface

	// procsMu guards procs, the state's components, and the faults in
	// progress: RestartAPIServer replaces a process while CheckHealthy may
	// read them.
	procsMu sync.Mutex
	procs   []*process.Process
	// restarting names the components RestartAPIServer has stopped on
	// purpose; CheckHealthy does not report them.
	restarting map[string]bool
	// pauses are the components PauseEtcd froze; Stop resumes them.
	pauses []*Pause

	nodesMu  sync.Mutex // serialises AddNodes' index and IP allocation
	stopOnce sync.Once
	stopErr  error
}

// Start builds (or finds cached) binaries, starts etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok on loopback, creates the
// simulated nodes and waits until they are Ready. On failure everything
// started is stopped and the directory is kept for its logs.
//
// The ports are picked free before the components start, seconds before
// the last binds its own; meanwhile any process on the machine (a client
// of another cluster, given an ephemeral port) may take one. A start that
// fails only because a port was taken is made again, on new ports, up to
// startAttempts times, each in a directory of its own (with Options.Dir,
// in that directory again).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	var err error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var c *Cluster
		if c, err = startOnce(ctx, opts); err == nil || !portTaken(err) || ctx.Err() != nil {
			return c, err
		}
		fmt.Fprintf(outOf(opts), "a port was taken before its component bound it (attempt %d of %d): starting again on new ports\n", attempt, startAttempts)
	}
	return nil, err
}

// startAttempts bounds Start's attempts after a port was taken.
const startAttempts = 3

// portTaken reports whether a start failed because a component could not
// bind its port: the component's last log lines, quoted in err, say so.
func portTaken(err error) bool {
	return strings.Contains(err.Error(), "address already in use")
}

// outOf is where a start reports progress.
func outOf(opts Options) io.Writer {
	if opts.Out == nil {
		return os.Stderr
	}
	return opts.Out
}

func startOnce(ctx context.Context, opts Options) (c *Cluster, err error) {
	began := time.Now()
	out := outOf(opts)
	topo := DefaultTopology()
	if opts.Topology != nil {
		topo = *opts.Topology
	}
	topo.Shape = topo.Shape.withDefaults()
	if err := topo.validate(); err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	timeout := opts.ComponentTimeout
	if timeout == 0 {
		timeout = defaultComponentTimeout
	}
	var bins Binaries
	if opts.Binaries != nil {
		bins = *opts.Binaries
	} else if bins, err = ensureBinaries(ctx, out); err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	if opts.RealNodes > 0 {
		if err := RealNodeSupport(); err != nil {
			return nil, fmt.Errorf("start cluster: %w", err)
		}
	}
	if opts.NVIDIADRA && bins.NVIDIADRASim == "" {
		if bins.NVIDIADRASim, err = EnsureNVIDIADRASimBinary(ctx, out); err != nil {
			return nil, fmt.Errorf("start cluster: %w", err)
		}
	}

	dir, err := prepareDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	l := layout{dir: dir}
	c = &Cluster{
		dir:      dir,
		keepDir:  opts.KeepDir,
		layout:   l,
		topology: topo,
		out:      out,
		timeout:  timeout,
		state: state{
			Version:   stateVersion,
			Dir:       dir,
			Detached:  opts.Detach,
			StartedAt: time.Now().UTC(),
			Binaries:  bins,
			Topology:  topo,
			NVIDIADRA: opts.NVIDIADRA,
		},
	}
	defer func() {
		if err != nil {
			c.abort()
			err = fmt.Errorf("start cluster: %w (logs kept in %s)", err, filepath.Join(dir, "logs"))
			c = nil
		}
	}()

	if c.state.RealNodes, err = planRealNodes(dir, opts.RealNodes); err != nil {
		return c, err
	}
	ids, kwokConfigs, err := writeClusterFiles(l, c.state.RealNodes)
	if err != nil {
		return c, err
	}
	if c.state.Ports, err = freePorts(); err != nil {
		return c, err
	}
	c.state.APIServerURL = loopbackURL("https", c.state.Ports.APIServer)
	fmt.Fprintf(out, "starting cluster in %s\n", dir)

	if err := c.startControlPlane(ctx, bins, ids, timeout); err != nil {
		return c, err
	}
	if err := c.startControllers(ctx, bins, kwokConfigs, timeout); err != nil {
		return c, err
	}
	if err := c.createInitialNodes(ctx); err != nil {
		return c, err
	}
	if err := c.waitChannelSlices(ctx, nodeNames(topo.Placements())); err != nil {
		return c, err
	}
	if err := c.waitDefaultServiceAccount(ctx, timeout); err != nil {
		return c, err
	}
	if err := c.startRealNodes(ctx, ids, timeout); err != nil {
		return c, err
	}
	fmt.Fprintf(out, "cluster ready in %s: %d nodes (%d real), API server %s\n",
		time.Since(began).Round(100*time.Millisecond), len(topo.Placements())+len(c.state.RealNodes), len(c.state.RealNodes), c.state.APIServerURL)
	return c, nil
}

// writeClusterFiles creates the directory layout and everything the
// components read at start: credentials, kwok's configuration and stages.
func writeClusterFiles(l layout, realNodes []realNodeState) (map[string]identity, []string, error) {
	for _, d := range l.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	ids, err := newIdentities(realNodes)
	if err != nil {
		return nil, nil, err
	}
	if err := writeTokenFile(l.tokenFile(), ids); err != nil {
		return nil, nil, err
	}
	if err := writeServiceAccountKeys(l.saKey(), l.saPub()); err != nil {
		return nil, nil, err
	}
	stageFiles, err := writeStageFiles(l.kwokStages())
	if err != nil {
		return nil, nil, err
	}
	configuration, err := writeKwokConfiguration(l.kwokHome())
	if err != nil {
		return nil, nil, err
	}
	return ids, append([]string{configuration}, stageFiles...), nil
}

// startControlPlane starts etcd, then kube-apiserver (each needs the one
// before), and writes the kubeconfigs, which embed the CA the apiserver
// generated for itself.
func (c *Cluster) startControlPlane(ctx context.Context, bins Binaries, ids map[string]identity, timeout time.Duration) error {
	l, ports := c.layout, c.state.Ports
	etcd, err := c.start(process.Spec{Name: Etcd, Binary: bins.Etcd, Args: etcdArgs(l, ports)})
	if err != nil {
		return err
	}
	if err := c.wait(ctx, etcd, httpProbe(loopbackURL("http", ports.EtcdClient)+"/health", "", `"health":"true"`), timeout); err != nil {
		return err
	}
	apiserver, err := c.start(process.Spec{Name: KubeAPIServer, Binary: bins.KubeAPIServer, Args: apiserverArgs(l, ports)})
	if err != nil {
		return err
	}
	if err := c.wait(ctx, apiserver, httpProbe(c.state.APIServerURL+"/readyz", ids["admin"].token, ""), timeout); err != nil {
		return err
	}

	bundle, err := os.ReadFile(l.apiserverCert())
	if err != nil {
		return fmt.Errorf("read kube-apiserver serving certificate: %w", err)
	}
	caPEM, err := servingCA(bundle)
	if err != nil {
		return err
	}
	if err := os.WriteFile(l.apiserverCA(), caPEM, 0o644); err != nil {
		return fmt.Errorf("write cluster CA: %w", err)
	}
	if err := writeKubeconfig(l.adminKubeconfig(), c.state.APIServerURL, caPEM, ids["admin"]); err != nil {
		return err
	}
	c.state.Kubeconfig = l.adminKubeconfig()
	for _, name := range []string{KubeControllerManager, KubeScheduler, Kwok, NVIDIADRASim} {
		if err := writeKubeconfig(l.kubeconfig(name), c.state.APIServerURL, caPEM, ids[name]); err != nil {
			return err
		}
	}
	if c.restConfig, err = restConfigFromKubeconfig(l.adminKubeconfig()); err != nil {
		return err
	}
	if c.client, err = kubernetes.NewForConfig(c.restConfig); err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	return nil
}

// startControllers starts the controller-manager, the scheduler, kwok and,
// if asked for, the simulated NVIDIA DRA driver. They only need the
// apiserver, so they start together and are then waited for in turn.
func (c *Cluster) startControllers(ctx context.Context, bins Binaries, kwokConfigs []string, timeout time.Duration) error {
	l, ports := c.layout, c.state.Ports
	components := []struct {
		spec  process.Spec
		check probe
	}{
		{
			process.Spec{Name: KubeControllerManager, Binary: bins.KubeControllerManager, Args: controllerManagerArgs(l, ports)},
			httpProbe(loopbackURL("https", ports.ControllerManager)+"/healthz", "", ""),
		},
		{
			process.Spec{Name: KubeScheduler, Binary: bins.KubeScheduler, Args: schedulerArgs(l, ports)},
			httpProbe(loopbackURL("https", ports.Scheduler)+"/healthz", "", ""),
		},
		{
			process.Spec{Name: Kwok, Binary: bins.Kwok, Args: kwokArgs(l, ports, kwokConfigs), Env: kwokEnv(l)},
			httpProbe(loopbackURL("http", ports.Kwok)+"/healthz", "", ""),
		},
	}
	if c.state.NVIDIADRA {
		components = append(components, struct {
			spec  process.Spec
			check probe
		}{
			process.Spec{Name: NVIDIADRASim, Binary: bins.NVIDIADRASim, Args: nvidiaDRASimArgs(l, ports)},
			httpProbe(loopbackURL("http", ports.NVIDIADRASim)+"/healthz", "", ""),
		})
	}
	started := make([]*process.Process, 0, len(components))
	for _, comp := range components {
		p, err := c.start(comp.spec)
		if err != nil {
			return err
		}
		started = append(started, p)
	}
	for i, p := range started {
		if err := c.wait(ctx, p, components[i].check, timeout); err != nil {
			return err
		}
	}
	return nil
}

// prepareDir returns an absolute, empty cluster directory. It only ever
// deletes a directory that holds a copse state file (of a stopped cluster),
// so that a mistyped --dir cannot wipe unrelated files.
func prepareDir(dir string) (string, error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "copse-cluster-")
		if err != nil {
			return "", fmt.Errorf("create cluster directory: %w", err)
		}
		return tmp, nil
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cluster directory: %w", err)
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return dir, os.MkdirAll(dir, 0o755)
	case err != nil:
		return "", fmt.Errorf("cluster directory: %w", err)
	case len(entries) == 0:
		return dir, nil
	}
	l := layout{dir: dir}
	s, err := readState(l.state())
	if err != nil {
		if errors.Is(err, ErrNoCluster) {
			return "", fmt.Errorf("directory %s is not empty and holds no copse cluster; refusing to reuse it", dir)
		}
		return "", err
	}
	for _, p := range s.processes() {
		if ended, _ := p.Ended(); !ended {
			return "", fmt.Errorf("%w in %s (%s pid %d); stop it first", ErrAlreadyRunning, dir, p.Name(), p.PID())
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("clear stale cluster directory: %w", err)
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// start launches a component and records it in the state file right away,
// so that `down` can clean up even after a failed `up`.
func (c *Cluster) start(spec process.Spec) (*process.Process, error) {
	spec.LogPath = c.layout.log(spec.Name)
	spec.Detach = c.state.Detached
	fmt.Fprintf(c.out, "starting %s\n", spec.Name)
	p, err := process.Start(spec)
	if err != nil {
		return nil, err
	}
	return p, c.record(p)
}

// record adds p to the cluster's components and to its state file.
func (c *Cluster) record(p *process.Process) error {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	c.procs = append(c.procs, p)
	c.state.Components = append(c.state.Components, componentState{
		Name: p.Name(), PID: p.PID(), Binary: p.Spec().Binary, Args: p.Spec().Args, Log: p.LogPath(),
	})
	return writeState(c.layout.state(), c.state)
}

// AddProcess makes p, a process started next to the cluster (a controller
// run detached for `copse-cluster up --kueue` or `make demo`), one of the
// cluster's components: Components and CheckHealthy report it, and Stop
// (`copse-cluster down`, `make demo-down`, in another process too) stops it
// before the components started earlier.
func (c *Cluster) AddProcess(p *process.Process) error {
	if err := c.record(p); err != nil {
		return fmt.Errorf("add %s to the cluster: %w", p.Name(), err)
	}
	return nil
}

func (c *Cluster) wait(ctx context.Context, p *process.Process, check probe, timeout time.Duration) error {
	began := time.Now()
	if err := waitHealthy(ctx, p, check, timeout); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("start %s: %w", p.Name(), ctx.Err())
		}
		return fmt.Errorf("start %s: %w", p.Name(), err)
	}
	fmt.Fprintf(c.out, "%s healthy after %s\n", p.Name(), time.Since(began).Round(100*time.Millisecond))
	return nil
}

func nodeNames(placements []Placement) []string {
	names := make([]string, 0, len(placements))
	for _, p := range placements {
		names = append(names, p.NodeName())
	}
	return names
}

func (c *Cluster) createInitialNodes(ctx context.Context) error {
	placements := c.topology.Placements()
	if len(placements) == 0 {
		return nil
	}
	ips := freeNodeIPs(nil, len(placements))
	nodes := make([]*corev1.Node, 0, len(placements))
	for i, p := range placements {
		n, err := NodeObject(p, c.topology.Shape, ips[i])
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	c.nodesMu.Lock()
	defer c.nodesMu.Unlock()
	if _, err := c.createNodes(ctx, nodes); err != nil {
		return fmt.Errorf("create nodes: %w", err)
	}
	return nil
}

// waitDefaultServiceAccount waits for the serviceaccount controller: until
// it has created "default" in a namespace, the apiserver rejects pods there.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, nil
	})
	if err != nil {
		if herr := c.CheckHealthy(); herr != nil {
			return herr
		}
		return fmt.Errorf("wait for the default service account (kube-controller-manager log %s): %w", c.logPath(KubeControllerManager), err)
	}
	return nil
}

// Load returns a handle on a cluster started earlier (by another process)
// in dir, from its state file. It can report health, add or remove nodes and
// stop the cluster.
func Load(dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load cluster: %w", err)
	}
	l := layout{dir: dir}
	s, err := readState(l.state())
	if err != nil {
		return nil, fmt.Errorf("load cluster: %w", err)
	}
	c := &Cluster{dir: dir, layout: l, state: s, topology: s.Topology, out: os.Stderr, procs: s.processes()}
	if s.Kubeconfig != "" {
		if cfg, err := restConfigFromKubeconfig(s.Kubeconfig); err == nil {
			c.restConfig = cfg
			c.client, _ = kubernetes.NewForConfig(cfg)
		}
	}
	return c, nil
}

// Kubeconfig is the path of an admin kubeconfig for the cluster.
func (c *Cluster) Kubeconfig() string { return c.state.Kubeconfig }

// RESTConfig returns a fresh copy of the admin client configuration, or nil
// for a loaded cluster whose kubeconfig is missing.
func (c *Cluster) RESTConfig() *rest.Config {
	if c.restConfig == nil {
		return nil
	}
	return rest.CopyConfig(c.restConfig)
}

// Client is an admin clientset for the cluster.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Dir is the cluster directory.
func (c *Cluster) Dir() string { return c.dir }

// APIServerURL is the https URL of kube-apiserver.
func (c *Cluster) APIServerURL() string { return c.state.APIServerURL }

// Binaries are the executables the cluster runs (kubectl included).
func (c *Cluster) Binaries() Binaries { return c.state.Binaries }

// Ports are the components' loopback ports.
func (c *Cluster) Ports() Ports { return c.state.Ports }

// Topology is the shape the cluster started with (nodes added later are not
// included).
func (c *Cluster) Topology() Topology { return c.topology }

func (c *Cluster) logPath(component string) string { return c.layout.log(component) }

// ComponentStatus describes one process of the cluster.
type ComponentStatus struct {
	Name  string
	PID   int
	Log   string
	Alive bool
	// Exit says how it ended when it is not alive.
	Exit string
}

// Components reports every process the cluster started, in start order.
func (c *Cluster) Components() []ComponentStatus {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	out := make([]ComponentStatus, 0, len(c.procs))
	for _, p := range c.procs {
		s := ComponentStatus{Name: p.Name(), PID: p.PID(), Log: p.LogPath(), Alive: true}
		if err := p.ExitReason(); err != nil {
			s.Alive, s.Exit = false, err.Error()
		}
		out = append(out, s)
	}
	return out
}

// CheckHealthy returns an error naming every component that has exited, with
// the last lines of its log. Suites call it after each spec so that a
// crashed scheduler fails loudly instead of as a mysterious timeout. A
// component being restarted by RestartAPIServer is not reported.
func (c *Cluster) CheckHealthy() error {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	var errs []error
	for _, p := range c.procs {
		if c.restarting[p.Name()] {
			continue
		}
		if err := p.CheckHealthy(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stop terminates every process the cluster started (SIGTERM, then SIGKILL
// after 10s) in reverse start order, after resuming any PauseEtcd froze,
// and removes the directory unless KeepDir was set. It is safe to call more
// than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.resumePaused()
		var errs []error
		if err := c.stopRealNodes(); err != nil {
			errs = append(errs, err)
		}
		c.procsMu.Lock()
		procs := slices.Clone(c.procs)
		c.procsMu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			if err := procs[i].Stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 && !c.keepDir {
			if err := os.RemoveAll(c.dir); err != nil {
				errs = append(errs, fmt.Errorf("remove cluster directory: %w", err))
			}
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// abort stops whatever a failed Start had launched, keeping the directory.
func (c *Cluster) abort() {
	_ = c.stopRealNodes()
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	for i := len(c.procs) - 1; i >= 0; i-- {
		_ = c.procs[i].Stop(5 * time.Second)
	}
}
