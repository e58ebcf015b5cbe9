// Package chaos is a seeded chaos harness for copse's workloads: it runs
// many Training PodCliqueSets and TrainJobs that mix copse's features
// (both TrainJob backends, Kueue admission with evictions and preemption,
// user suspend and resume, start order, success policies, children deleted
// from outside, ClusterTopologyBindings changed under running work, names
// at the length limit), each with an injected history whose end is known
// in advance (the oracle, ExpectedEnd), while the operator is SIGKILLed at
// planned moments; it checks the workloads' ends and the invariants of
// docs/training.md, among them that every workload ends (or says why)
// within a stated bound, that Kueue's quota is given back, and that no GPU
// pod stays bound to a workload that is not running. A seed fixes the
// workloads, their histories and the kill schedule (NewPlan), so a failing
// run can be replayed; the interleaving with real time can differ between
// runs.
package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	grovecorev1alpha1 "github.com/ai-dynamo/grove/operator/api/core/v1alpha1"

	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// Feature is the part of copse a workload exercises; the report has a row
// per feature.
type Feature string

const (
	// FeatureTraining: Training PodCliqueSets with the histories of
	// Scenario (restarts, the budget, maxRuntime, tolerated failures).
	FeatureTraining Feature = "training"
	// FeatureTrainJob: TrainJobs on the JobSet and the PodCliqueSet backend.
	FeatureTrainJob Feature = "trainjob"
	// FeatureKueue: workloads queued in Kueue, admitted, evicted (preempted
	// by a higher priority, or deactivated) and admitted again, or waiting
	// for quota that never comes.
	FeatureKueue Feature = "kueue"
	// FeatureSuspend: a user suspends a running workload and resumes it.
	FeatureSuspend Feature = "suspend"
	// FeatureStartOrder: cliques that start after predecessors which run to
	// exit 0 (InOrder, Explicit startsAfter, startsAfterSucceeded, a
	// TrainJob's dependsOn).
	FeatureStartOrder Feature = "start-order"
	// FeatureSuccessPolicy: a success policy met by several replicas while
	// their other pods still run.
	FeatureSuccessPolicy Feature = "success-policy"
	// FeatureDeletedChild: a child object deleted from outside (a PodClique
	// of a Training PodCliqueSet, a TrainJob's PodCliqueSet).
	FeatureDeletedChild Feature = "deleted-child"
	// FeatureTopology: the ClusterTopologyBinding a running workload packs
	// by is deleted, changed or joined by another, then the workload is
	// suspended and resumed.
	FeatureTopology Feature = "topology"
	// FeatureLongName: names at their kind's length limit, and one longer.
	FeatureLongName Feature = "long-name"
	// FeatureFailureRules: failure rules (trainingSpec.failurePolicy, a
	// TrainJob runtime's JobSet rules and pod failure policy) with
	// evictions (DisruptionTarget) that restart without counting, until
	// the uncounted restarts run out, and an exit code that fails at once.
	FeatureFailureRules Feature = "failure-rules"
)

// AllFeatures in the order of the report.
var AllFeatures = []Feature{FeatureTraining, FeatureTrainJob, FeatureKueue, FeatureSuspend, FeatureStartOrder,
	FeatureSuccessPolicy, FeatureDeletedChild, FeatureTopology, FeatureLongName, FeatureFailureRules}

// Kind is the object the user creates for a workload.
type Kind string

const (
	KindPodCliqueSet Kind = "PodCliqueSet"
	KindTrainJob     Kind = "TrainJob"
)

// Scenario is how the workload's pods exit, the core of its injected
// history.
type Scenario string

