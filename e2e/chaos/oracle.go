package chaos

import (
	"errors"
	"fmt"
	"slices"

	jobsetconstants "sigs.k8s.io/jobset/pkg/constants"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	trainerv1alpha1 "github.com/copse-dev/copse/api/trainer/v1alpha1"
)

// States of an End: a PodCliqueSet's terminal phase, a TrainJob's terminal
// condition, or an end before either.
const (
	// StateSucceeded and StateFailed are a PodCliqueSet's terminal phases;
	// StateFailed is also a TrainJob's Failed condition.
	StateSucceeded = string(copsev1alpha1.PodCliqueSetPhaseSucceeded)
	StateFailed    = string(copsev1alpha1.PodCliqueSetPhaseFailed)
	// StateComplete is a TrainJob's Complete condition.
	StateComplete = trainerv1alpha1.TrainJobComplete
	// StateRefused: the API server refused to create the object; the
	// reason is the field its refusal named.
	StateRefused = "Refused"
	// StateBlocked: the workload cannot progress and a condition says so;
	// the reason is that condition's.
	StateBlocked = "Blocked"
	// StateAccepted (observed only): the API server created an object the
	// oracle says it refuses.
	StateAccepted = "Accepted"
)

// Reasons the oracle gives beyond the PodCliqueSet's own.
const (
	// ReasonAllJobsCompleted and ReasonReachedMaxRestarts are a TrainJob's
	// (JobSet's reasons, which both backends use).
	ReasonAllJobsCompleted   = jobsetconstants.AllJobsCompletedReason
	ReasonReachedMaxRestarts = jobsetconstants.ReachedMaxRestartsReason
	// ReasonBackendDeleted: a TrainJob whose PodCliqueSet was deleted from
	// outside fails (issue 24, item 8).
	ReasonBackendDeleted = "BackendDeleted"
	// FieldName is the field a refusal of a name too long names.
	FieldName = "metadata.name"
)

// End is how a workload ends: its State, the reason of its terminal
// condition ("" when a PodCliqueSet succeeded) and how many restarts it
// spent (a PodCliqueSet's status.restartCount; for a TrainJob its
// backend's: the PodCliqueSet's restartCount or the JobSet's
// status.restarts).
type End struct {
	State        string
	Reason       string
	RestartCount int32
	// Uncounted is the part of RestartCount made by failure rules without
	// spending maxRestarts.
	Uncounted int32
}

func (e End) String() string {
	switch {
	case e.State == StateRefused || e.State == StateBlocked || e.State == StateAccepted:
		return fmt.Sprintf("%s(%s)", e.State, e.Reason)
	case e.Reason == "":
		return fmt.Sprintf("%s/%d%s", e.State, e.RestartCount, e.uncountedNote())
	}
	return fmt.Sprintf("%s(%s)/%d%s", e.State, e.Reason, e.RestartCount, e.uncountedNote())
}

// admits reports whether observed is the end expected describes. A
// PodCliqueSet that runs out of its budget counts only the restarts it
// made: breaches judged in the pass that fails it restart nothing, so how
// many of the expected restarts were made before it depends on which
// breaches one pass saw together; it counts at most the expected ones.
func (e End) admits(observed End) bool {
	if e.State != StateFailed || (e.Reason != copsev1alpha1.ReasonMaxRestartsExceeded && e.Reason != copsev1alpha1.ReasonMaxUncountedRestartsExceeded) {
		return observed == e
	}
	return observed.State == e.State && observed.Reason == e.Reason &&
		observed.RestartCount <= e.RestartCount && observed.Uncounted <= e.Uncounted
}

func (e End) uncountedNote() string {
	if e.Uncounted == 0 {
		return ""
	}
	return fmt.Sprintf("(%d uncounted)", e.Uncounted)
}

// Succeeded: the workload ran to success.
func (e End) Succeeded() bool { return e.State == StateSucceeded || e.State == StateComplete }

// Failed: the workload failed.
func (e End) Failed() bool { return e.State == StateFailed }

