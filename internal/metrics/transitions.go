package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

var (
	replicaRecreations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "copse_replica_recreations_total",
		Help: "Replica restarts and recreations recorded in PodCliqueSets' status.replicaRecreations, by namespace and reason " +
			"(TrainingRestart: counted against maxRestarts; UncountedRestart: a failure rule's; GangTermination; Suspension; " +
			"IncompletePlacement; InPlaceRestartTimeout) and whether the replica restarts in place.",
	}, []string{"namespace", "reason", "in_place"})
	gpuSecondsLost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "copse_gpu_seconds_lost_total",
		Help: "GPU time whose work a replica recreation threw away: for each pod of the replica's previous run, its nvidia.com/gpu " +
			"times the time from the start of that run on the pod (its scheduling, or for a pod a restart in place kept, that restart) " +
			"to its end (or to the recreation), by namespace and the recreation's reason " +
			"(TrainingRestart, UncountedRestart: restarts; IncompletePlacement: gangs placed incomplete; Suspension; GangTermination; " +
			"InPlaceRestartTimeout).",
	}, []string{"namespace", "reason"})
	phaseTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "copse_podcliqueset_phase_transitions_total",
		Help: "PodCliqueSets that reached a phase (status.phase written), by namespace, workload type and phase.",
	}, []string{"namespace", "workload_type", "phase"})
	timeToRunning = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "copse_podcliqueset_time_to_running_seconds",
		Help: "Time from a PodCliqueSet's creation, or its latest resume, to its status.startTime (the workload running, " +
			"its gangs placed; the wait for Kueue's admission included), by namespace and workload type.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1s to about 4.5h
	}, []string{"namespace", "workload_type"})
	admissionWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "copse_kueue_admission_wait_seconds",
		Help: "Time a queued PodCliqueSet waited in its Kueue queue, from being queued (created, or evicted and queued again) " +
			"to its Admitted condition turning True, by namespace.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1s to about 4.5h
	}, []string{"namespace"})
	runDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "copse_training_run_duration_seconds",
		Help:    "Time from a Training PodCliqueSet's status.startTime to its terminal phase, by namespace and outcome (Succeeded, Failed).",
		Buckets: prometheus.ExponentialBuckets(10, 2, 14), // 10s to about 45h
	}, []string{"namespace", "outcome"})
)

func init() {
	metrics.Registry.MustRegister(replicaRecreations, gpuSecondsLost, phaseTransitions, timeToRunning, admissionWait, runDuration)
}

// Recreation is one replica recreation a status write recorded.
type Recreation struct {
	Reason  copsev1alpha1.RecreationReason
	InPlace bool
	// GPUSecondsLost is the GPU time of the replica's previous run, whose
	// work the recreation throws away.
	GPUSecondsLost float64
}

// Transitions is what one status write of a PodCliqueSet made durable that
// the transition metrics count.
type Transitions struct {
	Namespace    string
	WorkloadType copsev1alpha1.WorkloadType
	Recreations  []Recreation
	// Phase is the phase the write reached, "" when it did not change it.
	Phase copsev1alpha1.PodCliqueSetPhase
	// TimeToRunning is set when the write recorded status.startTime: the
	// time since the workload was created, or last resumed.
	TimeToRunning *time.Duration
	// AdmissionWait is set when the write turned the Admitted condition
	// (a queued workload's) True: the time since it was queued.
	AdmissionWait *time.Duration
	// RunDuration is set when the write reached a terminal phase of a
	// workload that had started.
	RunDuration *time.Duration
}

