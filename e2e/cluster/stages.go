package cluster

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Pod annotations that steer the simulated container runtime (the kwok
// stages embedded below). docs/local-cluster.md has the full lifecycle.
const (
	// AnnotationRunDuration is how long the main containers run, as a Go
	// duration ("90s", "1h"). Without it they run until the pod is deleted,
	// like a server.
	AnnotationRunDuration = "sim.copse.dev/run-duration"
	// AnnotationExitCode is the exit code the containers end with once
	// run-duration has passed. Default 0.
	AnnotationExitCode = "sim.copse.dev/exit-code"
	// AnnotationExitCodesByAttempt overrides AnnotationExitCode per run of a
	// copse replica: a comma-separated list indexed by the pod's
	// copse.dev/attempt label ("1,0": the first run exits 1, every later run
	// exits 0), or, for a JobSet's pod, by its
	// jobset.sigs.k8s.io/restart-attempt label. The last entry repeats.
	AnnotationExitCodesByAttempt = "sim.copse.dev/exit-codes-by-attempt"
	// AnnotationRestartDelay is how long a container that is to be restarted
	// (restartPolicy Always, or OnFailure after a failure) stays terminated
	// before it runs again, as a Go duration. Default 1s.
	AnnotationRestartDelay = "sim.copse.dev/restart-delay"
	// AnnotationStartDuration is how long the main containers take to start
	// (an image pull, a model load), as a Go duration counted from the pod's
	// startTime: the pod is Running and Ready no earlier than that, and at
	// most a second later. Without it they start at once.
	AnnotationStartDuration = "sim.copse.dev/start-duration"
	// AnnotationNeverReady "true" keeps the pod's containers running but
	// never Ready, as a readiness probe that never passes.
	AnnotationNeverReady = "sim.copse.dev/never-ready"
	// AnnotationUnreachable "true" puts the pod on a node that no longer
	// answers: once deleted it stays terminating for good.
	AnnotationUnreachable = "sim.copse.dev/unreachable"
	// AnnotationRestartAgentLost "true" makes the pod's containers never
	// restart in place (copse-pod-restart-all skips it), as a pod whose
	// restart agent is gone while the pod still runs.
	AnnotationRestartAgentLost = "sim.copse.dev/restart-agent-lost"
	// AnnotationRestartInPlaceDelay is how long after copse moved the pod to
	// a new attempt its containers are stopped to restart in place (the
	// agent's downward-API refresh and poll, then the kubelet), as a Go
	// duration. Default 2s, as measured on a real node.
	AnnotationRestartInPlaceDelay = "sim.copse.dev/restart-in-place-delay"
	// AnnotationRerunDelay is how long after that stop the containers run
	// again, as a Go duration. Default 8s, as measured on a real node.
	AnnotationRerunDelay = "sim.copse.dev/rerun-delay"
	// AnnotationExitBeforeRestart "true" lets a pod copse moved to a new
	// attempt exit (AnnotationRunDuration, AnnotationExitCode) before it is
	// restarted in place, as a rank's old process does that crashes once
	// its peer is gone; it is then never restarted in place.
	AnnotationExitBeforeRestart = "sim.copse.dev/exit-before-restart"
)

//go:embed stages/*.yaml
var stageFS embed.FS

// writeStageFiles copies the embedded stage definitions into dir and returns
// their paths, in the form kwok's --config flag takes.
func writeStageFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write kwok stages: %w", err)
	}
	names, err := fs.Glob(stageFS, "stages/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list embedded kwok stages: %w", err)
	}
	sort.Strings(names)
	paths := make([]string, 0, len(names))
	for _, name := range names {
		data, err := stageFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read embedded kwok stage %s: %w", name, err)
		}
		path := filepath.Join(dir, filepath.Base(name))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, fmt.Errorf("write kwok stage %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
