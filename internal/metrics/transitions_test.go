package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	copsev1alpha1 "github.com/copse-dev/copse/api/core/v1alpha1"
	"github.com/copse-dev/copse/internal/podstate"
)

func TestTransitionsOf(t *testing.T) {
	created := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(created.Add(d)); return &t }
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", CreationTimestamp: metav1.NewTime(created)}}
	pcs.Spec.WorkloadType = copsev1alpha1.WorkloadTypeTraining
	now := created.Add(time.Hour)
	seconds := func(d *time.Duration) string {
		if d == nil {
			return "-"
		}
		return d.String()
	}

	tests := []struct {
		name              string
		previous, current copsev1alpha1.PodCliqueSetStatus
		recreations       []copsev1alpha1.ReplicaRecreation
		wantPhase         copsev1alpha1.PodCliqueSetPhase
		wantRecreations   int
		wantToRunning     string
		wantRunDuration   string
	}{
		{name: "nothing changed", previous: copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseRunning},
			current: copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseRunning}, wantToRunning: "-", wantRunDuration: "-"},
		{name: "started: time since creation",
			previous:  copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhasePending},
			current:   copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseRunning, StartTime: at(90 * time.Second)},
			wantPhase: copsev1alpha1.PodCliqueSetPhaseRunning, wantToRunning: "1m30s", wantRunDuration: "-"},
		{name: "started again after a resume: time since the resume",
			previous: copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseRunning},
			current: func() copsev1alpha1.PodCliqueSetStatus {
				s := copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseRunning, StartTime: at(20 * time.Minute)}
				s.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeSuspended, Status: metav1.ConditionFalse, LastTransitionTime: *at(19 * time.Minute)}}
				return s
			}(),
			wantToRunning: "1m0s", wantRunDuration: "-"},
		{name: "a restart recorded", recreations: []copsev1alpha1.ReplicaRecreation{{Reason: copsev1alpha1.RecreationReasonTrainingRestart, InPlace: true}},
			wantRecreations: 1, wantToRunning: "-", wantRunDuration: "-"},
		{name: "succeeded: run duration to the completion time",
			previous: copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseRunning, StartTime: at(time.Minute)},
			current: copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseSucceeded, StartTime: at(time.Minute),
				CompletionTime: at(11 * time.Minute)},
			wantPhase: copsev1alpha1.PodCliqueSetPhaseSucceeded, wantToRunning: "-", wantRunDuration: "10m0s"},
		{name: "failed before it started: no run duration",
			previous:  copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhasePending},
			current:   copsev1alpha1.PodCliqueSetStatus{Phase: copsev1alpha1.PodCliqueSetPhaseFailed, CompletionTime: at(time.Minute)},
			wantPhase: copsev1alpha1.PodCliqueSetPhaseFailed, wantToRunning: "-", wantRunDuration: "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TransitionsOf(pcs, &tt.previous, &tt.current, tt.recreations, nil, now)
			if got.AdmissionWait != nil {
				t.Errorf("admission wait %s for a workload that is not queued", got.AdmissionWait)
			}
			if got.Phase != tt.wantPhase || len(got.Recreations) != tt.wantRecreations ||
				seconds(got.TimeToRunning) != tt.wantToRunning || seconds(got.RunDuration) != tt.wantRunDuration {
				t.Errorf("got phase %q, %d recreations, to running %s, run %s; want %q, %d, %s, %s", got.Phase, len(got.Recreations),
					seconds(got.TimeToRunning), seconds(got.RunDuration), tt.wantPhase, tt.wantRecreations, tt.wantToRunning, tt.wantRunDuration)
			}
			if got.Namespace != "team-a" || got.WorkloadType != copsev1alpha1.WorkloadTypeTraining {
				t.Errorf("labels %q %q", got.Namespace, got.WorkloadType)
			}
		})
	}
}

// value reads a counter's or a histogram's (sample count, sum) state.
func value(t *testing.T, m prometheus.Metric) (count, sum float64) {
	t.Helper()
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	if h := pb.GetHistogram(); h != nil {
		return float64(h.GetSampleCount()), h.GetSampleSum()
	}
	return pb.GetCounter().GetValue(), 0
}

