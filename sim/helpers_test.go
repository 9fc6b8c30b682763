package sim_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
)

// fifo starts waiting jobs in arrival order on Cluster.Pack's consolidated choice and never
// preempts. Strict FIFO stops at the first job that does not fit; with backfill, later jobs
// may overtake it.
type fifo struct{ backfill bool }

func (f fifo) String() string {
	if f.backfill {
		return "fifo-backfill"
	}
	return "fifo"
}

func (f fifo) Schedule(v gpusched.View) (gpusched.Decision, error) {
	var d gpusched.Decision
	for _, r := range v.Running {
		d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
	}
	free := v.Free()
	for _, p := range v.Pending {
		g, ok := v.Cluster.Pack(free, p.Job.GPUs)
		if !ok {
			if f.backfill {
				continue
			}
			break
		}
		for _, x := range g {
			free.Remove(x)
		}
		d.Run = append(d.Run, gpusched.Assignment{Job: p.Job.ID, GPUs: g})
	}
	return d, nil
}

// las is a preemptive least-attained-service scheduler that re-places every job from scratch
// at every call (so it preempts and migrates) and asks to be woken every quantum seconds.
// It terminates as long as quantum exceeds the restore time.
type las struct{ quantum float64 }

func (las) String() string { return "las" }

func (s las) Schedule(v gpusched.View) (gpusched.Decision, error) {
	all := make([]gpusched.JobStatus, 0, len(v.Pending)+len(v.Running))
	all = append(all, v.Running...)
	all = append(all, v.Pending...)
	slices.SortStableFunc(all, func(a, b gpusched.JobStatus) int {
		if c := cmp.Compare(a.Attained, b.Attained); c != 0 {
			return c
		}
		return cmp.Compare(a.Job.Arrival, b.Job.Arrival)
	})
	free := v.Cluster.AllGPUs()
	free.RemoveAll(v.Unavailable)
	d := gpusched.Decision{WakeAt: v.Now + s.quantum}
	for _, st := range all {
		g, ok := v.Cluster.Pack(free, st.Job.GPUs)
		if !ok {
			continue
		}
		for _, x := range g {
			free.Remove(x)
		}
		d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: g})
	}
	return d, nil
}

// random is a scheduler that makes random valid decisions: it keeps, preempts or migrates
// running jobs and starts waiting ones on random free GPUs, and sometimes asks for a
// wake-up. After budget disruptive decisions it only keeps and starts, so every run ends.
type random struct {
	rng    *rand.Rand
	budget int
}

func newRandom(seed uint64) *random {
	return &random{rng: rand.New(rand.NewPCG(seed, 17)), budget: 40}
}

func (*random) String() string { return "random" }

func (s *random) Schedule(v gpusched.View) (gpusched.Decision, error) {
	var d gpusched.Decision
	free := v.Cluster.AllGPUs()
	free.RemoveAll(v.Unavailable)
	var migrate []*gpusched.JobStatus
	disrupt := s.budget > 0
	for i := range v.Running {
		r := &v.Running[i]
		switch x := s.rng.Float64(); {
		case disrupt && x < 0.15: // preempt
			s.budget--
		case disrupt && x < 0.25: // migrate
			s.budget--
			migrate = append(migrate, r)
		default:
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: r.GPUs})
			for _, g := range r.GPUs {
				free.Remove(g)
			}
		}
	}
	take := func(n int) []topology.GPUID {
		f := free.Slice()
		if len(f) < n {
			return nil
		}
		s.rng.Shuffle(len(f), func(i, j int) { f[i], f[j] = f[j], f[i] })
		g := f[:n]
		for _, x := range g {
			free.Remove(x)
		}
		return g
	}
	for _, r := range migrate {
		if g := take(r.Job.GPUs); g != nil {
			d.Run = append(d.Run, gpusched.Assignment{Job: r.Job.ID, GPUs: g})
		}
	}
	order := s.rng.Perm(len(v.Pending))
	for _, k := range order {
		p := &v.Pending[k]
		if s.rng.Float64() < 0.7 {
			if g := take(p.Job.GPUs); g != nil {
				d.Run = append(d.Run, gpusched.Assignment{Job: p.Job.ID, GPUs: g})
			}
		}
	}
	if len(d.Run) == 0 && v.Unavailable.Len() == 0 {
		// Never leave the cluster idle with work to do: any job fits on an empty cluster.
		for _, l := range [][]gpusched.JobStatus{v.Running, v.Pending} {
			if len(l) > 0 {
				d.Run = append(d.Run, gpusched.Assignment{Job: l[0].Job.ID, GPUs: take(l[0].Job.GPUs)})
				break
			}
		}
	}
	if s.rng.Float64() < 0.3 {
		d.WakeAt = v.Now + 0.5 + 100*s.rng.Float64()
	}
	return d, nil
}

// sharedCost slows a job down by half its step time for every other job's flow on each of
// its shared links, and charges 1 MB per iteration per extra server spanned.
type sharedCost struct{}

