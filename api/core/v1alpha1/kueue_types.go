package v1alpha1

// The condition copse writes on a PodCliqueSet that Kueue admits (the
// operator's kueue.enabled and the label kueue.x-k8s.io/queue-name), so
// that `kubectl describe` says why a suspended workload waits. Kueue's own
// Workload (podcliqueset-<name>) carries the full admission.
const (
	// ConditionTypeAdmitted is True while the PodCliqueSet's Kueue Workload
	// is admitted, and False while it waits for quota, after an eviction,
	// or when Kueue refused the Workload.
	ConditionTypeAdmitted = "Admitted"
	// ReasonAdmitted: Kueue admitted the Workload; the message names the
	// ClusterQueue.
	ReasonAdmitted = "Admitted"
	// ReasonPending: the Workload waits for quota; the message quotes Kueue.
	ReasonPending = "Pending"
	// ReasonEvicted: Kueue evicted the Workload (preemption, a deactivated
	// Workload, pods not ready in time); the PodCliqueSet is suspended and
	// queues again. The message quotes Kueue's reason and message.
	ReasonEvicted = "Evicted"
	// ReasonWorkloadRefused: the API server refused copse's Workload (for
	// example Kueue's webhook); the message quotes it.
	ReasonWorkloadRefused = "WorkloadRefused"
)

// ReasonFailedToStart: Kueue admitted the Workload, but its admission
// cannot be applied to the clique templates (a ResourceFlavor's node label
// or an admission check's update contradicts what a template sets); copse
// finished the Workload (reason FailedToStart, as Kueue does for its jobs)
// and the PodCliqueSet stays suspended. The message names the conflict.
const ReasonFailedToStart = "FailedToStart"
