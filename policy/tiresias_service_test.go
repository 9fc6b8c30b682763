package policy

import (
	"testing"

	"github.com/gpusched/gpusched"
)

// TestTiresiasPlainTime: an 8-GPU job that ran 1,000 s (8,000 GPU-seconds) and a 1-GPU job
// that ran 4,000 s, thresholds 3,250 and 7,200. On GPU-time (2D-LAS) the wide job has the
// more service (queue 2 against 1); on plain time (LAS) the long one has (queue 1 against 0),
// and a waiting 8-GPU job that needs the cluster preempts the other one in each case.
func TestTiresiasPlainTime(t *testing.T) {
	c := cluster(t, 8, 8)
	wide, long, late := job("wide", 8, 0, 1), job("long", 1, 0, 1), job("late", 8, 5000, 1)
	now := 5000.0
	v := gpusched.View{Now: now, Cluster: c,
		Running: []gpusched.JobStatus{running(wide, now, now-1000, gpuRange(0, 8)...), running(long, now, now-4000, 8)},
		Pending: []gpusched.JobStatus{waiting(late)}}
	for _, tc := range []struct {
		svc              Service
		qWide, qLong     int
		preempted, keeps string
	}{
		{GPUTime, 2, 1, "wide", "long"},
		{PlainTime, 0, 1, "long", "wide"},
	} {
		tir, err := newTiresias(TiresiasOptions{Service: tc.svc})
		if err != nil {
			t.Fatal(err)
		}
		d := decide(t, tir, v)
		qw, _ := tir.Queue("wide")
		ql, _ := tir.Queue("long")
		if qw != tc.qWide || ql != tc.qLong {
			t.Errorf("service %d: queues wide %d long %d, want %d %d", tc.svc, qw, ql, tc.qWide, tc.qLong)
		}
		got := runs(d)
		has := func(id string) bool {
			for _, r := range got {
				if r == id {
					return true
				}
			}
			return false
		}
		if has(tc.preempted) || !has(tc.keeps) || !has("late") {
			t.Errorf("service %d: runs %v, want %s and late (and not %s)", tc.svc, got, tc.keeps, tc.preempted)
		}
	}
	if _, err := newTiresias(TiresiasOptions{Service: 7}); err == nil {
		t.Error("unknown Service: no error")
	}
}
