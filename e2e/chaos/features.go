package chaos

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	"github.com/copse-dev/copse/internal/naming"
	"github.com/copse-dev/copse/internal/trainjob"
)

// Object names. Each workload has a namespace of its own.
const (
	// PodCliqueSetName is the name of a workload's PodCliqueSet.
	PodCliqueSetName = "job"
	// TrainJobName is the name of a workload's TrainJob.
	TrainJobName = "train"
	// PreemptorName is the PodCliqueSet that preempts a queued workload.
	PreemptorName = "preemptor"
)

// Names of the cliques the features use.
const (
	cliqueLeader  = "leader"
	cliqueWorker  = "worker"
	cliqueAux     = "aux"
	cliqueInit    = "init"
	cliquePrep    = "prep"
	cliqueTrainer = "trainer"
)

// newWorkload plans workload index of cell c.
func newWorkload(rng *rand.Rand, index int, c cell) (Workload, error) {
	w := Workload{Index: index, Name: fmt.Sprintf("w%02d", index), Feature: c.Feature, Kind: c.Kind, Backend: c.Backend,
		Variant: c.Variant, Scenario: ScenarioSucceed, GracePeriodSeconds: 1 + rng.Int64N(3), Replicas: 1}
	w.ObjectName = PodCliqueSetName
	if w.Kind == KindTrainJob {
		w.ObjectName = TrainJobName
	}
	switch c.Feature {
	case FeatureTraining:
		planTraining(rng, &w, Scenario(c.Variant))
	case FeatureTrainJob:
		w.Scenario = Scenario(c.Variant)
		planTrainJob(rng, &w)
	case FeatureKueue:
		planKueue(rng, &w)
	case FeatureSuspend:
		planSuspend(rng, &w)
	case FeatureStartOrder:
		planStartOrder(rng, &w)
	case FeatureSuccessPolicy:
		planSuccessPolicy(rng, &w)
	case FeatureDeletedChild:
		planDeletedChild(rng, &w)
	case FeatureTopology:
		planTopology(rng, &w)
	case FeatureFailureRules:
		planFailureRules(rng, &w)
	case FeatureLongName:
		if err := planLongName(rng, &w); err != nil {
			return Workload{}, fmt.Errorf("plan workload %s: %w", w.Name, err)
		}
	default:
		return Workload{}, fmt.Errorf("plan workload %s: unknown feature %q", w.Name, c.Feature)
	}
	withRulesSometimes(rng, &w)
	withInPlaceSometimes(rng, &w)
	var err error
	if w.Expected, err = ExpectedEnd(w.Injected()); err != nil {
		return Workload{}, fmt.Errorf("plan workload %s (%s %s): %w", w.Name, w.Feature, w.Variant, err)
	}
	return w, nil
}

