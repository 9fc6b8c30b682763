package srpt

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSortByReleaseID checks the radix path (and the small-input path)
// against a comparison sort, including -0, equal releases, negative and
// huge IDs, and duplicate detection.
func TestSortByReleaseID(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 1500).Draw(t, "n")
		rels := []float64{0, math.Copysign(0, -1), 0.5, 1, 1e-300, 3, 1e300, math.MaxFloat64}
		idGen := rapid.OneOf(rapid.IntRange(-3000, 3000), rapid.SampledFrom([]int{math.MinInt, math.MaxInt, -1, 0}))
		keys := make([]sortKey, n)
		relOf := make([]float64, n) // by idx: the float value, for the reference
		seen := map[int]bool{}
		hasDup := false
		for i := range keys {
			var r float64
			if rapid.Bool().Draw(t, "fixed") {
				r = rapid.SampledFrom(rels).Draw(t, "r")
			} else {
				r = rapid.Float64Range(0, 1e6).Draw(t, "r")
			}
			id := idGen.Draw(t, "id")
			hasDup = hasDup || seen[id]
			seen[id] = true
			keys[i] = sortKey{rel: relBits(r), id: id, idx: int32(i)}
			relOf[i] = r
		}
		want := slices.Clone(keys)
		slices.SortFunc(want, func(a, b sortKey) int {
			if c := cmp.Compare(relOf[a.idx], relOf[b.idx]); c != 0 { // -0 == +0
				return c
			}
			return cmp.Compare(a.id, b.id)
		})
		idsSorted := slices.IsSortedFunc(keys, func(a, b sortKey) int { return cmp.Compare(a.id, b.id) }) && !hasDup
		_, dup := sortByReleaseID(keys, idsSorted, false)
		if dup != hasDup {
			t.Fatalf("duplicate reported %v, want %v", dup, hasDup)
		}
		if !dup && !slices.Equal(keys, want) {
			t.Fatalf("radix order differs from comparison sort")
		}
	})
}

// TestOfflineLargeShuffled runs the unsorted-input path (radix sort) on
// instances large enough to use it and compares with the sorted-input path.
func TestOfflineLargeShuffled(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(256, 1200).Draw(t, "n")
		jobs := make([]Job, n)
		for i := range jobs {
			jobs[i] = Job{ID: 7*i - 500, Release: float64(rapid.IntRange(0, 300).Draw(t, "r")) / 4, Size: float64(rapid.IntRange(0, 8).Draw(t, "s")) / 4}
		}
		perm := rapid.Permutation(jobs).Draw(t, "perm")
		sorted := slices.Clone(jobs)
		slices.SortFunc(sorted, func(a, b Job) int {
			if c := cmp.Compare(a.Release, b.Release); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		a, err := Offline(sorted, 1)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Offline(perm, 1)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[int]float64{}
		for i, j := range sorted {
			byID[j.ID] = a.Completion[i]
		}
		for i, j := range perm {
			if byID[j.ID] != b.Completion[i] {
				t.Fatalf("job %d: %v shuffled, %v sorted", j.ID, b.Completion[i], byID[j.ID])
			}
		}
		if !slices.Equal(a.Segments, b.Segments) {
			t.Fatal("segments differ")
		}
		// A duplicate far apart is caught on the radix path too.
		perm[n-1].ID = perm[0].ID
		if _, err := Offline(perm, 1); !errors.Is(err, ErrDuplicateJob) {
			t.Fatalf("duplicate not caught: %v", err)
		}
	})
}
