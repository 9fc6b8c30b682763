package predict

import (
	"fmt"
	"testing"

	"github.com/gpusched/gpusched"
)

// The ring of remembered ids holds about the jobs still pending, not every job ever predicted:
// predicting and observing jobs one after another keeps it within twice the pending jobs plus
// pendSlack (without compactPending it holds every id, 6,000 here), while a job predicted first
// and still pending is remembered to the end, in MaxPending's order.
func TestPendingRingStaysSmall(t *testing.T) {
	p, err := New(Options{Seed: 1, MaxPending: 4096})
	if err != nil {
		t.Fatal(err)
	}
	job := func(i int) *gpusched.Job {
		return &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%d", i)), GPUs: 1 + i%4, StepTime: 1,
			Features: gpusched.Features{Group: fmt.Sprintf("g%d", i%7), User: "u"}}
	}
	long := job(-1)
	if _, err := p.Predict(long); err != nil {
		t.Fatal(err)
	}
	for i := range 6000 {
		j := job(i)
		if _, err := p.Predict(j); err != nil {
			t.Fatal(err)
		}
		if err := p.Observe(j, float64(100+i%50)); err != nil {
			t.Fatal(err)
		}
		if n, k := len(p.pendQ), len(p.pending); n > 2*k+pendSlack+1 {
			t.Fatalf("after %d jobs the ring holds %d ids for %d remembered jobs", i+1, n, k)
		}
	}
	if _, ok := p.First(long.ID); !ok {
		t.Fatal("the job predicted first and never observed was forgotten although only it was pending")
	}
	// MaxPending still bounds what is remembered: 4,096 jobs pending at once forget the oldest.
	for i := range 5000 {
		if _, err := p.Predict(job(10000 + i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := p.First(long.ID); ok {
		t.Fatal("more than MaxPending jobs pending, and the oldest is still remembered")
	}
	if n := len(p.pendQ); n > 4096 {
		t.Fatalf("the ring holds %d ids, more than MaxPending 4096", n)
	}
}
