// Package process is the one launcher of local processes in copse's tests and
// tools: the local control plane's components (e2e/cluster), the operator and
// the third-party controllers run next to it (e2e/framework), and the demo's
// long-lived processes (e2e/demo). Every process gets its own process group,
// so that Ctrl-C aimed at the caller does not reach it and a stop reaches
// all it started; it is killed when the caller dies unless it is detached;
// and its output is appended to a log file after a line that marks the run.
package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// RunMarker begins the line Start writes to the log before each run's
// output, so that a reader can find where the latest run begins.
const RunMarker = "===== "

// killWait is how long Stop waits for a process to end after SIGKILL.
const killWait = 5 * time.Second

// Spec says what to run and where its output goes.
type Spec struct {
	// Name names the process in messages ("kube-apiserver", "copse-operator").
	Name string
	// Binary is the path of the program, Args its arguments.
	Binary string
	Args   []string
	// Env is added to the caller's environment ("KEY=value").
	Env []string
	// LogPath receives standard output and standard error, appended.
	LogPath string
	// Stream, when set, receives a copy of the output as well.
	Stream io.Writer
	// Detach makes the process outlive the caller (the CLI's `up`, the
	// demo): it runs in a session of its own, with no controlling terminal.
	// Otherwise the kernel kills it when the caller dies, so that a test
	// binary that crashes or is interrupted leaves nothing behind.
	Detach bool
}

// Process is one run of a program: started by this process (its exit is
// observed through Wait) or adopted from a record another process wrote
// (only its pid is known).
type Process struct {
	spec    Spec
	pid     int
	started time.Time // zero when adopted

	cmd     *exec.Cmd     // nil when adopted
	done    chan struct{} // closed once cmd.Wait returned
	waitErr error         // how it ended (nil for exit status 0); valid once done is closed
}

// Start runs spec.Binary, appending its output to spec.LogPath after a line
// that marks the run. It does not wait for anything but the exec.
func Start(spec Spec) (*Process, error) {
	logFile, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log: %w", spec.Name, err)
	}
	started := time.Now()
	fmt.Fprintf(logFile, "%s%s: starting %s %s\n", RunMarker, started.Format(time.RFC3339Nano), spec.Binary, strings.Join(spec.Args, " "))

	// Not CommandContext: a process lives until it is stopped, not as long
	// as the context of the call that started it.
	cmd := exec.Command(spec.Binary, spec.Args...)
	var out io.Writer = logFile
	if spec.Stream != nil {
		out = io.MultiWriter(logFile, spec.Stream)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), spec.Env...)
	if spec.Detach {
		// A new session: neither Ctrl-C in the shell that started it nor
		// that shell exiting reaches the process.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// Its own process group, so that signals aimed at the caller's
		// group (Ctrl-C) do not hit it mid-test; Stop ends it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	if spec.Stream == nil {
		// The child holds its own descriptor of the file.
		_ = logFile.Close()
	}
	p := &Process{spec: spec, pid: cmd.Process.Pid, started: started, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		if spec.Stream != nil {
			_ = logFile.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Adopt is the process pid that another process started from spec (a
// cluster's state file, a demo's pid file). Only the pid is known: whether
// it runs is read from /proc, where a pid that now runs another binary than
// spec.Binary (when set) counts as ended.
func Adopt(spec Spec, pid int) *Process {
	return &Process{spec: spec, pid: pid}
}

// Spec is what the process was started from.
func (p *Process) Spec() Spec { return p.spec }

// Name names the process in messages.
func (p *Process) Name() string { return p.spec.Name }

// PID is the process id; it is also the id of the process's group.
func (p *Process) PID() int { return p.pid }

// Started is when Start began the run (zero for an adopted process).
func (p *Process) Started() time.Time { return p.started }

// LogPath is the file its output is appended to.
func (p *Process) LogPath() string { return p.spec.LogPath }

// Ended reports whether the process has ended and, if so, how: a nil error
// is exit status 0. An adopted process that is gone ended in a way only its
// reaper knows.
func (p *Process) Ended() (bool, error) {
	if p.cmd != nil {
		select {
		case <-p.done:
			return true, p.waitErr
		default:
			return false, nil
		}
	}
	if !pidRunning(p.pid, p.spec.Binary) {
		return true, errors.New("process is gone")
	}
	return false, nil
}

// ExitReason is how the process ended ("exit status 1", "signal: killed",
// "exit status 0"), or nil while it runs.
func (p *Process) ExitReason() error {
	ended, err := p.Ended()
	switch {
	case !ended:
		return nil
	case err == nil:
		return errors.New("exit status 0")
	default:
		return err
	}
}

// CheckHealthy reports a process that has ended, with the end of its log,
// which usually names the reason.
func (p *Process) CheckHealthy() error {
	if err := p.ExitReason(); err != nil {
		return p.CrashError(err)
	}
	return nil
}

// CrashError describes the process as ended by err, with the end of its log.
func (p *Process) CrashError(err error) error {
	return fmt.Errorf("%s exited: %w; last log lines (%s):\n%s", p.spec.Name, err, p.spec.LogPath, p.LogTail(20))
}

// LogTail is the last n lines of the process's log.
func (p *Process) LogTail(n int) string { return LogTail(p.spec.LogPath, n) }

// Signal sends sig to the process's group (pid == pgid: Start gives every
// process a group or a session of its own). A process already gone is not
// an error.
func (p *Process) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("send %v to %s (pid %d): %w", sig, p.spec.Name, p.pid, err)
	}
	return nil
}

// WaitExit waits up to timeout for the process to end and reports whether
// it has.
func (p *Process) WaitExit(timeout time.Duration) bool {
	if p.cmd != nil {
		select {
		case <-p.done:
			return true
		case <-time.After(timeout):
			return false
		}
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !pidRunning(p.pid, p.spec.Binary) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return !pidRunning(p.pid, p.spec.Binary)
}

// Wait blocks until the process has ended and returns how, as Ended does.
func (p *Process) Wait() error {
	if p.cmd != nil {
		<-p.done
		return p.waitErr
	}
	for !p.WaitExit(time.Hour) {
	}
	_, err := p.Ended()
	return err
}

// Stop sends SIGTERM to the process's group, then SIGKILL if it has not
// ended after grace. Stopping an ended process does nothing; a process that
// outlives SIGKILL is an error.
func (p *Process) Stop(grace time.Duration) error {
	if ended, _ := p.Ended(); ended {
		return nil
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if p.WaitExit(grace) {
		return nil
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	if p.WaitExit(killWait) {
		return nil
	}
	return fmt.Errorf("stop %s (pid %d): still running after SIGKILL", p.spec.Name, p.pid)
}

// pidRunning reports whether pid is a live (not zombie) process running
// binary (any binary when empty). Checking the command line guards against
// a recycled pid when a record is older than the process it names.
func pidRunning(pid int, binary string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...; comm may itself contain ") ".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		if state := stat[i+2]; state == 'Z' || state == 'X' {
			return false
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return binary == "" || string(argv0) == binary
}