func TestRecord(t *testing.T) {
	run := 10 * time.Minute
	Record(Transitions{Namespace: "record-test", WorkloadType: copsev1alpha1.WorkloadTypeTraining, Phase: copsev1alpha1.PodCliqueSetPhaseSucceeded,
		RunDuration: &run, Recreations: []Recreation{{Reason: copsev1alpha1.RecreationReasonUncountedRestart}, {Reason: copsev1alpha1.RecreationReasonUncountedRestart}}})
	if got, _ := value(t, replicaRecreations.WithLabelValues("record-test", "UncountedRestart", "false")); got != 2 {
		t.Errorf("recreations %v, want 2", got)
	}
	if got, _ := value(t, phaseTransitions.WithLabelValues("record-test", "Training", "Succeeded")); got != 1 {
		t.Errorf("phase transitions %v, want 1", got)
	}
	if count, sum := value(t, runDuration.WithLabelValues("record-test", "Succeeded").(prometheus.Metric)); count != 1 || sum != 600 {
		t.Errorf("run duration: %v samples, sum %v; want 1, 600", count, sum)
	}
}

func TestTransitionsOfAdmission(t *testing.T) {
	created := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", CreationTimestamp: metav1.NewTime(created)}}
	admitted := func(status metav1.ConditionStatus, after time.Duration) copsev1alpha1.PodCliqueSetStatus {
		var s copsev1alpha1.PodCliqueSetStatus
		s.Conditions = []metav1.Condition{{Type: copsev1alpha1.ConditionTypeAdmitted, Status: status, LastTransitionTime: metav1.NewTime(created.Add(after))}}
		return s
	}
	none := copsev1alpha1.PodCliqueSetStatus{}
	tests := []struct {
		name              string
		previous, current copsev1alpha1.PodCliqueSetStatus
		want              string
	}{
		{"admitted after waiting since it was queued", admitted(metav1.ConditionFalse, time.Second), admitted(metav1.ConditionTrue, 3*time.Minute), "2m59s"},
		{"admitted in its first write", none, admitted(metav1.ConditionTrue, 10*time.Second), "10s"},
		{"admitted again after an eviction: since the eviction", admitted(metav1.ConditionFalse, time.Hour), admitted(metav1.ConditionTrue, time.Hour+30*time.Second), "30s"},
		{"still admitted", admitted(metav1.ConditionTrue, time.Minute), admitted(metav1.ConditionTrue, time.Minute), "-"},
		{"still waiting", admitted(metav1.ConditionFalse, time.Minute), admitted(metav1.ConditionFalse, time.Minute), "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := "-"
			if w := TransitionsOf(pcs, &tt.previous, &tt.current, nil, nil, created.Add(2*time.Hour)).AdmissionWait; w != nil {
				got = w.String()
			}
			if got != tt.want {
				t.Errorf("admission wait %s, want %s", got, tt.want)
			}
		})
	}
}

func TestGPUSecondsLost(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	now := t0.Add(10 * time.Minute)
	pod := func(replica, attempt int, gpus int64, scheduled, finished time.Duration) podstate.Summary {
		p := podstate.Summary{Replica: replica, Attempt: attempt, GPUs: gpus, Scheduled: scheduled >= 0}
		if scheduled >= 0 {
			p.ScheduledAt = t0.Add(scheduled)
		}
		if finished > 0 {
			p.FinishedAt = t0.Add(finished)
		}
		return p
	}
	pods := []podstate.Summary{
		pod(0, 0, 8, 0, -1),                      // ran the whole 10 minutes: 4800
		pod(0, 0, 8, time.Minute, 2*time.Minute), // exited after a minute: 480
		pod(0, 0, 4, -1, -1),                     // never scheduled: nothing
		pod(0, 0, 0, 0, -1),                      // no GPU: nothing
		pod(0, 1, 8, 0, -1),                      // the new run's: nothing
		pod(1, 0, 8, 0, -1),                      // another replica's: nothing
	}
	pcs := &copsev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}}
	got := TransitionsOf(pcs, &copsev1alpha1.PodCliqueSetStatus{}, &copsev1alpha1.PodCliqueSetStatus{},
		[]copsev1alpha1.ReplicaRecreation{{ReplicaIndex: 0, Attempt: 1, Reason: copsev1alpha1.RecreationReasonTrainingRestart}}, pods, now)
	if len(got.Recreations) != 1 || got.Recreations[0].GPUSecondsLost != 5280 {
		t.Fatalf("recreations %+v, want one losing 5280 GPU-seconds", got.Recreations)
	}
	Record(Transitions{Namespace: "lost-test", Recreations: got.Recreations})
	if got, _ := value(t, gpuSecondsLost.WithLabelValues("lost-test", "TrainingRestart")); got != 5280 {
		t.Errorf("copse_gpu_seconds_lost_total %v, want 5280", got)
	}
}
