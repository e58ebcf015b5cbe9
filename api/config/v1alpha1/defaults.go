package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Default values, exported so that command-line help can show them.
const (
	// DefaultQPS -1 turns client-side rate limiting off; see
	// ClientConnectionConfiguration.QPS.
	DefaultQPS                                  float32 = -1
	DefaultBurst                                int32   = 150
	DefaultLeaderElectionResourceName                   = "copse-operator-leader"
	DefaultLeaseDuration                                = 15 * time.Second
	DefaultRenewDeadline                                = 10 * time.Second
	DefaultRetryPeriod                                  = 2 * time.Second
	DefaultPodCliqueSetConcurrentSyncs          int32   = 3
	DefaultTrainJobConcurrentSyncs              int32   = 3
	DefaultPodCliqueConcurrentSyncs             int32   = 5
	DefaultPodCliqueScalingGroupConcurrentSyncs int32   = 3
	DefaultMaxWritesPerReconcile                int32   = 1000
	DefaultWebhookPort                          int32   = 9443
	DefaultWebhookCertDir                               = "/tmp/k8s-webhook-server/serving-certs"
	DefaultWebhookCertificateMode                       = WebhookCertificateModeSelfManaged
	DefaultWebhookCertificateSecretName                 = "copse-webhook-serving-cert"
	DefaultWebhookConfigurationName                     = "copse"
	DefaultWebhookCertificateValidity                   = 365 * 24 * time.Hour
	DefaultWebhookCertificateRotateBefore               = 30 * 24 * time.Hour
	DefaultHealthProbeBindAddress                       = ":8081"
	DefaultMetricsBindAddress                           = ":8080"
	DefaultSchedulerBackend                             = SchedulerBackendAuto
	DefaultIncompleteGangTimeout                        = 5 * time.Minute
	DefaultInPlaceRestartTimeout                        = 5 * time.Minute
	DefaultLogLevel                                     = LogLevelInfo
	DefaultLogFormat                                    = LogFormatJSON
	DefaultStartupGateImage                             = "docker.io/library/busybox:1.37.0"
	// The largest real training jobs run some tens of thousands of GPUs,
	// one to eight per pod; these leave room for them and refuse sizes that
	// can only be typos.
	DefaultMaxPodsPerReplica      int64 = 32768
	DefaultMaxPodsPerPodCliqueSet int64 = 65536
)

// NewDefaultOperatorConfiguration returns the configuration used when no file
// is given.
func NewDefaultOperatorConfiguration() *OperatorConfiguration {
	cfg := &OperatorConfiguration{}
	SetDefaults(cfg)
	return cfg
}

// SetDefaults fills every field that is not set with its default, and stamps
// apiVersion and kind so that a defaulted configuration is a complete file.
func SetDefaults(cfg *OperatorConfiguration) {
	cfg.APIVersion = GroupVersion.String()
	cfg.Kind = OperatorConfigurationKind

	setDefault(&cfg.ClientConnection.QPS, DefaultQPS)
	setDefault(&cfg.ClientConnection.Burst, DefaultBurst)

	le := &cfg.LeaderElection
	if le.Enabled == nil {
		le.Enabled = ptr.To(true)
	}
	setDefault(&le.ResourceName, DefaultLeaderElectionResourceName)
	setDefault(&le.LeaseDuration, metav1.Duration{Duration: DefaultLeaseDuration})
	setDefault(&le.RenewDeadline, metav1.Duration{Duration: DefaultRenewDeadline})
	setDefault(&le.RetryPeriod, metav1.Duration{Duration: DefaultRetryPeriod})

	ctrls := &cfg.Controllers
	setDefault(&ctrls.PodCliqueSet.ConcurrentSyncs, DefaultPodCliqueSetConcurrentSyncs)
	setDefault(&ctrls.PodClique.ConcurrentSyncs, DefaultPodCliqueConcurrentSyncs)
	setDefault(&ctrls.PodCliqueScalingGroup.ConcurrentSyncs, DefaultPodCliqueScalingGroupConcurrentSyncs)
	if ctrls.TrainJob.Enabled == nil {
		ctrls.TrainJob.Enabled = ptr.To(true)
	}
	setDefault(&ctrls.TrainJob.ConcurrentSyncs, DefaultTrainJobConcurrentSyncs)
	setDefault(&ctrls.MaxWritesPerReconcile, DefaultMaxWritesPerReconcile)

	wh := &cfg.WebhookServer
	if wh.Enabled == nil {
		wh.Enabled = ptr.To(true)
	}
	setDefault(&wh.Port, DefaultWebhookPort)
	setDefault(&wh.CertDir, DefaultWebhookCertDir)
	certs := &wh.Certificates
	setDefault(&certs.Mode, DefaultWebhookCertificateMode)
	setDefault(&certs.SecretName, DefaultWebhookCertificateSecretName)
	setDefault(&certs.WebhookConfigurationName, DefaultWebhookConfigurationName)
	setDefault(&certs.Validity, metav1.Duration{Duration: DefaultWebhookCertificateValidity})
	setDefault(&certs.RotateBefore, metav1.Duration{Duration: DefaultWebhookCertificateRotateBefore})

	setDefault(&cfg.Server.HealthProbes.BindAddress, DefaultHealthProbeBindAddress)
	setDefault(&cfg.Server.Metrics.BindAddress, DefaultMetricsBindAddress)

	setDefault(&cfg.Scheduler.Backend, DefaultSchedulerBackend)
	setDefault(&cfg.Scheduler.IncompleteGangTimeout, metav1.Duration{Duration: DefaultIncompleteGangTimeout})
	setDefault(&cfg.Scheduler.InPlaceRestartTimeout, metav1.Duration{Duration: DefaultInPlaceRestartTimeout})

	setDefault(&cfg.Logging.Level, DefaultLogLevel)
	setDefault(&cfg.Logging.Format, DefaultLogFormat)

	setDefault(&cfg.Limits.MaxPodsPerReplica, DefaultMaxPodsPerReplica)
	setDefault(&cfg.Limits.MaxPodsPerPodCliqueSet, DefaultMaxPodsPerPodCliqueSet)

	setDefault(&cfg.StartupGate.Image, DefaultStartupGateImage)
}

// setDefault stores value in field if field still holds its zero value.
func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}
