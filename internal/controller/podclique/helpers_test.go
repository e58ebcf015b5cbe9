package podclique

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/podstate"
)

// t0 is the tables' "now".
var t0 = time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)

// p builds a pod summary for tables: an active, scheduled, started, ready
// pod at index, changed by the given modifiers.
func p(index int, mods ...func(*podstate.Summary)) podstate.Summary {
	info := podstate.Summary{
		Name:          fmt.Sprintf("pod-%d", index),
		UID:           types.UID(fmt.Sprintf("uid-%d", index)),
		Index:         index,
		HasIndex:      true,
		Phase:         corev1.PodRunning,
		Ready:         true,
		Scheduled:     true,
		Started:       true,
		StartedAt:     t0.Add(-time.Hour),
		ControllerUID: "pclq-uid",
	}
	for _, m := range mods {
		m(&info)
	}
	return info
}

func named(name string) func(*podstate.Summary) {
	return func(i *podstate.Summary) { i.Name = name; i.UID = types.UID("uid-" + name) }
}

func notReady(i *podstate.Summary) { i.Ready = false }
func unscheduled(i *podstate.Summary) {
	i.Scheduled, i.Ready, i.Started, i.StartedAt, i.Phase = false, false, false, time.Time{}, corev1.PodPending
}
func gated(i *podstate.Summary)       { unscheduled(i); i.ScheduleGated = true }
func terminating(i *podstate.Summary) { i.Terminating = true }
func noIndex(i *podstate.Summary)     { i.HasIndex = false; i.Index = 0 }
func failed(i *podstate.Summary) {
	i.Phase, i.Ready = corev1.PodFailed, false
	if i.Failure == nil {
		i.Failure = &podstate.Failure{}
	}
}
func succeeded(i *podstate.Summary)     { i.Phase, i.Ready = corev1.PodSucceeded, false }
func withFinalizer(i *podstate.Summary) { i.HasOutcomeFinalizer = true }

// finishedAt sets when an ended pod finished.
func finishedAt(at time.Time) func(*podstate.Summary) {
	return func(i *podstate.Summary) { i.FinishedAt = at }
}

// exitedWith makes the pod Failed as podstate.Of describes a container of
// that exit code and reason.
func exitedWith(code int32, reason string) func(*podstate.Summary) {
	return func(i *podstate.Summary) {
		failed(i)
		i.Failure = &podstate.Failure{Container: "main", ExitCode: code, Reason: reason}
	}
}

func podNames(pods []podstate.Summary) []string {
	out := []string{}
	for _, pod := range pods {
		out = append(out, pod.Name)
	}
	return out
}

var errQuota = errors.New(`exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10`)

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