// Injected is a workload's injected history as plain facts: what the
// oracle needs to know to give its end.
type Injected struct {
	Kind     Kind
	Replicas int32
	// FailedRuns: every replica's first FailedRuns runs fail (the pods'
	// exit codes by attempt), then its runs exit 0.
	FailedRuns  int
	MaxRestarts int32
	// OutlivesMaxRuntime: a pod runs past maxRuntime.
	OutlivesMaxRuntime bool
	// DeletedPodCliques has, per PodClique deleted from outside while its
	// pods ran, its replica.
	DeletedPodCliques []int32
	// BackendDeleted: a TrainJob's PodCliqueSet is deleted from outside
	// while its first run runs.
	BackendDeleted bool
	// Suspensions: user suspensions and Kueue evictions.
	Suspensions int
	// NameOverLimit: the object's name is longer than its kind (and
	// backend) accepts.
	NameOverLimit bool
	// QuotaShort: queued in a ClusterQueue whose quota is smaller than the
	// workload.
	QuotaShort bool
	// TopologyUnresolved: a TrainJob packed at a level that no
	// ClusterTopologyBinding has.
	TopologyUnresolved bool
	// FailureRules: the recommended failure rules, with MaxUncounted
	// uncounted restarts; Evictions pods evicted, one per run, in replica
	// 0; BugExit: the first run exits 42.
	FailureRules bool
	MaxUncounted int32
	Evictions    int
	BugExit      bool
}

// Injected returns the facts of the workload's history.
func (w Workload) Injected() Injected {
	in := Injected{Kind: w.Kind, Replicas: max(w.Replicas, 1), MaxRestarts: w.MaxRestarts,
		OutlivesMaxRuntime: w.OutlivesMaxRuntime(), Suspensions: w.Suspensions(),
		NameOverLimit:      w.Variant == VariantOverLimit,
		QuotaShort:         w.Queue != nil && w.Queue.GPUQuota < w.GPUDemand(),
		TopologyUnresolved: w.Topology != nil && w.Topology.Change == TopologyUnresolved}
	in.FailureRules, in.MaxUncounted = w.FailureRules, w.MaxUncounted
	for _, c := range w.Cliques {
		in.FailedRuns = max(in.FailedRuns, c.FailedRuns)
		in.BugExit = in.BugExit || (c.FailExitCode == 42 && c.FailedRuns > 0)
	}
	for _, s := range w.Steps {
		switch s.Kind {
		case StepEvict:
			in.Evictions++
		case StepDeletePodClique:
			in.DeletedPodCliques = append(in.DeletedPodCliques, s.Replica)
		case StepDeleteBackend:
			in.BackendDeleted = true
		}
	}
	return in
}

// FailuresPerReplica is, per replica, how many of its runs end in a
// breach: the runs that fail, and one per PodClique of it deleted from
// outside.
func (in Injected) FailuresPerReplica() []int {
	out := make([]int, max(in.Replicas, 1))
	for r := range out {
		out[r] = in.FailedRuns
	}
	for _, r := range in.DeletedPodCliques {
		if int(r) < len(out) && r >= 0 {
			out[r]++
		}
	}
	out[0] += in.Evictions
	return out
}

