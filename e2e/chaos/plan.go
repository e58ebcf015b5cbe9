// Package chaos is a seeded chaos harness for Training workloads: it runs
// many PodCliqueSets of mixed shapes, each with an injected history whose
// end is known in advance (the oracle, ExpectedEnd), while the operator is
// SIGKILLed at planned moments, and checks the workloads' ends and the
// invariants of docs/training.md. A seed fixes the shapes, the histories
// and the kill schedule (NewPlan), so a failing run can be replayed; the
// interleaving with real time can differ between runs.
package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Scenario is the history injected into a workload; it fixes the end.
type Scenario string

const (
	// ScenarioSucceed: every pod exits 0.
	ScenarioSucceed Scenario = "succeed"
	// ScenarioRestartThenSucceed: one clique fails its first runs, within
	// the budget, and then exits 0.
	ScenarioRestartThenSucceed Scenario = "restart-succeed"
	// ScenarioBudgetExceeded: one clique fails more runs than the budget
	// covers.
	ScenarioBudgetExceeded Scenario = "budget-exceeded"
	// ScenarioRuntimeExceeded: a clique runs until deleted, past maxRuntime.
	ScenarioRuntimeExceeded Scenario = "runtime-exceeded"
	// ScenarioToleratedFailure: every pod runs until told to exit; one pod
	// of a clique with minAvailable below its replicas is failed by hand
	// while the others run; once its replacement runs, every pod is told to
	// exit 0.
	ScenarioToleratedFailure Scenario = "tolerated-failure"
)

// AllScenarios are every scenario; together they make the operator emit
// every GREP-0285 event reason.
var AllScenarios = []Scenario{ScenarioSucceed, ScenarioRestartThenSucceed, ScenarioBudgetExceeded,
	ScenarioRuntimeExceeded, ScenarioToleratedFailure}

// Trigger is the moment a planned kill aims at.
type Trigger string

const (
	// TriggerUniform: Kill.Delay after the workload was created.
	TriggerUniform Trigger = "uniform"
	// TriggerRestart: a replica restart of the workload is in progress (a
	// ReplicaRestarting event, or a recreation not yet completed).
	TriggerRestart Trigger = "restart"
	// TriggerTerminating: the workload failed and its pods are being
	// terminated (Failed condition True, phase not yet Failed).
	TriggerTerminating Trigger = "terminating"
	// TriggerExit0: a pod of the workload exited 0 while it still runs.
	TriggerExit0 Trigger = "exit0"
)

var triggerOrder = []Trigger{TriggerRestart, TriggerTerminating, TriggerExit0, TriggerUniform}

// Limits of the generated shapes. 16 default kwok nodes hold 110 pods
// each, so pod count is bound by CPU (2 cores), not by capacity.
const (
	// MinWorkloads is the fewest workloads a plan has: one per scenario,
	// so that every event reason is produced.
	MinWorkloads = 5
	// maxPodsPerWorkload caps a workload's pods (over all replicas) before
	// a tolerated-failure clique is widened to at least 2 pods.
	maxPodsPerWorkload = 24
	// generousMaxRuntime is set on some workloads that must not hit it.
	generousMaxRuntime = 15 * time.Minute
)

// Clique is one clique template of a workload.
type Clique struct {
	Name         string
	Pods         int32
	MinAvailable int32
	// RunFor is how long each run of a pod lasts before it exits; 0 runs
	// until the pod is deleted (or, in a tolerated-failure workload, until
	// the harness makes it exit).
	RunFor time.Duration
	// FailedRuns: the pods of the clique's first FailedRuns runs (attempts
	// 0 .. FailedRuns-1 of their replica) exit 1, later runs exit 0.
	FailedRuns int
	// Grouped: the clique belongs to the workload's scaling group.
	Grouped bool
}

// Group is a workload's PodCliqueScalingGroup.
type Group struct {
	Name         string
	Replicas     int32
	MinAvailable int32
}

// Victim is the pod a tolerated-failure workload fails by hand: index
// Index of clique Clique in replica 0 (group replica 0 when grouped).
type Victim struct {
	Clique string
	Index  int32
}

// Workload is one planned Training PodCliqueSet and its expected end.
type Workload struct {
	Index              int
	Name               string
	Scenario           Scenario
	Replicas           int32
	Cliques            []Clique
	Group              *Group
	MaxRestarts        int32
	MaxRuntime         time.Duration
	GracePeriodSeconds int64
	Victim             *Victim
	Expected           End
}

