package framework

// PID is the process id of the running operator, or 0 if it is not running
// (never started, stopped or killed). It changes with every Restart. The
// benchmark (e2e/bench) reads the process's CPU time and peak memory from
// /proc/<pid>.
func (o *Operator) PID() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.proc == nil {
		return 0
	}
	if ended, _ := o.proc.Ended(); ended {
		return 0
	}
	return o.proc.PID()
}