// ExpectedEnd is the oracle: the end docs/training.md, docs/trainjob.md and
// docs/kueue.md prescribe for a workload of that history, with the rules
// issue 24 adds:
//   - a name longer than its kind and backend accept is refused at
//     admission, naming metadata.name;
//   - a queued PodCliqueSet whose quota is too small waits, its Admitted
//     condition False with reason Pending (quoting Kueue);
//   - a TrainJob on the PodCliqueSet backend packed at a level no binding
//     has waits with TopologyLevelsUnavailable (TopologyLevelUnresolved);
//     one whose binding changes later keeps the placement it started with,
//     so the change never alters its end;
//   - a TrainJob whose PodCliqueSet is deleted from outside fails with
//     reason BackendDeleted;
//   - a PodClique deleted from outside is a breach of its replica: a
//     counted restart while the budget lasts;
//   - suspensions and evictions consume no restart, and the resumed run
//     starts afresh: so the history must not depend on attempt numbers;
//   - a predecessor that exited 0 counts as ready, and a lingering pod of a
//     replica that met its success policy never keeps a suspension, or the
//     workload, from ending.
//
// Breaches (failed runs and deleted PodCliques) are judged one at a time,
// each consuming one restart while the budget, shared by all replicas,
// lasts; the first that finds the budget spent fails the workload (the
// restarts judged before it still count). A workload that outlives
// maxRuntime without a failure fails with MaxRuntimeExceeded and no
// restart. A TrainJob ends as its PodCliqueSet would, in JobSet's words:
// Complete (AllJobsCompleted) or Failed (ReachedMaxRestarts).
func ExpectedEnd(in Injected) (End, error) {
	if in.Replicas < 1 {
		return End{}, errors.New("expected end: a workload has at least one replica")
	}
	if in.MaxRestarts < 0 {
		return End{}, fmt.Errorf("expected end: maxRestarts %d is negative", in.MaxRestarts)
	}
	if in.FailedRuns < 0 {
		return End{}, fmt.Errorf("expected end: %d failed runs, a negative count", in.FailedRuns)
	}
	if in.Kind != KindPodCliqueSet && in.Kind != KindTrainJob {
		return End{}, fmt.Errorf("expected end: unknown kind %q", in.Kind)
	}
	if in.NameOverLimit {
		return End{State: StateRefused, Reason: FieldName}, nil
	}
	if in.QuotaShort {
		if in.Kind != KindPodCliqueSet {
			return End{}, errors.New("expected end: a TrainJob waiting for quota has no condition that says so (Kueue's Workload has)")
		}
		return End{State: StateBlocked, Reason: copsev1alpha1.ReasonPending}, nil
	}
	if in.TopologyUnresolved {
		if in.Kind != KindTrainJob {
			return End{}, errors.New("expected end: only a TrainJob packs by a level resolved among the bindings")
		}
		return End{State: StateBlocked, Reason: trainerv1alpha1.TrainJobTopologyLevelUnresolvedReason}, nil
	}
	if in.Suspensions > 0 && (in.FailedRuns > 0 || in.OutlivesMaxRuntime) {
		return End{}, errors.New("expected end: a suspended workload must not fail runs or outlive maxRuntime: " +
			"a resumed replica starts a new attempt, which shifts the exit codes by attempt and the runtime's start")
	}
	if in.BackendDeleted {
		if in.Kind != KindTrainJob || in.FailedRuns > 0 {
			return End{}, errors.New("expected end: only a TrainJob's PodCliqueSet is deleted as a backend, and during its first run")
		}
		return End{State: StateFailed, Reason: ReasonBackendDeleted}, nil
	}
	if len(in.DeletedPodCliques) > 0 {
		if in.Kind != KindPodCliqueSet || in.FailedRuns > 0 || in.OutlivesMaxRuntime {
			return End{}, errors.New("expected end: PodCliques are deleted only from PodCliqueSets whose runs exit 0 in time")
		}
		if slices.ContainsFunc(in.DeletedPodCliques, func(r int32) bool { return r < 0 || r >= in.Replicas }) {
			return End{}, fmt.Errorf("expected end: a PodClique deleted in replica %v of %d", in.DeletedPodCliques, in.Replicas)
		}
	}
	if in.FailureRules && (in.Evictions > 0 || in.BugExit) {
		return failureRulesEnd(in)
	}
	end, err := trainingEnd(in.FailuresPerReplica(), in.MaxRestarts, in.OutlivesMaxRuntime)
	if err != nil || in.Kind == KindPodCliqueSet {
		return end, err
	}
	switch {
	case end.Succeeded():
		return End{State: StateComplete, Reason: ReasonAllJobsCompleted, RestartCount: end.RestartCount}, nil
	case end.Reason == copsev1alpha1.ReasonMaxRestartsExceeded:
		return End{State: StateFailed, Reason: ReasonReachedMaxRestarts, RestartCount: end.RestartCount}, nil
	}
	return End{}, fmt.Errorf("expected end: a TrainJob's runtime has no maxRuntime, yet it would end %s", end)
}