const (
	// ScenarioSucceed: every pod exits 0 (or, under a success policy, the
	// targets do and the others run until ended).
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

// TrainingScenarios are the scenarios of FeatureTraining; together they
// make the operator emit every GREP-0285 event reason.
var TrainingScenarios = []Scenario{ScenarioSucceed, ScenarioRestartThenSucceed, ScenarioBudgetExceeded,
	ScenarioRuntimeExceeded, ScenarioToleratedFailure}

// Variants of the features other than FeatureTraining (whose variant is its
// scenario) and FeatureTrainJob (likewise).
const (
	VariantAdmitted    = "admitted"    // Kueue: admitted, runs to its end
	VariantPreempted   = "preempted"   // Kueue: preempted by a higher priority while it runs
	VariantDeactivated = "deactivated" // Kueue: its Workload deactivated while it runs, then activated
	VariantNoQuota     = "no-quota"    // Kueue: asks for more than its queue's quota

	VariantSuspend              = "suspend"                // suspended while it runs, resumed
	VariantSuspendSuccessPolicy = "suspend-success-policy" // suspended with one replica done (policy met), one running

	VariantInOrder                = "InOrder"
	VariantExplicit               = "Explicit"
	VariantAfterSucceeded         = "startsAfterSucceeded"
	VariantExplicitAfterSucceeded = "Explicit+startsAfterSucceeded"
	VariantDependsOnReady         = "dependsOn-Ready"
	VariantDependsOnComplete      = "dependsOn-Complete"

	VariantPolicyAll = "All"
	VariantPolicyAny = "Any"

	VariantDeletePodClique = "delete-podclique"
	VariantDeleteBackend   = "delete-backend"

	VariantBindingDeleted = "binding-deleted"
	VariantBindingRenamed = "binding-rekeyed"
	VariantBindingAdded   = "binding-added"
	VariantUnresolved     = "level-unresolved"

	VariantAtLimit   = "at-limit"
	VariantOverLimit = "over-limit"

	VariantDisruption         = "disruption"          // rules: pods evicted, each an uncounted restart, then success
	VariantUncountedExhausted = "uncounted-exhausted" // rules: one eviction more than maxUncountedRestarts
	VariantBugExit            = "bug-exit"            // rules: the first run exits 42, which fails at once
)

// cell is one case a full plan covers: a feature, the kind (and backend)
// it runs as, and the feature's variant.
type cell struct {
	Feature Feature
	Kind    Kind
	Backend trainerv1alpha1.RuntimeBackend
	Variant string
}

const (
	jobSetBackend = trainerv1alpha1.RuntimeBackendJobSet
	pcsBackend    = trainerv1alpha1.RuntimeBackendPodCliqueSet
)

// allCells lists every case, feature by feature.
func allCells() []cell {
	var cells []cell
	pcs := func(f Feature, variants ...string) {
		for _, v := range variants {
			cells = append(cells, cell{Feature: f, Kind: KindPodCliqueSet, Variant: v})
		}
	}
	tj := func(f Feature, backend trainerv1alpha1.RuntimeBackend, variants ...string) {
		for _, v := range variants {
			cells = append(cells, cell{Feature: f, Kind: KindTrainJob, Backend: backend, Variant: v})
		}
	}
	for _, s := range TrainingScenarios {
		pcs(FeatureTraining, string(s))
	}
	for _, b := range []trainerv1alpha1.RuntimeBackend{jobSetBackend, pcsBackend} {
		tj(FeatureTrainJob, b, string(ScenarioSucceed), string(ScenarioRestartThenSucceed), string(ScenarioBudgetExceeded))
	}
	pcs(FeatureKueue, VariantAdmitted, VariantPreempted, VariantDeactivated, VariantNoQuota)
	for _, b := range []trainerv1alpha1.RuntimeBackend{jobSetBackend, pcsBackend} {
		tj(FeatureKueue, b, VariantPreempted, VariantDeactivated)
	}
	pcs(FeatureSuspend, VariantSuspend, VariantSuspendSuccessPolicy)
	tj(FeatureSuspend, jobSetBackend, VariantSuspend)
	tj(FeatureSuspend, pcsBackend, VariantSuspend)
	pcs(FeatureStartOrder, VariantInOrder, VariantExplicit, VariantAfterSucceeded, VariantExplicitAfterSucceeded)
	for _, b := range []trainerv1alpha1.RuntimeBackend{jobSetBackend, pcsBackend} {
		tj(FeatureStartOrder, b, VariantDependsOnReady, VariantDependsOnComplete)
	}
	pcs(FeatureSuccessPolicy, VariantPolicyAll, VariantPolicyAny)
	pcs(FeatureDeletedChild, VariantDeletePodClique)
	tj(FeatureDeletedChild, pcsBackend, VariantDeleteBackend)
	pcs(FeatureTopology, VariantBindingDeleted, VariantBindingRenamed)
	tj(FeatureTopology, pcsBackend, VariantBindingDeleted, VariantBindingRenamed, VariantBindingAdded, VariantUnresolved)
	pcs(FeatureLongName, VariantAtLimit, VariantOverLimit)
	for _, b := range []trainerv1alpha1.RuntimeBackend{jobSetBackend, pcsBackend} {
		tj(FeatureLongName, b, VariantAtLimit, VariantOverLimit)
	}
	pcs(FeatureFailureRules, VariantDisruption, VariantUncountedExhausted, VariantBugExit)
	for _, b := range []trainerv1alpha1.RuntimeBackend{jobSetBackend, pcsBackend} {
		tj(FeatureFailureRules, b, VariantDisruption, VariantBugExit)
	}
	return cells
}

// Trigger is the moment a planned kill aims at.
type Trigger string

const (
	// TriggerUniform: Kill.Delay after the workload was created.
	TriggerUniform Trigger = "uniform"
	// TriggerRestart: a replica restart of the workload's PodCliqueSet is
	// in progress (a ReplicaRestarting event, or a recreation not yet
	// completed).
	TriggerRestart Trigger = "restart"
	// TriggerTerminating: the workload's PodCliqueSet failed and its pods
	// are being terminated (Failed condition True, phase not yet Failed).
	TriggerTerminating Trigger = "terminating"
	// TriggerExit0: a pod of the workload exited 0 while it still runs.
	TriggerExit0 Trigger = "exit0"
	// TriggerAction: the harness acted on the workload (suspended or
	// resumed it, deleted a child, changed its ClusterTopologyBinding,
	// evicted it, made a pod exit).
	TriggerAction Trigger = "action"
)

var triggerOrder = []Trigger{TriggerRestart, TriggerAction, TriggerTerminating, TriggerExit0, TriggerAction, TriggerUniform}

// Limits of the generated shapes. 16 default kwok nodes hold 110 pods and
// 4 GPUs each, so pod count is bound by CPU (2 cores) and GPU pods by the
// fleet's 64 GPUs.
const (
	// MinWorkloads is the fewest workloads a plan has.
	MinWorkloads = 1
	// maxPodsPerWorkload caps a Training workload's pods (over all
	// replicas) before a tolerated-failure clique is widened to at least 2
	// pods.
	maxPodsPerWorkload = 24
	// generousMaxRuntime is set on some workloads that must not hit it.
	generousMaxRuntime = 15 * time.Minute
)

// Clique is one clique template of a PodCliqueSet, or one replicated job
// of a TrainJob's runtime (its pod count is the job's).
type Clique struct {
	Name         string
	Pods         int32
	MinAvailable int32
	// RunFor is how long each run of a pod lasts before it exits; 0 runs
	// until the pod is deleted (or until the harness makes it exit).
	RunFor time.Duration
	// FailedRuns: the pods of the clique's first FailedRuns runs (attempts
	// 0 .. FailedRuns-1 of their replica) exit 1 (FailExitCode when set),
	// later runs exit 0.
	FailedRuns   int
	FailExitCode int32
	// Grouped: the clique belongs to the workload's scaling group.
	Grouped bool
	// GPUs each pod asks for.
	GPUs int64
	// StartsAfter are the cliques it starts after (Explicit start order).
	StartsAfter []string
	// AfterSucceeded are the cliques whose success its pods wait for
	// (trainingSpec.startsAfterSucceeded).
	AfterSucceeded []string
	// DependsOn is a TrainJob job's dependency on the initializer: "",
	// "Ready" or "Complete" (JobSet's dependsOn status).
	DependsOn string
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

// SuccessPolicy is a Training workload's trainingSpec.successPolicy.
type SuccessPolicy struct {
	Operator string
	Targets  []string
}

// Eviction is how Kueue evicts a queued workload while it runs.
type Eviction string

const (
	EvictionNone        Eviction = ""
	EvictionPreempted   Eviction = "preempted"
	EvictionDeactivated Eviction = "deactivated"
)

// Queue is a queued workload's Kueue setup: a ClusterQueue of its own with
// GPUQuota GPUs, and how it is evicted. A preemption comes from a
// higher-priority PodCliqueSet of one pod that asks for the whole quota.
type Queue struct {
	GPUQuota int64
	Eviction Eviction
}

// TopologyChange is what happens to the ClusterTopologyBinding a workload
// packs by while it runs.
type TopologyChange string

const (
	// TopologyDeleted: the binding is deleted.
	TopologyDeleted TopologyChange = "deleted"
	// TopologyRekeyed: the binding's level gets another node label key
	// (which the nodes carry too).
	TopologyRekeyed TopologyChange = "rekeyed"
	// TopologyAdded: another binding, first by name, gets a level of the
	// same key.
	TopologyAdded TopologyChange = "added"
	// TopologyUnresolved: no binding ever has the TrainJob's level.
	TopologyUnresolved TopologyChange = "unresolved"
)

// Topology is a workload packed at a rack level of a binding of its own,
// keyed by a node label of its own (so that changing it concerns no other
// workload).
type Topology struct {
	Change TopologyChange
}

// StepKind is an action the harness takes on a workload.
type StepKind string

const (
	// StepSuspend sets the workload's spec.suspend.
	StepSuspend StepKind = "suspend"
	// StepResume clears it once no pod of the workload holds a node.
	StepResume StepKind = "resume"
	// StepExit makes the target's running pods exit 0.
	StepExit StepKind = "exit"
	// StepDeletePodClique deletes the target PodClique.
	StepDeletePodClique StepKind = "delete-podclique"
	// StepDeleteBackend deletes a TrainJob's PodCliqueSet.
	StepDeleteBackend StepKind = "delete-backend"
	// StepChangeTopology changes the workload's ClusterTopologyBinding
	// (Topology.Change).
	StepChangeTopology StepKind = "change-topology"
	// StepPreempt submits the higher-priority preemptor.
	StepPreempt StepKind = "preempt"
	// StepDeactivate sets the Kueue Workload's spec.active to false.
	StepDeactivate StepKind = "deactivate"
	// StepReactivate sets it to true again once no pod of the workload
	// holds a node.
	StepReactivate StepKind = "reactivate"
	// StepEvict evicts one running pod of the target through the Eviction
	// API (DisruptionTarget, as a node drain does).
	StepEvict StepKind = "evict"
	// StepRelease makes, from then on, every running pod of the workload
	// that the previous step did not act on exit 0 (every pod but a
	// deleted PodClique's, and those the workload's suspension, eviction or
	// deletion ended): the pods of a workload acted on run until then, so
	// that it cannot end before the harness acted.
	StepRelease StepKind = "release"
)

// Step is one action of a workload's history. The steps run in order: a
// step waits for its moment (the target's pods all running, for a step
// with a target, only those the previous step did not act on for StepExit;
// no pod holding a node, for StepResume and StepReactivate), acts, and
// the next waits until this one is done (for StepExit: the target's pods
// exited 0).
type Step struct {
	Kind StepKind
	// Replica and Clique name the target: the pods of that clique (a
	// TrainJob's replicated job) in that replica. Clique "" has no target.
	Replica int32
	Clique  string
	// Hold is how long a resume waits once the suspension removed every
	// pod.
	Hold time.Duration
}

func (s Step) String() string {
	switch {
	case s.Clique != "":
		return fmt.Sprintf("%s(r%d/%s)", s.Kind, s.Replica, s.Clique)
	case s.Hold > 0:
		return fmt.Sprintf("%s(+%s)", s.Kind, s.Hold)
	}
	return string(s.Kind)
}

// Workload is one planned workload, its injected history and its expected
// end.
type Workload struct {
	Index    int
	Name     string
	Feature  Feature
	Kind     Kind
	Backend  trainerv1alpha1.RuntimeBackend // TrainJobs only
	Variant  string
	Scenario Scenario
	// ObjectName is the name of the PodCliqueSet or TrainJob.
	ObjectName string
	// Replicas of a PodCliqueSet (a TrainJob's PodCliqueSet has one).
	Replicas int32
	Cliques  []Clique
	Group    *Group
	// StartupType is the PodCliqueSet's cliqueStartupType ("" for the
	// default, AnyOrder).
	StartupType        grovecorev1alpha1.CliqueStartupType
	SuccessPolicy      *SuccessPolicy
	MaxRestarts        int32
	MaxRuntime         time.Duration
	GracePeriodSeconds int64
	// FailureRules: the workload has the recommended failure rules (an
	// eviction restarts without counting, within MaxUncounted; exit 42
	// fails at once).
	FailureRules bool
	MaxUncounted int32
	// RestartInPlace: a PodCliqueSet with trainingSpec.restartStrategy
	// InPlace; its restarts keep the pods they can.
	RestartInPlace bool
	// OldRunsEndFirst (RestartInPlace): a kept pod's old process ends on
	// its own (at the end of its run, with its new attempt's exit code)
	// before the kubelet restarts it, as a rank's old process crashes once
	// its peer is gone; that outcome is the previous attempt's and counts
	// for nothing.
	OldRunsEndFirst bool
	Victim          *Victim
	Queue           *Queue
	Topology        *Topology
	Steps           []Step
	Expected        End
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
// workloads cover every cell (feature, kind and variant) in an order the
// seed chooses, one feature after another, so that a small run still
// spans the features; later ones are drawn at random. Workload i depends
// only on the seed and i, so a smaller run of the same seed is a prefix of
// a larger one.
func NewPlan(seed int64, workloads, kills int) (Plan, error) {
	if workloads < MinWorkloads {
		return Plan{}, fmt.Errorf("plan: %d workloads: at least %d is needed", workloads, MinWorkloads)
	}
	if kills < 0 {
		return Plan{}, fmt.Errorf("plan: %d kills: must not be negative", kills)
	}
	p := Plan{Seed: seed}
	order := coverageOrder(rand.New(rand.NewPCG(uint64(seed), 0)))
	for i := range workloads {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)+1))
		c := randomCell(rng)
		if i < len(order) {
			c = order[i]
		}
		w, err := newWorkload(rng, i, c)
		if err != nil {
			return Plan{}, err
		}
		p.Workloads = append(p.Workloads, w)
	}
	p.Kills = planKills(rand.New(rand.NewPCG(uint64(seed), 1<<40)), p.Workloads, kills)
	return p, nil
}

