package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Numeric and string fields treat their zero value as "not set" and receive
// the documented default from SetDefaults; the booleans whose default is true
// are pointers so that an explicit false survives defaulting.

// +kubebuilder:object:root=true

// OperatorConfiguration is the configuration file of copse-operator.
type OperatorConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// ClientConnection tunes the operator's connection to the API server.
	// +optional
	ClientConnection ClientConnectionConfiguration `json:"clientConnection"`

	// LeaderElection makes only one replica of the operator active at a time.
	// +optional
	LeaderElection LeaderElectionConfiguration `json:"leaderElection"`

	// Controllers tunes the individual controllers.
	// +optional
	Controllers ControllersConfiguration `json:"controllers"`

	// WebhookServer configures the admission webhook HTTPS server.
	// +optional
	WebhookServer WebhookServerConfiguration `json:"webhookServer"`

	// Server configures the plain HTTP endpoints (probes, metrics).
	// +optional
	Server ServerConfiguration `json:"server"`

	// Scheduler selects how gangs of pods are handed to the kube-scheduler.
	// +optional
	Scheduler SchedulerConfiguration `json:"scheduler"`

	// Logging configures the operator's log output.
	// +optional
	Logging LoggingConfiguration `json:"logging"`

	// Limits bounds the size of the workloads the admission webhooks admit.
	// +optional
	Limits LimitsConfiguration `json:"limits"`

	// StartupGate configures the init container that holds a pod's
	// containers back until the cliques its clique starts after are Ready
	// (spec.template.cliqueStartupType InOrder or Explicit).
	// +optional
	StartupGate StartupGateConfiguration `json:"startupGate"`

	// TopologyAwareScheduling turns PodCliqueSets' topologyConstraint into
	// topology constraints of their gangs (see docs/placement.md). It needs
	// the Workload API scheduler backend and a kube-scheduler with the
	// TopologyAwareWorkloadScheduling feature gate.
	// +optional
	TopologyAwareScheduling TopologyAwareSchedulingConfiguration `json:"topologyAwareScheduling"`

	// MNNVL gives the GPU pods of each PodCliqueSet replica (and of each
	// TrainJob) that name an MNNVL group an NVIDIA ComputeDomain, so that
	// they share a multi-node NVLink fabric. It needs NVIDIA's DRA driver
	// (the ComputeDomain CRD).
	// +optional
	MNNVL MNNVLConfiguration `json:"mnnvl"`

	// Kueue makes PodCliqueSets with the label kueue.x-k8s.io/queue-name
	// Kueue workloads that wait, suspended, for admission, and syncs
	// ClusterTopologyBindings to Kueue Topologies (see docs/kueue.md). It
	// needs Kueue's CRDs. TrainJobs need none of it: they go through
	// Kueue's own TrainJob integration.
	// +optional
	Kueue KueueConfiguration `json:"kueue"`
}

