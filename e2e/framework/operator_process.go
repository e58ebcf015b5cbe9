package framework

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// operatorProcess is one run of the operator binary.
type operatorProcess struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed once the process has been reaped
	waitErr error         // how it ended; valid once done is closed
}

// startOperatorProcess runs binary with args, appending its output to
// logPath (after a line that marks the run) and, when stream is not nil,
// copying it there too.
func startOperatorProcess(binary string, args []string, logPath string, stream io.Writer) (*operatorProcess, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open operator log: %w", err)
	}
	started := time.Now()
	fmt.Fprintf(logFile, "===== %s: starting %s %s\n", started.Format(time.RFC3339Nano), binary, strings.Join(args, " "))

	var out io.Writer = logFile
	if stream != nil {
		out = io.MultiWriter(logFile, stream)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so that Ctrl-C aimed at the test process does
	// not stop the operator mid-spec; and killed if the test process dies,
	// so that nothing outlives a crashed test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	p := &operatorProcess{cmd: cmd, started: started, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended and, if so, how (nil error
// for exit status 0).
func (p *operatorProcess) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// waitExit waits up to timeout for the process to end.
func (p *operatorProcess) waitExit(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// signal sends sig to the process group (pid == pgid because of Setpgid).
func (p *operatorProcess) signal(sig syscall.Signal) error {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("send %v to copse-operator (pid %d): %w", sig, p.cmd.Process.Pid, err)
	}
	return nil
}

// logTail returns the last n lines of the log at path.
func logTail(path string, n int) string {
	const maxBytes = 64 << 10
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.Size() > maxBytes {
		_, _ = f.Seek(-maxBytes, io.SeekEnd)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