// coverageOrder is every cell once: the features in a shuffled order,
// taken round-robin, each feature's cells shuffled, so that the first
// len(AllFeatures) cells are one of each feature.
func coverageOrder(rng *rand.Rand) []cell {
	byFeature := map[Feature][]cell{}
	for _, c := range allCells() {
		byFeature[c.Feature] = append(byFeature[c.Feature], c)
	}
	features := append([]Feature(nil), AllFeatures...)
	rng.Shuffle(len(features), func(i, j int) { features[i], features[j] = features[j], features[i] })
	for _, f := range features {
		cs := byFeature[f]
		rng.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	}
	var order []cell
	for len(order) < len(allCells()) {
		for _, f := range features {
			if cs := byFeature[f]; len(cs) > 0 {
				order = append(order, cs[0])
				byFeature[f] = cs[1:]
			}
		}
	}
	return order
}

// randomCell draws a cell for a workload past the coverage: Training
// workloads weigh as much as all other features together, as most
// scheduling and restart paths are theirs.
func randomCell(rng *rand.Rand) cell {
	cells := allCells()
	if rng.IntN(2) == 0 {
		weighted := []Scenario{ScenarioSucceed, ScenarioRestartThenSucceed, ScenarioRestartThenSucceed,
			ScenarioBudgetExceeded, ScenarioRuntimeExceeded, ScenarioToleratedFailure}
		return cell{Feature: FeatureTraining, Kind: KindPodCliqueSet, Variant: string(weighted[rng.IntN(len(weighted))])}
	}
	for {
		c := cells[rng.IntN(len(cells))]
		if c.Feature != FeatureTraining {
			return c
		}
	}
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
				if w.Aims(trigger) {
					eligible = append(eligible, w.Index)
				}
			}
		}
		if len(eligible) == 0 {
			// Every workload is refused at admission: a kill still comes.
			eligible = []int{workloads[rng.IntN(len(workloads))].Index}
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
	if w.Expected.State == StateRefused {
		return false
	}
	switch trigger {
	case TriggerRestart:
		return w.hasPodCliqueSet() && w.Expected.RestartCount > 0
	case TriggerTerminating:
		return w.hasPodCliqueSet() && w.Expected.Failed() && w.runsPastFailure()
	case TriggerExit0:
		return w.Expected.Succeeded()
	case TriggerAction:
		return len(w.Steps) > 0
	}
	return true
}

