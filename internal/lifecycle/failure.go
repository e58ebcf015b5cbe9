package lifecycle

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

// FirstFailure is the root cause among pods: the Failed or disrupted pod
// (podstate.Summary.Disrupted: being removed by preemption, eviction, a
// lost node, so its gang breaks before it ends) that failed first, by its
// finish time or the time it was marked for disruption (pods of unknown
// time after those of known time, then by name, so the choice is stable).
// nil when none failed.
func FirstFailure(pods []podstate.Summary) *podstate.Summary {
	var failed []podstate.Summary
	for _, p := range pods {
		if p.Failed() || p.Disrupted {
			failed = append(failed, p)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	first := slices.MinFunc(failed, func(a, b podstate.Summary) int {
		at, bt := failedAt(a), failedAt(b)
		if at.IsZero() != bt.IsZero() {
			if at.IsZero() {
				return 1
			}
			return -1
		}
		if c := at.Compare(bt); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return &first
}

// failedAt is when a pod failed: its finish, or, for a disrupted pod that
// has not ended, when it was marked for disruption.
func failedAt(p podstate.Summary) time.Time {
	if p.FinishedAt.IsZero() {
		return p.DisruptedAt
	}
	return p.FinishedAt
}

// DescribeFailure turns a failed pod into the API's PodFailure.
func DescribeFailure(p podstate.Summary) copsev1alpha1.PodFailure {
	out := copsev1alpha1.PodFailure{
		ReplicaIndex: int32(max(p.Replica, 0)),
		Attempt:      int32(p.Attempt),
		PodClique:    p.PodClique,
		Pod:          p.Name,
		Node:         p.Node,
	}
	why := "failed"
	if f := p.Failure; f != nil {
		why = f.String()
		out.Reason = f.Reason
		if f.Container != "" {
			out.Container = f.Container
			code := f.ExitCode
			out.ExitCode = &code
		}
	}
	if !p.FinishedAt.IsZero() {
		out.FinishedAt = &metav1.Time{Time: p.FinishedAt}
	}
	out.Summary = fmt.Sprintf("%s: %s", p.Name, why)
	if p.Node != "" {
		out.Summary += " on node " + p.Node
	}
	return out
}

// Replacement back-off of a Training clique, the Job API's: 10s before the
// first replacement, doubling, at most 6 minutes.
const (
	ReplacementBackoffBase = 10 * time.Second
	ReplacementBackoffCap  = 6 * time.Minute
)

// ReplacementBackoff is how long after a pod failed a clique that already
// replaced `replacements` pods waits before replacing it.
func ReplacementBackoff(replacements int32) time.Duration {
	d := ReplacementBackoffBase
	for range max(replacements, 0) {
		d *= 2
		if d >= ReplacementBackoffCap {
			return ReplacementBackoffCap
		}
	}
	return d
}
