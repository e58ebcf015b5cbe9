package podcliqueset

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/kueue"
)

// queueNamePath is where a PodCliqueSet names its Kueue LocalQueue.
var queueNamePath = field.NewPath("metadata", "labels").Key(kueue.QueueNameLabel)

// DefaultForKueue suspends a new PodCliqueSet that names a Kueue LocalQueue
// (the label kueue.x-k8s.io/queue-name), as Kueue suspends its own jobs at
// creation: it gets no pod until Kueue admits its Workload and copse
// resumes it. enabled is the operator configuration's kueue.enabled; off,
// the label means nothing. Call it on creation only: on update, a
// PodCliqueSet joins a queue only while suspended (ValidateKueue).
func DefaultForKueue(pcs *copsev1alpha1.PodCliqueSet, enabled bool) {
	if enabled && kueue.QueueName(pcs) != "" {
		pcs.Spec.Suspend = ptr.To(true)
	}
}

// ValidateKueue applies the rules of a PodCliqueSet queued through Kueue
// to a new one, or to an update from old (nil on create). enabled is the
// operator configuration's kueue.enabled; off, nothing is checked.
//
//   - The queue label may be added, changed or removed only in an update
//     that leaves spec.suspend true, as Kueue allows for its jobs: a
//     running workload would otherwise run outside the queue's quota, or
//     hold it in the wrong queue.
//   - A queued PodCliqueSet has at most maxPodSets cliques (the Kueue in
//     use's limit, kueue.ServedMaxPodSets; 0 for kueue.DefaultMaxPodSets):
//     its Workload has one pod set per clique, and Kueue allows no more. The
//     count is checked when the label is set, on creation or later, so that
//     one made before Kueue was enabled is never blocked by it.
func ValidateKueue(old, pcs *copsev1alpha1.PodCliqueSet, enabled bool, maxPodSets int) field.ErrorList {
	if !enabled {
		return nil
	}
	queue := kueue.QueueName(pcs)
	labelChanged := old == nil || kueue.QueueName(old) != queue
	var errs field.ErrorList
	if old != nil && labelChanged && !pcs.IsSuspended() {
		errs = append(errs, field.Forbidden(queueNamePath, fmt.Sprintf(
			"may be added, changed or removed only while spec.suspend is true (from %q to %q): "+
				"set spec.suspend to true first, or in the same update", kueue.QueueName(old), queue)))
	}
	if queue != "" && labelChanged {
		if n, limit := cliqueCount(pcs), kueue.EffectiveMaxPodSets(maxPodSets); n > limit {
			errs = append(errs, field.Forbidden(cliquesPath, fmt.Sprintf(
				"has %d cliques, but a PodCliqueSet with %s has at most %d: its Kueue Workload has one pod set per clique, "+
					"and the Kueue installed allows %d pod sets (spec.podSets of its Workload CRD)",
				n, queueNamePath, limit, limit)))
		}
	}
	return errs
}

func cliqueCount(pcs *copsev1alpha1.PodCliqueSet) int {
	n := 0
	for _, clique := range pcs.Spec.Template.Cliques {
		if clique != nil {
			n++
		}
	}
	return n
}
