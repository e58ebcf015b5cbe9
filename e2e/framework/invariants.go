package framework

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/watch"
)

// The invariants below replay a History's events in the API server's order.
// Each returns one line per violation; none means the invariant held.

type replicaKey struct{ pcs, replica string }

// AttemptOverlaps reports every moment at which two runs (attempts) of one
// replica overlapped, terminating pods included:
//   - a pod was created for a run while a pod of another run existed (a
//     restarted replica's new pods wait until every pod of the previous run
//     is gone);
//   - a pod could run its attempt's workload (its startup gate not closed)
//     while a pod of an earlier attempt existed: the barrier of a restart
//     in place, whose kept pods move to the next attempt with their gate
//     closed, and whose gates open only once the old run is gone.
func AttemptOverlaps(events []ObjectEvent) []string {
	type livePod struct {
		attempt int
		name    string
		gate    string
	}
	live := map[replicaKey]map[string]livePod{} // replica -> pod UID -> its last state
	var out []string
	for _, e := range events {
		if e.Kind != "Pod" || e.PodCliqueSet == "" {
			continue
		}
		k := replicaKey{e.PodCliqueSet, e.Replica}
		if live[k] == nil {
			live[k] = map[string]livePod{}
		}
		if e.Type == watch.Deleted {
			delete(live[k], e.UID)
			continue
		}
		attempt, _ := strconv.Atoi(e.Attempt)
		_, known := live[k][e.UID]
		me := livePod{attempt: attempt, name: e.Name, gate: e.StartupGate}
		live[k][e.UID] = me
		for uid, other := range live[k] {
			if uid == e.UID || other.attempt == me.attempt {
				continue
			}
			older, newer := other, me
			if other.attempt > me.attempt {
				older, newer = me, other
			}
			switch {
			case !known:
				out = append(out, fmt.Sprintf("%s replica %s: pod %s of attempt %d created while pod %s of attempt %d still exists (rv %s)",
					e.PodCliqueSet, e.Replica, e.Name, me.attempt, other.name, other.attempt, e.ResourceVersion))
			case newer.gate != "closed":
				out = append(out, fmt.Sprintf("%s replica %s: pod %s of attempt %d may run (startup gate %q) while pod %s of attempt %d still exists (rv %s)",
					e.PodCliqueSet, e.Replica, newer.name, newer.attempt, newer.gate, older.name, older.attempt, e.ResourceVersion))
			default:
				continue
			}
			break
		}
	}
	return out
}

// EarlyGangs reports a PodGroup created for a run of a replica while a pod
// of an earlier run of that replica still existed: the new gang must never
// count a dying pod.
func EarlyGangs(events []ObjectEvent) []string {
	live := map[replicaKey]map[string]int{} // replica -> pod UID -> attempt
	var out []string
	for _, e := range events {
		k := replicaKey{e.PodCliqueSet, e.Replica}
		attempt, _ := strconv.Atoi(e.Attempt)
		switch {
		case e.Kind == "Pod" && e.Type == watch.Deleted:
			delete(live[k], e.UID)
		case e.Kind == "Pod":
			if live[k] == nil {
				live[k] = map[string]int{}
			}
			live[k][e.UID] = attempt
		case e.Kind == "PodGroup" && e.Type == watch.Added:
			for _, podAttempt := range live[k] {
				if podAttempt < attempt {
					out = append(out, fmt.Sprintf("%s replica %s: PodGroup %s of attempt %d created while a pod of attempt %d still exists (rv %s)",
						e.PodCliqueSet, e.Replica, e.Name, attempt, podAttempt, e.ResourceVersion))
					break
				}
			}
		}
	}
	return out
}

// RerunSuccesses reports a pod created for an index of a run that already
// had a pod exit 0: exit 0 is final, whatever happens to the pod afterwards.
func RerunSuccesses(events []ObjectEvent) []string {
	type slot struct{ podClique, attempt, index string }
	succeeded := map[slot]string{}
	var out []string
	for _, e := range events {
		if e.Kind != "Pod" || e.Index == "" {
			continue
		}
		s := slot{e.PodClique, e.Attempt, e.Index}
		if e.Phase == "Succeeded" {
			if e.StartupGate == "closed" {
				// A pod a restart in place moved to this attempt, whose old
				// containers exited 0 before they were restarted: the
				// previous attempt's exit, not this one's.
				continue
			}
			if _, seen := succeeded[s]; !seen {
				succeeded[s] = e.UID
			}
			continue
		}
		if first, done := succeeded[s]; done && e.Type == watch.Added && e.UID != first {
			out = append(out, fmt.Sprintf("%s index %s (attempt %s) exited 0 in pod %s, yet pod %s was created for it (rv %s)",
				e.PodClique, e.Index, e.Attempt, first, e.Name, e.ResourceVersion))
		}
	}
	return out
}

// HostnameOverlaps reports every moment at which two pods of one run of a
// PodClique with the same index existed at once, terminating ones included:
// both have the hostname <podclique>-<index>, so the rank's DNS name could
// resolve to the old pod. A pod that replaces another (a tolerated
// failure's replacement, the pods of a PodClique made again) must wait
// until it is gone. (Pods of different runs are AttemptOverlaps'.)
func HostnameOverlaps(events []ObjectEvent) []string {
	type slot struct{ podClique, attempt, index string }
	live := map[slot]map[string]string{} // slot -> pod UID -> name
	var out []string
	for _, e := range events {
		if e.Kind != "Pod" || e.PodClique == "" || e.Index == "" {
			continue
		}
		s := slot{e.PodClique, e.Attempt, e.Index}
		if e.Type == watch.Deleted {
			delete(live[s], e.UID)
			continue
		}
		if live[s] == nil {
			live[s] = map[string]string{}
		}
		if _, known := live[s][e.UID]; !known {
			for _, other := range live[s] {
				out = append(out, fmt.Sprintf("%s index %s (attempt %s): pod %s was created while pod %s, of the same hostname, still existed (rv %s)",
					e.PodClique, e.Index, e.Attempt, e.Name, other, e.ResourceVersion))
			}
		}
		live[s][e.UID] = e.Name
	}
	return out
}
