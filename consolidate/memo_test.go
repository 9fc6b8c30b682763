package consolidate

import (
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// flatCost is a cost model in which a job's time depends only on whether it spans one server:
// most proposals are no faster than the placement they would replace, as for the
// bandwidth-bound jobs of a real trace, so the memo's cached "no" answers are exercised.
type flatCost struct{}

func (flatCost) StepCost(j *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID, _ topology.LinkLoad) (gpusched.StepCost, error) {
	if c.ServersSpanned(gpus) > 1 {
		return gpusched.StepCost{Time: 2 * j.StepTime}, nil
	}
	return gpusched.StepCost{Time: j.StepTime}, nil
}

// TestMemoChangesNothing: a Consolidator with Options.Memo, called again and again on one
// scene whose decision keeps a changing subset of the jobs (so the free GPUs change) and whose
// jobs progress, makes exactly the moves and decisions a Consolidator without it makes, also
// when the caller changes the decisions it got back.
func TestMemoChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v, d0 := scene(t)
		var cost gpusched.CostModel = spreadCost{}
		if rapid.Bool().Draw(t, "flat") {
			cost = flatCost{}
		}
		memo, err := New(Options{Cost: cost, Memo: true})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := New(Options{Cost: cost})
		if err != nil {
			t.Fatal(err)
		}
		for round := range rapid.IntRange(1, 8).Draw(t, "rounds") {
			var d gpusched.Decision
			for _, a := range d0.Run {
				if rapid.IntRange(0, 4).Draw(t, "drop") > 0 {
					d.Run = append(d.Run, gpusched.Assignment{Job: a.Job, GPUs: slices.Clone(a.GPUs)})
				}
			}
			for i := range v.Running {
				v.Running[i].Iterations += rapid.Float64Range(0, 50).Draw(t, "progress")
			}
			dm := gpusched.Decision{Run: slices.Clone(d.Run)}
			want, err := plain.Apply(v, &d)
			if err != nil {
				t.Fatal(err)
			}
			got, err := memo.Apply(v, &dm)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, func(a, b Move) bool {
				return a.Job == b.Job && slices.Equal(a.From, b.From) && slices.Equal(a.To, b.To) && a.OldTime == b.OldTime && a.NewTime == b.NewTime
			}) {
				t.Fatalf("round %d: moves with memo %+v, without %+v", round, got, want)
			}
			if !slices.EqualFunc(dm.Run, d.Run, func(a, b gpusched.Assignment) bool { return a.Job == b.Job && slices.Equal(a.GPUs, b.GPUs) }) {
				t.Fatalf("round %d: decision with memo %v, without %v", round, dm.Run, d.Run)
			}
			for _, a := range dm.Run { // the caller owns what it got back
				for i := range a.GPUs {
					a.GPUs[i] = -1
				}
			}
		}
	})
}