// planTraining draws a Training PodCliqueSet of scenario s: 1 to 3
// replicas, standalone cliques and a scaling group, cliques with
// minAvailable below their pods; the first standalone clique's pods ask
// for a GPU each.
func planTraining(rng *rand.Rand, w *Workload, s Scenario) {
	w.Scenario = s
	failures := 0
	switch s {
	case ScenarioRestartThenSucceed:
		// replicas x failures must fit a budget of at most 2.
		failures = 1 + rng.IntN(2)
		w.Replicas = 1
		if failures == 1 {
			w.Replicas = 1 + rng.Int32N(2)
		}
		needed := w.Replicas * int32(failures)
		w.MaxRestarts = needed + rng.Int32N(3-needed)
	case ScenarioBudgetExceeded:
		failures = 1 + rng.IntN(3)
		w.Replicas = 1 + rng.Int32N(3)
		w.MaxRestarts = rng.Int32N(min(2, w.Replicas*int32(failures)-1) + 1)
	default:
		w.Replicas = []int32{1, 1, 1, 2, 2, 3}[rng.IntN(6)]
		w.MaxRestarts = rng.Int32N(3)
	}

	standalone := 1 + rng.IntN(3)
	if rng.Float64() < 0.4 {
		g := &Group{Name: "grp", Replicas: 1 + rng.Int32N(2)}
		g.MinAvailable = 1 + rng.Int32N(g.Replicas)
		w.Group = g
		standalone = 1 + rng.IntN(2)
		for j := range 1 + rng.IntN(2) {
			w.Cliques = append(w.Cliques, Clique{Name: fmt.Sprintf("g%d", j), Grouped: true})
		}
	}
	for j := range standalone {
		w.Cliques = append(w.Cliques, Clique{Name: fmt.Sprintf("s%d", j)})
	}
	for j := range w.Cliques {
		c := &w.Cliques[j]
		c.Pods = 1 + rng.Int32N(4)
		c.RunFor = seconds(rng, 3, 12)
	}
	for w.totalPods() > maxPodsPerWorkload {
		largest := 0
		for j, c := range w.Cliques {
			if c.Pods > w.Cliques[largest].Pods {
				largest = j
			}
		}
		w.Cliques[largest].Pods--
	}
	for j := range w.Cliques {
		c := &w.Cliques[j]
		c.MinAvailable = c.Pods
		if c.Pods >= 2 && rng.Float64() < 0.35 {
			c.MinAvailable = 1 + rng.Int32N(c.Pods-1)
		}
	}
	for j := range w.Cliques {
		if !w.Cliques[j].Grouped {
			w.Cliques[j].GPUs = 1
			break
		}
	}

	chosen := &w.Cliques[rng.IntN(len(w.Cliques))]
	switch s {
	case ScenarioRestartThenSucceed, ScenarioBudgetExceeded:
		// Every pod of the failing clique fails together, so the clique
		// must tolerate no loss: a failure is a breach at once.
		chosen.MinAvailable = chosen.Pods
		chosen.FailedRuns = failures
		chosen.RunFor = seconds(rng, 3, 8)
	case ScenarioRuntimeExceeded:
		for j := range w.Cliques {
			w.Cliques[j].RunFor = seconds(rng, 2, 5)
		}
		chosen.RunFor = 0
		w.MaxRuntime = seconds(rng, 6, 12)
	case ScenarioToleratedFailure:
		if chosen.Pods < 2 {
			chosen.Pods = 2 + rng.Int32N(3)
		}
		chosen.MinAvailable = 1 + rng.Int32N(chosen.Pods-1)
		// Every pod runs until its replacement runs: the failure is
		// tolerated, and the gang still has its other pods when the
		// replacement joins it.
		for j := range w.Cliques {
			w.Cliques[j].RunFor = 0
		}
		w.Victim = &Victim{Clique: chosen.Name, Index: rng.Int32N(chosen.Pods)}
	}
	if (s == ScenarioSucceed || s == ScenarioRestartThenSucceed || s == ScenarioBudgetExceeded) && rng.Float64() < 0.3 {
		w.MaxRuntime = generousMaxRuntime
	}
}

// untilReleased makes the workload's pods run until the harness releases
// them (StepRelease), so that it cannot end before the harness acted.
func untilReleased(w *Workload) {
	for j := range w.Cliques {
		w.Cliques[j].RunFor = 0
	}
}

// trainerNode is a TrainJob's trainer job: 1 to 3 nodes of a GPU each,
// every one needed.
func trainerNode(rng *rand.Rand, lo, hi int) Clique {
	n := 1 + rng.Int32N(3)
	return Clique{Name: trainjob.NodeName, Pods: n, MinAvailable: n, RunFor: seconds(rng, lo, hi), GPUs: 1}
}

// planTrainJob draws a TrainJob of w.Scenario (succeed, restart-succeed,
// budget-exceeded): its trainer fails its first runs; each failure
// restarts the whole TrainJob (failurePolicy.maxRestarts).
func planTrainJob(rng *rand.Rand, w *Workload) {
	node := trainerNode(rng, 3, 10)
	switch w.Scenario {
	case ScenarioRestartThenSucceed:
		node.FailedRuns = 1 + rng.IntN(2)
		w.MaxRestarts = int32(node.FailedRuns) + rng.Int32N(int32(3-node.FailedRuns))
		node.RunFor = seconds(rng, 3, 6)
	case ScenarioBudgetExceeded:
		node.FailedRuns = 1 + rng.IntN(3)
		w.MaxRestarts = rng.Int32N(int32(min(2, node.FailedRuns-1)) + 1)
		node.RunFor = seconds(rng, 3, 6)
	default:
		w.MaxRestarts = rng.Int32N(3)
	}
	w.Cliques = []Clique{node}
}