func (sharedCost) StepCost(j *gpusched.Job, c *topology.Cluster, gpus []topology.GPUID, load topology.LinkLoad) (gpusched.StepCost, error) {
	f := 1.0
	for _, l := range c.Links(gpus) {
		f += 0.5 * load[l]
	}
	return gpusched.StepCost{Time: j.StepTime * f, CrossServerBytes: 1e6 * float64(c.ServersSpanned(gpus)-1)}, nil
}

// checkResult audits a result against its config independently of the simulator's
// bookkeeping, from the recorded segments (the config must set RecordSegments):
//   - every job is reported once, with exactly its true iterations, in arrival order;
//   - no GPU is held by two segments at once, and no segment exceeds the cluster;
//   - each job's segments tile its run: first start, finish, preemption and migration counts,
//     GPU time and restore periods agree with the record;
//   - replaying the segments with the cost model (link loads recounted from the segments)
//     gives each job exactly its true iterations;
//   - the timeline's busy-GPU integral equals the sum of per-job GPU time.
//
// looseLoad makes the replay ignore link loads (a deliberately wrong replay, for tests).
func checkResult(cfg sim.Config, res *sim.Result, ignoreLoad bool) error {
	restore := cfg.RestoreTime
	if restore == 0 {
		restore = sim.DefaultRestoreTime
	} else if restore < 0 {
		restore = 0
	}
	cost := cfg.Cost
	if cost == nil {
		cost = gpusched.DefaultCost()
	}
	c := cfg.Cluster
	if len(res.Jobs) != len(cfg.Jobs) {
		return fmt.Errorf("%d records for %d jobs", len(res.Jobs), len(cfg.Jobs))
	}
	recs := map[gpusched.JobID]*trace.Record{}
	for i := range cfg.Jobs {
		recs[cfg.Jobs[i].Job.ID] = &cfg.Jobs[i]
	}
	byID := map[gpusched.JobID]*sim.JobRecord{}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		r, ok := recs[j.ID]
		if !ok || byID[j.ID] != nil {
			return fmt.Errorf("job %q unknown or reported twice", j.ID)
		}
		byID[j.ID] = j
		if i > 0 && j.Arrival < res.Jobs[i-1].Arrival {
			return fmt.Errorf("jobs not in arrival order at %q", j.ID)
		}
		if j.Rejected == "" && j.Iterations != r.Iterations {
			return fmt.Errorf("job %q did %v iterations, not %v", j.ID, j.Iterations, r.Iterations)
		}
		if j.Rejected != "" && !(j.Iterations <= r.Iterations) {
			return fmt.Errorf("rejected job %q did %v iterations of %v", j.ID, j.Iterations, r.Iterations)
		}
		if !(j.Arrival <= j.Start && j.Start <= j.Finish) || j.JCT != j.Finish-j.Arrival {
			return fmt.Errorf("job %q: arrival %v start %v finish %v jct %v", j.ID, j.Arrival, j.Start, j.Finish, j.JCT)
		}
	}
	// Segments per job, in time order.
	segs := map[gpusched.JobID][]host.Segment{}
	for _, s := range res.Segments {
		if len(s.GPUs) != recs[s.Job].Job.GPUs || !(s.Start <= s.RestoreEnd && s.RestoreEnd <= s.End) {
			return fmt.Errorf("bad segment %+v", s)
		}
		segs[s.Job] = append(segs[s.Job], s)
	}
	// No GPU held twice at once.
	perGPU := make([][][2]float64, c.NumGPUs())
	for _, s := range res.Segments {
		for _, g := range s.GPUs {
			if c.Check(g) != nil {
				return fmt.Errorf("segment of %q on GPU %d outside the cluster", s.Job, g)
			}
			perGPU[g] = append(perGPU[g], [2]float64{s.Start, s.End})
		}
	}
	for g, iv := range perGPU {
		slices.SortFunc(iv, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
		for k := 1; k < len(iv); k++ {
			if iv[k][0] < iv[k-1][1] {
				return fmt.Errorf("GPU %d double-booked: [%v,%v] and [%v,%v]", g, iv[k-1][0], iv[k-1][1], iv[k][0], iv[k][1])
			}
		}
	}
	// No job holds a GPU of a server while it is down.
	down := map[int][][2]float64{}
	for _, o := range res.Outages {
		s, ok := c.ServerIndex(o.Server)
		if !ok || !(o.Down <= o.Up) {
			return fmt.Errorf("bad outage %+v", o)
		}
		down[s] = append(down[s], [2]float64{o.Down, o.Up})
	}
	for _, s := range res.Segments {
		for _, g := range s.GPUs {
			for _, o := range down[c.ServerOf(g)] {
				if s.Start < o[1] && o[0] < s.End {
					return fmt.Errorf("job %q holds GPU %d from %v to %v while its server is down from %v to %v", s.Job, g, s.Start, s.End, o[0], o[1])
				}
			}
		}
	}
	// ckAt is the last checkpoint of an interrupted segment: every cfg.Checkpoint seconds of
	// the placement, or its start.
	ckAt := func(s host.Segment) float64 {
		if !s.Interrupted {
			return s.End
		}
		if n := cfg.Checkpoint; n > 0 {
			return s.Start + math.Floor((s.End-s.Start)/n)*n
		}
		return s.Start
	}
	// Each job's segments against its record.
	sumGPUTime, sumLost := 0.0, 0.0
	for id, j := range byID {
		ss := segs[id]
		slices.SortFunc(ss, func(a, b host.Segment) int { return cmp.Compare(a.Start, b.Start) })
		lost, restarts := 0.0, 0
		for _, s := range ss {
			if s.Interrupted {
				restarts++
				lost += float64(j.GPUs) * max(0, s.End-max(ckAt(s), s.RestoreEnd))
			}
		}
		if restarts != j.Restarts || !near(lost, j.LostGPUTime) {
			return fmt.Errorf("job %q: %d interrupted segments losing %v GPU-s; record says %d restarts, %v GPU-s lost", id, restarts, lost, j.Restarts, j.LostGPUTime)
		}
		sumLost += j.LostGPUTime
		if j.Rejected != "" {
			if len(ss) > 0 && (ss[0].Start != j.Start || ss[len(ss)-1].End > j.Finish) {
				return fmt.Errorf("rejected job %q: segments span [%v,%v], record [%v,%v]", id, ss[0].Start, ss[len(ss)-1].End, j.Start, j.Finish)
			}
		} else {
			if len(ss) != 1+j.Preemptions+j.Migrations+j.Restarts {
				return fmt.Errorf("job %q: %d segments for %d preemptions, %d migrations and %d restarts", id, len(ss), j.Preemptions, j.Migrations, j.Restarts)
			}
			if ss[0].Start != j.Start || ss[len(ss)-1].End != j.Finish {
				return fmt.Errorf("job %q: segments span [%v,%v], record [%v,%v]", id, ss[0].Start, ss[len(ss)-1].End, j.Start, j.Finish)
			}
		}
		gt := 0.0
		for k, s := range ss {
			gt += (s.End - s.Start) * float64(j.GPUs)
			want := s.Start
			if k > 0 {
				want = min(s.Start+restore, s.End)
			}
			if math.Abs(s.RestoreEnd-want) > 1e-9*max(1, s.End) {
				return fmt.Errorf("job %q segment %d: restore ends at %v, want %v", id, k, s.RestoreEnd, want)
			}
		}
		if !near(gt, j.GPUTime) {
			return fmt.Errorf("job %q: GPU time %v from segments, %v recorded", id, gt, j.GPUTime)
		}
		sumGPUTime += j.GPUTime
	}
	if !near(sumLost, res.Summary.LostGPUTime) {
		return fmt.Errorf("lost GPU time: jobs %v, summary %v", sumLost, res.Summary.LostGPUTime)
	}
	if !near(res.Summary.BusyGPUSeconds, sumGPUTime) || !near(sim.BusyIntegralForTest(res), sumGPUTime) {
		return fmt.Errorf("busy GPU-seconds: summary %v, timeline integral %v, jobs %v",
			res.Summary.BusyGPUSeconds, sim.BusyIntegralForTest(res), sumGPUTime)
	}
	for _, s := range res.Timeline {
		if s.BusyGPUs < 0 || s.BusyGPUs > c.NumGPUs() {
			return fmt.Errorf("timeline at %v: %d busy GPUs", s.Time, s.BusyGPUs)
		}
	}
	// Replay: between consecutive segment boundaries the placed jobs and hence every link's
	// load are constant.
	var cuts []float64
	for _, s := range res.Segments {
		cuts = append(cuts, s.Start, s.RestoreEnd, s.End, ckAt(s))
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	done := map[gpusched.JobID]float64{}
	for k := 0; k+1 < len(cuts); k++ {
		a, b := cuts[k], cuts[k+1]
		var live []*host.Segment
		for i := range res.Segments {
			if s := &res.Segments[i]; s.Start <= a && b <= s.End {
				live = append(live, s)
			}
		}
		users := map[topology.Link]int{}
		for _, s := range live {
			for _, l := range c.Links(s.GPUs) {
				users[l]++
			}
		}
		for _, s := range live {
			if a < s.RestoreEnd || b > ckAt(*s) {
				continue // restoring, or progress an interruption threw away
			}
			var load topology.LinkLoad
			if !ignoreLoad {
				for _, l := range c.Links(s.GPUs) {
					if users[l] > 1 {
						if load == nil {
							load = topology.LinkLoad{}
						}
						load[l] = float64(users[l] - 1)
					}
				}
			}
			r := recs[s.Job]
			sc, err := cost.StepCost(&r.Job, c, s.GPUs, load)
			if err != nil {
				return err
			}
			done[s.Job] += (b - a) / sc.Time
		}
	}
	for id, r := range recs {
		want := r.Iterations
		if j := byID[id]; j.Rejected != "" {
			want = j.Iterations
		}
		if math.Abs(done[id]-want) > 1e-6*max(1, want) {
			return fmt.Errorf("job %q: replaying its segments gives %v iterations, not %v", id, done[id], want)
		}
	}
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-7*max(1, math.Abs(a), math.Abs(b)) }
