package trainjob

// Names Kubeflow Trainer gives the parts of a runtime and of what it builds.
// Runtimes written for Kubeflow name their jobs and containers with these, so
// copse reads and writes the same ones.
const (
	// AncestorLabel on a replicated job's Job template says which step of the
	// TrainJob it runs.
	AncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step"

	AncestorTrainer            = "trainer"
	AncestorDatasetInitializer = "dataset-initializer"
	AncestorModelInitializer   = "model-initializer"

	// NodeName is the trainer's replicated job and container name.
	NodeName = "node"
	// LauncherName is the MPI launcher's replicated job name.
	LauncherName = "launcher"
	// DatasetInitializerName and ModelInitializerName are the initializers'
	// replicated job and container names.
	DatasetInitializerName = "dataset-initializer"
	ModelInitializerName   = "model-initializer"
	// InitializerVolumeName is the volume initializers write to and the
	// trainer reads from.
	InitializerVolumeName = "initializer"

	// TrainerPort is the port of the trainer's rendezvous (torch master,
	// JAX coordinator, XGBoost tracker).
	TrainerPort int32 = 29500

	// StorageURIEnv tells an initializer where to fetch from.
	StorageURIEnv = "STORAGE_URI"

	// CompletionIndexFieldPath is the pod annotation holding the pod's index
	// in its indexed Job, each pod's rank.
	CompletionIndexFieldPath = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

	// RuntimeSnapshotSuffix and RuntimeSnapshotKey name the ConfigMap that
	// freezes the runtime a TrainJob was created from (Kubeflow's format).
	RuntimeSnapshotSuffix = "-runtime-snapshot"
	RuntimeSnapshotKey    = "runtime"

	// TrainJobNameLabel on the ConfigMaps and Secrets copse makes for a
	// TrainJob names it (copse's label, not Kubeflow's).
	TrainJobNameLabel = "copse.dev/trainjob"
)

// Environment variables the ML policies set; a TrainJob may not set them.
const (
	TorchEnvNumNodes       = "PET_NNODES"
	TorchEnvNumProcPerNode = "PET_NPROC_PER_NODE"
	TorchEnvNodeRank       = "PET_NODE_RANK"
	TorchEnvMasterAddr     = "PET_MASTER_ADDR"
	TorchEnvMasterPort     = "PET_MASTER_PORT"

	XGBoostEnvTrackerURI  = "DMLC_TRACKER_URI"
	XGBoostEnvTrackerPort = "DMLC_TRACKER_PORT"
	XGBoostEnvTaskID      = "DMLC_TASK_ID"
	XGBoostEnvNumWorker   = "DMLC_NUM_WORKER"

	OpenMPIEnvHostfile     = "OMPI_MCA_orte_default_hostfile"
	OpenMPIEnvKeepFQDN     = "OMPI_MCA_orte_keep_fqdn_hostnames"
	OpenMPIEnvDefaultSlots = "OMPI_MCA_orte_set_default_slots"
	OpenMPIEnvRSHArgs      = "OMPI_MCA_plm_rsh_args"
	openMPIRSHArgs         = "-o ConnectionAttempts=10"
	jaxEnvNumProcesses     = "JAX_NUM_PROCESSES"
	jaxEnvProcessID        = "JAX_PROCESS_ID"
	jaxEnvCoordinatorAddr  = "JAX_COORDINATOR_ADDRESS"
)

// ReservedEnv lists, per ML policy, the variables the policy owns.
var ReservedEnv = map[string][]string{
	"torch":   {TorchEnvNumNodes, TorchEnvNumProcPerNode, TorchEnvNodeRank, TorchEnvMasterAddr, TorchEnvMasterPort},
	"xgboost": {XGBoostEnvTrackerURI, XGBoostEnvTrackerPort, XGBoostEnvTaskID, XGBoostEnvNumWorker},
	"mpi":     {OpenMPIEnvHostfile, OpenMPIEnvRSHArgs, OpenMPIEnvKeepFQDN, OpenMPIEnvDefaultSlots},
}
