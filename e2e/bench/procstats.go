package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat. The kernel
// exports these in USER_HZ, which is 100 on every Linux architecture Go
// supports (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// ProcStats is what /proc tells about one process.
type ProcStats struct {
	// CPUSeconds is user + system CPU time since the process started.
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSSBytes is VmHWM: the peak resident set size since the start, or
	// since the last ResetPeakRSS.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// RSSBytes is VmRSS, the resident set size now.
	RSSBytes int64 `json:"rssBytes"`
}

// ReadProcStats reads /proc/<pid>/stat and /proc/<pid>/status.
func ReadProcStats(pid int) (ProcStats, error) {
	if pid <= 0 {
		return ProcStats{}, fmt.Errorf("read process stats: no process (pid %d)", pid)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStats{}, fmt.Errorf("read process stats: %w", err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcStats{}, fmt.Errorf("read process stats: %w", err)
	}
	ticks, err := parseStatCPUTicks(string(stat))
	if err != nil {
		return ProcStats{}, fmt.Errorf("read /proc/%d/stat: %w", pid, err)
	}
	hwm, rss, err := parseStatusMemory(string(status))
	if err != nil {
		return ProcStats{}, fmt.Errorf("read /proc/%d/status: %w", pid, err)
	}
	return ProcStats{CPUSeconds: float64(ticks) / userHZ, PeakRSSBytes: hwm, RSSBytes: rss}, nil
}

// ResetPeakRSS sets the process's VmHWM back to its current RSS (writing 5
// to /proc/<pid>/clear_refs, allowed for one's own processes), so that the
// next ReadProcStats reports the peak of what happened in between.
func ResetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// parseStatCPUTicks returns utime + stime (fields 14 and 15 of
// /proc/<pid>/stat). The command name (field 2) is in parentheses and may
// itself contain spaces or parentheses, so fields are counted after the last
// ')'.
func parseStatCPUTicks(stat string) (uint64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("only %d fields after the command name", len(fields))
	}
	u, err := strconv.ParseUint(fields[utime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	s, err := strconv.ParseUint(fields[stime], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return u + s, nil
}

// parseStatusMemory returns VmHWM and VmRSS in bytes.
func parseStatusMemory(status string) (hwm, rss int64, err error) {
	found := 0
	for line := range strings.SplitSeq(status, "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("unexpected %s line %q", key, line)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmHWM" {
			hwm = kb * 1024
		} else {
			rss = kb * 1024
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("no VmHWM and VmRSS lines (a kernel thread, or a process that has exited?)")
	}
	return hwm, rss, nil
}
