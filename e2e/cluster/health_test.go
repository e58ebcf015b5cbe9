package cluster

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/copse-dev/copse/e2e/process"
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
	p, err := process.Start(process.Spec{
		Name:    "kube-scheduler",
		Binary:  shell(t),
		Args:    []string{"-c", "echo starting; echo 'fatal: bad flag' >&2; exit 2"},
		LogPath: filepath.Join(dir, "scheduler.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !p.WaitExit(10 * time.Second) {
		t.Fatal("process did not exit")
	}
	c := &Cluster{procs: []*process.Process{p}}
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

// startSleep runs sleep(1) as a component called "long" and waits until
// /proc shows it running sleep.
func startSleep(t *testing.T, dir string) *process.Process {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	p, err := process.Start(process.Spec{
		Name: "long", Binary: sleep, Args: []string{"60"},
		LogPath: filepath.Join(dir, "long.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })
	waitRunning(t, p)
	return p
}

// waitRunning waits until /proc shows p running its binary, as a process
// reading a state file would see it.
func waitRunning(t *testing.T, p *process.Process) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); process.Adopt(p.Spec(), p.PID()).ExitReason() != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start", p.Name())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAddProcessMakesAComponentThatDownStops(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	p, err := process.Start(process.Spec{Name: "kueue", Binary: sleep, Args: []string{"60"}, LogPath: filepath.Join(dir, "kueue.log"), Detach: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })
	waitRunning(t, p)
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
