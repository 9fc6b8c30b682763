package srpt

import (
	"errors"
	"github.com/gpusched/gpusched/internal/srptq"
	"math"
	"testing"

	"pgregory.net/rapid"
)

var sentinels = []error{ErrInvalidJob, ErrDuplicateJob, ErrUnknownJob, ErrInvalidParameter, ErrTimeOrder, ErrTooLarge}

func checkErr(t *rapid.T, what string, err error) {
	if err == nil {
		return
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: error %v wraps no sentinel", what, err)
}

// TestGarbageNeverPanics feeds hostile values (NaN, infinities, negatives,
// huge numbers, duplicate IDs, absurd GPU counts) to every entry point: each
// must return a result or an error wrapping one of the sentinels, never
// panic.
func TestGarbageNeverPanics(t *testing.T) {
	val := rapid.OneOf(
		rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, math.Copysign(0, -1), 0.5, 1, 3, 1e15, 1e308, math.MaxFloat64, math.SmallestNonzeroFloat64}),
		rapid.Float64(),
	)
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(t, "n")
		jobs := make([]Job, n)
		wjobs := make([]WeightedJob, n)
		gjobs := make([]GangJob, n)
		for i := range jobs {
			id := rapid.IntRange(-2, 3).Draw(t, "id")
			r, s, w := val.Draw(t, "r"), val.Draw(t, "s"), val.Draw(t, "w")
			g := rapid.SampledFrom([]int{-1, 0, 1, 2, 4, 1 << 40}).Draw(t, "g")
			jobs[i] = Job{ID: id, Release: r, Size: s}
			wjobs[i] = WeightedJob{ID: id, Release: r, Size: s, Weight: w}
			gjobs[i] = GangJob{ID: id, Release: r, GPUs: g, ProcTime: s}
		}
		speed := val.Draw(t, "speed")
		G := rapid.SampledFrom([]int{-1, 0, 1, 4, 1 << 40}).Draw(t, "G")
		res := rapid.IntRange(-1, 3).Draw(t, "resolution")

		_, err := Offline(jobs, speed)
		checkErr(t, "Offline", err)
		_, err = completions(jobs, speed, nil)
		checkErr(t, "Completions", err)
		_, err = OfflineWeighted(wjobs, speed)
		checkErr(t, "OfflineWeighted", err)
		_, err = Virtual(gjobs, G)
		checkErr(t, "Virtual", err)
		_, err = LowerBounds(gjobs, G)
		checkErr(t, "LowerBounds", err)
		_, err = SubsetBound(gjobs, G)
		checkErr(t, "SubsetBound", err)
		_, err = ExactOptimum(gjobs, G, res)
		checkErr(t, "ExactOptimum", err)

		q, err := srptq.NewQueue(speed)
		checkErr(t, "NewQueue", err)
		if q == nil {
			q, _ = srptq.NewQueue(1)
		}
		for i, j := range jobs {
			_, err = q.Advance(j.Release, nil)
			checkErr(t, "Advance", err)
			checkErr(t, "Add", q.Add(j.ID, j.Size))
			checkErr(t, "AddWeighted", q.AddWeighted(j.ID+100, j.Size, wjobs[i].Weight))
			checkErr(t, "Update", q.Update(j.ID, val.Draw(t, "u")))
			q.ProjectedCompletion(j.ID)
			q.Rank(j.ID)
			q.Remaining(j.ID)
			if rapid.Bool().Draw(t, "remove") {
				checkErr(t, "Remove", q.Remove(j.ID))
			}
		}
		_, err = q.Advance(val.Draw(t, "end"), nil)
		checkErr(t, "Advance", err)
		q.Order(nil)
	})
}