// failureRulesEnd is the end docs/training.md's failure rules prescribe:
// exit 42 fails at once (FailedByRule; a TrainJob in JobSet's words,
// FailJobSetFailurePolicyAction) whatever the budget; each eviction
// restarts without spending maxRestarts while maxUncountedRestarts lasts,
// and the one after fails the workload (MaxUncountedRestartsExceeded).
func failureRulesEnd(in Injected) (End, error) {
	trainJob := in.Kind == KindTrainJob
	switch {
	case in.BugExit && in.Evictions > 0, in.FailedRuns > 0 && !in.BugExit:
		return End{}, errors.New("expected end: a failure-rules workload either exits 42 or is evicted, nothing else")
	case in.BugExit && trainJob:
		return End{State: StateFailed, Reason: jobsetconstants.FailJobSetActionReason}, nil
	case in.BugExit:
		return End{State: StateFailed, Reason: copsev1alpha1.ReasonFailedByRule}, nil
	case in.Evictions > int(in.MaxUncounted) && trainJob:
		return End{}, errors.New("expected end: JobSet restarts without a bound; a TrainJob is not planned to run out of uncounted restarts")
	case in.Evictions > int(in.MaxUncounted):
		return End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxUncountedRestartsExceeded, RestartCount: in.MaxUncounted, Uncounted: in.MaxUncounted}, nil
	case trainJob:
		return End{State: StateComplete, Reason: ReasonAllJobsCompleted, RestartCount: int32(in.Evictions), Uncounted: int32(in.Evictions)}, nil
	}
	return End{State: StateSucceeded, RestartCount: int32(in.Evictions), Uncounted: int32(in.Evictions)}, nil
}

// trainingEnd is the rule of docs/training.md for a Training workload whose
// replica r breaches failures[r] times and then succeeds, with a restart
// budget of maxRestarts shared by all replicas.
func trainingEnd(failures []int, maxRestarts int32, outlivesMaxRuntime bool) (End, error) {
	breaches := 0
	for r, f := range failures {
		if f < 0 {
			return End{}, fmt.Errorf("expected end: replica %d fails %d times, a negative count", r, f)
		}
		breaches += f
	}
	if outlivesMaxRuntime {
		if breaches > 0 {
			return End{}, errors.New("expected end: a workload that outlives maxRuntime must not fail too: " +
				"which restarts count then depends on when each failure happened")
		}
		return End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRuntimeExceeded}, nil
	}
	if breaches <= int(maxRestarts) {
		return End{State: StateSucceeded, RestartCount: int32(breaches)}, nil
	}
	return End{State: StateFailed, Reason: copsev1alpha1.ReasonMaxRestartsExceeded, RestartCount: maxRestarts}, nil
}

// EventReasons are GREP-0285's event reasons on a Training PodCliqueSet.
var EventReasons = []string{"PodCliqueFailed", "ReplicaRestarting", "MaxRestartsExceeded", "MaxRuntimeExceeded", "WorkloadSucceeded"}

// ImpliedEventReasons are the GREP-0285 event reasons a run of these
// workloads must produce: a Training PodCliqueSet that succeeds records
// WorkloadSucceeded; one that restarts, ReplicaRestarting; failed runs,
// PodCliqueFailed; a spent budget, MaxRestartsExceeded; a passed runtime,
// MaxRuntimeExceeded. (TrainJobs' PodCliqueSets record them too, but a
// TrainJob is checked by its own conditions.) A workload that a kill aims
// at the moment of such a transition (a restart, the termination of a
// failed workload, a pod's exit 0) implies none: the operator records an
// event after the status write that makes the transition durable, and a
// SIGKILL in between loses it, as events are not state.
func ImpliedEventReasons(workloads []Workload, kills []Kill) []string {
	killedAtTransition := map[int]bool{}
	for _, k := range kills {
		if k.Trigger == TriggerRestart || k.Trigger == TriggerTerminating || k.Trigger == TriggerExit0 {
			killedAtTransition[k.Workload] = true
		}
	}
	implied := map[string]bool{}
	for _, w := range workloads {
		if w.Kind != KindPodCliqueSet || w.Expected.State == StateRefused || w.Expected.State == StateBlocked || killedAtTransition[w.Index] {
			continue
		}
		e := w.Expected
		implied["WorkloadSucceeded"] = implied["WorkloadSucceeded"] || e.Succeeded()
		implied["ReplicaRestarting"] = implied["ReplicaRestarting"] || e.RestartCount > 0
		implied["PodCliqueFailed"] = implied["PodCliqueFailed"] || w.Injected().FailedRuns > 0
		implied["MaxRestartsExceeded"] = implied["MaxRestartsExceeded"] || e.Reason == copsev1alpha1.ReasonMaxRestartsExceeded
		implied["MaxRuntimeExceeded"] = implied["MaxRuntimeExceeded"] || e.Reason == copsev1alpha1.ReasonMaxRuntimeExceeded
	}
	var out []string
	for _, reason := range EventReasons {
		if implied[reason] {
			out = append(out, reason)
		}
	}
	return out
}
