package podclique

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// p builds a podInfo for tables: an active, scheduled, ready pod at index,
// changed by the given modifiers.
func p(index int, mods ...func(*podInfo)) podInfo {
	info := podInfo{
		name:      fmt.Sprintf("pod-%d", index),
		uid:       types.UID(fmt.Sprintf("uid-%d", index)),
		index:     index,
		hasIndex:  true,
		phase:     corev1.PodRunning,
		ready:     true,
		scheduled: true,
	}
	for _, m := range mods {
		m(&info)
	}
	return info
}

func named(name string) func(*podInfo) {
	return func(i *podInfo) { i.name = name; i.uid = types.UID("uid-" + name) }
}

func notReady(i *podInfo)    { i.ready = false }
func unscheduled(i *podInfo) { i.scheduled = false; i.ready = false; i.phase = corev1.PodPending }
func gated(i *podInfo)       { unscheduled(i); i.scheduleGated = true }
func terminating(i *podInfo) { i.terminating = true }
func noIndex(i *podInfo)     { i.hasIndex = false; i.index = 0 }
func failed(i *podInfo)      { i.phase = corev1.PodFailed; i.ready = false }
func succeeded(i *podInfo)   { i.phase = corev1.PodSucceeded; i.ready = false }

// exitedWith makes the pod Failed as podInfoOf describes a container of that
// exit code and reason.
func exitedWith(code int32, reason string) func(*podInfo) {
	return func(i *podInfo) {
		failed(i)
		i.failure = fmt.Sprintf("container main exited %d, %s", code, reason)
	}
}

func podNames(pods []podInfo) []string {
	out := []string{}
	for _, pod := range pods {
		out = append(out, pod.name)
	}
	return out
}
