package host_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// reporting is a chaos scheduler that records every completion it is told of in a map kept
// outside it (so that a scheduler built after a restart writes to the same one).
type reporting struct {
	chaos
	told map[gpusched.JobID]int
}

func (s *reporting) JobCompleted(c gpusched.Completion) { s.told[c.Job.ID]++ }

// FuzzRuntime drives a runtime with random submissions (good and bad), chaotic decisions,
// reports, failures, drains, returns, cluster changes, finishes, cancellations and restarts
// (SaveState then host.Restore, or SaveBase and SaveDelta then host.RestoreDelta, into a new
// runtime and scheduler): it never panics, and it
// never loses a job: every job submitted is held or has been reported to the scheduler as
// having left, exactly once.
func FuzzRuntime(f *testing.F) {
	f.Add([]byte{0, 3, 0, 5, 2, 2, 3, 1, 2, 8, 2, 6, 0, 2, 9, 2, 7, 2, 8, 2})
	f.Add([]byte{0, 8, 0, 8, 0, 8, 2, 4, 2, 3, 7, 2, 5, 2, 8, 2, 9, 9, 2, 1, 1, 6, 6, 2})
	f.Add(bytes.Repeat([]byte{0, 2, 2, 3, 8, 1, 10, 11, 6}, 6))
	f.Add(bytes.Repeat([]byte{0, 2, 2, 3, 8, 1, 10, 1, 6}, 6))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 400 {
			ops = ops[:400]
		}
		told := map[gpusched.JobID]int{}
		sizes := []int{1, 2, 3}
		clusters := make([]*topology.Cluster, len(sizes))
		for i, n := range sizes {
			clusters[i] = cluster(t, topology.A100(), n)
		}
		seed := uint64(len(ops))
		build := func() *reporting {
			seed++
			return &reporting{chaos: chaos{rng: rand.New(rand.NewPCG(seed, 7))}, told: told}
		}
		opt := host.Options{Cluster: clusters[1], RestoreTime: 1, CheckpointEvery: 2, Rejected: host.RejectPark}
		opt.Scheduler = build()
		rt, err := host.New(opt)
		if err != nil {
			t.Fatal(err)
		}
		submitted := map[gpusched.JobID]bool{}
		now, next := 0.0, 0
		arg := func(i int) int {
			if i+1 < len(ops) {
				return int(ops[i+1])
			}
			return 0
		}
		pick := func(k int) (gpusched.JobID, bool) {
			ids := make([]gpusched.JobID, 0, len(submitted))
			for n := range next {
				id := gpusched.JobID(fmt.Sprint("j", n))
				if _, ok := rt.Job(id); ok {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				return "", false
			}
			return ids[k%len(ids)], true
		}
		for i, op := range ops {
			now += float64(op % 3)
			switch op % 12 {
			case 0, 1: // a job, sometimes a bad one
				j := gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", next)), Arrival: now, GPUs: 1 + arg(i)%12, StepTime: 1}
				switch arg(i) % 7 {
				case 5:
					j.GPUs = 0
				case 6:
					j.Features.LearningRate = math.NaN()
				}
				if _, err := rt.Submit(j, float64(1+arg(i)%9)); err == nil {
					submitted[j.ID] = true
					next++
				}
			case 2, 3:
				if _, err := rt.Schedule(now); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				for _, e := range rt.TakeDirty() {
					_ = rt.SetRate(e, now, gpusched.StepCost{Time: 1})
				}
			case 4:
				_, _ = rt.Fail(now, topology.GPUID(arg(i)%rt.Cluster().NumGPUs()))
			case 5:
				_ = rt.Drain(topology.GPUID(arg(i) % rt.Cluster().NumGPUs()))
			case 6:
				all := rt.Cluster().AllGPUs().Slice()
				_ = rt.Return(all...)
			case 7:
				if id, ok := pick(arg(i)); ok {
					_ = rt.Finish(id, now, 0, false)
				}
			case 8:
				if id, ok := pick(arg(i)); ok {
					_ = rt.Cancel(id, now)
				}
			case 9:
				if _, err := rt.SetCluster(clusters[arg(i)%len(clusters)], now); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
			case 10: // the host restarts from what it saved: whole, or by parts
				var buf, base bytes.Buffer
				byParts := arg(i)%2 == 1
				if byParts {
					if _, err := rt.SaveBase(&base); err != nil {
						t.Fatalf("op %d: %v", i, err)
					}
					if _, err := rt.SaveDelta(&buf); err != nil {
						t.Fatalf("op %d: %v", i, err)
					}
				} else if err := rt.SaveState(&buf); err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				o := opt
				o.Scheduler, o.Cluster = build(), nil
				if byParts {
					rt, err = host.RestoreDelta(o, &base, &buf)
				} else {
					rt, err = host.Restore(o, &buf)
				}
				if err != nil {
					t.Fatalf("op %d: restore (by parts %v): %v", i, byParts, err)
				}
			case 11:
				if id, ok := pick(arg(i)); ok {
					if e, _ := rt.Job(id); e.Running() {
						_ = rt.Report(id, now, float64(arg(i)))
						_ = rt.Interrupt(id, now)
					}
				}
			}
		}
		rt.Deliver()
		for id := range submitted {
			_, held := rt.Job(id)
			switch n := told[id]; {
			case held && n != 0:
				t.Errorf("job %s is held and was reported gone %d times", id, n)
			case !held && n != 1:
				t.Errorf("job %s left and was reported %d times", id, n)
			}
		}
	})
}
