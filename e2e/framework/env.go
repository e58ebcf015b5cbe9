package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/copse-dev/copse/e2e/cluster"
)

// SetupTimeout bounds Setup. The first run on a machine builds the
// Kubernetes binaries (about 10 minutes on 2 cores); later runs start in
// seconds. `make test-e2e` builds them before the suites start.
const SetupTimeout = 20 * time.Minute

// KeepEnvVar, when set to a non-empty value, keeps each suite's cluster
// directory (logs of every component) after the suite.
const KeepEnvVar = "COPSE_E2E_KEEP"

// Options configure Setup.
type Options struct {
	// Name identifies the suite in progress output.
	Name string
	// Topology of the simulated nodes; nil means cluster.DefaultTopology().
	Topology *cluster.Topology
	// WithOperator starts copse-operator once the CRDs are installed, with
	// its webhooks registered (see StartOperator), and sets Env.Operator.
	WithOperator bool
	// Operator configures that operator; its Name defaults to Name.
	Operator OperatorOptions
	// WithJobSet starts the JobSet controller with its webhooks registered
	// (see StartJobSet) and sets Env.JobSet.
	WithJobSet bool
	// WithKueue starts Kueue with its webhooks registered (see StartKueue)
	// and sets Env.Kueue. Kueue starts before the operator, so that its
	// CRDs are served when an operator with kueue.enabled starts.
	WithKueue bool
	// Kueue are the options of the Kueue WithKueue starts.
	Kueue KueueOptions
	// CoschedulingPodGroups installs the scheduler-plugins PodGroup CRD
	// (InstallCoschedulingPodGroupCRD) before the operator starts, so that
	// it makes the PodGroups of runtimes with podGroupPolicy.coscheduling.
	CoschedulingPodGroups bool
	// NVIDIADRA runs the simulated NVIDIA DRA driver in the cluster
	// (cluster.Options.NVIDIADRA): ComputeDomains, their channel claim
	// templates and channel devices on every GPU node.
	NVIDIADRA bool
	// RealNodes starts that many real nodes (cluster.Options.RealNodes):
	// kubelets running real containers, tainted so that only pods placed
	// with cluster.RealNodePlacement land there. The operator's startup
	// gate then uses the workload image the nodes hold (it has a shell).
	// SetupSuite skips the suite, saying why, on a host that cannot run
	// them (cluster.RealNodeSupport).
	RealNodes int
}

// Env is one suite's cluster with copse's CRDs installed.
type Env struct {
	Cluster   *cluster.Cluster
	Client    client.Client
	Clientset kubernetes.Interface
	Topology  cluster.Topology
	// Operator is the copse-operator started by Setup (Options.WithOperator)
	// or StartOperator; nil if none was.
	Operator *Operator
	// JobSet is the JobSet controller started by Setup (Options.WithJobSet)
	// or StartJobSet; nil if none was.
	JobSet *JobSet
	// Kueue is the Kueue started by Setup (Options.WithKueue) or
	// StartKueue; nil if none was.
	Kueue *Kueue
}

// Setup starts a local cluster for a suite and installs copse's CRDs.
func Setup(ctx context.Context, opts Options) (*Env, error) {
	env := &Env{}
	if err := env.setup(ctx, opts); err != nil {
		return nil, err
	}
	return env, nil
}

