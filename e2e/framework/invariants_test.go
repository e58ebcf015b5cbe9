package framework

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func corePhase(p string) corev1.PodPhase { return corev1.PodPhase(p) }

func pod(t watch.EventType, rv, uid, replica, attempt, index, phase string) ObjectEvent {
	return ObjectEvent{Type: t, Kind: "Pod", ResourceVersion: rv, Name: uid, UID: uid, PodCliqueSet: "job",
		Replica: replica, Attempt: attempt, PodClique: "job-" + replica + "-w", Index: index, Phase: corePhase(phase)}
}

func podGroup(rv, replica, attempt string) ObjectEvent {
	return ObjectEvent{Type: watch.Added, Kind: "PodGroup", ResourceVersion: rv, Name: "job-" + replica, PodCliqueSet: "job", Replica: replica, Attempt: attempt}
}

func TestAttemptOverlaps(t *testing.T) {
	clean := []ObjectEvent{
		pod(watch.Added, "1", "a", "0", "0", "0", "Running"),
		pod(watch.Modified, "2", "a", "0", "0", "0", "Failed"),
		pod(watch.Deleted, "3", "a", "0", "0", "0", "Failed"),
		pod(watch.Added, "4", "b", "0", "1", "0", "Pending"),
		pod(watch.Added, "5", "c", "1", "0", "0", "Running"), // another replica may run any attempt
	}
	if got := AttemptOverlaps(clean); len(got) != 0 {
		t.Errorf("clean history reported: %v", got)
	}
	overlap := []ObjectEvent{
		pod(watch.Added, "1", "a", "0", "0", "0", "Running"),
		pod(watch.Modified, "2", "a", "0", "0", "0", "Running"), // terminating, still there
		pod(watch.Added, "3", "b", "0", "1", "0", "Pending"),
	}
	if got := AttemptOverlaps(overlap); len(got) != 1 {
		t.Errorf("overlap: got %v, want one violation", got)
	}

	// A restart in place moves a kept pod to the next attempt: same UID,
	// new attempt label. It leaves its old run then.
	inPlace := []ObjectEvent{
		pod(watch.Added, "1", "a", "0", "0", "0", "Running"),
		pod(watch.Added, "2", "b", "0", "0", "1", "Running"),
		pod(watch.Deleted, "3", "b", "0", "0", "1", "Failed"), // evicted, not kept
		pod(watch.Modified, "4", "a", "0", "1", "0", "Running"),
		pod(watch.Added, "5", "c", "0", "1", "1", "Pending"),
	}
	if got := AttemptOverlaps(inPlace); len(got) != 0 {
		t.Errorf("a restart in place reported: %v", got)
	}
	movedEarly := []ObjectEvent{
		pod(watch.Added, "1", "a", "0", "0", "0", "Running"),
		pod(watch.Added, "2", "b", "0", "0", "1", "Running"),
		pod(watch.Modified, "3", "a", "0", "1", "0", "Running"), // b of attempt 0 still runs
		pod(watch.Deleted, "4", "b", "0", "0", "1", "Failed"),
	}
	if got := AttemptOverlaps(movedEarly); len(got) != 1 {
		t.Errorf("a pod moved with its gate open while its run still had a pod: got %v, want one violation", got)
	}

	// The barrier: kept pods move with their gates closed, one by one,
	// while the evicted pod terminates; the gates open once it is gone.
	barrier := []ObjectEvent{
		gated(pod(watch.Added, "1", "a", "0", "0", "0", "Running"), "open"),
		gated(pod(watch.Added, "2", "b", "0", "0", "1", "Running"), "open"),
		gated(pod(watch.Added, "3", "e", "0", "0", "2", "Running"), "open"),
		gated(pod(watch.Modified, "4", "e", "0", "0", "2", "Running"), "open"), // evicted: terminating
		gated(pod(watch.Modified, "5", "a", "0", "1", "0", "Running"), "closed"),
		gated(pod(watch.Modified, "6", "e", "0", "0", "2", "Failed"), "open"),
		gated(pod(watch.Modified, "7", "b", "0", "1", "1", "Running"), "closed"),
		gated(pod(watch.Deleted, "8", "e", "0", "0", "2", "Failed"), "open"),
		gated(pod(watch.Added, "9", "f", "0", "1", "2", "Pending"), "closed"),
		gated(pod(watch.Modified, "10", "a", "0", "1", "0", "Running"), "open"),
	}
	if got := AttemptOverlaps(barrier); len(got) != 0 {
		t.Errorf("a barrier kept reported: %v", got)
	}
	barrierBroken := slices.Clone(barrier[:6])
	barrierBroken = append(barrierBroken, gated(pod(watch.Modified, "7", "a", "0", "1", "0", "Running"), "open"))
	if got := AttemptOverlaps(barrierBroken); len(got) != 1 {
		t.Errorf("a gate opened while the old run's pods exist: got %v, want one violation", got)
	}
}

