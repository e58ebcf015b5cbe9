// Package fuzzinput turns the bytes of a Go fuzz input into the values of a
// structured generator, so that the fuzz tests of several packages can build
// lists of pods, indices and choices from one []byte. Each choice reads one
// byte (two for wider ranges); a mutation of a byte changes one choice,
// which keeps the fuzzer's coverage feedback meaningful. Once the input is
// used up every choice is 0, so generation always ends. It is imported by
// tests only.
package fuzzinput

import (
	"fmt"
	"runtime/metrics"
	"time"
)

// Source hands out the bytes of a fuzz input as choices.
type Source struct {
	data []byte
}

// New returns a Source reading data.
func New(data []byte) *Source { return &Source{data: data} }

// Byte is the next byte; 0 once the input is used up.
func (s *Source) Byte() byte {
	if len(s.data) == 0 {
		return 0
	}
	b := s.data[0]
	s.data = s.data[1:]
	return b
}

// Uint16 is the next two bytes, big-endian.
func (s *Source) Uint16() uint16 { return uint16(s.Byte())<<8 | uint16(s.Byte()) }

// Intn is a number in [0, n); 0 when n <= 1. It reads one byte for n up
// to 256, two above.
func (s *Source) Intn(n int) int {
	switch {
	case n <= 1:
		return 0
	case n <= 256:
		return int(s.Byte()) % n
	default:
		return int(s.Uint16()) % n
	}
}

// IntIn is a number in [lo, hi].
func (s *Source) IntIn(lo, hi int) int { return lo + s.Intn(hi-lo+1) }

// Int32In is a number in [lo, hi].
func (s *Source) Int32In(lo, hi int32) int32 { return int32(s.IntIn(int(lo), int(hi))) }

// Bool is the low bit of the next byte.
func (s *Source) Bool() bool { return s.Byte()&1 == 1 }

// Maybe is true for one byte value in n, so that a rarely wanted choice
// (a nil entry, an absurd value) stays rare among random bytes.
func (s *Source) Maybe(n int) bool { return s.Intn(n) == 0 }

// Pick is one of options (which must not be empty).
func Pick[T any](s *Source, options ...T) T { return options[s.Intn(len(options))] }

// Limits on one call of RunBounded.
const (
	maxHeapGrowth = 64 << 20
	maxDuration   = 10 * time.Second
)

// RunBounded runs f, and crashes the test binary if f allocates more than
// 64 MiB or runs longer than 10 seconds. It is for functions whose cost may
// depend on the numbers in their input rather than on its length: an input
// that would exhaust memory (or never end) fails as a crash, which the
// fuzzer records like any other failure, instead of taking the machine
// down. The limits are far above what a well-behaved call needs; what
// tripped them is in the panic message.
func RunBounded(what string, f func()) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocated := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base, start := allocated(), time.Now()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if grown := allocated() - base; grown > maxHeapGrowth {
				panic(fmt.Sprintf("%s allocated %d MiB, more than the limit of %d MiB", what, grown>>20, maxHeapGrowth>>20))
			}
			if elapsed := time.Since(start); elapsed > maxDuration {
				panic(fmt.Sprintf("%s ran for %s, longer than the limit of %s", what, elapsed.Round(time.Second), maxDuration))
			}
		}
	}()
	defer close(done)
	f()
}
