package cluster

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/copse-dev/copse/internal/labels"
)

type stageDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ResourceRef struct {
			Kind string `json:"kind"`
		} `json:"resourceRef"`
		Steps []map[string]any `json:"steps"`
	} `json:"spec"`
}

func TestEmbeddedStagesAreWellFormed(t *testing.T) {
	paths, err := writeStageFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var s stageDoc
			if err := yaml.Unmarshal(doc, &s); err != nil {
				t.Fatalf("%s: %v", filepath.Base(path), err)
			}
			if s.APIVersion != "kwok.x-k8s.io/v1alpha1" || s.Kind != "Stage" {
				t.Errorf("%s: %s/%s is not a kwok Stage", filepath.Base(path), s.APIVersion, s.Kind)
			}
			if s.Metadata.Name == "" || names[s.Metadata.Name] {
				t.Errorf("%s: missing or duplicate stage name %q", filepath.Base(path), s.Metadata.Name)
			}
			names[s.Metadata.Name] = true
			if len(s.Spec.Steps) == 0 {
				t.Errorf("stage %s does nothing", s.Metadata.Name)
			}
		}
	}
	for _, want := range []string{"copse-node-ready", "copse-pod-initialize", "copse-pod-open-gate", "copse-pod-start", "copse-pod-exit", "copse-pod-restart", "copse-pod-kill", "copse-pod-remove"} {
		if !names[want] {
			t.Errorf("stage %s missing", want)
		}
	}
}

// The stages spell the annotation keys out; they must match the exported
// constants that users of the package write, or the keys copse itself puts
// on pods (the attempt label, the startup gate annotation).
func TestStagesUseOnlyDocumentedAnnotations(t *testing.T) {
	known := map[string]bool{AnnotationRunDuration: true, AnnotationExitCode: true, AnnotationRestartDelay: true, AnnotationExitCodesByAttempt: true,
		AnnotationNeverReady: true, AnnotationStartDuration: true, AnnotationUnreachable: true, AnnotationRestartAgentLost: true, AnnotationRestartInPlaceDelay: true, AnnotationRerunDelay: true, AnnotationExitBeforeRestart: true,
		labels.AttemptKey: true, labels.StartupGateAnnotation: true}
	used := map[string]bool{}
	re := regexp.MustCompile(`(sim\.)?copse\.dev/[a-z-]+`)
	paths, err := writeStageFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range re.FindAllString(string(data), -1) {
			used[key] = true
			if !known[key] {
				t.Errorf("%s uses undocumented annotation %s", filepath.Base(path), key)
			}
		}
	}
	for key := range known {
		if !used[key] {
			t.Errorf("annotation %s is exported but no stage reads it", key)
		}
	}
}

// kwokDefaultedOptions are the options kwok v0.8.0 defaults when it runs
// without a configuration file, and leaves at their zero value when a file
// does not name them (a zero play-stage parallelism stops kwok at start).
var kwokDefaultedOptions = []string{
	"podPlayStageParallelism", "nodePlayStageParallelism", "nodeLeaseParallelism",
	"podsOnNodeSyncParallelism", "enablePodsOnNodeSyncListPager", "enablePodsOnNodeSyncStreamWatch",
	"enableDebuggingHandlers", "enableContentionProfiling", "enableProfilingHandler",
}

func TestKwokConfigurationSetsEveryDefaultedOption(t *testing.T) {
	path, err := writeKwokConfiguration(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Options    map[string]any `json:"options"`
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != "config.kwok.x-k8s.io/v1alpha1" || cfg.Kind != "KwokConfiguration" {
		t.Fatalf("kwok configuration is %s %s, want config.kwok.x-k8s.io/v1alpha1 KwokConfiguration", cfg.APIVersion, cfg.Kind)
	}
	for _, name := range kwokDefaultedOptions {
		value, ok := cfg.Options[name]
		if !ok {
			t.Errorf("options.%s is not set: kwok would run with its zero value", name)
			continue
		}
		if n, isNumber := value.(float64); isNumber && n <= 0 {
			t.Errorf("options.%s is %v, want more than 0", name, n)
		}
	}
	if n, _ := cfg.Options["podPlayStageParallelism"].(float64); n <= 4 {
		t.Errorf("options.podPlayStageParallelism is %v, want more pod stage workers than kwok's default of 4", n)
	}
}
