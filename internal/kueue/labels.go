// Package kueue holds copse's side of Kueue's Workload protocol for
// PodCliqueSets (docs/kueue.md): the Workload a PodCliqueSet queues with,
// what an admission changes in its pod templates, and the step the
// reconciler takes next. Everything here is pure; the reconciler is
// internal/controller/kueueworkload.
package kueue

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/util/validation"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// WorkloadGVK is the kind copse creates for each queued PodCliqueSet.
var WorkloadGVK = kueue.SchemeGroupVersion.WithKind("Workload")

// The labels Kueue reads on the objects it manages (Kueue's
// pkg/controller/constants): copse reads the first two on PodCliqueSets and
// stamps the third on the pods of each admitted pod set.
const (
	// QueueNameLabel names the LocalQueue a workload is submitted to.
	QueueNameLabel = "kueue.x-k8s.io/queue-name"
	// PriorityClassLabel names the WorkloadPriorityClass of a workload.
	PriorityClassLabel = "kueue.x-k8s.io/priority-class"
	// PodSetLabel names, on a pod, the pod set of the Workload it counts in.
	PodSetLabel = "kueue.x-k8s.io/podset"
)

// WorkloadRefusedAnnotation, on a queued PodCliqueSet, quotes the API
// server's refusal of the last creation of its Workload. The kueueworkload
// controller, which tries the creation, sets it and removes it once a
// creation goes through; the PodCliqueSet controller reads it into the
// Admitted condition (reason WorkloadRefused).
const WorkloadRefusedAnnotation = "copse.dev/kueue-workload-refused"

// workloadNamePrefix marks the Workload as a PodCliqueSet's, as Kueue names
// a job's Workload after its kind.
const workloadNamePrefix = "podcliqueset-"

// WorkloadName is the name of the Kueue Workload of the PodCliqueSet
// pcsName: podcliqueset-<name>, or, when that is longer than an object name
// may be, its start and a hash of the whole, so that two long names never
// share a Workload.
func WorkloadName(pcsName string) string {
	name := workloadNamePrefix + pcsName
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(pcsName))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	return name[:validation.DNS1123SubdomainMaxLength-len(suffix)] + suffix
}
