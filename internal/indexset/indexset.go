// Package indexset reads and writes sets of pod indices in the compact form
// of the Job API's completedIndexes: ascending, comma-separated numbers and
// inclusive ranges, e.g. "0-3,7,9-10". A PodClique records the indices whose
// pod exited 0 in this form, so the record stays small for large cliques.
package indexset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Set is a set of non-negative indices.
type Set map[int]bool

// Parse reads the compact form, keeping the indices below `below` (a
// clique's replicas): a record never needs more, and a range written wrongly
// or by someone else ("0-4000000000") cannot make the set huge. The empty
// string is the empty set.
func Parse(s string, below int) (Set, error) {
	out := Set{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			return nil, fmt.Errorf("index set %q: %q is not a non-negative number", s, lo)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return nil, fmt.Errorf("index set %q: range %q is not ascending", s, part)
			}
		}
		for i := first; i <= min(last, below-1); i++ {
			out[i] = true
		}
	}
	return out, nil
}

// String writes the compact form, ranges merged.
func (s Set) String() string {
	indices := make([]int, 0, len(s))
	for i, in := range s {
		if in {
			indices = append(indices, i)
		}
	}
	slices.Sort(indices)
	var b strings.Builder
	for i := 0; i < len(indices); {
		j := i
		for j+1 < len(indices) && indices[j+1] == indices[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(indices[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(indices[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Has reports whether i is in the set.
func (s Set) Has(i int) bool { return s[i] }

// Add puts i in the set and reports whether it was new.
func (s Set) Add(i int) bool {
	if s[i] {
		return false
	}
	s[i] = true
	return true
}

// CountBelow is how many indices of the set are below n.
func (s Set) CountBelow(n int) int {
	count := 0
	for i, in := range s {
		if in && i < n {
			count++
		}
	}
	return count
}
