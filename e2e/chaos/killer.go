package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/copse-dev/copse/e2e/framework"
)

// leadershipTimeout bounds the wait for a restarted operator to lead: the
// dead holder's Lease must expire first (4s in the suite).
const leadershipTimeout = 2 * time.Minute

// KillRecord is one kill as it happened.
type KillRecord struct {
	Kill
	// Cause says what fired it: the trigger seen, or that the workload
	// ended before its moment came.
	Cause                            string
	RequestedAt, KilledAt, LeadingAt time.Time
	Err                              error
}

// Exit is an end of the operator the harness did not cause. The manager
// exits when it loses its Lease (a renewal that timed out on a loaded
// machine); a Deployment would restart it, and so does the harness. Any
// other exit is a crash.
type Exit struct {
	At, LeadingAt time.Time
	Err           error
	// LostLease: the operator's last log lines say it lost leader election.
	LostLease bool
	LogTail   string
}

type killRequest struct {
	kill  Kill
	cause string
	at    time.Time
}

// killer SIGKILLs the operator once per planned kill, one kill at a time:
// each waits until the operator that came back leads again, so every kill
// hits an operator that was acting. It also plays the Deployment: an
// operator that exits on its own is started again (supervise).
type killer struct {
	operator *framework.Operator
	out      io.Writer
	start    time.Time
	requests chan killRequest

	// lifecycle is held while the operator is being killed or restarted,
	// so that the supervisor never mistakes a planned kill for an exit.
	lifecycle sync.Mutex

	mu      sync.Mutex
	fired   map[int]bool
	records []KillRecord
	exits   []Exit
}

func newKiller(operator *framework.Operator, kills int, out io.Writer, start time.Time) *killer {
	return &killer{operator: operator, out: out, start: start, requests: make(chan killRequest, kills), fired: map[int]bool{}}
}

// fire asks for kill k; each planned kill is carried out once, whatever
// asks for it again.
func (k *killer) fire(kill Kill, cause string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fired[kill.Index] {
		return
	}
	k.fired[kill.Index] = true
	k.requests <- killRequest{kill: kill, cause: cause, at: time.Now()}
}

func (k *killer) hasFired(index int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fired[index]
}

// run carries out n kills in the order they were asked for, and returns
// once all are done or ctx ends.
func (k *killer) run(ctx context.Context, n int) {
	for range n {
		select {
		case <-ctx.Done():
			return
		case req := <-k.requests:
			rec := k.execute(ctx, req)
			k.mu.Lock()
			k.records = append(k.records, rec)
			k.mu.Unlock()
		}
	}
}

func (k *killer) execute(ctx context.Context, req killRequest) KillRecord {
	rec := KillRecord{Kill: req.kill, Cause: req.cause, RequestedAt: req.at}
	if req.kill.Trigger != TriggerUniform {
		sleep(ctx, time.Until(req.at.Add(req.kill.Delay)))
	}
	k.lifecycle.Lock()
	defer k.lifecycle.Unlock()
	rec.KilledAt = time.Now()
	if err := k.operator.Kill(); err != nil {
		rec.Err = fmt.Errorf("kill %d: %w", req.kill.Index, err)
		return rec
	}
	sleep(ctx, req.kill.Down)
	if err := k.restart(ctx); err != nil {
		rec.Err = fmt.Errorf("kill %d: %w", req.kill.Index, err)
		return rec
	}
	rec.LeadingAt = time.Now()
	fmt.Fprintf(k.out, "[chaos] %s kill %d (%s, w%02d: %s): down %s, leading again at %s\n",
		clock(k.start, rec.KilledAt), rec.Index, rec.Trigger, rec.Workload, rec.Cause, rec.Down, clock(k.start, rec.LeadingAt))
	return rec
}

// restart starts the operator again and waits until it leads.
func (k *killer) restart(ctx context.Context) error {
	var err error
	for range 3 {
		if err = k.operator.Restart(ctx); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	leadCtx, cancel := context.WithTimeout(ctx, leadershipTimeout)
	defer cancel()
	return k.operator.WaitForLeadership(leadCtx)
}

// supervise starts the operator again whenever it exits on its own, until
// ctx ends.
func (k *killer) supervise(ctx context.Context) {
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		k.lifecycle.Lock()
		if running, err := k.operator.Running(); !running {
			tail := lastRunLog(k.operator.LogPath(), 10)
			exit := Exit{At: time.Now(), Err: err, LostLease: strings.Contains(tail, "leader election lost"), LogTail: tail}
			if restartErr := k.restart(ctx); restartErr != nil {
				exit.Err = errors.Join(exit.Err, restartErr)
			} else {
				exit.LeadingAt = time.Now()
			}
			fmt.Fprintf(k.out, "[chaos] %s the operator exited on its own (%v; lost its Lease: %t); started again, leading at %s\n",
				clock(k.start, exit.At), exit.Err, exit.LostLease, clock(k.start, exit.LeadingAt))
			k.mu.Lock()
			k.exits = append(k.exits, exit)
			k.mu.Unlock()
		}
		k.lifecycle.Unlock()
	}
}

func (k *killer) done() ([]KillRecord, []Exit) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]KillRecord(nil), k.records...), append([]Exit(nil), k.exits...)
}

// lastRunLog is the end of the operator log's last run (after its last
// "=====" line), at most n lines.
func lastRunLog(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	text := string(data)
	if i := strings.LastIndex(text, "\n====="); i >= 0 {
		text = text[i+1:]
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// clock is t as an offset from the run's start, e.g. "+83.4s".
func clock(start, t time.Time) string {
	return fmt.Sprintf("+%.1fs", t.Sub(start).Seconds())
}
