package process

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func lookPath(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("no %s: %v", name, err)
	}
	return path
}

// shellSpec runs script with sh, logging into a temporary directory.
func shellSpec(t *testing.T, script string) Spec {
	t.Helper()
	return Spec{Name: "fake", Binary: lookPath(t, "sh"), Args: []string{"-c", script}, LogPath: filepath.Join(t.TempDir(), "fake.log")}
}

func start(t *testing.T, spec Spec) *Process {
	t.Helper()
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })
	return p
}

func waitExit(t *testing.T, p *Process) {
	t.Helper()
	if !p.WaitExit(10 * time.Second) {
		t.Fatalf("%s did not exit", p.Name())
	}
}

func readLog(t *testing.T, p *Process) string {
	t.Helper()
	data, err := os.ReadFile(p.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestEndedTellsExitZeroFromAFailure(t *testing.T) {
	clean := start(t, shellSpec(t, "exit 0"))
	failed := start(t, shellSpec(t, "echo 'fatal: bad flag' >&2; exit 3"))
	waitExit(t, clean)
	waitExit(t, failed)

	if ended, err := clean.Ended(); !ended || err != nil {
		t.Errorf("clean Ended = %v, %v; want true, nil", ended, err)
	}
	if err := clean.ExitReason(); err == nil || err.Error() != "exit status 0" {
		t.Errorf("clean ExitReason = %v, want exit status 0", err)
	}
	if ended, err := failed.Ended(); !ended || err == nil || err.Error() != "exit status 3" {
		t.Errorf("failed Ended = %v, %v; want true, exit status 3", ended, err)
	}
	err := failed.CheckHealthy()
	for _, want := range []string{"fake exited: exit status 3", "fatal: bad flag", failed.LogPath()} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckHealthy = %v, want it to contain %q", err, want)
		}
	}
}

func TestEachRunIsMarkedInTheLog(t *testing.T) {
	spec := shellSpec(t, "echo run")
	for range 2 {
		waitExit(t, start(t, spec))
	}
	log := readLog(t, &Process{spec: spec})
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("log has %d lines, want a marker and the output per run:\n%s", len(lines), log)
	}
	for i, line := range lines {
		isMarker := strings.HasPrefix(line, RunMarker) && strings.Contains(line, "starting "+spec.Binary+" -c echo run")
		if want := i%2 == 0; isMarker != want {
			t.Errorf("line %d %q: marker = %v, want %v", i, line, isMarker, want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the copying goroutine and the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestStreamGetsACopyOfTheOutput(t *testing.T) {
	var stream syncBuffer
	spec := shellSpec(t, "echo to-out; echo to-err >&2")
	spec.Stream = &stream
	waitExit(t, start(t, spec))
	for _, want := range []string{"to-out", "to-err"} {
		if !strings.Contains(stream.String(), want) {
			t.Errorf("stream %q lacks %q", stream.String(), want)
		}
		if log := readLog(t, &Process{spec: spec}); !strings.Contains(log, want) {
			t.Errorf("log %q lacks %q", log, want)
		}
	}
}

func TestEnvIsAdded(t *testing.T) {
	spec := shellSpec(t, `echo "value=$COPSE_PROCESS_TEST"`)
	spec.Env = []string{"COPSE_PROCESS_TEST=set"}
	p := start(t, spec)
	waitExit(t, p)
	if log := readLog(t, p); !strings.Contains(log, "value=set") {
		t.Errorf("log %q lacks the variable", log)
	}
}

// groupAndSession reads a process's group and session ids from /proc.
func groupAndSession(t *testing.T, pid int) (pgid, sid int) {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid pgrp session ...
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	pgid, _ = strconv.Atoi(fields[2])
	sid, _ = strconv.Atoi(fields[3])
	return pgid, sid
}

func TestGroupsAndSessions(t *testing.T) {
	sleep := lookPath(t, "sleep")
	dir := t.TempDir()
	attached := start(t, Spec{Name: "attached", Binary: sleep, Args: []string{"60"}, LogPath: filepath.Join(dir, "a.log")})
	detached := start(t, Spec{Name: "detached", Binary: sleep, Args: []string{"60"}, LogPath: filepath.Join(dir, "d.log"), Detach: true})
	for _, c := range []struct {
		p           *Process
		wantSession bool
	}{{attached, false}, {detached, true}} {
		pgid, sid := groupAndSession(t, c.p.PID())
		if pgid != c.p.PID() {
			t.Errorf("%s: pgid = %d, want its own group %d", c.p.Name(), pgid, c.p.PID())
		}
		if got := sid == c.p.PID(); got != c.wantSession {
			t.Errorf("%s: leads its own session = %v (sid %d), want %v", c.p.Name(), got, sid, c.wantSession)
		}
	}
}

func TestStopReachesTheWholeGroup(t *testing.T) {
	spec := shellSpec(t, "sleep 60 & echo $! > \"$0.child\"; wait")
	spec.Args = append(spec.Args, spec.LogPath)
	p := start(t, spec)
	childFile := spec.LogPath + ".child"
	var child int
	for deadline := time.Now().Add(5 * time.Second); child == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the shell did not start its child")
		}
		raw, _ := os.ReadFile(childFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !Adopt(Spec{Name: "child"}, child).WaitExit(5 * time.Second) {
		t.Errorf("the shell's child %d survived Stop", child)
	}
}

func TestStopTerminatesAndAdoptedProcessIsTracked(t *testing.T) {
	sleep := lookPath(t, "sleep")
	p := start(t, Spec{Name: "long", Binary: sleep, Args: []string{"60"}, LogPath: filepath.Join(t.TempDir(), "long.log")})
	// The same process seen through a record, as `copse-cluster status`
	// would see it.
	adopted := Adopt(p.Spec(), p.PID())
	if err := adopted.ExitReason(); err != nil {
		t.Fatalf("adopted live process reported dead: %v", err)
	}
	if wrong := Adopt(Spec{Binary: "/not/this/binary"}, p.PID()); wrong.ExitReason() == nil {
		t.Error("a pid running another binary must not count as the process")
	}

	began := time.Now()
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if time.Since(began) > 4*time.Second {
		t.Errorf("Stop took %s; SIGTERM should end sleep at once", time.Since(began))
	}
	if p.ExitReason() == nil {
		t.Error("process still running after Stop")
	}
	if !adopted.WaitExit(5 * time.Second) {
		t.Error("adopted view still sees the stopped process")
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("stopping a stopped process = %v, want nil", err)
	}
}

func TestLogTail(t *testing.T) {
	if got := LastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("LastLines = %q", got)
	}
	if got := LastLines("only", 5); got != "only" {
		t.Errorf("LastLines = %q", got)
	}
	missing := filepath.Join(t.TempDir(), "missing.log")
	if got := LogTail(missing, 5); !strings.HasPrefix(got, "(cannot read "+missing) {
		t.Errorf("LogTail of a missing file = %q, want why it cannot be read", got)
	}
}