// Kill is one planned SIGKILL of the operator.
type Kill struct {
	Index    int
	Trigger  Trigger
	Workload int
	// Delay is how long after the trigger the kill comes (for
	// TriggerUniform: after the workload's creation).
	Delay time.Duration
	// Down is how long the operator stays down.
	Down time.Duration
}

// Plan is everything a seed fixes.
type Plan struct {
	Seed      int64
	Workloads []Workload
	Kills     []Kill
}

// NewPlan derives the workloads and kills of a run from seed. The first
// MinWorkloads workloads cover every scenario, in an order the seed
// chooses. Workload i depends only on the seed and i, so a smaller run of
// the same seed is a prefix of a larger one.
func NewPlan(seed int64, workloads, kills int) (Plan, error) {
	if workloads < MinWorkloads {
		return Plan{}, fmt.Errorf("plan: %d workloads: at least %d are needed, one per scenario, so that every event reason is produced",
			workloads, MinWorkloads)
	}
	if kills < 0 {
		return Plan{}, fmt.Errorf("plan: %d kills: must not be negative", kills)
	}
	p := Plan{Seed: seed}
	scenarioRNG := rand.New(rand.NewPCG(uint64(seed), 0))
	forced := append([]Scenario(nil), AllScenarios...)
	scenarioRNG.Shuffle(len(forced), func(i, j int) { forced[i], forced[j] = forced[j], forced[i] })
	weighted := []Scenario{ScenarioSucceed, ScenarioSucceed, ScenarioRestartThenSucceed, ScenarioRestartThenSucceed,
		ScenarioRestartThenSucceed, ScenarioBudgetExceeded, ScenarioBudgetExceeded, ScenarioRuntimeExceeded,
		ScenarioToleratedFailure, ScenarioToleratedFailure}
	for i := range workloads {
		s := weighted[scenarioRNG.IntN(len(weighted))]
		if i < len(forced) {
			s = forced[i]
		}
		w, err := newWorkload(rand.New(rand.NewPCG(uint64(seed), uint64(i)+1)), i, s)
		if err != nil {
			return Plan{}, err
		}
		p.Workloads = append(p.Workloads, w)
	}
	p.Kills = planKills(rand.New(rand.NewPCG(uint64(seed), 1<<40)), p.Workloads, kills)
	return p, nil
}

func newWorkload(rng *rand.Rand, index int, s Scenario) (Workload, error) {
	w := Workload{Index: index, Name: fmt.Sprintf("w%02d", index), Scenario: s, GracePeriodSeconds: 1 + rng.Int64N(3)}
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

	var err error
	w.Expected, err = ExpectedEnd(w.FailuresPerReplica(), w.MaxRestarts, w.OutlivesMaxRuntime())
	if err != nil {
		return Workload{}, fmt.Errorf("plan workload %s: %w", w.Name, err)
	}
	return w, nil
}

// seconds is a whole number of seconds in [lo, hi].
func seconds(rng *rand.Rand, lo, hi int) time.Duration {
	return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Second
}

func planKills(rng *rand.Rand, workloads []Workload, n int) []Kill {
	offset := rng.IntN(len(triggerOrder))
	var kills []Kill
	for k := range n {
		trigger := triggerOrder[(k+offset)%len(triggerOrder)]
		var eligible []int
		for _, w := range workloads {
			if w.Aims(trigger) {
				eligible = append(eligible, w.Index)
			}
		}
		if len(eligible) == 0 {
			trigger = TriggerUniform
			for _, w := range workloads {
				eligible = append(eligible, w.Index)
			}
		}
		kill := Kill{Index: k, Trigger: trigger, Workload: eligible[rng.IntN(len(eligible))]}
		if trigger == TriggerUniform {
			kill.Delay = time.Duration(rng.IntN(201)) * 100 * time.Millisecond
		} else {
			kill.Delay = time.Duration(rng.IntN(11)) * 100 * time.Millisecond
		}
		kill.Down = time.Duration(rng.IntN(31)) * 100 * time.Millisecond
		kills = append(kills, kill)
	}
	return kills
}

// Aims reports whether the workload's history passes the moment trigger
// aims at.
func (w Workload) Aims(trigger Trigger) bool {
	switch trigger {
	case TriggerRestart:
		return w.Expected.RestartCount > 0
	case TriggerTerminating:
		return w.Expected.Phase == "Failed" && w.runsPastFailure()
	case TriggerExit0:
		return w.Expected.Phase == "Succeeded"
	}
	return true
}

// terminationWindow is how much longer than the failing clique another
// clique must run for its pods to be still running, and to be terminated,
// when the workload fails.
const terminationWindow = 2 * time.Second

