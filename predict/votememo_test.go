package predict

import (
	"fmt"
	"testing"

	"github.com/gpusched/gpusched"
)

// TestVoteMemoChangesNothing: the votes remembered for a predicted job give exactly the
// estimates, conditional estimates and PIT that voting afresh gives, also after a retraining
// has replaced the forest the votes came from.
func TestVoteMemoChangesNothing(t *testing.T) {
	p, recs := trained(t, 800, Options{})
	forget := func(id gpusched.JobID) { // drop the remembered votes, keep the rest
		p.cacheMu.Lock()
		defer p.cacheMu.Unlock()
		if pj, ok := p.pending[id]; ok {
			pj.votes, pj.vmodel = nil, 0
			p.pending[id] = pj
		}
	}
	for round := range 2 {
		for i := 0; i < 40; i++ {
			job := recs[i*7].Job
			job.ID = gpusched.JobID(fmt.Sprintf("memo-%d-%d", round, i))
			first, err := p.Predict(&job)
			if err != nil {
				t.Fatal(err)
			}
			for _, done := range []float64{0, first.P50, first.P90, 3 * first.Iterations} {
				memo, err := p.Conditional(&job, done)
				if err != nil {
					t.Fatal(err)
				}
				forget(job.ID)
				fresh, _ := p.Conditional(&job, done)
				if memo != fresh {
					t.Fatalf("round %d job %d done %v: with memo %+v, afresh %+v", round, i, done, memo, fresh)
				}
			}
			if i%2 == 0 {
				continue // the odd jobs' PITs below; the even ones stay pending
			}
			pj, _ := p.peekContext(job.ID)
			if pj.vmodel == 0 {
				t.Fatalf("job %d: no votes remembered", i)
			}
			sc := p.scratch()
			want, _, _, _ := p.rawDistribution(&job, pj.hist, sc, nil)
			wantPIT := want.pit(2 * first.Iterations)
			p.bufs.Put(sc)
			out, err := p.ObserveOutcome(&job, 2*first.Iterations)
			if err != nil {
				t.Fatal(err)
			}
			if out.PIT != wantPIT {
				t.Fatalf("job %d: PIT %v, afresh %v", i, out.PIT, wantPIT)
			}
		}
		if err := p.Retrain(); err != nil { // a new forest: the memos are stale
			t.Fatal(err)
		}
	}
}
