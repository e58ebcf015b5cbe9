package chaos

import (
	"context"
	"fmt"
	"io"
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

type killRequest struct {
	kill  Kill
	cause string
	at    time.Time
}

// killer SIGKILLs the operator once per planned kill, one kill at a time:
// each waits until the operator that came back leads again, so every kill
// hits an operator that was acting.
type killer struct {
	operator *framework.Operator
	out      io.Writer
	start    time.Time
	requests chan killRequest

	mu      sync.Mutex
	fired   map[int]bool
	records []KillRecord
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
	rec.KilledAt = time.Now()
	if err := k.operator.Kill(); err != nil {
		rec.Err = fmt.Errorf("kill %d: %w", req.kill.Index, err)
		return rec
	}
	sleep(ctx, req.kill.Down)
	var err error
	for range 3 {
		if err = k.operator.Restart(ctx); err == nil {
			break
		}
	}
	if err != nil {
		rec.Err = fmt.Errorf("kill %d: restart: %w", req.kill.Index, err)
		return rec
	}
	leadCtx, cancel := context.WithTimeout(ctx, leadershipTimeout)
	defer cancel()
	if err := k.operator.WaitForLeadership(leadCtx); err != nil {
		rec.Err = fmt.Errorf("kill %d: %w", req.kill.Index, err)
		return rec
	}
	rec.LeadingAt = time.Now()
	fmt.Fprintf(k.out, "[chaos] %s kill %d (%s, w%02d: %s): down %s, leading again at %s\n",
		clock(k.start, rec.KilledAt), rec.Index, rec.Trigger, rec.Workload, rec.Cause, rec.Down, clock(k.start, rec.LeadingAt))
	return rec
}

func (k *killer) done() []KillRecord {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]KillRecord(nil), k.records...)
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