// TransitionsOf compares a PodCliqueSet's status before and after a write
// that succeeded, at now. newRecreations are the recreations the write
// added; pods are the workload's pods as the pass observed them.
func TransitionsOf(pcs *copsev1alpha1.PodCliqueSet, previous, current *copsev1alpha1.PodCliqueSetStatus,
	newRecreations []copsev1alpha1.ReplicaRecreation, pods []podstate.Summary, now time.Time) Transitions {
	t := Transitions{Namespace: pcs.Namespace, WorkloadType: pcs.Spec.WorkloadType.OrDefault()}
	for _, rec := range newRecreations {
		t.Recreations = append(t.Recreations, Recreation{Reason: rec.Reason, InPlace: rec.InPlace,
			GPUSecondsLost: gpuSecondsOfRun(pods, int(rec.ReplicaIndex), int(rec.Attempt), keptSince(previous, rec.ReplicaIndex), now)})
	}
	if current.Phase != previous.Phase && current.Phase != "" {
		t.Phase = current.Phase
	}
	if previous.StartTime == nil && current.StartTime != nil {
		since := pcs.CreationTimestamp.Time
		if resumed := meta.FindStatusCondition(current.Conditions, copsev1alpha1.ConditionTypeSuspended); resumed != nil &&
			resumed.Status == metav1.ConditionFalse && resumed.LastTransitionTime.After(since) {
			since = resumed.LastTransitionTime.Time
		}
		d := current.StartTime.Sub(since)
		t.TimeToRunning = &d
	}
	was := meta.FindStatusCondition(previous.Conditions, copsev1alpha1.ConditionTypeAdmitted)
	if admitted := meta.FindStatusCondition(current.Conditions, copsev1alpha1.ConditionTypeAdmitted); admitted != nil && admitted.Status == metav1.ConditionTrue &&
		(was == nil || was.Status != metav1.ConditionTrue) {
		queued := pcs.CreationTimestamp.Time
		if was != nil && was.LastTransitionTime.After(queued) {
			queued = was.LastTransitionTime.Time
		}
		d := admitted.LastTransitionTime.Sub(queued)
		t.AdmissionWait = &d
	}
	if t.Phase.IsTerminal() && current.StartTime != nil {
		end := now
		if current.CompletionTime != nil {
			end = current.CompletionTime.Time
		}
		d := end.Sub(current.StartTime.Time)
		t.RunDuration = &d
	}
	return t
}

// Record counts t.
func Record(t Transitions) {
	for _, rec := range t.Recreations {
		replicaRecreations.WithLabelValues(t.Namespace, string(rec.Reason), boolLabel(rec.InPlace)).Inc()
		gpuSecondsLost.WithLabelValues(t.Namespace, string(rec.Reason)).Add(rec.GPUSecondsLost)
	}
	if t.Phase != "" {
		phaseTransitions.WithLabelValues(t.Namespace, string(t.WorkloadType), string(t.Phase)).Inc()
	}
	if t.TimeToRunning != nil {
		timeToRunning.WithLabelValues(t.Namespace, string(t.WorkloadType)).Observe(max(t.TimeToRunning.Seconds(), 0))
	}
	if t.AdmissionWait != nil {
		admissionWait.WithLabelValues(t.Namespace).Observe(max(t.AdmissionWait.Seconds(), 0))
	}
	if t.RunDuration != nil {
		runDuration.WithLabelValues(t.Namespace, string(t.Phase)).Observe(max(t.RunDuration.Seconds(), 0))
	}
}

func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// gpuSecondsOfRun is the GPU time the pods of replica's runs before attempt
// held since their run began: GPUs times the time from the run's start to
// the pod's end, or to now for a pod that has not ended. A run starts at
// the pod's scheduling, or, for a pod a restart in place kept (kept: its
// attempt, and when that restart was decided), when it joined that
// attempt: the time before belongs to the run the earlier restart threw
// away, counted then.
func gpuSecondsOfRun(pods []podstate.Summary, replica, attempt int, kept keptRun, now time.Time) float64 {
	var total float64
	for _, p := range pods {
		if p.Replica != replica || p.Attempt >= attempt || p.GPUs == 0 || p.ScheduledAt.IsZero() {
			continue
		}
		start := p.ScheduledAt
		if kept.ok && p.Attempt == kept.attempt && kept.since.After(start) {
			start = kept.since
		}
		end := now
		if !p.FinishedAt.IsZero() && p.FinishedAt.Before(now) {
			end = p.FinishedAt
		}
		if held := end.Sub(start).Seconds(); held > 0 {
			total += float64(p.GPUs) * held
		}
	}
	return total
}

// keptRun is the attempt a replica's last restart in place moved its kept
// pods to, and when it was decided.
type keptRun struct {
	ok      bool
	attempt int
	since   time.Time
}

// keptSince reads the replica's last recreation from the status before the
// write: when it was a restart in place, its pods joined its attempt then.
func keptSince(previous *copsev1alpha1.PodCliqueSetStatus, replica int32) keptRun {
	for _, rec := range previous.ReplicaRecreations {
		if rec.ReplicaIndex == replica && rec.InPlace {
			return keptRun{ok: true, attempt: int(rec.Attempt), since: rec.StartedAt.Time}
		}
	}
	return keptRun{}
}
