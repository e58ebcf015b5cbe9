package podcliquescalinggroup

import (
	"github.com/copse-dev/copse/internal/children"
	"github.com/copse-dev/copse/internal/metrics"
)

// writer is the one writer of the pass (children.Writer.Execute): the
// status with an optimistic lock, then the recreations' deletions and the
// converge writes within the write budget, then settle's events.
func (r *Reconciler) writer() children.Writer {
	return children.Writer{Client: r.Client, Scheme: r.Scheme, Recorder: r.Recorder,
		Budget: r.writeBudget(), OnCut: metrics.WriteBudgetCut("PodCliqueScalingGroup")}
}
