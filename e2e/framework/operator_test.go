package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
	"github.com/copse-dev/copse/e2e/process"
)

// fakeOperator returns an Operator whose binary is a shell script with the
// given body, logging into a temporary directory. Its health probe address
// answers nothing, so it never becomes ready.
func fakeOperator(t *testing.T, script string) *Operator {
	t.Helper()
	dir := t.TempDir()
	binary := filepath.Join(dir, "fake-operator")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := configv1alpha1.NewDefaultOperatorConfiguration()
	cfg.Server.HealthProbes.BindAddress = "127.0.0.1:1"
	return &Operator{binary: binary, logPath: filepath.Join(dir, "operator.log"), config: cfg, readyTimeout: 5 * time.Second}
}

// run starts the fake operator without waiting for readiness.
func run(t *testing.T, o *Operator) {
	t.Helper()
	proc, err := process.Start(process.Spec{Name: "copse-operator", Binary: o.binary, Args: []string{"--config", "x"}, LogPath: o.logPath})
	if err != nil {
		t.Fatal(err)
	}
	o.proc = proc
	t.Cleanup(func() { _ = o.Kill() })
}

// untilSignalled loops until SIGTERM, then exits with status.
func untilSignalled(status string) string {
	return "trap 'echo terminating; exit " + status + "' TERM\necho running\nwhile :; do sleep 0.1; done"
}

func TestOperatorThatExitsBeforeReadyIsReportedWithItsLog(t *testing.T) {
	o := fakeOperator(t, `echo "panic: cannot load configuration $*"; exit 3`)
	err := o.start(t.Context())
	if err == nil {
		t.Fatal("start succeeded, want the early exit reported")
	}
	for _, want := range []string{"exited before it was ready (exit status 3)", "panic: cannot load configuration --kubeconfig"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error %q does not contain %q", err, want)
		}
	}
	if err := o.CheckHealthy(); err == nil || !strings.Contains(err.Error(), "exited unexpectedly (exit status 3)") {
		t.Errorf("CheckHealthy = %v, want the crash reported", err)
	}
}

func TestOperatorCrashIsReportedByCheckHealthy(t *testing.T) {
	o := fakeOperator(t, `echo "fatal: lost the API server"; exit 2`)
	run(t, o)
	if !o.proc.WaitExit(5 * time.Second) {
		t.Fatal("the fake operator did not exit")
	}
	err := o.CheckHealthy()
	if err == nil {
		t.Fatal("CheckHealthy = nil after a crash")
	}
	for _, want := range []string{"exit status 2", "fatal: lost the API server", o.logPath} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CheckHealthy error %q does not contain %q", err, want)
		}
	}
}

func TestOperatorStopAndKillAreNotCrashes(t *testing.T) {
	for name, end := range map[string]func(*Operator) error{"Stop": (*Operator).Stop, "Kill": (*Operator).Kill} {
		t.Run(name, func(t *testing.T) {
			o := fakeOperator(t, untilSignalled("0"))
			run(t, o)
			waitForLog(t, o.logPath, "running") // the trap is set
			if err := o.CheckHealthy(); err != nil {
				t.Fatalf("CheckHealthy while running = %v", err)
			}
			if err := end(o); err != nil {
				t.Fatalf("%s = %v", name, err)
			}
			if ended, _ := o.proc.Ended(); !ended {
				t.Fatalf("the process still runs after %s", name)
			}
			if err := o.CheckHealthy(); err != nil {
				t.Errorf("CheckHealthy after %s = %v, want nil", name, err)
			}
			if err := end(o); err != nil {
				t.Errorf("a second %s = %v, want nil", name, err)
			}
		})
	}
}

func TestOperatorThatFailsOnSIGTERMIsReportedByStop(t *testing.T) {
	o := fakeOperator(t, untilSignalled("4"))
	run(t, o)
	waitForLog(t, o.logPath, "running")
	err := o.Stop()
	if err == nil || !strings.Contains(err.Error(), "exited with exit status 4 after SIGTERM") || !strings.Contains(err.Error(), "terminating") {
		t.Errorf("Stop = %v, want the unclean exit reported with the log", err)
	}
}

func TestOperatorRestartAppendsToTheLog(t *testing.T) {
	o := fakeOperator(t, untilSignalled("0"))
	o.readyTimeout = 500 * time.Millisecond
	run(t, o)
	waitForLog(t, o.logPath, "running")
	// Restart waits for readiness, which the fake never reaches; the log
	// must still show both runs.
	_ = o.Restart(t.Context())
	data, err := os.ReadFile(o.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), "===== "); got != 2 {
		t.Errorf("log has %d run markers, want 2:\n%s", got, data)
	}
}

func waitForLog(t *testing.T, path, text string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if data, _ := os.ReadFile(path); strings.Contains(string(data), text) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never contained %q", path, text)
}
