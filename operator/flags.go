package main

import (
	"flag"
	"fmt"
	"io"

	"k8s.io/utils/ptr"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// Names of the command-line flags. Every flag except --config, --version and
// --kubeconfig overrides one field of the configuration file, and does so
// only when given explicitly, so that an unset flag never masks the file.
const (
	flagConfig                 = "config"
	flagVersion                = "version"
	flagLeaderElect            = "leader-elect"
	flagMetricsBindAddress     = "metrics-bind-address"
	flagHealthProbeBindAddress = "health-probe-bind-address"
	flagWebhookPort            = "webhook-port"
	flagWebhookCertDir         = "webhook-cert-dir"
	flagSchedulerBackend       = "scheduler-backend"
	flagLogLevel               = "log-level"
)

// commandLine is what the operator was started with.
type commandLine struct {
	configFile  string
	showVersion bool

	leaderElect            bool
	metricsBindAddress     string
	healthProbeBindAddress string
	webhookPort            int
	webhookCertDir         string
	schedulerBackend       string
	logLevel               string

	// explicitlySet holds the names of the flags present on the command line.
	explicitlySet map[string]bool
}

// parseCommandLine binds the operator's flags to fs and parses args. The
// --kubeconfig flag belongs to controller-runtime, which reads it when the
// REST config is built.
func parseCommandLine(fs *flag.FlagSet, args []string) (*commandLine, error) {
	defaults := configv1alpha1.NewDefaultOperatorConfiguration()
	cl := &commandLine{explicitlySet: map[string]bool{}}

	fs.StringVar(&cl.configFile, flagConfig, "",
		"Path to an OperatorConfiguration (config.copse.dev/v1alpha1) file. Without it the built-in defaults are used.")
	fs.BoolVar(&cl.showVersion, flagVersion, false, "Print the version and exit.")
	ctrlconfig.RegisterFlags(fs)

	fs.BoolVar(&cl.leaderElect, flagLeaderElect, *defaults.LeaderElection.Enabled,
		"Overrides leaderElection.enabled: elect a leader so that only one replica is active.")
	fs.StringVar(&cl.metricsBindAddress, flagMetricsBindAddress, defaults.Server.Metrics.BindAddress,
		`Overrides server.metrics.bindAddress: host:port of the metrics endpoint, "0" disables it.`)
	fs.StringVar(&cl.healthProbeBindAddress, flagHealthProbeBindAddress, defaults.Server.HealthProbes.BindAddress,
		`Overrides server.healthProbes.bindAddress: host:port of /healthz and /readyz, "0" disables them.`)
	fs.IntVar(&cl.webhookPort, flagWebhookPort, int(defaults.WebhookServer.Port),
		"Overrides webhookServer.port: port of the admission webhook server.")
	fs.StringVar(&cl.webhookCertDir, flagWebhookCertDir, defaults.WebhookServer.CertDir,
		"Overrides webhookServer.certDir: directory holding the webhook serving certificate (tls.crt, tls.key); the operator writes it in certificates mode SelfManaged.")
	fs.StringVar(&cl.schedulerBackend, flagSchedulerBackend, string(defaults.Scheduler.Backend),
		`Overrides scheduler.backend: "auto" (detect at start-up), "workload" or "none".`)
	fs.StringVar(&cl.logLevel, flagLogLevel, string(defaults.Logging.Level),
		`Overrides logging.level: "debug", "info" or "error".`)

	fs.Usage = func() { printUsage(fs) }

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: copse-operator takes flags only", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { cl.explicitlySet[f.Name] = true })
	// Checked here rather than by Validate: an out-of-range int would wrap
	// around when narrowed to the configuration's int32.
	if cl.explicitlySet[flagWebhookPort] && (cl.webhookPort < 1 || cl.webhookPort > 65535) {
		return nil, fmt.Errorf("--%s=%d: must be between 1 and 65535", flagWebhookPort, cl.webhookPort)
	}
	return cl, nil
}

func printUsage(fs *flag.FlagSet) {
	out := fs.Output()
	_, _ = io.WriteString(out, "Usage: copse-operator [flags]\n\n"+
		"Runs the copse operator. Settings come from the file given with --config, or\n"+
		"from built-in defaults; flags given on the command line override both.\n\nFlags:\n")
	fs.PrintDefaults()
}

// operatorConfiguration loads the configuration file, or the defaults when
// there is none, applies the explicitly set flags and validates the result.
func (cl *commandLine) operatorConfiguration() (*configv1alpha1.OperatorConfiguration, error) {
	cfg := configv1alpha1.NewDefaultOperatorConfiguration()
	if cl.configFile != "" {
		var err error
		if cfg, err = configv1alpha1.Load(cl.configFile); err != nil {
			return nil, err
		}
	}
	cl.applyOverrides(cfg)
	if errs := configv1alpha1.Validate(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("invalid configuration after applying command-line flags: %w", errs.ToAggregate())
	}
	return cfg, nil
}

func (cl *commandLine) applyOverrides(cfg *configv1alpha1.OperatorConfiguration) {
	for name := range cl.explicitlySet {
		switch name {
		case flagLeaderElect:
			cfg.LeaderElection.Enabled = ptr.To(cl.leaderElect)
		case flagMetricsBindAddress:
			cfg.Server.Metrics.BindAddress = cl.metricsBindAddress
		case flagHealthProbeBindAddress:
			cfg.Server.HealthProbes.BindAddress = cl.healthProbeBindAddress
		case flagWebhookPort:
			cfg.WebhookServer.Port = int32(cl.webhookPort)
		case flagWebhookCertDir:
			cfg.WebhookServer.CertDir = cl.webhookCertDir
		case flagSchedulerBackend:
			cfg.Scheduler.Backend = configv1alpha1.SchedulerBackend(cl.schedulerBackend)
		case flagLogLevel:
			cfg.Logging.Level = configv1alpha1.LogLevel(cl.logLevel)
		}
	}
}