// runsPastFailure reports whether some pods still run when the workload
// fails, so that it has a moment when its pods are being terminated.
func (w Workload) runsPastFailure() bool {
	var failingFor time.Duration
	for _, c := range w.Cliques {
		if c.FailedRuns > 0 {
			failingFor = c.RunFor
		}
	}
	for _, c := range w.Cliques {
		if c.RunFor == 0 || (failingFor > 0 && c.RunFor >= failingFor+terminationWindow) {
			return true
		}
	}
	return false
}

// FailuresPerReplica is, per replica, how many runs fail before one
// succeeds. The clique templates are shared by every replica, so each
// replica fails as often as the most failing clique.
func (w Workload) FailuresPerReplica() []int {
	f := 0
	for _, c := range w.Cliques {
		f = max(f, c.FailedRuns)
	}
	out := make([]int, w.Replicas)
	for r := range out {
		out[r] = f
	}
	return out
}

// OutlivesMaxRuntime reports whether a clique runs past maxRuntime.
func (w Workload) OutlivesMaxRuntime() bool {
	if w.MaxRuntime == 0 || w.Victim != nil {
		return false
	}
	for _, c := range w.Cliques {
		if c.RunFor == 0 || c.RunFor >= w.MaxRuntime {
			return true
		}
	}
	return false
}

// Clique returns the clique named name.
func (w Workload) Clique(name string) (Clique, error) {
	for _, c := range w.Cliques {
		if c.Name == name {
			return c, nil
		}
	}
	return Clique{}, errors.New("workload " + w.Name + " has no clique " + name)
}

func (w Workload) totalPods() int {
	perReplica := 0
	for _, c := range w.Cliques {
		n := int(c.Pods)
		if c.Grouped {
			n *= int(w.Group.Replicas)
		}
		perReplica += n
	}
	return perReplica * int(w.Replicas)
}

// Shape describes the workload's structure in one line, e.g.
// "R2 s0:3 s1:4/2 grp×2/1[g0:2] m1 rt8s": 2 replicas; clique s0 of 3 pods,
// s1 of 4 pods with minAvailable 2; scaling group grp of 2 replicas with
// minAvailable 1 holding clique g0 of 2 pods; maxRestarts 1; maxRuntime 8s.
func (w Workload) Shape() string {
	var b strings.Builder
	fmt.Fprintf(&b, "R%d", w.Replicas)
	clique := func(c Clique) string {
		if c.MinAvailable == c.Pods {
			return fmt.Sprintf("%s:%d", c.Name, c.Pods)
		}
		return fmt.Sprintf("%s:%d/%d", c.Name, c.Pods, c.MinAvailable)
	}
	var grouped []string
	for _, c := range w.Cliques {
		if c.Grouped {
			grouped = append(grouped, clique(c))
		} else {
			b.WriteString(" " + clique(c))
		}
	}
	if w.Group != nil {
		fmt.Fprintf(&b, " %s×%d/%d[%s]", w.Group.Name, w.Group.Replicas, w.Group.MinAvailable, strings.Join(grouped, " "))
	}
	fmt.Fprintf(&b, " m%d", w.MaxRestarts)
	if w.MaxRuntime > 0 {
		fmt.Fprintf(&b, " rt%s", w.MaxRuntime)
	}
	return b.String()
}

// History describes the injected history in one line.
func (w Workload) History() string {
	switch w.Scenario {
	case ScenarioRestartThenSucceed, ScenarioBudgetExceeded:
		for _, c := range w.Cliques {
			if c.FailedRuns > 0 {
				return fmt.Sprintf("%s fails %d run(s) after %s (codes %s)", c.Name, c.FailedRuns, c.RunFor, c.ExitCodesByAttempt())
			}
		}
	case ScenarioRuntimeExceeded:
		for _, c := range w.Cliques {
			if c.RunFor == 0 {
				return c.Name + " runs until deleted"
			}
		}
	case ScenarioToleratedFailure:
		return fmt.Sprintf("%s pod %d fails once, tolerated; all exit 0 once it is replaced", w.Victim.Clique, w.Victim.Index)
	}
	return "all exit 0"
}

// ExitCodesByAttempt is the value of the simulated runtime's
// exit-codes-by-attempt annotation for the clique ("1,1,0"), or "" when
// every run exits 0.
func (c Clique) ExitCodesByAttempt() string {
	if c.FailedRuns == 0 {
		return ""
	}
	return strings.Repeat("1,", c.FailedRuns) + "0"
}