// TopologyAwareSchedulingConfiguration configures topology packing.
type TopologyAwareSchedulingConfiguration struct {
	// Enabled applies topologyConstraint. When false (the default, as in
	// Grove) a new PodCliqueSet with a topologyConstraint is refused, and
	// an existing one gets the condition TopologyLevelsUnavailable with
	// reason TopologyAwareSchedulingDisabled.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// MNNVLConfiguration configures multi-node NVLink through ComputeDomains.
// As in Grove, MNNVL is opt-in: only pods whose PodCliqueSet, scaling group
// or clique (or TrainJob) names a group with the grove.io/mnnvl-group
// annotation take part.
type MNNVLConfiguration struct {
	// Enabled creates a ComputeDomain per PodCliqueSet replica and MNNVL
	// group (and one per JobSet-backend TrainJob that names a group) and
	// gives every container of the group's pods that requests
	// nvidia.com/gpu its channel claim. The operator refuses to start when
	// the ComputeDomain CRD is missing. When false (the default) a
	// PodCliqueSet or TrainJob that names an MNNVL group other than "none"
	// is refused.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// DefaultGroup, when set, is the MNNVL group of every new PodCliqueSet
	// and TrainJob that names none: the webhook adds the annotation
	// grove.io/mnnvl-group: <defaultGroup> to its metadata when it is
	// created, so that all its GPU pods share a ComputeDomain per replica
	// without opting in. A TrainJob's PodCliqueSet takes the TrainJob's
	// group. Objects that exist are never changed. Empty (the default)
	// leaves MNNVL opt-in, as in Grove. Needs Enabled; a group name: a
	// DNS-1123 label, not "none", not "mnnvl" and not ending in "-mnnvl".
	// +optional
	DefaultGroup string `json:"defaultGroup,omitempty"`
}

// KueueConfiguration configures the Kueue integration of PodCliqueSets.
type KueueConfiguration struct {
	// Enabled makes copse create a Kueue Workload for every PodCliqueSet
	// with the label kueue.x-k8s.io/queue-name, keep it suspended until
	// Kueue admits the Workload, and suspend it again when Kueue evicts it.
	// The operator refuses to start when the cluster does not serve Kueue's
	// Workload kind. When false (the default) the label is ignored.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// StartupGateConfiguration configures the startup gate init container.
type StartupGateConfiguration struct {
	// Image is the gate container's image. It needs only sh, grep and
	// sleep; clusters without access to its registry must mirror it.
	// Default docker.io/library/busybox:1.37.0.
	// +optional
	Image string `json:"image,omitempty"`
}

// ClientConnectionConfiguration limits the request rate towards the API server.
type ClientConnectionConfiguration struct {
	// QPS is the sustained number of requests per second to the API server,
	// or -1 (the default) for no client-side limit: the API server's
	// priority and fairness queues the operator's requests instead (the
	// Helm chart installs a FlowSchema and a PriorityLevelConfiguration for
	// the operator), so a large gang is created as fast as the API server
	// accepts it without starving other clients.
	// +kubebuilder:default=-1
	// +optional
	QPS float32 `json:"qps,omitempty"`

	// Burst is the number of requests allowed above QPS for short periods;
	// it applies only when QPS is positive.
	// +kubebuilder:default=150
	// +kubebuilder:validation:Minimum=1
	// +optional
	Burst int32 `json:"burst,omitempty"`
}

// LeaderElectionConfiguration configures leader election through a
// coordination.k8s.io Lease.
type LeaderElectionConfiguration struct {
	// Enabled turns leader election on.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// ResourceName is the name of the Lease.
	// +kubebuilder:default="copse-operator-leader"
	// +optional
	ResourceName string `json:"resourceName,omitempty"`

	// ResourceNamespace is the namespace of the Lease. Empty means the
	// namespace the operator runs in, which is only known in-cluster.
	// +optional
	ResourceNamespace string `json:"resourceNamespace,omitempty"`

	// LeaseDuration is how long non-leaders wait before trying to take over
	// a lease that was not renewed.
	// +kubebuilder:default="15s"
	// +optional
	LeaseDuration metav1.Duration `json:"leaseDuration,omitempty"`

	// RenewDeadline is how long the leader keeps retrying to renew the lease
	// before giving up leadership. Must be shorter than LeaseDuration.
	// +kubebuilder:default="10s"
	// +optional
	RenewDeadline metav1.Duration `json:"renewDeadline,omitempty"`

	// RetryPeriod is the wait between attempts to acquire or renew the lease.
	// +kubebuilder:default="2s"
	// +optional
	RetryPeriod metav1.Duration `json:"retryPeriod,omitempty"`
}

// ControllersConfiguration tunes each controller of the operator.
type ControllersConfiguration struct {
	// PodCliqueSet tunes the PodCliqueSet controller.
	// +optional
	PodCliqueSet ControllerConfiguration `json:"podCliqueSet"`

	// PodClique tunes the PodClique controller.
	// +optional
	PodClique ControllerConfiguration `json:"podClique"`

	// PodCliqueScalingGroup tunes the PodCliqueScalingGroup controller.
	// +optional
	PodCliqueScalingGroup ControllerConfiguration `json:"podCliqueScalingGroup"`

	// TrainJob turns on and tunes the TrainJob front-end: the
	// trainer.kubeflow.org controllers (TrainJob into JobSet, runtime
	// release) and webhooks. It needs the trainer.kubeflow.org CRDs and
	// JobSet's (jobset.x-k8s.io); turn it off on clusters that run Kubeflow
	// Trainer itself or have no JobSet.
	// +optional
	TrainJob OptionalControllerConfiguration `json:"trainJob"`

	// MaxWritesPerReconcile bounds how many objects (pods included) one
	// reconcile of any controller creates and deletes. A reconcile with more
	// to do asks to be run again at once, and re-reads its object and its
	// owners first, so a workload that is deleted, ended or restarted in
	// the middle of a large gang stops getting pods within one pass. A pass
	// also stops starting pod writes after a second (children.PassTime); the
	// default is above what the API server takes in a second on small
	// clusters, so that time, not this count, usually ends a pass: every pass
	// ends with a drain of its in-flight writes and a re-read, which cost
	// gang creation time.
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxWritesPerReconcile int32 `json:"maxWritesPerReconcile,omitempty"`
}

// ControllerConfiguration tunes one controller.
type ControllerConfiguration struct {
	// ConcurrentSyncs is the number of objects reconciled in parallel.
	// Defaults: podCliqueSet 3, podClique 5, podCliqueScalingGroup 3.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ConcurrentSyncs int32 `json:"concurrentSyncs,omitempty"`
}

// OptionalControllerConfiguration turns on and tunes a controller that may
// be left out.
type OptionalControllerConfiguration struct {
	// Enabled runs the controller. Default true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// ConcurrentSyncs is the number of objects reconciled in parallel.
	// Default 3.
	// +kubebuilder:validation:Minimum=1
	// +optional
	ConcurrentSyncs int32 `json:"concurrentSyncs,omitempty"`
}

// WebhookServerConfiguration configures the admission webhook HTTPS server.
type WebhookServerConfiguration struct {
	// Enabled starts the webhook server. Where its serving certificate comes
	// from is set by Certificates.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Host is the address to listen on. Empty means all interfaces.
	// +optional
	Host string `json:"host,omitempty"`

	// Port is the port to listen on.
	// +kubebuilder:default=9443
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`

	// CertDir holds the serving certificate as tls.crt and tls.key. The
	// webhook server reloads them when they change. In mode SelfManaged the
	// operator writes them, so the directory must be writable.
	// +kubebuilder:default="/tmp/k8s-webhook-server/serving-certs"
	// +optional
	CertDir string `json:"certDir,omitempty"`

	// Certificates selects where the serving certificate comes from.
	// +optional
	Certificates WebhookCertificatesConfiguration `json:"certificates"`
}

// WebhookCertificateMode names where the webhook serving certificate comes
// from.
// +kubebuilder:validation:Enum=SelfManaged;Provided
type WebhookCertificateMode string

const (
	// WebhookCertificateModeSelfManaged makes the operator provision its
	// serving certificate in a Secret (with a CA of its own), write it into
	// CertDir, rotate it before it expires, and inject the CA into its
	// webhook configurations.
	WebhookCertificateModeSelfManaged WebhookCertificateMode = "SelfManaged"
	// WebhookCertificateModeProvided serves what is mounted in CertDir (a
	// user-provided Secret, or one cert-manager issues) and touches nothing:
	// whoever provides the certificate also sets the webhooks' caBundle.
	WebhookCertificateModeProvided WebhookCertificateMode = "Provided"
)

// WebhookCertificatesConfiguration configures the webhook serving
// certificate. Every field but Mode applies to mode SelfManaged only, and is
// ignored in mode Provided.
type WebhookCertificatesConfiguration struct {
	// Mode is "SelfManaged" or "Provided".
	// +kubebuilder:default=SelfManaged
	// +optional
	Mode WebhookCertificateMode `json:"mode,omitempty"`

	// SecretName is the Secret (type kubernetes.io/tls) that holds the CA
	// and the serving certificate, shared by every replica.
	// +kubebuilder:default="copse-webhook-serving-cert"
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// SecretNamespace is the Secret's namespace. Empty means the operator's
	// namespace: $POD_NAMESPACE, else leaderElection.resourceNamespace, else
	// the namespace of the pod's service account. Out of cluster, set it
	// (or leaderElection.resourceNamespace).
	// +optional
	SecretNamespace string `json:"secretNamespace,omitempty"`

	// WebhookConfigurationName names the MutatingWebhookConfiguration and
	// the ValidatingWebhookConfiguration whose every webhook gets the CA
	// injected as its clientConfig.caBundle.
	// +kubebuilder:default="copse"
	// +optional
	WebhookConfigurationName string `json:"webhookConfigurationName,omitempty"`

	// DNSNames are DNS subject alternative names of the serving certificate,
	// e.g. copse-webhook.copse-system.svc. The host the API server calls
	// must be among DNSNames or IPAddresses.
	// +optional
	DNSNames []string `json:"dnsNames,omitempty"`

	// IPAddresses are IP subject alternative names of the serving
	// certificate, e.g. 127.0.0.1 for an operator run outside the cluster.
	// +optional
	IPAddresses []string `json:"ipAddresses,omitempty"`

	// Validity is the lifetime of each serving certificate; the CA lives ten
	// times as long.
	// +kubebuilder:default="8760h"
	// +optional
	Validity metav1.Duration `json:"validity,omitempty"`

	// RotateBefore renews the serving certificate when less than this
	// remains of it. Must be shorter than Validity.
	// +kubebuilder:default="720h"
	// +optional
	RotateBefore metav1.Duration `json:"rotateBefore,omitempty"`
}

// ServerConfiguration configures the operator's plain HTTP endpoints.
type ServerConfiguration struct {
	// HealthProbes serves /healthz and /readyz.
	// +optional
	HealthProbes BindConfiguration `json:"healthProbes"`

	// Metrics serves Prometheus metrics on /metrics.
	// +optional
	Metrics BindConfiguration `json:"metrics"`
}

// BindConfiguration is the address an HTTP endpoint listens on.
type BindConfiguration struct {
	// BindAddress is a host:port to listen on, or "0" to turn the endpoint
	// off. Defaults: healthProbes ":8081", metrics ":8080".
	// +optional
	BindAddress string `json:"bindAddress,omitempty"`
}

// SchedulerBackend names the way gangs of pods are handed to the scheduler.
// +kubebuilder:validation:Enum=auto;workload;none
type SchedulerBackend string

const (
	// SchedulerBackendAuto picks SchedulerBackendWorkload when the API
	// server serves the workload scheduling API, and SchedulerBackendNone
	// otherwise. It is resolved once, at start-up.
	SchedulerBackendAuto SchedulerBackend = "auto"
	// SchedulerBackendWorkload creates scheduling.k8s.io/v1beta1 Workloads
	// and PodGroups so that the kube-scheduler places each gang as a unit.
	SchedulerBackendWorkload SchedulerBackend = "workload"
	// SchedulerBackendNone creates plain pods without gang scheduling.
	SchedulerBackendNone SchedulerBackend = "none"
)

// SchedulerConfiguration selects the scheduler integration.
type SchedulerConfiguration struct {
	// Backend is one of "auto", "workload" or "none".
	// +kubebuilder:default=auto
	// +optional
	Backend SchedulerBackend `json:"backend,omitempty"`
	// IncompleteGangTimeout bounds how long a gang may hold the nodes of a
	// placement that lacks a clique. A gang's PodGroup has one minCount
	// over all its cliques, so the kube-scheduler may place it with some
	// clique below its minAvailable (the workers, but no leader); once that
	// has lasted this long, copse recreates the replica's pods (without
	// spending a Training restart), so that other work can use the nodes
	// and the gang is placed again. Default 5m.
	// +optional
	IncompleteGangTimeout metav1.Duration `json:"incompleteGangTimeout,omitempty"`
	// InPlaceRestartTimeout bounds how long a restart in place
	// (trainingSpec.restartStrategy InPlace) may hold its replica's nodes
	// before its barrier lifts: a kept pod whose kubelet never restarts its
	// containers (its restart agent lost while the pod still runs) would
	// hold it for good. Once it has lasted this long since the restart was
	// decided, copse recreates the replica (reason InPlaceRestartTimeout,
	// without spending a Training restart). Default 5m.
	// +optional
	InPlaceRestartTimeout metav1.Duration `json:"inPlaceRestartTimeout,omitempty"`
}

// LogLevel is the minimum severity that is logged.
// +kubebuilder:validation:Enum=debug;info;error
type LogLevel string

const (
	LogLevelDebug LogLevel = "debug"
	LogLevelInfo  LogLevel = "info"
	LogLevelError LogLevel = "error"
)

// LogFormat is the encoding of log lines.
// +kubebuilder:validation:Enum=json;text
type LogFormat string

const (
	// LogFormatJSON writes one JSON object per line, for log collectors.
	LogFormatJSON LogFormat = "json"
	// LogFormatText writes human-readable lines, for local runs.
	LogFormatText LogFormat = "text"
)

// LoggingConfiguration configures the operator's log output.
type LoggingConfiguration struct {
	// Level is one of "debug", "info" or "error".
	// +kubebuilder:default=info
	// +optional
	Level LogLevel `json:"level,omitempty"`

	// Format is one of "json" or "text".
	// +kubebuilder:default=json
	// +optional
	Format LogFormat `json:"format,omitempty"`
}

// LimitsConfiguration bounds how many pods one workload may ask for, so that
// a mistyped size (a clique with replicas: 1000000) is refused when it is
// applied, with the field that makes it too large, instead of flooding the
// API server with objects. Pod counts are upper bounds: autoscaled cliques
// and scaling groups count at their maxReplicas.
type LimitsConfiguration struct {
	// MaxPodsPerReplica is the most pods one replica of a PodCliqueSet may
	// have. It also bounds each PodClique and each PodCliqueScalingGroup on
	// its own, since both can be scaled directly. Must not be greater than
	// MaxPodsPerPodCliqueSet.
	// +kubebuilder:default=32768
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxPodsPerReplica int64 `json:"maxPodsPerReplica,omitempty"`

	// MaxPodsPerPodCliqueSet is the most pods a PodCliqueSet may have over
	// all its replicas.
	// +kubebuilder:default=65536
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxPodsPerPodCliqueSet int64 `json:"maxPodsPerPodCliqueSet,omitempty"`
}
