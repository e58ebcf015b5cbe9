package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/process"
)

// Time limits of the operator's life cycle.
const (
	// DefaultOperatorReadyTimeout bounds the wait for /readyz after a start.
	DefaultOperatorReadyTimeout = 2 * time.Minute
	// operatorStopGrace is how long Stop waits after SIGTERM before SIGKILL;
	// a clean stop releases the Lease and takes a second or two.
	operatorStopGrace = 30 * time.Second
	// operatorLogTailLines is how much of the log an error quotes.
	operatorLogTailLines = 30
)

// OperatorOptions configure StartOperator. The zero value is usable.
type OperatorOptions struct {
	// Name identifies the suite: the webhook configurations are named
	// WebhookConfigurationName(Name). Empty means "e2e".
	Name string
	// StreamLogs copies the operator's log to GinkgoWriter, in addition to
	// the log file.
	StreamLogs bool
	// Configure may change the generated configuration (lease timings, log
	// level, concurrency) before it is written. The health probe address
	// must stay enabled: StartOperator waits on /readyz.
	Configure func(*configv1alpha1.OperatorConfiguration)
	// ReadyTimeout bounds the wait for /readyz after each start; zero means
	// DefaultOperatorReadyTimeout.
	ReadyTimeout time.Duration
	// SelfManagedCertificates runs the operator in certificates mode
	// SelfManaged, as the Helm chart does by default: the webhook
	// configurations are installed without caBundle before the operator
	// starts, and the operator provisions its serving certificate in the
	// Secret SelfManagedCertificateSecret(Name) and injects the CA. Without
	// it the framework writes the certificate itself (mode Provided).
	SelfManagedCertificates bool
}

// Operator is a copse-operator process run against a suite's cluster, with
// its admission webhooks served on 127.0.0.1 and registered with the API
// server. Its methods are safe for concurrent use.
type Operator struct {
	binary       string
	kubeconfig   string
	configPath   string
	logPath      string
	config       *configv1alpha1.OperatorConfiguration
	client       client.Client
	stream       io.Writer
	readyTimeout time.Duration

	// webhooks are the webhook configurations StartOperator installed with
	// a certificate it wrote, nil when the operator injects its own CA.
	webhooks *operatorWebhooks

	mu   sync.Mutex
	proc *process.Process
	// stoppedOnPurpose is set by Stop and Kill, so that CheckHealthy tells
	// an intended end from a crash.
	stoppedOnPurpose bool
}

// StartOperator builds copse-operator (once per test process), writes its
// serving certificate (unless opts.SelfManagedCertificates) and
// configuration under the cluster's directory, starts it, waits until it is
// ready, and installs the webhook configurations that send grove.io
// admission requests to it. The log is
// written to LogPath. env.Operator is set to the result, so that
// env.CheckHealthy reports an operator crash and env.Teardown stops it.
func StartOperator(ctx context.Context, env *Env, opts OperatorOptions) (*Operator, error) {
	if env.Operator != nil {
		return nil, errors.New("start operator: the suite's environment already runs one")
	}
	if opts.Name == "" {
		opts.Name = "e2e"
	}
	dir := filepath.Join(env.Cluster.Dir(), "operator")
	for _, d := range []string{dir, filepath.Join(env.Cluster.Dir(), "logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("start operator: %w", err)
		}
	}
	binary, err := ensureOperatorBinary(ctx, filepath.Join(env.Cluster.Dir(), "bin"))
	if err != nil {
		return nil, fmt.Errorf("start operator: %w", err)
	}
	ports, err := allocateOperatorPorts()
	if err != nil {
		return nil, fmt.Errorf("start operator: %w", err)
	}
	certDir := filepath.Join(dir, "certs")
	var caPEM []byte
	gateImage := env.Cluster.NodeImages().Workload
	configure := func(cfg *configv1alpha1.OperatorConfiguration) {
		if gateImage != "" {
			// Real nodes pull nothing: the gate runs the image they hold.
			cfg.StartupGate.Image = gateImage
		}
		if opts.SelfManagedCertificates {
			useSelfManagedCertificates(cfg, opts.Name)
		}
		if opts.Configure != nil {
			opts.Configure(cfg)
		}
	}
	if !opts.SelfManagedCertificates {
		if caPEM, err = WriteServingCertificate(certDir, "copse-operator-webhook"); err != nil {
			return nil, fmt.Errorf("start operator: %w", err)
		}
	}
	cfg := operatorConfiguration(ports, certDir, configure)
	if cfg.Server.HealthProbes.BindAddress == "0" {
		return nil, errors.New("start operator: the health probes must stay enabled, StartOperator waits on /readyz")
	}
	configPath := filepath.Join(dir, "config.yaml")
	if err := writeOperatorConfiguration(configPath, cfg); err != nil {
		return nil, fmt.Errorf("start operator: %w", err)
	}
	if err := ensureNamespace(ctx, env.Client, cfg.LeaderElection.ResourceNamespace); err != nil {
		return nil, fmt.Errorf("start operator: %w", err)
	}
	webhookURL := "https://" + loopback(int(cfg.WebhookServer.Port))
	webhookConfigurationName := WebhookConfigurationName(opts.Name)
	if opts.SelfManagedCertificates {
		// As the Helm chart installs them: without caBundle, which the
		// operator injects when it starts.
		if err := installWebhookConfigurations(ctx, env.Client, webhookConfigurationName, webhookURL, nil, *cfg.Controllers.TrainJob.Enabled); err != nil {
			return nil, fmt.Errorf("start operator: %w", err)
		}
	}

	o := newOperator(env, binary, env.Cluster.Kubeconfig(), configPath, cfg, opts.ReadyTimeout, opts.StreamLogs)
	fmt.Fprintf(ginkgo.GinkgoWriter, "starting copse-operator (log: %s)\n", o.logPath)
	if err := o.start(ctx); err != nil {
		_ = o.Kill()
		return nil, err
	}
	if opts.SelfManagedCertificates {
		caPEM, err = waitCABundleInjected(ctx, env.Client, webhookConfigurationName)
	}
	if err == nil {
		err = checkWebhookEndpointsServed(ctx, webhookURL, caPEM, *cfg.Controllers.TrainJob.Enabled)
	}
	if err == nil && !opts.SelfManagedCertificates {
		err = installWebhookConfigurations(ctx, env.Client, webhookConfigurationName, webhookURL, caPEM, *cfg.Controllers.TrainJob.Enabled)
		o.webhooks = &operatorWebhooks{name: webhookConfigurationName, url: webhookURL, caPEM: caPEM}
	}
	if err == nil {
		err = waitWebhooksActive(ctx, env.Client, cfg.LeaderElection.ResourceNamespace)
	}
	if err != nil {
		_ = o.Stop()
		return nil, fmt.Errorf("start operator: %w; last log lines (%s):\n%s", err, o.logPath, process.LogTail(o.logPath, operatorLogTailLines))
	}
	env.Operator = o
	return o, nil
}