// planKueue draws a queued workload: one replica whose GPU pods fill a
// ClusterQueue of its own (or, VariantNoQuota, one GPU more than it has),
// evicted while it runs and admitted again.
func planKueue(rng *rand.Rand, w *Workload) {
	target := trainjob.NodeName
	if w.Kind == KindTrainJob {
		w.Cliques = []Clique{trainerNode(rng, 6, 12)}
		w.MaxRestarts = rng.Int32N(2)
	} else {
		target = "s0"
		gpu := 1 + rng.Int32N(4)
		w.Cliques = []Clique{{Name: "s0", Pods: gpu, MinAvailable: gpu, RunFor: seconds(rng, 6, 12), GPUs: 1}}
		if rng.IntN(2) == 0 {
			n := 1 + rng.Int32N(2)
			w.Cliques = append(w.Cliques, Clique{Name: "s1", Pods: n, MinAvailable: n, RunFor: seconds(rng, 4, 10)})
		}
		w.MaxRestarts = rng.Int32N(2)
	}
	w.Queue = &Queue{GPUQuota: w.GPUDemand()}
	switch w.Variant {
	case VariantPreempted:
		w.Queue.Eviction = EvictionPreempted
		untilReleased(w)
		w.Steps = []Step{{Kind: StepPreempt, Clique: target}, {Kind: StepRelease}}
	case VariantDeactivated:
		w.Queue.Eviction = EvictionDeactivated
		untilReleased(w)
		w.Steps = []Step{{Kind: StepDeactivate, Clique: target}, {Kind: StepReactivate, Hold: seconds(rng, 1, 3)}, {Kind: StepRelease}}
	case VariantNoQuota:
		w.Queue.GPUQuota--
	}
}

// planSuspend draws a workload its user suspends while it runs and
// resumes once its pods are gone; VariantSuspendSuccessPolicy suspends a
// Training workload of two replicas whose first met its success policy
// (its leader exited 0, its workers still run) while the second runs.
func planSuspend(rng *rand.Rand, w *Workload) {
	hold := seconds(rng, 1, 3)
	switch {
	case w.Kind == KindTrainJob:
		w.Cliques = []Clique{trainerNode(rng, 8, 14)}
		w.MaxRestarts = rng.Int32N(2)
		untilReleased(w)
		w.Steps = []Step{{Kind: StepSuspend, Clique: trainjob.NodeName}, {Kind: StepResume, Hold: hold}, {Kind: StepRelease}}
	case w.Variant == VariantSuspendSuccessPolicy:
		w.Replicas = 2
		workers := 1 + rng.Int32N(3)
		// The leaders exit when the harness says; the workers run until
		// they are ended.
		w.Cliques = []Clique{
			{Name: cliqueLeader, Pods: 1, MinAvailable: 1},
			{Name: cliqueWorker, Pods: workers, MinAvailable: workers, GPUs: 1},
		}
		w.SuccessPolicy = &SuccessPolicy{Operator: "All", Targets: []string{cliqueLeader}}
		w.MaxRestarts = rng.Int32N(2)
		w.Steps = []Step{
			{Kind: StepExit, Replica: 0, Clique: cliqueLeader},
			{Kind: StepSuspend, Replica: 1, Clique: cliqueLeader},
			{Kind: StepResume, Hold: hold},
			{Kind: StepExit, Replica: 1, Clique: cliqueLeader},
		}
	default:
		w.Replicas = 1 + rng.Int32N(2)
		gpu := 1 + rng.Int32N(3)
		w.Cliques = []Clique{{Name: "s0", Pods: gpu, MinAvailable: gpu, RunFor: seconds(rng, 8, 14), GPUs: 1}}
		if rng.IntN(2) == 0 {
			n := 1 + rng.Int32N(3)
			w.Cliques = append(w.Cliques, Clique{Name: "s1", Pods: n, MinAvailable: n, RunFor: seconds(rng, 6, 14)})
		}
		w.MaxRestarts = rng.Int32N(3)
		untilReleased(w)
		w.Steps = []Step{{Kind: StepSuspend, Replica: rng.Int32N(w.Replicas), Clique: "s0"}, {Kind: StepResume, Hold: hold}, {Kind: StepRelease}}
	}
}

// briefRun is how long a predecessor runs before it exits 0: from a blink,
// so short that copse may never see it Ready, to two seconds.
func briefRun(rng *rand.Rand) time.Duration {
	return []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second, 2 * time.Second}[rng.IntN(4)]
}

