package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/copse-dev/copse/e2e/process"
)

// processState is the state letter of /proc/<pid>/stat: R, S, T (stopped)...
func processState(t *testing.T, pid int) byte {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read /proc/%d/stat: %v", pid, err)
	}
	i := bytes.LastIndexByte(stat, ')')
	return stat[i+2]
}

func waitState(t *testing.T, pid int, want func(byte) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !want(processState(t, pid)) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d is in state %c, want it %s", pid, processState(t, pid), what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func stopped(state byte) bool { return state == 'T' }
func running(state byte) bool { return state == 'S' || state == 'R' }

func TestPauseFreezesForItsDuration(t *testing.T) {
	p := startSleep(t, t.TempDir())
	c := &Cluster{procs: []*process.Process{p}, out: io.Discard}

	began := time.Now()
	pause, err := c.pause("long", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, p.PID(), stopped, "stopped by SIGSTOP")
	select {
	case <-pause.Done():
		t.Fatal("the pause ended at once")
	default:
	}
	if err := pause.Wait(); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if elapsed := time.Since(began); elapsed < 500*time.Millisecond {
		t.Errorf("resumed after %s, before the pause's 500ms", elapsed)
	}
	waitState(t, p.PID(), running, "running again after SIGCONT")
	if err := c.CheckHealthy(); err != nil {
		t.Errorf("a paused and resumed component is reported: %v", err)
	}
}

func TestResumeEndsAPauseEarly(t *testing.T) {
	p := startSleep(t, t.TempDir())
	c := &Cluster{procs: []*process.Process{p}, out: io.Discard}
	pause, err := c.pause("long", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, p.PID(), stopped, "stopped by SIGSTOP")
	if err := pause.Resume(); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.PID(), running, "running again after Resume")
	if err := pause.Resume(); err != nil {
		t.Errorf("a second Resume: %v", err)
	}
}

func TestPauseOfAMissingComponentFails(t *testing.T) {
	c := &Cluster{out: io.Discard}
	if _, err := c.PauseEtcd(time.Second); err == nil || !strings.Contains(err.Error(), "no such component") {
		t.Errorf("err = %v, want no such component", err)
	}
}

func TestStopEndsAPausedComponent(t *testing.T) {
	dir := t.TempDir()
	p := startSleep(t, dir)
	c := &Cluster{procs: []*process.Process{p}, out: io.Discard, dir: dir, keepDir: true}
	if _, err := c.pause("long", time.Hour); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.PID(), stopped, "stopped by SIGSTOP")
	began := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	// SIGTERM ends sleep at once once it runs; without the resume Stop
	// would wait out its 10s grace and SIGKILL it.
	if elapsed := time.Since(began); elapsed > 5*time.Second {
		t.Errorf("Stop took %s", elapsed)
	}
	if p.ExitReason() == nil {
		t.Error("the paused process survived Stop")
	}
}

func TestRestartReplacesTheProcess(t *testing.T) {
	dir := t.TempDir()
	old := startSleep(t, dir)
	c := &Cluster{procs: []*process.Process{old}, out: io.Discard, layout: layout{dir: dir}}
	probed := 0
	began := time.Now()
	if err := c.restart(context.Background(), "long", 200*time.Millisecond, func(context.Context) error { probed++; return nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.procs[0].Stop(0) })
	if old.ExitReason() == nil {
		t.Error("the old process still runs")
	}
	restarted := c.procs[0]
	if restarted.PID() == old.PID() || restarted.ExitReason() != nil {
		t.Errorf("no new process: old pid %d, new pid %d (%v)", old.PID(), restarted.PID(), restarted.ExitReason())
	}
	if restarted.Spec().Binary != old.Spec().Binary || strings.Join(restarted.Spec().Args, " ") != strings.Join(old.Spec().Args, " ") {
		t.Errorf("restarted as %s %v, want %s %v", restarted.Spec().Binary, restarted.Spec().Args, old.Spec().Binary, old.Spec().Args)
	}
	if probed == 0 {
		t.Error("restart did not wait for the health probe")
	}
	if elapsed := time.Since(began); elapsed < 200*time.Millisecond {
		t.Errorf("restarted after %s, before downFor (200ms) had passed", elapsed)
	}
	if err := c.CheckHealthy(); err != nil {
		t.Errorf("after the restart: %v", err)
	}
	log, err := os.ReadFile(old.LogPath())
	if err != nil || !strings.Contains(string(log), "===== restarted by copse's cluster package") {
		t.Errorf("the log %s has no restart marker (%v):\n%s", old.LogPath(), err, log)
	}
}

func TestCheckHealthyIgnoresAComponentWhileItRestarts(t *testing.T) {
	p := startSleep(t, t.TempDir())
	if err := p.Stop(0); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{procs: []*process.Process{p}, restarting: map[string]bool{"long": true}}
	if err := c.CheckHealthy(); err != nil {
		t.Errorf("a component stopped for a restart is reported: %v", err)
	}
	delete(c.restarting, "long")
	if err := c.CheckHealthy(); err == nil {
		t.Error("an exited component is not reported once its restart is over")
	}
}
