package indexset

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/copse-dev/copse/internal/fuzzinput"
)

// FuzzParse reads any string as a record of a clique of `below` replicas.
// Parse must refuse it with an error that quotes it, or return a set of
// indices below `below` whose String is canonical (it parses back to the
// same set and is written the same way again). A record is
// status.succeededIndexes, which any client allowed to write a PodClique's
// status can set, and both controllers parse it on every pass: a record
// whose numbers describe a huge set must not make Parse exhaust memory or
// run without end (fuzzinput.RunBounded turns that into a crash). Replicas
// are drawn up to 65535, above the operator's largest allowed replica.
func FuzzParse(f *testing.F) {
	// The inputs of TestRoundTrip and TestParseRejects.
	for _, s := range []string{"", "0", "0-3,7", "3,0,1,2", "0-2,3-4,6", "5-5", "9-10,1", "a", "-1", "3-1", "1,,2", "1-", "1-x"} {
		f.Add(s, uint16(64))
	}
	f.Fuzz(func(t *testing.T, s string, replicas uint16) {
		below := int(replicas)
		var set Set
		var err error
		parse := func() { set, err = Parse(s, below) }
		if describedIndices(s) > 1<<16 {
			fuzzinput.RunBounded(fmt.Sprintf("Parse(%q, %d)", s, below), parse)
		} else {
			parse()
		}
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("Parse(%q, %d) error %q does not quote the input", s, below, err)
			}
			return
		}
		for i, in := range set {
			if i < 0 || i >= below || !in {
				t.Fatalf("Parse(%q, %d) holds %d: %v", s, below, i, in)
			}
		}
		expectCanonical(t, set)
	})
}

// FuzzString writes sets of indices: String must give the canonical form
// (ascending parts, ranges merged), which Parse reads back to the same set.
func FuzzString(f *testing.F) {
	// The sets of TestRoundTrip and TestAddAndCount.
	for _, indices := range [][]int{{}, {0}, {0, 1, 2, 3, 7}, {0, 1, 2, 3, 4, 6}, {5}, {1, 9, 10}, {1, 4, 9}} {
		f.Add(encodeIndices(indices))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := fuzzinput.New(data)
		set := Set{}
		for range src.Intn(64) {
			// Mostly small indices, so that neighbours, and thus ranges,
			// are common.
			if src.Bool() {
				set.Add(src.Intn(48))
			} else {
				set.Add(src.Intn(1 << 12))
			}
		}
		expectCanonical(t, set)
		below := src.Intn(1 << 12)
		want := 0
		for i := range set {
			if i < below {
				want++
			}
		}
		if got := set.CountBelow(below); got != want {
			t.Fatalf("%v.CountBelow(%d) = %d, want %d", set, below, got, want)
		}
	})
}

// encodeIndices is the input FuzzString reads back as indices (each below
// 1<<12); each index is read as a large one.
func encodeIndices(indices []int) []byte {
	out := []byte{byte(len(indices))}
	for _, i := range indices {
		out = append(out, 0, byte(i>>8), byte(i))
	}
	return out
}

// expectCanonical checks that set.String() is the canonical form of set:
// parts in ascending order, each a number or a range lo-hi with lo < hi,
// with a gap between consecutive parts, describing exactly set; and that
// Parse reads it back to set.
func expectCanonical(t *testing.T, set Set) {
	t.Helper()
	written := set.String()
	back, err := Parse(written, math.MaxInt)
	if err != nil {
		t.Fatalf("Parse(%q), written by String, fails: %v", written, err)
	}
	if !maps.Equal(back, set) {
		t.Fatalf("Parse(String(set)) = %v, want %v (written %q)", back, set, written)
	}
	if written == "" {
		if len(set) != 0 {
			t.Fatalf("String of %v is empty", set)
		}
		return
	}
	previous, described := -2, 0
	for part := range strings.SplitSeq(written, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, errLo := strconv.Atoi(lo)
		last, errHi := first, error(nil)
		if isRange {
			last, errHi = strconv.Atoi(hi)
		}
		if errLo != nil || errHi != nil || strconv.Itoa(first) != lo || (isRange && (last <= first || strconv.Itoa(last) != hi)) {
			t.Fatalf("String wrote %q: part %q is not a plain number or ascending range", written, part)
		}
		if first <= previous+1 {
			t.Fatalf("String wrote %q: part %q does not start after a gap following %d", written, part, previous)
		}
		previous, described = last, described+last-first+1
	}
	if described != len(set) {
		t.Fatalf("String wrote %q for a set of %d indices; it describes %d", written, len(set), described)
	}
}

// describedIndices is an upper bound of how many indices Parse would
// materialize for s (it reads the parts as Parse does, saturating), so that
// only records describing large sets pay for fuzzinput.RunBounded.
func describedIndices(s string) int {
	total := 0
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		if last >= first {
			width := uint64(last) - uint64(first) + 1
			if width == 0 || width > math.MaxInt-uint64(total) {
				return math.MaxInt
			}
			total += int(width)
		}
	}
	return total
}
