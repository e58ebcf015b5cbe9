package process

import (
	"io"
	"os"
	"strings"
)

// logTailBytes is how much of the end of a log LogTail reads.
const logTailBytes = 64 << 10

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