// Stop sends SIGTERM and waits for the operator to exit, as a rolling update
// would; it releases its Lease on the way out. Stopping a stopped operator
// does nothing. An operator that exits with an error after SIGTERM, or has
// to be killed, is reported.
func (o *Operator) Stop() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stopLocked()
}

func (o *Operator) stopLocked() error {
	if o.proc == nil {
		return nil
	}
	o.stoppedOnPurpose = true
	if ended, _ := o.proc.Ended(); ended {
		return nil
	}
	if err := o.proc.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if !o.proc.WaitExit(operatorStopGrace) {
		_ = o.proc.Signal(syscall.SIGKILL)
		o.proc.WaitExit(10 * time.Second)
		return o.errorWithLog(fmt.Errorf("copse-operator did not exit within %s of SIGTERM and was killed", operatorStopGrace))
	}
	if _, err := o.proc.Ended(); err != nil {
		return o.errorWithLog(fmt.Errorf("copse-operator exited with %w after SIGTERM", err))
	}
	return nil
}

// Kill ends the operator with SIGKILL, as a crash or an OOM kill would: it
// gets no chance to release its Lease, so a restarted operator waits for the
// Lease to expire before it leads (see WaitForLeadership).
func (o *Operator) Kill() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc == nil {
		return nil
	}
	o.stoppedOnPurpose = true
	if ended, _ := o.proc.Ended(); ended {
		return nil
	}
	if err := o.proc.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !o.proc.WaitExit(10 * time.Second) {
		return fmt.Errorf("copse-operator (pid %d) still runs 10s after SIGKILL", o.proc.PID())
	}
	return nil
}

// Restart stops the operator if it runs (SIGTERM, as Stop), then starts it
// again with the same binary, configuration, ports and certificate, and
// waits until it is ready. After Kill it simply starts it again.
func (o *Operator) Restart(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.stopLocked(); err != nil {
		return fmt.Errorf("restart operator: %w", err)
	}
	return o.startLocked(ctx)
}

// operatorWebhooks is where StartOperator pointed the API server.
type operatorWebhooks struct {
	name, url string
	caPEM     []byte
}

