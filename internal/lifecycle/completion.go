package lifecycle

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/indexset"
	"github.com/copse-dev/copse/internal/podstate"
)

// Completion is how far a Training clique got.
type Completion struct {
	// Succeeded are the indices below the clique's replicas whose pod exited
	// 0: those recorded in the clique's status and those its pods show.
	Succeeded indexset.Set
	// LastSucceeded is the latest finish time among them (zero if none or
	// unknown).
	LastSucceeded time.Time
	// Complete: every index 0..replicas-1 succeeded. A clique of no
	// replicas is never complete.
	Complete bool
}

// CliqueCompletion merges a clique's durable record (status.succeededIndexes
// and status.lastSucceededTime) with what its pods show now. Pods whose
// index is at or above replicas do not count. A malformed record is read as
// empty: the pods still show what they show, and the next status write
// repairs the record.
func CliqueCompletion(replicas int, recorded string, recordedLast *metav1.Time, pods []podstate.Summary) Completion {
	done, err := indexset.Parse(recorded, replicas)
	if err != nil {
		done = indexset.Set{}
	}
	c := Completion{Succeeded: done}
	if recordedLast != nil {
		c.LastSucceeded = recordedLast.Time
	}
	for _, p := range pods {
		// A kept pod whose old process exited 0 before the kubelet
		// restarted it finished the previous attempt's work, not this one's.
		if !p.Succeeded() || p.EndedInEarlierAttempt() || !p.HasIndex || p.Index >= replicas {
			continue
		}
		c.Succeeded.Add(p.Index)
		if p.FinishedAt.After(c.LastSucceeded) {
			c.LastSucceeded = p.FinishedAt
		}
	}
	c.Complete = replicas > 0 && c.Succeeded.CountBelow(replicas) == replicas
	return c
}

// RecordedSucceeded are the indices a Training PodClique's status records
// as exited 0 (status.succeededIndexes), below its replicas; a malformed
// record counts none.
func RecordedSucceeded(pclq *copsev1alpha1.PodClique) indexset.Set {
	set, err := indexset.Parse(pclq.Status.SucceededIndexes, int(pclq.Spec.Replicas))
	if err != nil {
		return indexset.Set{}
	}
	return set
}
