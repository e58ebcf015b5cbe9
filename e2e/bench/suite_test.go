package bench

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The specs here check the benchmark's pure parts (statistics, /proc and
// metrics parsing, the JobSet object, the plain client's pods) and start no
// cluster; `make bench-smoke` runs the benchmark itself.
func TestBench(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Benchmark Suite")
}
