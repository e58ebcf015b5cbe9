package process

import (
	"io"
	"os"
	"strings"
)

// logTailBytes is how much of the end of a log LogTail reads.
const logTailBytes = 64 << 10

// SkipMarker starts the line a test prints when the machine cannot run it
// (e2e/framework's SetupSuite, for a suite that needs real nodes). The test
// itself passes, having run nothing; e2e/cmd/copse-test finds the line in
// the job's log and reports the job as skipped, with the reason that
// follows the marker, never as passed.
const SkipMarker = "copse-test: SKIPPED: "

// SkipReason is the reason of the first line of a log that starts with
// SkipMarker, or "".
func SkipReason(log string) string {
	for line := range strings.SplitSeq(log, "\n") {
		if reason, ok := strings.CutPrefix(line, SkipMarker); ok {
			return strings.TrimSpace(reason)
		}
	}
	return ""
}

// LogTail is the last n lines of the log at path (read from its last 64 KiB),
// or why it cannot be read: errors quote it, and a missing log must not hide
// the error it was meant to explain.
func LogTail(path string, n int) string {
	data, err := readTail(path, logTailBytes)
	if err != nil {
		return "(cannot read " + path + ": " + err.Error() + ")"
	}
	return LastLines(string(data), n)
}

func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
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

// LastLines is the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