func gated(e ObjectEvent, gate string) ObjectEvent {
	e.StartupGate = gate
	return e
}

func TestEarlyGangs(t *testing.T) {
	early := []ObjectEvent{pod(watch.Added, "1", "a", "0", "0", "0", "Running"), podGroup("2", "0", "1"), pod(watch.Deleted, "3", "a", "0", "0", "0", "Failed")}
	if got := EarlyGangs(early); len(got) != 1 {
		t.Errorf("early: got %v, want one violation", got)
	}
	late := []ObjectEvent{pod(watch.Added, "1", "a", "0", "0", "0", "Running"), pod(watch.Deleted, "2", "a", "0", "0", "0", "Failed"), podGroup("3", "0", "1")}
	if got := EarlyGangs(late); len(got) != 0 {
		t.Errorf("late: got %v", got)
	}
}

func TestRerunSuccesses(t *testing.T) {
	rerun := []ObjectEvent{
		pod(watch.Added, "1", "a", "0", "0", "0", "Running"),
		pod(watch.Modified, "2", "a", "0", "0", "0", "Succeeded"),
		pod(watch.Deleted, "3", "a", "0", "0", "0", "Succeeded"),
		pod(watch.Added, "4", "b", "0", "0", "0", "Pending"),
	}
	if got := RerunSuccesses(rerun); len(got) != 1 {
		t.Errorf("rerun: got %v, want one violation", got)
	}
	restart := []ObjectEvent{
		pod(watch.Modified, "2", "a", "0", "0", "0", "Succeeded"),
		pod(watch.Added, "4", "b", "0", "1", "0", "Pending"), // a new run reruns everything
	}
	if got := RerunSuccesses(restart); len(got) != 0 {
		t.Errorf("restart: got %v", got)
	}
	// A pod moved to attempt 1 (gate closed) whose old containers exit 0
	// before their restart: attempt 0's exit; attempt 1 runs index 0 anew.
	endedAfterMove := []ObjectEvent{
		gated(pod(watch.Modified, "1", "a", "0", "1", "0", "Running"), "closed"),
		gated(pod(watch.Modified, "2", "a", "0", "1", "0", "Succeeded"), "closed"),
		gated(pod(watch.Deleted, "3", "a", "0", "1", "0", "Succeeded"), "closed"),
		gated(pod(watch.Added, "4", "b", "0", "1", "0", "Pending"), "closed"),
	}
	if got := RerunSuccesses(endedAfterMove); len(got) != 0 {
		t.Errorf("an exit behind a closed gate: got %v", got)
	}
}

func TestHostnameOverlaps(t *testing.T) {
	replaced := []ObjectEvent{
		pod(watch.Added, "1", "a", "0", "0", "0", "Running"),
		pod(watch.Modified, "2", "a", "0", "0", "0", "Failed"),
		pod(watch.Deleted, "3", "a", "0", "0", "0", "Failed"),
		pod(watch.Added, "4", "b", "0", "0", "0", "Pending"), // the replacement, once the failed pod is gone
		pod(watch.Added, "5", "c", "0", "0", "1", "Running"), // another index
		pod(watch.Added, "6", "d", "0", "1", "0", "Running"), // another run: AttemptOverlaps' concern
	}
	if got := HostnameOverlaps(replaced); len(got) != 0 {
		t.Errorf("clean history reported: %v", got)
	}
	early := []ObjectEvent{
		pod(watch.Added, "1", "a", "0", "0", "0", "Running"),
		pod(watch.Modified, "2", "a", "0", "0", "0", "Running"), // terminating: its PodClique was deleted
		pod(watch.Added, "3", "b", "0", "0", "0", "Pending"),    // the new PodClique's pod, same hostname
		pod(watch.Modified, "4", "b", "0", "0", "0", "Running"),
	}
	if got := HostnameOverlaps(early); len(got) != 1 {
		t.Errorf("early replacement: got %v, want one violation", got)
	}
}