// hasPodCliqueSet: the workload runs as a PodCliqueSet copse controls
// (its own, or a TrainJob's on the PodCliqueSet backend).
func (w Workload) hasPodCliqueSet() bool {
	return w.Kind == KindPodCliqueSet || w.Backend == pcsBackend
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
	out := make([]int, max(w.Replicas, 1))
	for r := range out {
		out[r] = f
	}
	return out
}

// OutlivesMaxRuntime reports whether a clique runs past maxRuntime.
func (w Workload) OutlivesMaxRuntime() bool {
	if w.MaxRuntime == 0 || w.Victim != nil || w.SuccessPolicy != nil {
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
	return perReplica * int(max(w.Replicas, 1))
}

// GPUDemand is how many GPUs all pods of a run of the workload ask for.
func (w Workload) GPUDemand() int64 {
	var perReplica int64
	for _, c := range w.Cliques {
		n := int64(c.Pods)
		if c.Grouped {
			n *= int64(w.Group.Replicas)
		}
		perReplica += n * c.GPUs
	}
	return perReplica * int64(max(w.Replicas, 1))
}

// Suspensions counts the suspensions and evictions the history has.
func (w Workload) Suspensions() int {
	n := 0
	for _, s := range w.Steps {
		if s.Kind == StepSuspend || s.Kind == StepPreempt || s.Kind == StepDeactivate {
			n++
		}
	}
	return n
}

// Shape describes the workload's structure in one line, e.g.
// "R2 s0:3g s1:4/2 grp×2/1[g0:2] m1 rt8s": 2 replicas; clique s0 of 3 GPU
// pods, s1 of 4 pods with minAvailable 2; scaling group grp of 2 replicas
// with minAvailable 1 holding clique g0 of 2 pods; maxRestarts 1;
// maxRuntime 8s. A TrainJob shows its backend and jobs.
func (w Workload) Shape() string {
	var b strings.Builder
	if w.Kind == KindTrainJob {
		fmt.Fprintf(&b, "TJ/%s", w.Backend)
	} else {
		fmt.Fprintf(&b, "R%d", w.Replicas)
	}
	clique := func(c Clique) string {
		s := fmt.Sprintf("%s:%d", c.Name, c.Pods)
		if c.MinAvailable != c.Pods && w.Kind == KindPodCliqueSet {
			s += fmt.Sprintf("/%d", c.MinAvailable)
		}
		if c.GPUs > 0 {
			s += "g"
		}
		return s
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
	if w.FailureRules {
		fmt.Fprintf(&b, " rules/u%d", w.MaxUncounted)
	}
	if len(w.ObjectName) > 20 {
		fmt.Fprintf(&b, " name%d", len(w.ObjectName))
	}
	return b.String()
}

// History describes the injected history in one line.
func (w Workload) History() string {
	var parts []string
	switch {
	case w.FailureRules:
		parts = append(parts, fmt.Sprintf("rules, maxUncountedRestarts %d", w.MaxUncounted))
		for _, c := range w.Cliques {
			if c.FailedRuns > 0 {
				parts = append(parts, fmt.Sprintf("%s fails %d run(s) (codes %s)", c.Name, c.FailedRuns, c.ExitCodesByAttempt()))
			}
		}
	case w.Scenario == ScenarioRestartThenSucceed, w.Scenario == ScenarioBudgetExceeded:
		for _, c := range w.Cliques {
			if c.FailedRuns > 0 {
				parts = append(parts, fmt.Sprintf("%s fails %d run(s) after %s (codes %s)", c.Name, c.FailedRuns, c.RunFor, c.ExitCodesByAttempt()))
			}
		}
	case w.Scenario == ScenarioRuntimeExceeded:
		for _, c := range w.Cliques {
			if c.RunFor == 0 {
				parts = append(parts, c.Name+" runs until deleted")
				break
			}
		}
	case w.Scenario == ScenarioToleratedFailure:
		parts = append(parts, fmt.Sprintf("%s pod %d fails once, tolerated; all exit 0 once it is replaced", w.Victim.Clique, w.Victim.Index))
	default:
		parts = append(parts, "all exit 0")
	}
	if w.StartupType != "" {
		parts = append(parts, strings.TrimPrefix(string(w.StartupType), "CliqueStartupType"))
	}
	if w.RestartInPlace {
		parts = append(parts, "restarts in place")
	}
	if w.OldRunsEndFirst {
		parts = append(parts, "old runs end before their restart")
	}
	for _, c := range w.Cliques {
		if len(c.AfterSucceeded) > 0 {
			parts = append(parts, fmt.Sprintf("%s after %s succeeded", c.Name, strings.Join(c.AfterSucceeded, ",")))
		}
		if c.DependsOn != "" {
			parts = append(parts, fmt.Sprintf("%s dependsOn %s", c.Name, c.DependsOn))
		}
	}
	if w.SuccessPolicy != nil {
		parts = append(parts, fmt.Sprintf("policy %s%v", w.SuccessPolicy.Operator, w.SuccessPolicy.Targets))
	}
	if w.Queue != nil {
		parts = append(parts, fmt.Sprintf("queue %d GPUs", w.Queue.GPUQuota))
	}
	if w.Topology != nil {
		parts = append(parts, "binding "+string(w.Topology.Change))
	}
	if w.Expected.State == StateRefused {
		parts = append(parts, fmt.Sprintf("name of %d chars", len(w.ObjectName)))
	}
	for _, s := range w.Steps {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "; ")
}

// ExitCodesByAttempt is the value of the simulated runtime's
// exit-codes-by-attempt annotation for the clique ("1,1,0"), or "" when
// every run exits 0.
func (c Clique) ExitCodesByAttempt() string {
	if c.FailedRuns == 0 {
		return ""
	}
	code := c.FailExitCode
	if code == 0 {
		code = 1
	}
	return strings.Repeat(fmt.Sprintf("%d,", code), c.FailedRuns) + "0"
}
