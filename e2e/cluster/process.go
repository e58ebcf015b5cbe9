package cluster

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

// process is one control-plane component started by this package, either by
// this Go process (cmd set, exit observed through Wait) or by an earlier one
// and adopted from the state file (only the pid is known).
type process struct {
	name    string
	binary  string
	args    []string
	env     []string // added to the environment; not recorded in the state file
	logPath string
	pid     int

	cmd     *exec.Cmd
	done    chan struct{} // closed once cmd.Wait returned
	waitErr error         // valid after done is closed
}

type processSpec struct {
	name    string
	binary  string
	args    []string
	env     []string // added to this process's environment
	logPath string
	// detach makes the component outlive this process (the CLI's `up`).
	// Otherwise the kernel kills it when this process dies, so a test binary
	// that crashes or is interrupted leaves nothing behind.
	detach bool
}

func startProcess(spec processSpec) (*process, error) {
	logFile, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: open log: %w", spec.name, err)
	}
	// The child holds its own descriptor once started.
	defer logFile.Close()

	// Not CommandContext: a component lives as long as its cluster, not as
	// long as the context of the call that started it.
	cmd := exec.Command(spec.binary, spec.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), spec.env...)
	if spec.detach {
		// A new session: no controlling terminal, so neither Ctrl-C in the
		// shell that ran `up` nor that shell exiting reaches the component.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// Own process group so that signals aimed at the test binary's group
		// (Ctrl-C) do not hit components mid-test; Stop terminates them.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.name, err)
	}
	p := &process{
		name:    spec.name,
		binary:  spec.binary,
		args:    spec.args,
		env:     spec.env,
		logPath: spec.logPath,
		pid:     cmd.Process.Pid,
		cmd:     cmd,
		done:    make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		if p.waitErr == nil {
			p.waitErr = errors.New("exit status 0")
		}
		close(p.done)
	}()
	return p, nil
}

// exitErr reports whether the process has ended, and how. nil means it is
// still running.
func (p *process) exitErr() error {
	if p.cmd != nil {
		select {
		case <-p.done:
			return p.waitErr
		default:
			return nil
		}
	}
	if !pidRunning(p.pid, p.binary) {
		// The exit status went to whoever reaped it; only the fact is known.
		return errors.New("process is gone")
	}
	return nil
}

// crashError describes an ended component with the end of its log, which
// usually names the reason.
func (p *process) crashError(err error) error {
	return fmt.Errorf("%s exited: %v; last log lines (%s):\n%s", p.name, err, p.logPath, p.logTail(20))
}

// stop sends SIGTERM to the component's process group, then SIGKILL if it
// has not exited after grace.
func (p *process) stop(grace time.Duration) error {
	if p.exitErr() != nil {
		return nil
	}
	// pid == pgid because of Setpgid/Setsid.
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	if p.waitExit(grace) {
		return nil
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	if p.waitExit(5 * time.Second) {
		return nil
	}
	return fmt.Errorf("stop %s (pid %d): still running after SIGKILL", p.name, p.pid)
}

func (p *process) waitExit(timeout time.Duration) bool {
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
		if !pidRunning(p.pid, p.binary) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return !pidRunning(p.pid, p.binary)
}

func (p *process) logTail(n int) string {
	data, err := readTail(p.logPath, 64<<10)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	return lastLines(string(data), n)
}

// pidRunning reports whether pid is a live (not zombie) process running
// binary. Checking the command line guards against a recycled pid when the
// state file is older than the processes it names.
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

func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Process is a local process run next to a cluster, such as a controller a
// benchmark compares copse with. Like the cluster's own components it has its
// own process group, is killed if this process dies, and appends its output
// to a log file.
type Process struct{ p *process }

// StartProcess starts binary with args, appending its output to logPath.
func StartProcess(name, binary string, args []string, logPath string) (*Process, error) {
	return startPublicProcess(processSpec{name: name, binary: binary, args: args, logPath: logPath})
}

// StartProcessWithEnv is StartProcess with env ("KEY=value") added to the
// process's environment.
func StartProcessWithEnv(name, binary string, args, env []string, logPath string) (*Process, error) {
	return startPublicProcess(processSpec{name: name, binary: binary, args: args, env: env, logPath: logPath})
}

// StartDetachedProcess is StartProcess for a process that outlives this one
// (as the CLI's `up` components do): it runs in a session of its own and is
// not killed when this process dies.
func StartDetachedProcess(name, binary string, args []string, logPath string) (*Process, error) {
	return startPublicProcess(processSpec{name: name, binary: binary, args: args, logPath: logPath, detach: true})
}

func startPublicProcess(spec processSpec) (*Process, error) {
	p, err := startProcess(spec)
	if err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// PID is the process id, or 0 once the process has exited.
func (p *Process) PID() int {
	if p.p.exitErr() != nil {
		return 0
	}
	return p.p.pid
}

// ExitReason is how the process ended (e.g. "exit status 1"), or nil while
// it runs.
func (p *Process) ExitReason() error { return p.p.exitErr() }

// CheckHealthy reports a process that has exited, with the end of its log.
func (p *Process) CheckHealthy() error {
	if err := p.p.exitErr(); err != nil {
		return p.p.crashError(err)
	}
	return nil
}

// Stop sends SIGTERM to the process group, and SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) error { return p.p.stop(grace) }
