package chaos

import (
	"reflect"
	"slices"
	"testing"
	"time"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
)

func TestNewPlanIsReproducible(t *testing.T) {
	a, err := NewPlan(42, 20, 8)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPlan(42, 20, 8)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two plans of seed 42 differ")
	}
	c, _ := NewPlan(43, 20, 8)
	if reflect.DeepEqual(a.Workloads, c.Workloads) {
		t.Fatal("seeds 42 and 43 planned the same workloads")
	}
	small, _ := NewPlan(42, 8, 8)
	if !reflect.DeepEqual(small.Workloads, a.Workloads[:8]) {
		t.Error("the workloads of a smaller run of a seed are not a prefix of a larger run's")
	}
}

func TestNewPlanRejectsBadSizes(t *testing.T) {
	if _, err := NewPlan(1, MinWorkloads-1, 0); err == nil {
		t.Errorf("%d workloads accepted", MinWorkloads-1)
	}
	if _, err := NewPlan(1, MinWorkloads, -1); err == nil {
		t.Error("negative kills accepted")
	}
}

// TestPlansKeepTheirRules checks, over many seeds, every rule the oracle
// and the harness depend on.
func TestPlansKeepTheirRules(t *testing.T) {
	for seed := range int64(300) {
		p, err := NewPlan(seed, 12, 6)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		var first []Scenario
		for _, w := range p.Workloads[:MinWorkloads] {
			first = append(first, w.Scenario)
		}
		for _, s := range AllScenarios {
			if !slices.Contains(first, s) {
				t.Errorf("seed %d: scenario %s missing from the first %d workloads", seed, s, MinWorkloads)
			}
		}
		for _, w := range p.Workloads {
			checkWorkload(t, seed, w)
		}
		if len(p.Kills) != 6 {
			t.Errorf("seed %d: %d kills planned, want 6", seed, len(p.Kills))
		}
		for _, k := range p.Kills {
			if !p.Workloads[k.Workload].Aims(k.Trigger) {
				t.Errorf("seed %d: kill %d aims at %s of %s, whose history has no such moment", seed, k.Index, k.Trigger, p.Workloads[k.Workload].Name)
			}
			if k.Down < 0 || k.Down > 3*time.Second {
				t.Errorf("seed %d: kill %d down %s, want 0-3s", seed, k.Index, k.Down)
			}
		}
	}
}

func checkWorkload(t *testing.T, seed int64, w Workload) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("seed %d %s (%s, %s): "+format, append([]any{seed, w.Name, w.Scenario, w.Shape()}, args...)...)
	}
	if w.Replicas < 1 || w.Replicas > 3 {
		fail("%d replicas, want 1-3", w.Replicas)
	}
	if w.MaxRestarts < 0 || w.MaxRestarts > 2 {
		fail("maxRestarts %d, want 0-2", w.MaxRestarts)
	}
	if w.totalPods() > maxPodsPerWorkload+3*int(w.Replicas)*2 {
		fail("%d pods", w.totalPods())
	}
	if w.Group != nil && (w.Group.Replicas < 1 || w.Group.Replicas > 2 || w.Group.MinAvailable < 1 || w.Group.MinAvailable > w.Group.Replicas) {
		fail("scaling group %+v", *w.Group)
	}
	for _, c := range w.Cliques {
		if c.Pods < 1 || c.Pods > 4 || c.MinAvailable < 1 || c.MinAvailable > c.Pods {
			fail("clique %+v", c)
		}
		if c.Grouped != (w.Group != nil && c.Name[0] == 'g') {
			fail("clique %s grouped %t", c.Name, c.Grouped)
		}
		if c.FailedRuns > 0 && c.MinAvailable != c.Pods {
			fail("clique %s fails whole runs but tolerates losses: its first failure would not be a breach", c.Name)
		}
	}
	want := map[Scenario]End{
		ScenarioSucceed:            {Phase: copsev1alpha1.PodCliqueSetPhaseSucceeded},
		ScenarioToleratedFailure:   {Phase: copsev1alpha1.PodCliqueSetPhaseSucceeded},
		ScenarioRuntimeExceeded:    {Phase: copsev1alpha1.PodCliqueSetPhaseFailed, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded},
		ScenarioRestartThenSucceed: {Phase: copsev1alpha1.PodCliqueSetPhaseSucceeded, RestartCount: w.Expected.RestartCount},
		ScenarioBudgetExceeded:     {Phase: copsev1alpha1.PodCliqueSetPhaseFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: w.MaxRestarts},
	}[w.Scenario]
	if w.Expected != want {
		fail("expected %s, want %s", w.Expected, want)
	}
	if w.Scenario == ScenarioRestartThenSucceed && w.Expected.RestartCount == 0 {
		fail("no restart")
	}
	if w.Scenario == ScenarioToleratedFailure {
		c, err := w.Clique(w.Victim.Clique)
		if err != nil || c.MinAvailable >= c.Pods || w.Victim.Index >= c.Pods {
			fail("victim %+v in clique %+v", *w.Victim, c)
		}
		for _, c := range w.Cliques {
			if c.RunFor != 0 {
				fail("clique %s exits on its own; in a tolerated failure every pod runs until the replacement runs", c.Name)
			}
		}
		if w.MaxRuntime != 0 {
			fail("maxRuntime %s on a workload whose pods run until told to exit", w.MaxRuntime)
		}
	} else if w.Victim != nil {
		fail("a victim outside a tolerated-failure workload")
	}
}

