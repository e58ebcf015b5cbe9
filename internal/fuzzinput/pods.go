package fuzzinput

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/copse-dev/copse/internal/podstate"
)

var phases = []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}

const (
	flagTerminating = 1 << iota
	flagScheduled
	flagReady
	flagStarted
	flagGated
	flagFinalizer
	flagFailure
)

// Pod reads one pod summary from six bytes:
//
//	0: the index label (low 7 bits); bit 7 set: no valid index label
//	1: the phase: Pending, Running, Succeeded, Failed, Unknown (modulo 5)
//	2: flags: terminating, scheduled, ready, started, schedule-gated,
//	   outcome finalizer, failure described (bits 0 to 6)
//	3: the finish time: 0 unknown, else now + (b-128)×5s (it may lie ahead
//	   of now: clocks differ between nodes and the operator)
//	4: the container start: now - b×10s, when started
//	5: the replica (low 4 bits, 15 for unknown) and attempt (high 4 bits)
//
// Its name and UID come from position, so the pods of one list have
// distinct names and UIDs, as the pods of one namespace do.
func (s *Source) Pod(position int, now time.Time) podstate.Summary {
	index, phase, flags, finished, started, run := s.Byte(), s.Byte(), s.Byte(), s.Byte(), s.Byte(), s.Byte()
	p := podstate.Summary{
		Name:                fmt.Sprintf("pod-%d", position),
		UID:                 types.UID(fmt.Sprintf("uid-%d", position)),
		Index:               int(index & 0x7f),
		HasIndex:            index&0x80 == 0,
		Phase:               phases[int(phase)%len(phases)],
		Terminating:         flags&flagTerminating != 0,
		Scheduled:           flags&flagScheduled != 0,
		Ready:               flags&flagReady != 0,
		Started:             flags&flagStarted != 0,
		ScheduleGated:       flags&flagGated != 0,
		HasOutcomeFinalizer: flags&flagFinalizer != 0,
		Replica:             int(run & 0x0f),
		Attempt:             int(run >> 4),
	}
	if !p.HasIndex {
		p.Index = 0
	}
	if p.Replica == 15 {
		p.Replica = -1
	}
	if p.Terminating {
		p.DeletionDeadline = now.Add(30 * time.Second)
	}
	if finished != 0 {
		p.FinishedAt = now.Add(time.Duration(int(finished)-128) * 5 * time.Second)
	}
	if p.Started {
		p.StartedAt = now.Add(-time.Duration(started) * 10 * time.Second)
	}
	if p.Phase == corev1.PodFailed && flags&flagFailure != 0 {
		p.Failure = &podstate.Failure{Container: "main", ExitCode: 1, Reason: "Error"}
	}
	return p
}

// Pods reads a count of at most limit, then that many pods.
func (s *Source) Pods(limit int, now time.Time) []podstate.Summary {
	n := s.Intn(limit + 1)
	pods := make([]podstate.Summary, 0, n)
	for i := range n {
		pods = append(pods, s.Pod(i, now))
	}
	return pods
}

// EncodePods is the input Pods reads back as pods (as far as the encoding
// reaches: names, exact times and failure details are not kept), to seed
// a fuzz corpus with the pods of table tests.
func EncodePods(pods []podstate.Summary, now time.Time) []byte {
	out := []byte{byte(len(pods))}
	for _, p := range pods {
		out = append(out, encodePod(p, now)...)
	}
	return out
}

func encodePod(p podstate.Summary, now time.Time) []byte {
	index := byte(p.Index & 0x7f)
	if !p.HasIndex {
		index = 0x80
	}
	phase := byte(0)
	for i, ph := range phases {
		if ph == p.Phase {
			phase = byte(i)
		}
	}
	var flags byte
	for bit, set := range map[byte]bool{
		flagTerminating: p.Terminating, flagScheduled: p.Scheduled, flagReady: p.Ready, flagStarted: p.Started,
		flagGated: p.ScheduleGated, flagFinalizer: p.HasOutcomeFinalizer, flagFailure: p.Failure != nil,
	} {
		if set {
			flags |= bit
		}
	}
	var finished byte
	if !p.FinishedAt.IsZero() {
		finished = byte(clamp(int(p.FinishedAt.Sub(now)/(5*time.Second))+128, 1, 255))
	}
	var started byte
	if p.Started {
		started = byte(clamp(int(now.Sub(p.StartedAt)/(10*time.Second)), 0, 255))
	}
	replica := byte(p.Replica & 0x0f)
	if p.Replica < 0 {
		replica = 15
	}
	return []byte{index, phase, flags, finished, started, replica | byte(p.Attempt&0x0f)<<4}
}

func clamp(v, lo, hi int) int { return max(lo, min(v, hi)) }
