package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/copse-dev/copse/e2e/process"
)

// Control-plane faults, for tests of how copse behaves when the API server
// goes away or its storage stalls. They act on the real processes: the
// kube-apiserver is stopped and started again, etcd is frozen with SIGSTOP.

// restartStopGrace is how long a restart waits after SIGTERM before SIGKILL.
// kube-apiserver closes its port at once on SIGTERM but then waits up to a
// minute for open watches to end; they never end by themselves, so waiting
// longer would only lengthen the outage.
const restartStopGrace = 2 * time.Second

// RestartAPIServer stops kube-apiserver (SIGTERM, SIGKILL after 2 seconds),
// keeps it stopped for downFor (0: no longer than it takes), starts it
// again with the same binary and flags, so on the same port with the same
// serving certificate and etcd data, and waits until /readyz answers (up to
// Options.ComponentTimeout, default 2 minutes). The outage lasts about
// downFor plus 4 to 5 seconds on a 2-core machine. Meanwhile every request
// to the API server fails with "connection refused"; clients (controllers,
// kwok, the operator) must reconnect on their own.
//
// CheckHealthy does not report the API server while it restarts. The log
// continues in the same file, after a line marking the restart.
func (c *Cluster) RestartAPIServer(ctx context.Context, downFor time.Duration) error {
	if downFor < 0 {
		return errors.New("restart kube-apiserver: downFor must not be negative")
	}
	if c.restConfig == nil {
		return errors.New("restart kube-apiserver: the cluster has no admin credentials to probe it with")
	}
	return c.restart(ctx, KubeAPIServer, downFor, httpProbe(c.state.APIServerURL+"/readyz", c.restConfig.BearerToken, ""))
}

// restart stops the component called name, waits downFor, and starts it
// again with the same spec, replacing it in c.procs and in the state file.
// It starts the component even when ctx ends meanwhile, so that a cancelled
// test does not leave the cluster without it.
func (c *Cluster) restart(ctx context.Context, name string, downFor time.Duration, check probe) error {
	c.procsMu.Lock()
	index := c.indexLocked(name)
	if index < 0 {
		c.procsMu.Unlock()
		return fmt.Errorf("restart %s: the cluster has no such component", name)
	}
	old := c.procs[index]
	if c.restarting == nil {
		c.restarting = map[string]bool{}
	}
	c.restarting[name] = true
	c.procsMu.Unlock()
	defer func() {
		c.procsMu.Lock()
		delete(c.restarting, name)
		c.procsMu.Unlock()
	}()

	began := time.Now()
	fmt.Fprintf(c.out, "restarting %s\n", name)
	if err := old.Stop(restartStopGrace); err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	stopped := time.Now()
	select {
	case <-time.After(downFor):
	case <-ctx.Done():
	}
	appendLogLine(old.LogPath(), fmt.Sprintf("===== restarted by copse's cluster package at %s =====", time.Now().UTC().Format(time.RFC3339)))
	spec := old.Spec()
	spec.Detach = c.state.Detached
	p, err := process.Start(spec)
	if err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	c.procsMu.Lock()
	c.procs[index] = p
	var stateErr error
	if index < len(c.state.Components) && c.state.Components[index].Name == name {
		c.state.Components[index].PID = p.PID()
		stateErr = writeState(c.layout.state(), c.state)
	}
	c.procsMu.Unlock()
	if stateErr != nil {
		return fmt.Errorf("restart %s: %w", name, stateErr)
	}
	if err := waitHealthy(ctx, p, check, c.componentTimeout()); err != nil {
		return fmt.Errorf("restart %s: %w", name, err)
	}
	fmt.Fprintf(c.out, "%s restarted: down for %s (stopped in %s)\n", name,
		time.Since(began).Round(100*time.Millisecond), stopped.Sub(began).Round(100*time.Millisecond))
	return nil
}

// Pause is a component frozen by SIGSTOP (see PauseEtcd) until it is resumed
// with SIGCONT, when its time is up or by Resume.
type Pause struct {
	name  string
	pid   int
	timer *time.Timer
	done  chan struct{}
	err   error
}