// setup is Setup into env, so that a suite's Env can be handed out before
// its BeforeSuite fills it in (SetupSuite).
func (env *Env) setup(ctx context.Context, opts Options) error {
	// The suite's own controller-runtime client logs through GinkgoWriter,
	// shown for failing specs only.
	ctrllog.SetLogger(zap.New(zap.WriteTo(ginkgo.GinkgoWriter)))
	topology := cluster.DefaultTopology()
	if opts.Topology != nil {
		topology = *opts.Topology
	}
	fmt.Fprintf(ginkgo.GinkgoWriter, "starting local cluster for suite %q\n", opts.Name)
	c, err := cluster.Start(ctx, cluster.Options{
		Topology:  &topology,
		Out:       ginkgo.GinkgoWriter,
		KeepDir:   os.Getenv(KeepEnvVar) != "",
		NVIDIADRA: opts.NVIDIADRA,
		RealNodes: opts.RealNodes,
	})
	if err != nil {
		return fmt.Errorf("start local cluster for suite %s: %w", opts.Name, err)
	}
	env.Cluster, env.Clientset, env.Topology = c, c.Client(), topology
	env.Client, err = client.New(c.RESTConfig(), client.Options{Scheme: Scheme()})
	if err != nil {
		_ = c.Stop()
		return fmt.Errorf("client for suite %s: %w", opts.Name, err)
	}
	if err := InstallCRDs(ctx, env.Client); err != nil {
		_ = c.Stop()
		return fmt.Errorf("install CRDs for suite %s: %w", opts.Name, err)
	}
	// The operator's TrainJob front-end (on by default) needs JobSet's API
	// served even in suites that run no JobSet controller.
	if _, err := InstallJobSetCRD(ctx, env.Client, ginkgo.GinkgoWriter); err != nil {
		_ = c.Stop()
		return fmt.Errorf("install the JobSet CRD for suite %s: %w", opts.Name, err)
	}
	if opts.CoschedulingPodGroups {
		if err := InstallCoschedulingPodGroupCRD(ctx, env.Client); err != nil {
			_ = c.Stop()
			return fmt.Errorf("install the scheduler-plugins PodGroup CRD for suite %s: %w", opts.Name, err)
		}
	}
	if opts.WithKueue {
		if _, err := StartKueue(ctx, env, opts.Kueue); err != nil {
			_ = env.Teardown()
			return fmt.Errorf("start Kueue for suite %s: %w", opts.Name, err)
		}
	}
	if opts.WithOperator {
		operatorOpts := opts.Operator
		if operatorOpts.Name == "" {
			operatorOpts.Name = opts.Name
		}
		if _, err := StartOperator(ctx, env, operatorOpts); err != nil {
			_ = env.Teardown()
			return fmt.Errorf("start operator for suite %s: %w", opts.Name, err)
		}
	}
	if opts.WithJobSet {
		if _, err := StartJobSet(ctx, env, JobSetOptions{}); err != nil {
			_ = env.Teardown()
			return fmt.Errorf("start the JobSet controller for suite %s: %w", opts.Name, err)
		}
	}
	return nil
}

// CheckHealthy reports a crashed control-plane component, operator, JobSet
// controller or Kueue, so a suite fails with the component's log instead of with a
// confusing timeout.
func (e *Env) CheckHealthy() error {
	err := e.Cluster.CheckHealthy()
	if e.Operator != nil {
		err = errors.Join(err, e.Operator.CheckHealthy())
	}
	if e.JobSet != nil {
		err = errors.Join(err, e.JobSet.CheckHealthy())
	}
	if e.Kueue != nil {
		err = errors.Join(err, e.Kueue.CheckHealthy())
	}
	return err
}

// Teardown stops the JobSet controller, the operator and Kueue, if they run, and
// every process of the suite's cluster.
func (e *Env) Teardown() error {
	if os.Getenv(KeepEnvVar) != "" {
		fmt.Fprintf(ginkgo.GinkgoWriter, "keeping cluster directory %s (%s is set)\n", e.Cluster.Dir(), KeepEnvVar)
	}
	var errs []error
	if e.JobSet != nil {
		errs = append(errs, e.JobSet.Stop())
	}
	if e.Operator != nil {
		errs = append(errs, e.Operator.Stop())
	}
	if e.Kueue != nil {
		errs = append(errs, e.Kueue.Stop())
	}
	return errors.Join(append(errs, e.Cluster.Stop())...)
}