// RestartWith stops the operator, changes its configuration, and starts it
// again with it: for specs that need the operator configured differently
// for a while (restore with another RestartWith). A change of
// controllers.trainJob.enabled also changes the webhook configurations to
// the endpoints the operator now serves, as the Helm chart's trainJob.enabled
// does, and waits until the API server calls them (only where StartOperator
// wrote the certificate).
func (o *Operator) RestartWith(ctx context.Context, change func(*configv1alpha1.OperatorConfiguration)) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.stopLocked(); err != nil {
		return fmt.Errorf("restart operator: %w", err)
	}
	cfg := o.config.DeepCopy()
	change(cfg)
	if err := writeOperatorConfiguration(o.configPath, cfg); err != nil {
		return fmt.Errorf("restart operator: %w", err)
	}
	trainJobBefore := *o.config.Controllers.TrainJob.Enabled
	o.config = cfg
	if err := o.startLocked(ctx); err != nil {
		return err
	}
	trainJob := *cfg.Controllers.TrainJob.Enabled
	if trainJob == trainJobBefore || o.webhooks == nil {
		return nil
	}
	w := o.webhooks
	err := checkWebhookEndpointsServed(ctx, w.url, w.caPEM, trainJob)
	if err == nil {
		err = installWebhookConfigurations(ctx, o.client, w.name, w.url, w.caPEM, trainJob)
	}
	if err == nil {
		probes := webhookProbes(cfg.LeaderElection.ResourceNamespace)
		if trainJob {
			probes = append(probes, trainJobWebhookProbe(cfg.LeaderElection.ResourceNamespace, "validate.trainjobs.trainer.kubeflow.org"))
		}
		err = waitProbesPass(ctx, o.client, probes)
	}
	if err != nil {
		return o.errorWithLog(fmt.Errorf("restart operator: webhooks: %w", err))
	}
	return nil
}

// Running reports whether the operator process is alive, with the reason it
// ended when it is not.
func (o *Operator) Running() (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc == nil {
		return false, nil
	}
	ended, err := o.proc.Ended()
	return !ended, err
}

// CheckHealthy returns an error with the end of the log if the operator has
// exited without Stop or Kill being called.
func (o *Operator) CheckHealthy() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc == nil || o.stoppedOnPurpose {
		return nil
	}
	if err := o.proc.ExitReason(); err != nil {
		return o.errorWithLog(fmt.Errorf("copse-operator exited unexpectedly (%w)", err))
	}
	return nil
}

// MetricsURL is the operator's Prometheus endpoint, or "" if metrics are off.
func (o *Operator) MetricsURL() string {
	if address := o.config.Server.Metrics.BindAddress; address != "0" {
		return "http://" + address + "/metrics"
	}
	return ""
}

// LogPath is the file the operator logs to; each start appends to it after
// a line beginning with "=====".
func (o *Operator) LogPath() string { return o.logPath }

// Configuration returns a copy of the configuration the operator runs with.
func (o *Operator) Configuration() *configv1alpha1.OperatorConfiguration {
	return o.config.DeepCopy()
}

func (o *Operator) start(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.startLocked(ctx)
}

func (o *Operator) startLocked(ctx context.Context) error {
	args := []string{"--kubeconfig", o.kubeconfig, "--config", o.configPath}
	proc, err := process.Start(process.Spec{Name: "copse-operator", Binary: o.binary, Args: args, LogPath: o.logPath, Stream: o.stream})
	if err != nil {
		return fmt.Errorf("start operator: %w", err)
	}
	o.proc, o.stoppedOnPurpose = proc, false
	return o.waitReadyLocked(ctx)
}

// waitReadyLocked polls /readyz, which turns 200 once the webhook server
// serves; a process that exits meanwhile is reported as a crash at once.
func (o *Operator) waitReadyLocked(ctx context.Context) error {
	url := "http://" + o.config.Server.HealthProbes.BindAddress + "/readyz"
	err := waitReadyz(ctx, "copse-operator", url, o.readyTimeout, o.proc.ExitReason)
	if err != nil {
		return o.errorWithLog(err)
	}
	return nil
}

// waitReadyz polls url until it answers 200, for at most timeout. alive
// reports why the process has ended, or nil while it runs: an ended process
// fails the wait at once.
func waitReadyz(ctx context.Context, name, url string, timeout time.Duration, alive func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	httpClient := &http.Client{Timeout: 2 * time.Second}
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		if err := alive(); err != nil {
			return fmt.Errorf("%s exited before it was ready (%w)", name, err)
		}
		problem := getStatus(ctx, httpClient, url)
		if problem == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %s: %s", name, timeout, url, problem)
		case <-ticker.C:
		}
	}
}

// getStatus returns "" if url answers 200, and otherwise what it answered.
func getStatus(ctx context.Context, httpClient *http.Client, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Sprintf("%s: %s", resp.Status, body)
	}
	return ""
}

func (o *Operator) errorWithLog(err error) error {
	return fmt.Errorf("%w; last log lines (%s):\n%s", err, o.logPath, process.LogTail(o.logPath, operatorLogTailLines))
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// newOperator assembles the Operator that StartOperator and
// StartOperatorProcess run: they differ only in identity and configuration.
func newOperator(env *Env, binary, kubeconfig, configPath string, cfg *configv1alpha1.OperatorConfiguration,
	readyTimeout time.Duration, streamLogs bool) *Operator {
	o := &Operator{
		binary:       binary,
		kubeconfig:   kubeconfig,
		configPath:   configPath,
		logPath:      filepath.Join(env.Cluster.Dir(), "logs", "copse-operator.log"),
		config:       cfg,
		client:       env.Client,
		readyTimeout: readyTimeout,
	}
	if o.readyTimeout == 0 {
		o.readyTimeout = DefaultOperatorReadyTimeout
	}
	if streamLogs {
		o.stream = ginkgo.GinkgoWriter
	}
	return o
}
