package cluster

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func shell(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh:", err)
	}
	return sh
}

func TestCheckHealthyReportsCrashWithLog(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess(processSpec{
		name:    "kube-scheduler",
		binary:  shell(t),
		args:    []string{"-c", "echo starting; echo 'fatal: bad flag' >&2; exit 2"},
		logPath: filepath.Join(dir, "scheduler.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !p.waitExit(10 * time.Second) {
		t.Fatal("process did not exit")
	}
	c := &Cluster{procs: []*process{p}}
	err = c.CheckHealthy()
	if err == nil {
		t.Fatal("CheckHealthy passed although the component exited")
	}
	for _, want := range []string{"kube-scheduler exited", "exit status 2", "fatal: bad flag"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if s := c.Components()[0]; s.Alive {
		t.Errorf("Components reports the crashed process alive: %+v", s)
	}
}

// startSleep runs sleep(1) as a component and waits until it has exec'ed:
// until then /proc shows the test binary's command line under its pid.
func startSleep(t *testing.T, dir string) *process {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	p, err := startProcess(processSpec{
		name: "long", binary: sleep, args: []string{"60"},
		logPath: filepath.Join(dir, "long.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.stop(0) })
	for deadline := time.Now().Add(5 * time.Second); !pidRunning(p.pid, sleep); {
		if time.Now().After(deadline) {
			t.Fatal("sleep did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

func TestStopTerminatesAndAdoptedProcessIsTracked(t *testing.T) {
	p := startSleep(t, t.TempDir())
	// The same process seen through a state file, as `copse-cluster status`
	// would see it.
	adopted := &process{name: "long", binary: p.binary, pid: p.pid, logPath: p.logPath}
	if err := adopted.exitErr(); err != nil {
		t.Fatalf("adopted live process reported dead: %v", err)
	}
	if wrong := (&process{pid: p.pid, binary: "/not/this/binary"}); wrong.exitErr() == nil {
		t.Error("a pid running another binary must not count as the component")
	}

	began := time.Now()
	if err := p.stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if time.Since(began) > 4*time.Second {
		t.Errorf("stop took %s; SIGTERM should end sleep at once", time.Since(began))
	}
	if p.exitErr() == nil {
		t.Error("process still running after stop")
	}
	if !adopted.waitExit(5 * time.Second) {
		t.Error("adopted view still sees the stopped process")
	}
}

func TestLastLines(t *testing.T) {
	if got := lastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("lastLines = %q", got)
	}
	if got := lastLines("only", 5); got != "only" {
		t.Errorf("lastLines = %q", got)
	}
}

func TestAddProcessMakesAComponentThatDownStops(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	p, err := StartDetachedProcess("kueue", sleep, []string{"60"}, filepath.Join(dir, "kueue.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })
	for deadline := time.Now().Add(5 * time.Second); !pidRunning(p.PID(), sleep); {
		if time.Now().After(deadline) {
			t.Fatal("sleep did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := &Cluster{dir: dir, layout: layout{dir: dir}, state: state{Version: stateVersion, Dir: dir}}
	if err := c.AddProcess(p); err != nil {
		t.Fatal(err)
	}
	if got := c.Components(); len(got) != 1 || got[0].Name != "kueue" || !got[0].Alive {
		t.Fatalf("Components = %+v, want the added process alive", got)
	}

	// Another process (`copse-cluster down`) finds it in the state file and
	// stops it.
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.Components(); len(got) != 1 || got[0].PID != p.PID() || !got[0].Alive {
		t.Fatalf("loaded Components = %+v, want pid %d alive", got, p.PID())
	}
	if err := loaded.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.ExitReason() == nil {
		t.Error("the added process still runs after Stop")
	}
}
