package podcliqueset

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/topology"
)

// maxSchedulerMessage bounds how much of the scheduler's message about one
// gang the condition quotes.
const maxSchedulerMessage = 300

// maxGangsNamed bounds how many gangs a condition message names.
const maxGangsNamed = 5

// topologyCondition is TopologyLevelsUnavailable, with Grove's statuses:
// with a problem, the first problem's reason, every problem in the message,
// and the status that reason has in Grove (topologyProblemStatus); False
// when every constraint is applied; nil (absent) for a PodCliqueSet without
// any constraint.
func topologyCondition(pcs *copsev1alpha1.PodCliqueSet, problems []topology.Problem, now time.Time) *metav1.Condition {
	if !topology.Constrained(pcs) {
		return nil
	}
	cond := metav1.Condition{Type: copsev1alpha1.ConditionTypeTopologyLevelsUnavailable, ObservedGeneration: pcs.Generation, LastTransitionTime: metav1.NewTime(now)}
	if len(problems) == 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, copsev1alpha1.ReasonAllClusterTopologyLevelsAvailable
		cond.Message = fmt.Sprintf("every topologyConstraint is applied with ClusterTopologyBinding %s", topology.TopologyName(pcs))
		return &cond
	}
	cond.Status, cond.Reason = topologyProblemStatus(problems[0].Reason), problems[0].Reason
	cond.Message = topology.Summary(problems) + "; these constraints are left off the gangs and pods created from now on"
	return &cond
}

// topologyProblemStatus is the TopologyLevelsUnavailable status of a
// problem's reason, as Grove sets it: True when a level the constraints name
// is missing from the binding (the levels are known to be unavailable);
// Unknown when copse cannot tell, because the binding is not there (deleted,
// or never created), no constraint names one, or topology-aware scheduling
// is off.
func topologyProblemStatus(reason string) metav1.ConditionStatus {
	if reason == copsev1alpha1.ReasonClusterTopologyLevelsUnavailable {
		return metav1.ConditionTrue
	}
	return metav1.ConditionUnknown
}

// nameSome joins up to maxGangsNamed items, sorted, and counts the rest.
func nameSome(items []string, sep string) string {
	sort.Strings(items)
	named := items[:min(len(items), maxGangsNamed)]
	out := strings.Join(named, sep)
	if more := len(items) - len(named); more > 0 {
		out += fmt.Sprintf("%s%d more", sep, more)
	}
	return out
}

func trimMessage(msg string) string {
	msg = strings.TrimSpace(msg)
	if len(msg) <= maxSchedulerMessage {
		return msg
	}
	return msg[:maxSchedulerMessage] + "..."
}
