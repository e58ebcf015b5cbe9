package bench

import (
	"math"
	"slices"
)

// Summary is the spread of one figure over repetitions.
type Summary struct {
	Min     float64   `json:"min"`
	Median  float64   `json:"median"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples"`
}

// Summarize returns min, median and max of samples (the mean of the middle
// two for an even count). NaN samples (runs that produced no value) are left
// out; with none left every field is NaN-free zero and Samples is empty.
func Summarize(samples []float64) Summary {
	var clean []float64
	for _, s := range samples {
		if !math.IsNaN(s) && !math.IsInf(s, 0) {
			clean = append(clean, s)
		}
	}
	if len(clean) == 0 {
		return Summary{Samples: []float64{}}
	}
	sorted := slices.Clone(clean)
	slices.Sort(sorted)
	n := len(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return Summary{Min: sorted[0], Median: median, Max: sorted[n-1], Samples: clean}
}

// Empty reports whether the summary holds no sample.
func (s Summary) Empty() bool { return len(s.Samples) == 0 }

// PairedRatios divides a[i] by b[i] for the repetitions where both exist and
// b is not zero: each repetition's figure against the reference measured
// right next to it.
func PairedRatios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if math.IsNaN(a[i]) || math.IsNaN(b[i]) || b[i] == 0 {
			continue
		}
		out = append(out, a[i]/b[i])
	}
	return out
}