// planStartOrder draws a workload whose trainer starts after predecessors
// that run briefly and exit 0.
func planStartOrder(rng *rand.Rand, w *Workload) {
	if w.Kind == KindTrainJob {
		node := trainerNode(rng, 3, 8)
		node.DependsOn = "Ready"
		if w.Variant == VariantDependsOnComplete {
			node.DependsOn = "Complete"
		}
		w.Cliques = []Clique{{Name: trainjob.DatasetInitializerName, Pods: 1, MinAvailable: 1, RunFor: briefRun(rng)}, node}
		w.MaxRestarts = rng.Int32N(2)
		return
	}
	w.Replicas = 1 + rng.Int32N(2)
	n := 1 + rng.Int32N(3)
	trainer := Clique{Name: cliqueTrainer, Pods: n, MinAvailable: n, RunFor: seconds(rng, 3, 8), GPUs: 1}
	w.MaxRestarts = rng.Int32N(2)
	if w.MaxRestarts > 0 && w.Replicas == 1 && rng.IntN(3) == 0 {
		// A restart starts the order again with the new run.
		w.Scenario = ScenarioRestartThenSucceed
		trainer.FailedRuns = 1
	}
	w.Cliques = []Clique{{Name: cliqueInit, Pods: 1, MinAvailable: 1, RunFor: briefRun(rng)}}
	switch w.Variant {
	case VariantInOrder:
		w.StartupType = grovecorev1alpha1.CliqueStartupTypeInOrder
		if rng.IntN(2) == 0 {
			w.Cliques = append(w.Cliques, Clique{Name: cliquePrep, Pods: 1, MinAvailable: 1, RunFor: briefRun(rng)})
		}
	case VariantExplicit:
		w.StartupType = grovecorev1alpha1.CliqueStartupTypeExplicit
		trainer.StartsAfter = []string{cliqueInit}
	case VariantAfterSucceeded:
		trainer.AfterSucceeded = []string{cliqueInit}
	case VariantExplicitAfterSucceeded:
		// The edge of the report: the same edge in both fields.
		w.StartupType = grovecorev1alpha1.CliqueStartupTypeExplicit
		trainer.StartsAfter = []string{cliqueInit}
		trainer.AfterSucceeded = []string{cliqueInit}
	}
	w.Cliques = append(w.Cliques, trainer)
}

// planSuccessPolicy draws a Training workload of 2 or 3 replicas whose
// leaders exit 0 while their GPU workers run until ended: the policy is
// All of [leader], or Any of [leader, aux] where aux runs until ended.
func planSuccessPolicy(rng *rand.Rand, w *Workload) {
	w.Replicas = 2 + rng.Int32N(2)
	workers := 1 + rng.Int32N(2)
	w.Cliques = []Clique{
		{Name: cliqueLeader, Pods: 1, MinAvailable: 1, RunFor: seconds(rng, 2, 8)},
		{Name: cliqueWorker, Pods: workers, MinAvailable: workers, GPUs: 1},
	}
	w.SuccessPolicy = &SuccessPolicy{Operator: "All", Targets: []string{cliqueLeader}}
	if w.Variant == VariantPolicyAny {
		w.Cliques = append(w.Cliques, Clique{Name: cliqueAux, Pods: 1, MinAvailable: 1})
		w.SuccessPolicy = &SuccessPolicy{Operator: "Any", Targets: []string{cliqueLeader, cliqueAux}}
	}
	w.MaxRestarts = rng.Int32N(2)
}

// planDeletedChild draws a workload one of whose children is deleted from
// outside while its pods run: a PodClique of a Training PodCliqueSet (a
// counted restart of its replica), or a TrainJob's PodCliqueSet (the
// TrainJob fails).
func planDeletedChild(rng *rand.Rand, w *Workload) {
	if w.Kind == KindTrainJob {
		w.Cliques = []Clique{trainerNode(rng, 8, 14)}
		w.MaxRestarts = rng.Int32N(2)
		untilReleased(w)
		w.Steps = []Step{{Kind: StepDeleteBackend, Clique: trainjob.NodeName}, {Kind: StepRelease}}
		return
	}
	w.Replicas = 1 + rng.Int32N(2)
	gpu := 1 + rng.Int32N(3)
	w.Cliques = []Clique{{Name: "s0", Pods: gpu, MinAvailable: gpu, RunFor: seconds(rng, 8, 14), GPUs: 1}}
	if rng.IntN(2) == 0 {
		n := 1 + rng.Int32N(2)
		w.Cliques = append(w.Cliques, Clique{Name: "s1", Pods: n, MinAvailable: n, RunFor: seconds(rng, 8, 14)})
	}
	w.MaxRestarts = rng.Int32N(3)
	victim := w.Cliques[rng.IntN(len(w.Cliques))]
	untilReleased(w)
	w.Steps = []Step{{Kind: StepDeletePodClique, Replica: rng.Int32N(w.Replicas), Clique: victim.Name}, {Kind: StepRelease}}
}

