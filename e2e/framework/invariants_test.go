package framework

import (
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