func TestPodCliqueSetCarriesTheHistory(t *testing.T) {
	w := Workload{Name: "w00", Scenario: ScenarioRestartThenSucceed, Replicas: 2, MaxRestarts: 2, GracePeriodSeconds: 2,
		MaxRuntime: 15 * time.Minute, Group: &Group{Name: "grp", Replicas: 2, MinAvailable: 1},
		Cliques: []Clique{
			{Name: "g0", Pods: 2, MinAvailable: 2, RunFor: 4 * time.Second, FailedRuns: 1, Grouped: true},
			{Name: "s0", Pods: 3, MinAvailable: 1},
		}}
	pcs := w.PodCliqueSet("ns")
	if pcs.Spec.WorkloadType != copsev1alpha1.WorkloadTypeTraining || *pcs.Spec.TrainingSpec.MaxRestarts != 2 ||
		pcs.Spec.TrainingSpec.MaxRuntime.Duration != 15*time.Minute || pcs.Spec.Replicas != 2 {
		t.Errorf("spec %+v", pcs.Spec)
	}
	g0, s0 := pcs.Spec.Template.Cliques[0], pcs.Spec.Template.Cliques[1]
	if got := g0.Annotations; got[cluster.AnnotationExitCodesByAttempt] != "1,0" || got[cluster.AnnotationRunDuration] != "4s" {
		t.Errorf("g0 annotations %v", got)
	}
	if got := s0.Annotations; got[cluster.AnnotationRunDuration] != "" || got[cluster.AnnotationExitCodesByAttempt] != "" {
		t.Errorf("s0 runs until deleted, annotations %v", got)
	}
	if *s0.Spec.MinAvailable != 1 || *s0.Spec.PodSpec.TerminationGracePeriodSeconds != 2 {
		t.Errorf("s0 spec %+v", s0.Spec)
	}
	groups := pcs.Spec.Template.PodCliqueScalingGroupConfigs
	if len(groups) != 1 || !slices.Equal(groups[0].CliqueNames, []string{"g0"}) || *groups[0].Replicas != 2 || *groups[0].MinAvailable != 1 {
		t.Errorf("scaling groups %+v", groups)
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil || cfg.Workloads != DefaultWorkloads || cfg.Kills != DefaultKills || cfg.SeedFromEnv {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{EnvWorkloads: "50", EnvKills: "20", EnvSeed: "-7", EnvConcurrency: "60"}))
	if err != nil || cfg.Workloads != 50 || cfg.Kills != 20 || cfg.Seed != -7 || !cfg.SeedFromEnv || cfg.Concurrency != 50 {
		t.Errorf("full form: %+v, %v", cfg, err)
	}
	for _, bad := range []map[string]string{{EnvWorkloads: "4"}, {EnvKills: "-1"}, {EnvSeed: "x"}, {EnvConcurrency: "0"}} {
		if _, err := ConfigFromEnv(env(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