// withRulesSometimes gives some PodCliqueSets of the other features the
// recommended failure rules, so that rules meet suspensions, Kueue
// evictions, start order, success policies, tolerated failures, deleted
// PodCliques and crashes. None of those histories evicts a pod or exits 42:
// the rules must change nothing of their ends (failed runs exit 1, which no
// rule matches; copse's own deletions carry no DisruptionTarget).
func withRulesSometimes(rng *rand.Rand, w *Workload) {
	if w.Kind != KindPodCliqueSet || w.FailureRules || w.Feature == FeatureLongName || rng.Float64() >= 0.3 {
		return
	}
	w.FailureRules, w.MaxUncounted = true, rng.Int32N(3)
}

// withInPlaceSometimes makes half the PodCliqueSets restart in place, so
// every feature meets both restart strategies (TrainJobs keep JobSet's
// Recreate: its in-place restart needs JobSet's alpha gate on the JobSet
// backend). The steps tell pod runs apart by UID and attempt (podRun), as
// a pod kept in place is a new run of the same pod. Half of them, and
// three in four of those planned to restart, have the kept pods' old
// processes end before their restart (OldRunsEndFirst).
func withInPlaceSometimes(rng *rand.Rand, w *Workload) {
	if w.Kind != KindPodCliqueSet || rng.Float64() >= 0.5 {
		return
	}
	w.RestartInPlace = true
	// Most of those that restart have their kept ranks' old processes end
	// first: that is the case a restart in place must count right.
	oldRunsEnd := 0.5
	if w.Scenario == ScenarioRestartThenSucceed || w.Scenario == ScenarioBudgetExceeded {
		oldRunsEnd = 0.75
	}
	w.OldRunsEndFirst = rng.Float64() < oldRunsEnd
}

// planFailureRules draws a workload with the recommended failure rules:
// its pods are evicted (each eviction an uncounted restart), one eviction
// more than maxUncountedRestarts allows (VariantUncountedExhausted), or
// its first run exits 42 (VariantBugExit). A TrainJob's runtime says the
// rules in JobSet's and the Job's words (on the PodCliqueSet backend
// translated into the PodCliqueSet's); JobSet's uncounted restarts have no
// bound, so a TrainJob is not planned to run out of them.
func planFailureRules(rng *rand.Rand, w *Workload) {
	w.FailureRules = true
	w.MaxRestarts = rng.Int32N(2)
	target := trainjob.NodeName
	if w.Kind == KindTrainJob {
		w.Cliques = []Clique{trainerNode(rng, 3, 8)}
	} else {
		target = "s0"
		n := 1 + rng.Int32N(3)
		w.Cliques = []Clique{{Name: target, Pods: n, MinAvailable: n, RunFor: seconds(rng, 3, 8), GPUs: 1}}
		if rng.IntN(2) == 0 {
			m := 1 + rng.Int32N(2)
			w.Cliques = append(w.Cliques, Clique{Name: "s1", Pods: m, MinAvailable: m, RunFor: seconds(rng, 3, 8)})
		}
		w.MaxRuntime = generousMaxRuntime
	}
	evictions := 0
	switch w.Variant {
	case VariantBugExit:
		w.Cliques[0].FailedRuns, w.Cliques[0].FailExitCode = 1, 42
		w.MaxRestarts = 1 + rng.Int32N(2)
		w.MaxUncounted = 1 + rng.Int32N(2)
		return
	case VariantUncountedExhausted:
		w.MaxUncounted = rng.Int32N(2)
		evictions = int(w.MaxUncounted) + 1
	default:
		evictions = 1
		if w.Kind == KindPodCliqueSet {
			evictions += rng.IntN(2)
		}
		w.MaxUncounted = int32(evictions) + rng.Int32N(2)
	}
	untilReleased(w)
	for range evictions {
		w.Steps = append(w.Steps, Step{Kind: StepEvict, Clique: target})
	}
	if w.Variant != VariantUncountedExhausted {
		w.Steps = append(w.Steps, Step{Kind: StepRelease})
	}
}