// PauseEtcd freezes etcd with SIGSTOP and resumes it with SIGCONT after d,
// as a stalled disk or a long garbage-collection pause would. It returns at
// once. While etcd is frozen the API server accepts connections, but every
// request that reaches storage (reads without a cache, all writes) waits,
// until etcd is back or the request times out. Stop resumes a frozen etcd
// first.
func (c *Cluster) PauseEtcd(d time.Duration) (*Pause, error) {
	return c.pause(Etcd, d)
}

func (c *Cluster) pause(name string, d time.Duration) (*Pause, error) {
	c.procsMu.Lock()
	defer c.procsMu.Unlock()
	index := c.indexLocked(name)
	if index < 0 {
		return nil, fmt.Errorf("pause %s: the cluster has no such component", name)
	}
	p := c.procs[index]
	if err := p.ExitReason(); err != nil {
		return nil, fmt.Errorf("pause %s: it is not running: %w", name, err)
	}
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pause %s: %w", name, err)
	}
	// kill returns before the signal has stopped every thread: a request
	// already on a thread still running would be answered. The pause begins
	// once the kernel shows each thread stopped.
	if err := waitStopped(p.PID(), 5*time.Second); err != nil {
		return nil, fmt.Errorf("pause %s: %w", name, err)
	}
	fmt.Fprintf(c.out, "paused %s for %s\n", name, d)
	pause := &Pause{name: name, pid: p.PID(), done: make(chan struct{})}
	pause.timer = time.AfterFunc(d, func() { pause.resume() })
	c.pauses = append(c.pauses, pause)
	return pause, nil
}

// Resume ends the pause now, if it has not ended yet, and returns the
// error of SIGCONT, if any. It is safe to call more than once.
func (p *Pause) Resume() error {
	if p.timer.Stop() {
		p.resume()
	}
	return p.Wait()
}

// Done is closed once the component has been resumed.
func (p *Pause) Done() <-chan struct{} { return p.done }

// Wait blocks until the component is resumed and returns the error of
// SIGCONT, if any.
func (p *Pause) Wait() error {
	<-p.done
	return p.err
}

// resume runs once: from the timer, or from Resume when it stopped the
// timer first.
func (p *Pause) resume() {
	if err := syscall.Kill(-p.pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		p.err = fmt.Errorf("resume %s (pid %d): %w", p.name, p.pid, err)
	}
	close(p.done)
}

// resumePaused resumes every component still paused, so that Stop's
// SIGTERM reaches them.
func (c *Cluster) resumePaused() {
	c.procsMu.Lock()
	pauses := c.pauses
	c.pauses = nil
	c.procsMu.Unlock()
	for _, p := range pauses {
		_ = p.Resume()
	}
}

// indexLocked returns the index of the component called name in c.procs, or
// -1. The caller holds procsMu.
func (c *Cluster) indexLocked(name string) int {
	for i, p := range c.procs {
		if p.Name() == name {
			return i
		}
	}
	return -1
}

func (c *Cluster) componentTimeout() time.Duration {
	if c.timeout > 0 {
		return c.timeout
	}
	return defaultComponentTimeout
}

// appendLogLine adds line to a component's log file; a failure only costs
// the marker, so it is ignored.
func appendLogLine(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	_, _ = fmt.Fprintln(f, line)
	_ = f.Close()
}

// waitStopped waits until every thread of process pid is in the stopped
// state ('T' in /proc/<pid>/task/<tid>/stat), at most timeout.
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		stopped, err := allThreadsStopped(pid)
		if err != nil {
			return err
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d: not every thread stopped within %s", pid, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// allThreadsStopped reports whether every thread of pid is stopped.
func allThreadsStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, fmt.Errorf("list the threads of process %d: %w", pid, err)
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			return false, fmt.Errorf("read the state of thread %s of process %d: %w", task.Name(), pid, err)
		}
		// The state follows the command name, which is in parentheses and
		// may itself hold spaces or parentheses: read after the last ')'.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		if state := bytes.Fields(rest); len(state) == 0 || (state[0][0] != 'T' && state[0][0] != 't') {
			return false, nil
		}
	}
	return true, nil
}
