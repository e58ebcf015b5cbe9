package chaos

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
	"github.com/copse-dev/copse/e2e/cluster"
	copsekueue "github.com/copse-dev/copse/internal/kueue"
	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/trainjob"
)

func TestNewPlanIsReproducible(t *testing.T) {
	a, err := NewPlan(42, 70, 8)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewPlan(42, 70, 8)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two plans of seed 42 differ")
	}
	c, _ := NewPlan(43, 70, 8)
	if reflect.DeepEqual(a.Workloads, c.Workloads) {
		t.Fatal("seeds 42 and 43 planned the same workloads")
	}
	small, _ := NewPlan(42, 9, 8)
	if !reflect.DeepEqual(small.Workloads, a.Workloads[:9]) {
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

// TestPlansCoverEveryCell: a plan of as many workloads as there are cells
// covers each once, and its first len(AllFeatures) workloads are one per
// feature, so that the small form spans the features.
func TestPlansCoverEveryCell(t *testing.T) {
	cells := allCells()
	for seed := range int64(50) {
		p, err := NewPlan(seed, len(cells), 0)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		var got []cell
		for _, w := range p.Workloads {
			got = append(got, cell{Feature: w.Feature, Kind: w.Kind, Backend: w.Backend, Variant: w.Variant})
		}
		for _, c := range cells {
			if !slices.Contains(got, c) {
				t.Errorf("seed %d: cell %+v not covered by the first %d workloads", seed, c, len(cells))
			}
		}
		var features []Feature
		for _, w := range p.Workloads[:len(AllFeatures)] {
			features = append(features, w.Feature)
		}
		for _, f := range AllFeatures {
			if !slices.Contains(features, f) {
				t.Errorf("seed %d: feature %s missing from the first %d workloads: %v", seed, f, len(AllFeatures), features)
			}
		}
	}
}

// TestPlansKeepTheirRules checks, over many seeds, every rule the oracle
// and the harness depend on.
func TestPlansKeepTheirRules(t *testing.T) {
	for seed := range int64(200) {
		p, err := NewPlan(seed, 80, 20)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, w := range p.Workloads {
			checkWorkload(t, seed, w)
		}
		if len(p.Kills) != 20 {
			t.Errorf("seed %d: %d kills planned, want 20", seed, len(p.Kills))
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
		t.Errorf("seed %d %s (%s %s, %s): "+format, append([]any{seed, w.Name, w.Feature, w.Variant, w.Shape()}, args...)...)
	}
	if w.Replicas < 1 || w.Replicas > 3 || (w.Kind == KindTrainJob && w.Replicas != 1) {
		fail("%d replicas", w.Replicas)
	}
	if w.MaxRestarts < 0 || w.MaxRestarts > 2 {
		fail("maxRestarts %d, want 0-2", w.MaxRestarts)
	}
	if w.totalPods() > maxPodsPerWorkload+3*int(w.Replicas)*2 {
		fail("%d pods", w.totalPods())
	}
	// The fleet has 64 GPUs for 8 workloads at a time, 4 a node.
	if w.GPUDemand() > 12 || w.GPUDemand() < 1 {
		fail("%d GPUs", w.GPUDemand())
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
		if c.GPUs > 0 && c.Grouped {
			fail("grouped clique %s asks for GPUs", c.Name)
		}
	}
	if w.Kind == KindTrainJob {
		node, err := w.Clique(trainjob.NodeName)
		if err != nil || node.GPUs != 1 || w.Backend == "" {
			fail("a TrainJob without a GPU trainer or a backend")
		}
	}
	if len(w.ObjectName) > naming.MaxLabelLength {
		fail("name of %d characters", len(w.ObjectName))
	}
	if w.Feature == FeatureTraining {
		checkTrainingWorkload(t, w, fail)
	} else if w.Victim != nil {
		fail("a victim outside a tolerated-failure workload")
	}
	checkSteps(w, fail)
	if w.Expected.State == "" {
		fail("no expected end")
	}
	// What each feature is there for.
	switch w.Feature {
	case FeatureTrainJob:
		if w.Kind != KindTrainJob {
			fail("not a TrainJob")
		}
	case FeatureKueue:
		if w.Queue == nil || w.Queue.GPUQuota > 4 || (w.Variant == VariantNoQuota) != (w.Expected.State == StateBlocked) {
			fail("queue %+v, expected %s", w.Queue, w.Expected)
		}
	case FeatureSuspend:
		if w.Suspensions() != 1 || !w.Expected.Succeeded() {
			fail("%d suspensions, expected %s", w.Suspensions(), w.Expected)
		}
	case FeatureStartOrder:
		ordered := w.StartupType != "" || slices.ContainsFunc(w.Cliques, func(c Clique) bool { return len(c.AfterSucceeded) > 0 || c.DependsOn != "" })
		if !ordered || !w.Expected.Succeeded() {
			fail("start order %q, expected %s", w.StartupType, w.Expected)
		}
	case FeatureSuccessPolicy:
		if w.SuccessPolicy == nil || w.Replicas < 2 || w.Expected != (End{State: StateSucceeded}) {
			fail("policy %+v over %d replicas, expected %s", w.SuccessPolicy, w.Replicas, w.Expected)
		}
	case FeatureDeletedChild:
		if len(w.Steps) != 2 || (w.Steps[0].Kind != StepDeletePodClique && w.Steps[0].Kind != StepDeleteBackend) {
			fail("steps %v", w.Steps)
		}
	case FeatureTopology:
		if w.Topology == nil || (w.Topology.Change == TopologyUnresolved) != (w.Expected.State == StateBlocked) {
			fail("topology %+v, expected %s", w.Topology, w.Expected)
		}
	case FeatureLongName:
		limit := PodCliqueSetNameLimit(int(w.Replicas), w.Cliques)
		if w.Backend == jobSetBackend {
			limit = JobSetNameLimit(w.Cliques)
		}
		want := map[string]int{VariantAtLimit: limit, VariantOverLimit: limit + 1}[w.Variant]
		if len(w.ObjectName) != want || (w.Variant == VariantOverLimit) != (w.Expected.State == StateRefused) {
			fail("name of %d characters, want %d; expected %s", len(w.ObjectName), want, w.Expected)
		}
	}
}

func checkTrainingWorkload(t *testing.T, w Workload, fail func(string, ...any)) {
	t.Helper()
	want := map[Scenario]End{
		ScenarioSucceed:            {State: StateSucceeded},
		ScenarioToleratedFailure:   {State: StateSucceeded},
		ScenarioRuntimeExceeded:    {State: StateFailed, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded},
		ScenarioRestartThenSucceed: {State: StateSucceeded, RestartCount: w.Expected.RestartCount},
		ScenarioBudgetExceeded:     {State: StateFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: w.MaxRestarts},
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

// checkSteps: every target is a clique of the workload in one of its
// replicas; a resume follows a suspension; a reactivation a deactivation;
// a workload whose steps wait for its pods to run keeps them running long
// enough (or until told).
func checkSteps(w Workload, fail func(string, ...any)) {
	suspended, deactivated := false, false
	for i, s := range w.Steps {
		if s.Clique != "" {
			c, err := w.Clique(s.Clique)
			if err != nil || s.Replica < 0 || s.Replica >= w.Replicas {
				fail("step %d %s: no such target", i, s)
			}
			if s.Kind != StepExit && c.RunFor != 0 && c.RunFor < 6*time.Second {
				fail("step %d %s: its target runs only %s, too short to be caught running", i, s, c.RunFor)
			}
		}
		switch s.Kind {
		case StepSuspend:
			suspended = true
		case StepResume:
			if !suspended {
				fail("step %d resumes what was not suspended", i)
			}
			suspended = false
		case StepDeactivate:
			deactivated = true
			if w.Queue == nil {
				fail("step %d deactivates a workload that is not queued", i)
			}
		case StepReactivate:
			if !deactivated {
				fail("step %d reactivates what was not deactivated", i)
			}
			deactivated = false
		case StepDeleteBackend:
			if w.Backend != pcsBackend {
				fail("step %d deletes a backend that is no PodCliqueSet", i)
			}
		case StepPreempt:
			if w.Queue == nil {
				fail("step %d evicts a workload that is not queued", i)
			}
		case StepChangeTopology:
			if w.Topology == nil {
				fail("step %d changes a binding the workload does not pack by", i)
			}
		}
	}
	if suspended || deactivated {
		fail("ends suspended or deactivated: %v", w.Steps)
	}
	// A workload acted on whose pods run until released must be released
	// (the success policy's leaders are told to exit by StepExit), unless
	// its last step ends it (the eviction after the last uncounted restart).
	if len(w.Steps) > 0 && w.SuccessPolicy == nil {
		if w.Steps[len(w.Steps)-1].Kind != StepRelease && !w.Expected.Failed() {
			fail("steps %v do not end with a release", w.Steps)
		}
		for _, c := range w.Cliques {
			if c.RunFor != 0 && c.Name != trainjob.DatasetInitializerName {
				fail("clique %s exits on its own after %s: the workload could end before the harness acted", c.Name, c.RunFor)
			}
		}
	}
}

func TestPodCliqueSetCarriesTheHistory(t *testing.T) {
	w := Workload{Name: "w00", ObjectName: "job", Scenario: ScenarioRestartThenSucceed, Replicas: 2, MaxRestarts: 2, GracePeriodSeconds: 2,
		MaxRuntime: 15 * time.Minute, Group: &Group{Name: "grp", Replicas: 2, MinAvailable: 1},
		Cliques: []Clique{
			{Name: "g0", Pods: 2, MinAvailable: 2, RunFor: 4 * time.Second, FailedRuns: 1, Grouped: true},
			{Name: "s0", Pods: 3, MinAvailable: 1, GPUs: 1},
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
	if gpus := s0.Spec.PodSpec.Containers[0].Resources.Limits[cluster.ResourceGPU]; gpus.Value() != 1 {
		t.Errorf("s0 asks for %s GPUs, want 1", gpus.String())
	}
	groups := pcs.Spec.Template.PodCliqueScalingGroupConfigs
	if len(groups) != 1 || !slices.Equal(groups[0].CliqueNames, []string{"g0"}) || *groups[0].Replicas != 2 || *groups[0].MinAvailable != 1 {
		t.Errorf("scaling groups %+v", groups)
	}
}

func TestPodCliqueSetCarriesTheFeatures(t *testing.T) {
	w := Workload{Name: "w01", ObjectName: "job", Replicas: 2, StartupType: "CliqueStartupTypeExplicit",
		SuccessPolicy: &SuccessPolicy{Operator: "Any", Targets: []string{"trainer"}},
		Queue:         &Queue{GPUQuota: 2}, Topology: &Topology{Change: TopologyDeleted},
		Cliques: []Clique{
			{Name: "init", Pods: 1, MinAvailable: 1, RunFor: 100 * time.Millisecond},
			{Name: "trainer", Pods: 1, MinAvailable: 1, GPUs: 1, StartsAfter: []string{"init"}, AfterSucceeded: []string{"init"}},
		}}
	pcs := w.PodCliqueSet("chaos-w01-abcde")
	if got := pcs.Spec.Template.Cliques[0].Annotations[cluster.AnnotationRunDuration]; got != "100ms" {
		t.Errorf("init runs %q", got)
	}
	if got := pcs.Spec.Template.Cliques[1].Spec.StartsAfter; !slices.Equal(got, []string{"init"}) || *pcs.Spec.Template.StartupType != "CliqueStartupTypeExplicit" {
		t.Errorf("start order %v %v", got, pcs.Spec.Template.StartupType)
	}
	if got := pcs.Spec.TrainingSpec.StartsAfterSucceeded; len(got) != 1 || got[0].Clique != "trainer" || !slices.Equal(got[0].Cliques, []string{"init"}) {
		t.Errorf("startsAfterSucceeded %+v", got)
	}
	if p := pcs.Spec.TrainingSpec.SuccessPolicy; p == nil || p.Operator != "Any" || !slices.Equal(p.TargetCliques, []string{"trainer"}) {
		t.Errorf("successPolicy %+v", p)
	}
	if pcs.Labels[copsekueue.QueueNameLabel] != kueueLocalQueue || pcs.Labels[copsekueue.PriorityClassLabel] != kueueLowPriority {
		t.Errorf("labels %v", pcs.Labels)
	}
	if tc := pcs.Spec.Template.TopologyConstraint; tc == nil || tc.TopologyName != "chaos-w01-abcde-b" || tc.Pack.RequiredDomain != "rack" {
		t.Errorf("topologyConstraint %+v", tc)
	}
	if b := Binding(BindingName("chaos-w01-abcde"), TopologyKey("chaos-w01-abcde")); b.Spec.Levels[0].Key != "chaos.copse.dev/rack-w01-abcde" {
		t.Errorf("binding %+v", b.Spec)
	}
	cq := w.ClusterQueue("chaos-w01-abcde")
	if q := cq.Spec.ResourceGroups[0].Flavors[0].Resources[0]; q.Name != cluster.ResourceGPU || q.NominalQuota.Value() != 2 {
		t.Errorf("quota %+v", q)
	}
	preemptor := w.Preemptor("ns")
	if gpus := preemptor.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Resources.Limits[cluster.ResourceGPU]; gpus.Value() != 2 ||
		preemptor.Labels[copsekueue.PriorityClassLabel] != kueueHighPriority {
		t.Errorf("preemptor %+v asks for %s GPUs", preemptor.Labels, gpus.String())
	}
}

func TestTrainJobCarriesTheHistory(t *testing.T) {
	w := Workload{Name: "w02", ObjectName: "train", Kind: KindTrainJob, Backend: pcsBackend, Replicas: 1, MaxRestarts: 1,
		GracePeriodSeconds: 3, Queue: &Queue{GPUQuota: 2}, Topology: &Topology{Change: TopologyAdded},
		Cliques: []Clique{
			{Name: trainjob.DatasetInitializerName, Pods: 1, MinAvailable: 1, RunFor: 300 * time.Millisecond},
			{Name: trainjob.NodeName, Pods: 2, MinAvailable: 2, GPUs: 1, RunFor: 5 * time.Second, FailedRuns: 1, DependsOn: "Ready"},
		}}
	rt := w.TrainingRuntime("chaos-w02-x")
	if rt.Spec.Backend != pcsBackend || *rt.Spec.MLPolicy.NumNodes != 2 || rt.Spec.Template.Spec.FailurePolicy.MaxRestarts != 1 {
		t.Errorf("runtime spec %+v", rt.Spec)
	}
	if tc := rt.Spec.PodGroupPolicy.Workload.TopologyConstraint; tc == nil || tc.Level != "chaos.copse.dev/rack-w02-x" {
		t.Errorf("topology %+v", tc)
	}
	jobs := rt.Spec.Template.Spec.ReplicatedJobs
	if len(jobs) != 2 || jobs[0].Template.Labels[trainjob.AncestorLabel] != trainjob.AncestorDatasetInitializer ||
		jobs[1].Template.Labels[trainjob.AncestorLabel] != trainjob.AncestorTrainer {
		t.Fatalf("jobs %+v", jobs)
	}
	node := jobs[1].Template.Spec.Template
	if node.Annotations[cluster.AnnotationExitCodesByAttempt] != "1,0" || node.Spec.Containers[0].Name != trainjob.NodeName ||
		node.Spec.RestartPolicy != corev1.RestartPolicyNever || *node.Spec.TerminationGracePeriodSeconds != 3 {
		t.Errorf("node pod %+v", node)
	}
	if d := jobs[1].DependsOn; len(d) != 1 || d[0].Name != trainjob.DatasetInitializerName || d[0].Status != jobsetv1alpha2.DependencyReady {
		t.Errorf("dependsOn %+v", d)
	}
	tj := w.TrainJob("chaos-w02-x")
	if tj.Spec.RuntimeRef.Name != RuntimeName || *tj.Spec.RuntimeRef.Kind != trainerv1alpha1.TrainingRuntimeKind ||
		*tj.Spec.Trainer.NumNodes != 2 || tj.Labels[copsekueue.QueueNameLabel] != kueueLocalQueue {
		t.Errorf("TrainJob %+v", tj)
	}
}

// TestNameLimits: the limits are those of the rules they name: a
// PodCliqueSet's longest pod hostname, a JobSet's longest pod name.
func TestNameLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  int
		want int
	}{
		// <name>-0-a-99999 ≤ 63
		{"PodCliqueSet of one replica, clique a", PodCliqueSetNameLimit(1, []Clique{{Name: "a"}}), 63 - len("-0-a-99999")},
		// <name>-10-a-99999 ≤ 63
		{"PodCliqueSet of eleven replicas", PodCliqueSetNameLimit(11, []Clique{{Name: "a"}, {Name: "b"}}), 63 - len("-10-a-99999")},
		// <name>-0-node-99999 ≤ 63
		{"TrainJob on the PodCliqueSet backend", PodCliqueSetNameLimit(1, []Clique{{Name: "node", Pods: 3}}), 63 - len("-0-node-99999")},
		// <name>-node-0-2-abcde ≤ 63
		{"TrainJob on the JobSet backend, 3 nodes", JobSetNameLimit([]Clique{{Name: "node", Pods: 3}}), 63 - len("-node-0-2-abcde")},
		{"TrainJob on the JobSet backend, with an initializer", JobSetNameLimit([]Clique{{Name: "dataset-initializer", Pods: 1}, {Name: "node", Pods: 3}}),
			63 - len("-dataset-initializer-0-0-abcde")},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: limit %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	for n := range 3 {
		pcs := strings.Repeat("x", PodCliqueSetNameLimit(1, []Clique{{Name: "a"}})+n)
		err := naming.NameBudget{PodCliqueSet: pcs, MaxReplicas: 1, Cliques: map[string]string{"a": ""}}.Check()
		if (err == nil) != (n == 0) {
			t.Errorf("a PodCliqueSet name of %d characters: %v", len(pcs), err)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	cfg, err := ConfigFromEnv(env(nil))
	if err != nil || cfg.Workloads != DefaultWorkloads || cfg.Kills != DefaultKills || cfg.SeedFromEnv {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = ConfigFromEnv(env(map[string]string{EnvWorkloads: "60", EnvKills: "20", EnvSeed: "-7", EnvConcurrency: "70"}))
	if err != nil || cfg.Workloads != 60 || cfg.Kills != 20 || cfg.Seed != -7 || !cfg.SeedFromEnv || cfg.Concurrency != 60 {
		t.Errorf("full form: %+v, %v", cfg, err)
	}
	for _, bad := range []map[string]string{{EnvWorkloads: "0"}, {EnvKills: "-1"}, {EnvSeed: "x"}, {EnvConcurrency: "0"}} {
		if _, err := ConfigFromEnv(env(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestSmallFormSpansTheFeatures: the default size is one workload per
// feature, and the Makefile's full form covers every cell.
func TestSmallFormSpansTheFeatures(t *testing.T) {
	if DefaultWorkloads != len(AllFeatures) {
		t.Errorf("the small form has %d workloads for %d features", DefaultWorkloads, len(AllFeatures))
	}
	const makefileWorkloads = 64 // COPSE_CHAOS_WORKLOADS in the Makefile
	if n := len(allCells()); n > makefileWorkloads || n != 54 {
		t.Errorf("%d cells: the Makefile's comment says 54, and make chaos runs %d workloads", n, makefileWorkloads)
	}
}