// planTopology draws a workload packed at a rack level of its own binding:
// once its pods run, the binding changes, and the workload is suspended
// and resumed.
func planTopology(rng *rand.Rand, w *Workload) {
	change := map[string]TopologyChange{VariantBindingDeleted: TopologyDeleted, VariantBindingRenamed: TopologyRekeyed,
		VariantBindingAdded: TopologyAdded, VariantUnresolved: TopologyUnresolved}[w.Variant]
	w.Topology = &Topology{Change: change}
	target := "s0"
	if w.Kind == KindTrainJob {
		target = trainjob.NodeName
		w.Cliques = []Clique{trainerNode(rng, 8, 14)}
	} else {
		w.Replicas = 1 + rng.Int32N(2)
		gpu := 1 + rng.Int32N(4)
		w.Cliques = []Clique{{Name: "s0", Pods: gpu, MinAvailable: gpu, RunFor: seconds(rng, 8, 14), GPUs: 1}}
		if rng.IntN(2) == 0 {
			w.Cliques = append(w.Cliques, Clique{Name: "s1", Pods: 1, MinAvailable: 1, RunFor: seconds(rng, 6, 12)})
		}
	}
	w.MaxRestarts = rng.Int32N(2)
	if change != TopologyUnresolved {
		untilReleased(w)
		w.Steps = []Step{{Kind: StepChangeTopology, Clique: target}, {Kind: StepSuspend, Clique: target},
			{Kind: StepResume, Hold: seconds(rng, 1, 2)}, {Kind: StepRelease}}
	}
}

// planLongName draws a workload whose name is the longest its kind and
// backend accept (VariantAtLimit) or one character longer
// (VariantOverLimit). A PodCliqueSet's cliques have one-character names,
// so that only a shorter PodCliqueSet name could help one that is too long.
func planLongName(rng *rand.Rand, w *Workload) error {
	var limit int
	if w.Kind == KindTrainJob {
		w.Cliques = []Clique{trainerNode(rng, 3, 8)}
		w.MaxRestarts = rng.Int32N(2)
		if w.Backend == jobSetBackend {
			limit = JobSetNameLimit(w.Cliques)
		} else {
			limit = PodCliqueSetNameLimit(1, w.Cliques)
		}
	} else {
		w.Replicas = 1 + rng.Int32N(2)
		gpu := 1 + rng.Int32N(2)
		w.Cliques = []Clique{{Name: "a", Pods: gpu, MinAvailable: gpu, RunFor: seconds(rng, 3, 8), GPUs: 1}}
		if rng.IntN(2) == 0 {
			w.Cliques = append(w.Cliques, Clique{Name: "b", Pods: 1, MinAvailable: 1, RunFor: seconds(rng, 3, 8)})
		}
		w.MaxRestarts = rng.Int32N(2)
		limit = PodCliqueSetNameLimit(int(w.Replicas), w.Cliques)
	}
	if limit < len(w.Name)+2 {
		return fmt.Errorf("no name fits: the limit is %d characters", limit)
	}
	length := limit
	if w.Variant == VariantOverLimit {
		length++
	}
	w.ObjectName = w.Name + "-" + strings.Repeat("x", length-len(w.Name)-1)
	return nil
}

// PodCliqueSetNameLimit is the longest name a PodCliqueSet of that many
// replicas and of these standalone cliques may have: the one whose longest
// pod hostname still fits in a DNS label (naming.NameBudget, the rule the
// PodCliqueSet webhook applies). A TrainJob on the PodCliqueSet backend is
// such a PodCliqueSet of one replica named after it, a clique per job.
func PodCliqueSetNameLimit(replicas int, cliques []Clique) int {
	budget := naming.NameBudget{MaxReplicas: replicas, Cliques: map[string]string{}}
	for _, c := range cliques {
		budget.Cliques[c.Name] = ""
	}
	for n := naming.MaxLabelLength; n > 0; n-- {
		budget.PodCliqueSet = strings.Repeat("x", n)
		if budget.Check() == nil {
			return n
		}
	}
	return 0
}

// jobSetPodSuffix is the random suffix of a pod name that the JobSet
// webhook counts in: "-" and 5 characters.
const jobSetPodSuffix = 6

// JobSetNameLimit is the longest name a TrainJob on the JobSet backend may
// have when its runtime has these jobs (one Job each, indexed, one pod per
// index): the JobSet webhook refuses a JobSet one of whose Jobs
// (<name>-<job>-0) or pods (<name>-<job>-0-<last index>-<5 characters>)
// would not have a DNS label as name.
func JobSetNameLimit(jobs []Clique) int {
	limit := naming.MaxLabelLength
	for _, j := range jobs {
		pod := len("-"+j.Name+"-0-"+strconv.Itoa(int(j.Pods)-1)) + jobSetPodSuffix
		limit = min(limit, naming.MaxLabelLength-pod)
	}
	return limit
}
