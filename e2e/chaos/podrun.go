package chaos

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/copse-dev/copse/internal/labels"
)

// podRun is one run of a pod: its UID and the copse attempt it runs for. A
// pod restarted in place keeps its UID and gets the next attempt, so a step
// that acted on its earlier run (an eviction, an exit) must not count its
// new run as acted on: that run has to be released like a new pod. (A
// JobSet's pods carry no copse attempt; the chaos mix restarts them by
// recreation, which gives new UIDs.)
type podRun string

// runOf names the run a pod is in now.
func runOf(p *corev1.Pod) podRun {
	return podRun(string(p.UID) + "/" + p.Labels[labels.AttemptKey])
}
