package sim_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

func cluster(t testing.TB, spec topology.ServerSpec, servers int) *topology.Cluster {
	t.Helper()
	c, err := topology.Uniform(spec, servers)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func rec(id string, arrival float64, gpus int, step, iters float64) trace.Record {
	return trace.Record{Job: gpusched.Job{ID: gpusched.JobID(id), Arrival: arrival, GPUs: gpus, StepTime: step}, Iterations: iters}
}

func byID(t testing.TB, r *sim.Result) map[gpusched.JobID]sim.JobRecord {
	t.Helper()
	m := map[gpusched.JobID]sim.JobRecord{}
	for _, j := range r.Jobs {
		m[j.ID] = j
	}
	return m
}

// genConfig draws a small random workload on a small T4 or A100 cluster, with one of the
// test schedulers and either cost model.
func genConfig(t *rapid.T) (sim.Config, func() gpusched.Scheduler) {
	spec := topology.T4()
	if rapid.Bool().Draw(t, "a100") {
		spec = topology.A100()
	}
	servers := rapid.IntRange(1, 3).Draw(t, "servers")
	c, err := topology.Uniform(spec, servers)
	if err != nil {
		t.Fatal(err)
	}
	n := rapid.IntRange(1, 12).Draw(t, "jobs")
	jobs := make([]trace.Record, n)
	for i := range jobs {
		jobs[i] = trace.Record{
			Job: gpusched.Job{
				ID:       gpusched.JobID(fmt.Sprintf("j%d", i)),
				Arrival:  10 * float64(rapid.IntRange(0, 20).Draw(t, "arrival")), // ties are common
				GPUs:     rapid.IntRange(1, min(c.NumGPUs(), 2*spec.GPUs)).Draw(t, "gpus"),
				StepTime: rapid.Float64Range(0.5, 5).Draw(t, "step"),
			},
			Iterations: rapid.Float64Range(1, 100).Draw(t, "iterations"),
		}
	}
	cfg := sim.Config{
		Cluster:        c,
		Jobs:           jobs,
		RestoreTime:    rapid.SampledFrom([]float64{-1, 0, 5, 20}).Draw(t, "restore"),
		RecordSegments: true,
		ValidateViews:  true,
		MaxEvents:      100_000,
	}
	if rapid.Bool().Draw(t, "shared") {
		cfg.Cost = sharedCost{}
	}
	kind := rapid.SampledFrom([]string{"fifo", "backfill", "las", "random"}).Draw(t, "scheduler")
	seed := rapid.Uint64().Draw(t, "seed")
	mk := func() gpusched.Scheduler {
		switch kind {
		case "fifo":
			return fifo{}
		case "backfill":
			return fifo{backfill: true}
		case "las":
			return las{quantum: 50}
		}
		return newRandom(seed)
	}
	return cfg, mk
}

// TestPropertiesRandomWorkloads: on random workloads, clusters and schedulers (strict and
// backfilling FIFO, a preempting and migrating LAS, random valid decisions), no GPU is ever
// double-booked, every job completes with exactly its iterations (checked by replaying its
// placements through the cost model), per-job GPU time sums to the utilisation integral, and
// the same inputs give the same result.
func TestPropertiesRandomWorkloads(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, mk := genConfig(t)
		cfg.Scheduler = mk()
		res, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkResult(cfg, res, false); err != nil {
			t.Fatal(err)
		}
		cfg.Scheduler = mk()
		again, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res, again) {
			t.Fatal("same config, different results")
		}
	})
}

// TestCheckerCatchesWrongResults shows that the audit used by the properties fails on
// deliberately wrong results: a double-booked GPU, a job short of its iterations, a wrong
// GPU time, a missing restore, and a replay that ignores link sharing.
func TestCheckerCatchesWrongResults(t *testing.T) {
	c := cluster(t, topology.T4(), 2) // 2 x 4 GPUs, NICs shared across servers
	cfg := sim.Config{
		Cluster: c,
		Jobs: []trace.Record{
			rec("a", 0, 6, 1, 100), // spans both servers
			rec("b", 0, 2, 1, 100), // shares a's NIC? no: 1 server, but a's intra fabric
			rec("c", 5, 4, 2, 30),
		},
		Cost:           sharedCost{},
		Scheduler:      las{quantum: 50},
		RecordSegments: true,
		RestoreTime:    10,
	}
	res, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkResult(cfg, res, false); err != nil {
		t.Fatalf("correct result rejected: %v", err)
	}
	if checkResult(cfg, res, true) == nil {
		t.Error("a replay that ignores link sharing agrees: the workload does not exercise sharing")
	}
	tamper := func(name string, f func(r *sim.Result)) {
		bad, _ := sim.Run(cfg)
		f(bad)
		if err := checkResult(cfg, bad, false); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
	tamper("double-booked GPU", func(r *sim.Result) {
		r.Segments[1].GPUs = append([]topology.GPUID(nil), r.Segments[0].GPUs...)
	})
	tamper("short of iterations", func(r *sim.Result) { r.Jobs[0].Iterations *= 0.999 })
	tamper("wrong GPU time", func(r *sim.Result) { r.Jobs[1].GPUTime += 1 })
	tamper("finish early", func(r *sim.Result) {
		for i := range r.Segments {
			if r.Segments[i].Job == "c" && r.Segments[i].End == r.Jobs[2].Finish {
				r.Segments[i].End -= 1
			}
		}
	})
	tamper("no restore", func(r *sim.Result) {
		for i := range r.Segments {
			r.Segments[i].RestoreEnd = r.Segments[i].Start
		}
	})
	tamper("timeline", func(r *sim.Result) { r.Timeline[0].BusyGPUs++ })
}

// TestRestoreCost: a job preempted and restarted pays the restore time once per restart; its
// first start is free; a migrated job pays it too.
func TestRestoreCost(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	// Job a (100 s of work) starts at 0, is preempted at 40, restarted at 50 on the same GPU,
	// migrated at 100.
	s := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		run := func(g topology.GPUID) gpusched.Decision {
			return gpusched.Decision{Run: []gpusched.Assignment{{Job: "a", GPUs: []topology.GPUID{g}}}}
		}
		switch v.Now {
		case 0:
			d := run(0)
			d.WakeAt = 40
			return d, nil
		case 40:
			return gpusched.Decision{WakeAt: 50}, nil
		case 50:
			d := run(0)
			d.WakeAt = 100
			return d, nil
		}
		return run(3), nil
	})
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: s, Jobs: []trace.Record{rec("a", 0, 1, 1, 100)}, RecordSegments: true})
	if err != nil {
		t.Fatal(err)
	}
	j := res.Jobs[0]
	// 40 s of work by t=40; restart at 50 restores until 80, works 20 s until 100 (60 done);
	// migration at 100 restores until 130; the last 40 s end at 170.
	if j.Finish != 170 || j.Preemptions != 1 || j.Migrations != 1 || j.RunTime != 160 || j.Productive != 100 || j.Wait != 10 {
		t.Errorf("got %+v, want finish 170, 1 preemption, 1 migration, run time 160, productive 100, wait 10", j)
	}
	if len(res.Segments) != 3 || res.Segments[1].RestoreEnd != 80 || res.Segments[2].RestoreEnd != 130 {
		t.Errorf("segments %+v", res.Segments)
	}
	// Without restore cost the job finishes at 110.
	res, err = sim.Run(sim.Config{Cluster: c, Scheduler: s, Jobs: []trace.Record{rec("a", 0, 1, 1, 100)}, RestoreTime: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs[0].Finish != 110 {
		t.Errorf("no restore cost: finish %v, want 110", res.Jobs[0].Finish)
	}
}

// TestConsolidatedRunTimeIsTraceDuration: a job alone on the cluster, placed on one server,
// runs exactly iterations x step time.
func TestConsolidatedRunTimeIsTraceDuration(t *testing.T) {
	c := cluster(t, topology.A100(), 4)
	jobs := []trace.Record{rec("x", 3, 8, 0.25, 4000), rec("y", 2000, 16, 0.5, 77.5)}
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(t, res)
	if got["x"].JCT != 1000 || got["y"].JCT != 38.75 || got["x"].ServersSpanned != 1 || got["y"].ServersSpanned != 2 {
		t.Errorf("got %+v", res.Jobs)
	}
}

// TestLinkSharing: two jobs that span the same two servers share both servers' NICs and each
// runs at the speed the cost model gives for one other flow per link; when one finishes the
// other speeds up.
func TestLinkSharing(t *testing.T) {
	c := cluster(t, topology.A100(), 2)
	// a on GPUs 0-3 + 8-11, b on 4-7 + 12-15: both cross the NICs of servers 0 and 1.
	place := map[gpusched.JobID][]topology.GPUID{
		"a": {0, 1, 2, 3, 8, 9, 10, 11},
		"b": {4, 5, 6, 7, 12, 13, 14, 15},
	}
	s := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		var d gpusched.Decision
		for _, l := range [][]gpusched.JobStatus{v.Running, v.Pending} {
			for _, st := range l {
				d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: place[st.Job.ID]})
			}
		}
		return d, nil
	})
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: s, Cost: sharedCost{},
		Jobs: []trace.Record{rec("a", 0, 8, 1, 100), rec("b", 0, 8, 1, 300)}})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(t, res)
	// Shared: step 1 x (1 + 0.5 + 0.5) = 2 s. a finishes at 200; b has done 100 by then and
	// does its last 200 alone at 1 s each.
	if got["a"].Finish != 200 || got["b"].Finish != 400 {
		t.Errorf("finish a %v (want 200), b %v (want 400)", got["a"].Finish, got["b"].Finish)
	}
	if got["a"].CrossServerBytes != 100e6 || got["b"].CrossServerBytes != 300e6 || res.Summary.CrossServerBytes != 400e6 {
		t.Errorf("cross-server bytes a %v b %v total %v", got["a"].CrossServerBytes, got["b"].CrossServerBytes, res.Summary.CrossServerBytes)
	}
}

// namedBad returns an invalid decision at its chosen time.
type namedBad struct {
	at  float64
	bad func(v gpusched.View) gpusched.Decision
}

func (namedBad) String() string { return "badsched" }

func (s namedBad) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if v.Now >= s.at {
		return s.bad(v), nil
	}
	return fifo{}.Schedule(v)
}

// TestInvalidDecisionIsAnError: the simulator refuses every kind of invalid decision with an
// error that names the scheduler, the time and the job and wraps the validator's sentinel.
func TestInvalidDecisionIsAnError(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	jobs := []trace.Record{rec("a", 0, 2, 1, 100), rec("b", 7.5, 2, 1, 100), rec("h", 7.5, 1, 1, 100)}
	jobs[2].Job.GPUType = "h100"
	g := func(ids ...int) []topology.GPUID {
		out := make([]topology.GPUID, len(ids))
		for i, x := range ids {
			out[i] = topology.GPUID(x)
		}
		return out
	}
	cases := []struct {
		name string
		d    gpusched.Decision
		job  string
		want error
	}{
		{"double-booked", gpusched.Decision{Run: []gpusched.Assignment{{Job: "a", GPUs: g(0, 1)}, {Job: "b", GPUs: g(1, 2)}}}, "b", gpusched.ErrDoubleBooked},
		{"unknown", gpusched.Decision{Run: []gpusched.Assignment{{Job: "zz", GPUs: g(0, 1)}}}, "zz", gpusched.ErrUnknownJob},
		{"wrong count", gpusched.Decision{Run: []gpusched.Assignment{{Job: "b", GPUs: g(4)}}}, "b", gpusched.ErrGPUCount},
		{"no such GPU", gpusched.Decision{Run: []gpusched.Assignment{{Job: "b", GPUs: g(4, 8)}}}, "b", gpusched.ErrNoSuchGPU},
		{"twice", gpusched.Decision{Run: []gpusched.Assignment{{Job: "b", GPUs: g(4, 5)}, {Job: "b", GPUs: g(6, 7)}}}, "b", gpusched.ErrDuplicateJob},
		{"ineligible", gpusched.Decision{Run: []gpusched.Assignment{{Job: "h", GPUs: g(3)}}}, "h", gpusched.ErrIneligibleGPU},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := namedBad{at: 7.5, bad: func(gpusched.View) gpusched.Decision { return tc.d }}
			_, err := sim.Run(sim.Config{Cluster: c, Scheduler: s, Jobs: jobs})
			if !errors.Is(err, sim.ErrInvalidDecision) || !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v and %v", err, sim.ErrInvalidDecision, tc.want)
			}
			for _, sub := range []string{"badsched", "t=7.5", fmt.Sprintf("%q", tc.job)} {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("%q does not name %s", err, sub)
				}
			}
		})
	}
	// A scheduler without a String method is named by its type.
	s := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		return gpusched.Decision{WakeAt: math.NaN()}, nil
	})
	_, err := sim.Run(sim.Config{Cluster: c, Scheduler: s, Jobs: jobs})
	if !errors.Is(err, sim.ErrInvalidDecision) || !strings.Contains(err.Error(), "gpusched.SchedulerFunc") || !strings.Contains(err.Error(), "t=0") {
		t.Errorf("NaN wake-up: %v", err)
	}
}

func TestRunErrors(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	jobs := []trace.Record{rec("a", 0, 2, 1, 100), rec("b", 5, 2, 1, 100)}
	idle := gpusched.SchedulerFunc(func(gpusched.View) (gpusched.Decision, error) { return gpusched.Decision{}, nil })
	failing := gpusched.SchedulerFunc(func(gpusched.View) (gpusched.Decision, error) { return gpusched.Decision{}, errors.New("boom") })
	cases := []struct {
		name string
		cfg  sim.Config
		want error
		msg  string
	}{
		{"no cluster", sim.Config{Scheduler: idle}, sim.ErrInvalidConfig, "no cluster"},
		{"no scheduler", sim.Config{Cluster: c}, sim.ErrInvalidConfig, "no scheduler"},
		{"duplicate", sim.Config{Cluster: c, Scheduler: idle, Jobs: []trace.Record{rec("a", 0, 1, 1, 1), rec("a", 1, 1, 1, 1)}}, sim.ErrInvalidConfig, `"a"`},
		{"too big", sim.Config{Cluster: c, Scheduler: idle, Jobs: []trace.Record{rec("a", 0, 9, 1, 1)}}, gpusched.ErrInvalidJob, `"a"`},
		{"no iterations", sim.Config{Cluster: c, Scheduler: idle, Jobs: []trace.Record{rec("a", 0, 1, 1, 0)}}, sim.ErrInvalidConfig, `"a"`},
		{"NaN iterations", sim.Config{Cluster: c, Scheduler: idle, Jobs: []trace.Record{rec("a", 0, 1, 1, math.NaN())}}, sim.ErrInvalidConfig, `"a"`},
		{"stalled", sim.Config{Cluster: c, Scheduler: idle, Jobs: jobs}, sim.ErrStalled, `"a"`},
		{"scheduler error", sim.Config{Cluster: c, Scheduler: failing, Jobs: jobs}, sim.ErrScheduler, "boom"},
		{"no step time", sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("a", 0, 1, 0, 1)}}, gpusched.ErrNoCost, `"a"`},
		{"max events", sim.Config{Cluster: c, Scheduler: las{quantum: 1}, Jobs: jobs, MaxEvents: 10}, sim.ErrLimit, "10 events"},
		{"max time", sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: jobs, MaxTime: 50}, sim.ErrLimit, "MaxTime"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := sim.Run(tc.cfg)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.msg) || res != nil {
				t.Errorf("got %v, %v; want %v mentioning %s", res, err, tc.want, tc.msg)
			}
		})
	}
}

// observer records the order of completions and schedule calls.
type observer struct {
	fifo
	log []string
}

func (o *observer) Schedule(v gpusched.View) (gpusched.Decision, error) {
	o.log = append(o.log, fmt.Sprintf("schedule@%g p%d r%d", v.Now, len(v.Pending), len(v.Running)))
	return o.fifo.Schedule(v)
}

func (o *observer) JobCompleted(c gpusched.Completion) {
	o.log = append(o.log, fmt.Sprintf("done %s@%g it=%g step=%g", c.Job.ID, c.Time, c.Iterations, c.StepTime))
}

// TestEventsCoalescedAndCompletionsReported: events at the same time make one Schedule call;
// completions are reported before it; wake-ups come when asked.
func TestEventsCoalescedAndCompletionsReported(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	o := &observer{}
	jobs := []trace.Record{rec("a", 0, 4, 1, 10), rec("b", 0, 4, 2, 5), rec("c", 10, 8, 1, 1), rec("d", 11, 1, 1, 1)}
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: o, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"schedule@0 p2 r0",
		"done a@10 it=10 step=1", "done b@10 it=5 step=2", "schedule@10 p1 r0",
		"done c@11 it=1 step=1", "schedule@11 p1 r0",
		"done d@12 it=1 step=1",
	}
	if !reflect.DeepEqual(o.log, want) {
		t.Errorf("log\n%s\nwant\n%s", strings.Join(o.log, "\n"), strings.Join(want, "\n"))
	}
	if res.Summary.Events != 3 || res.Summary.Makespan != 12 {
		t.Errorf("summary %+v", res.Summary)
	}
	wantTL := []sim.Sample{{Time: 0, BusyGPUs: 8, Running: 2}, {Time: 10, BusyGPUs: 8, Running: 1}, {Time: 11, BusyGPUs: 1, Running: 1}, {Time: 12}}
	if !reflect.DeepEqual(res.Timeline, wantTL) {
		t.Errorf("timeline %+v, want %+v", res.Timeline, wantTL)
	}
}

func TestWakeUp(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	var calls []float64
	s := gpusched.SchedulerFunc(func(v gpusched.View) (gpusched.Decision, error) {
		calls = append(calls, v.Now)
		if v.Now < 25 {
			return gpusched.Decision{WakeAt: v.Now + 10}, nil // wait, then start
		}
		return fifo{}.Schedule(v)
	})
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: s, Jobs: []trace.Record{rec("a", 0, 1, 1, 5)}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(calls, []float64{0, 10, 20, 30}) || res.Jobs[0].Start != 30 || res.Jobs[0].QueueDelay != 30 {
		t.Errorf("calls %v, record %+v", calls, res.Jobs[0])
	}
}

func TestSummaryMetrics(t *testing.T) {
	jobs := []sim.JobRecord{
		{Arrival: 0, Start: 0, Finish: 10, JCT: 10, GPUTime: 10, Preemptions: 1},
		{Arrival: 5, Start: 10, Finish: 25, JCT: 20, QueueDelay: 5, GPUTime: 30},
		{Arrival: 5, Start: 10, Finish: 35, JCT: 30, QueueDelay: 5, GPUTime: 20, Migrations: 2},
		{Arrival: 6, Start: 10, Finish: 46, JCT: 40, QueueDelay: 4, GPUTime: 40},
	}
	s := sim.Summarize(jobs, 2)
	want := sim.Summary{Jobs: 4, AvgJCT: 25, MedianJCT: 25, P95JCT: 38.5, P99JCT: 39.7, Makespan: 46,
		AvgQueueDelay: 3.5, BusyGPUSeconds: 100, Utilisation: 100.0 / 92, PreemptionsPerJob: 0.25, MigrationsPerJob: 0.5}
	if math.Abs(s.P95JCT-want.P95JCT) > 1e-9 || math.Abs(s.P99JCT-want.P99JCT) > 1e-9 {
		t.Errorf("percentiles %v %v", s.P95JCT, s.P99JCT)
	}
	s.P95JCT, s.P99JCT = want.P95JCT, want.P99JCT
	if s != want {
		t.Errorf("got %+v\nwant %+v", s, want)
	}
	if sim.PercentileForTest(nil, 0.5) != 0 || sim.PercentileForTest([]float64{3}, 0.99) != 3 {
		t.Error("percentile of tiny inputs")
	}
}

func TestWriters(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	res, err := sim.Run(sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("a", 0, 1, 1, 5), rec("b,c", 1, 2, 0.5, 4)}})
	if err != nil {
		t.Fatal(err)
	}
	var csv, tl, js strings.Builder
	if err := res.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteTimelineCSV(&tl); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	wantCSV := "id,arrival,start,finish,jct,queue_delay,wait,gpus,servers_spanned,preemptions,migrations,iterations,run_time,productive,gpu_time,cross_server_bytes,killed,restarts,lost_gpu_time,rejected,guaranteed,guarantee_ratio\n" +
		"a,0,0,5,5,0,0,1,1,0,0,5,5,5,5,0,false,0,0,,false,0\n" +
		"\"b,c\",1,1,3,2,0,0,2,1,0,0,4,2,2,4,0,false,0,0,,false,0\n"
	if csv.String() != wantCSV {
		t.Errorf("CSV\n%s\nwant\n%s", csv.String(), wantCSV)
	}
	if !strings.HasPrefix(tl.String(), "time,busy_gpus,queued,running,utilisation\n0,1,0,1,0.125\n1,3,0,2,0.375\n") {
		t.Errorf("timeline CSV\n%s", tl.String())
	}
	var back sim.Result
	if err := json.Unmarshal([]byte(js.String()), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, res) {
		t.Errorf("JSON round trip: %+v\nwant %+v", back, *res)
	}
}

// TestRandomSchedulerExercisesPreemptionAndMigration makes sure the random scheduler of the
// properties really preempts, migrates and pays restores, so that those paths are covered.
func TestRandomSchedulerExercisesPreemptionAndMigration(t *testing.T) {
	c := cluster(t, topology.T4(), 3)
	var jobs []trace.Record
	for i := range 30 {
		jobs = append(jobs, rec(fmt.Sprintf("j%d", i), float64(5*i), 1+i%5, 1, float64(20+7*i)))
	}
	cfg := sim.Config{Cluster: c, Jobs: jobs, Scheduler: newRandom(1), Cost: sharedCost{}, RestoreTime: 3,
		RecordSegments: true, ValidateViews: true}
	res, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.PreemptionsPerJob == 0 || res.Summary.MigrationsPerJob == 0 {
		t.Errorf("no preemption or migration: %+v", res.Summary)
	}
	if err := checkResult(cfg, res, false); err != nil {
		t.Fatal(err)
	}
}

// corrupt wraps a scheduler and damages its decision in one of several ways.
type corrupt struct {
	inner gpusched.Scheduler
	how   int
	at    int
	calls int
}

func (c *corrupt) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d, err := c.inner.Schedule(v)
	c.calls++
	if err != nil || c.calls < c.at || len(d.Run) == 0 {
		return d, err
	}
	a := &d.Run[len(d.Run)-1]
	switch c.how {
	case 0: // a GPU of another assignment, or a repeated GPU
		g := append([]topology.GPUID(nil), a.GPUs...)
		if len(d.Run) > 1 {
			g[0] = d.Run[0].GPUs[0]
		} else if len(g) > 1 {
			g[len(g)-1] = g[0]
		} else {
			g = append(g, g[0]) // also the wrong count
		}
		a.GPUs = g
	case 1:
		a.Job += "x"
	case 2:
		a.GPUs = append(a.GPUs, 0)
	case 3:
		d.Run = append(d.Run, *a)
	case 4:
		a.GPUs = append([]topology.GPUID(nil), a.GPUs...)
		a.GPUs[0] = topology.GPUID(v.Cluster.NumGPUs())
	case 5:
		a.GPUs = append([]topology.GPUID(nil), a.GPUs...)
		a.GPUs[0] = -1
	}
	return d, nil
}

// TestPropertyInvalidDecisionsRejected: whatever way a decision is damaged, the simulator's
// fast validator rejects it exactly when Decision.Validate does (ValidateViews cross-checks
// the two) and reports the same sentinel.
func TestPropertyInvalidDecisionsRejected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg, mk := genConfig(t)
		how := rapid.IntRange(0, 5).Draw(t, "how")
		cfg.Scheduler = &corrupt{inner: mk(), how: how, at: rapid.IntRange(1, 5).Draw(t, "at")}
		_, err := sim.Run(cfg)
		if err == nil {
			return // the run ended before the damage
		}
		sentinel := []error{nil, gpusched.ErrUnknownJob, gpusched.ErrGPUCount, gpusched.ErrDuplicateJob,
			gpusched.ErrNoSuchGPU, gpusched.ErrNoSuchGPU}[how]
		if !errors.Is(err, sim.ErrInvalidDecision) || (sentinel != nil && !errors.Is(err, sentinel)) {
			t.Fatalf("damage %d: %v", how, err)
		}
	})
}

// TestPhillyDurationsReproduced: jobs read from a Philly trace and run without contention at
// a consolidated placement take exactly their trace durations (the mapping's contract). On
// the shared file (first 5,000 jobs on 2,048 GPUs, where nothing waits) as well, when present.
func TestPhillyDurationsReproduced(t *testing.T) {
	in := "timestamp,duration,num_gpus,gpu_time,cluster\n" +
		"2017-10-09 07:01:55,66.0,1,66.0,a\n2017-10-09 07:00:00,3600,8,28800,b\n" +
		"2017-10-09 07:00:05,12345,16,197520,b\n2017-10-09 09:00:00,1,2,2,c\n"
	tr, err := trace.ReadPhilly(strings.NewReader(in), "p.csv", trace.ReadOptions{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	check := func(recs []trace.Record, c *topology.Cluster, durations map[gpusched.JobID]float64) {
		t.Helper()
		res, err := sim.Run(sim.Config{Cluster: c, Jobs: recs, Scheduler: fifo{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range res.Jobs {
			d := durations[j.ID]
			if j.QueueDelay != 0 || math.Abs(j.JCT-d) > 1e-9*d || j.ServersSpanned != (j.GPUs+7)/8 {
				t.Fatalf("job %s: JCT %v after %v s in queue on %d servers, trace duration %v", j.ID, j.JCT, j.QueueDelay, j.ServersSpanned, d)
			}
		}
	}
	check(tr.Records, cluster(t, topology.A100(), 4), map[gpusched.JobID]float64{"p.csv#2": 66, "p.csv#3": 3600, "p.csv#4": 12345, "p.csv#5": 1})

	// With a cluster, the reader gives zoo models and plans; the default cost model times them.
	c := cluster(t, topology.A100(), 4)
	tr, err = trace.ReadPhilly(strings.NewReader(in), "p.csv", trace.ReadOptions{Seed: 2, Cluster: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Records {
		if r.Job.Model == nil {
			t.Fatalf("job %s has no model", r.Job.ID)
		}
	}
	check(tr.Records, c, map[gpusched.JobID]float64{"p.csv#2": 66, "p.csv#3": 3600, "p.csv#4": 12345, "p.csv#5": 1})

	recs := readPhilly(t)[:5000]
	durations := map[gpusched.JobID]float64{}
	for _, r := range recs {
		durations[r.Job.ID] = r.Iterations * r.Job.StepTime
	}
	check(recs, cluster(t, topology.A100(), 256), durations)
}

// forgetfulCost counts the jobs it is told have left.
type forgetfulCost struct {
	gpusched.FixedCost
	forgot []gpusched.JobID
}

func (f *forgetfulCost) Forget(j *gpusched.Job) { f.forgot = append(f.forgot, j.ID) }

func TestCostModelToldOfDepartures(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	cost := &forgetfulCost{}
	_, err := sim.Run(sim.Config{Cluster: c, Scheduler: fifo{}, Cost: cost,
		Jobs: []trace.Record{rec("a", 0, 8, 1, 10), rec("b", 1, 8, 1, 5)}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cost.forgot, []gpusched.JobID{"a", "b"}) {
		t.Errorf("forgot %v", cost.forgot)
	}
}

// TestIdleWhileWaiting: under strict FIFO, a 4-GPU job runs for 100 s while an 8-GPU job
// blocks a 2-GPU job behind it: 4 GPUs idle that the 2-GPU job could have used, 400 GPU-s.
// With backfill the 2-GPU job runs at once, and the idle GPUs are never enough for the
// 8-GPU job: none.
func TestIdleWhileWaiting(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	jobs := []trace.Record{rec("a", 0, 4, 1, 100), rec("b", 0, 8, 1, 50), rec("c", 0, 2, 1, 10)}
	for _, tc := range []struct {
		s    gpusched.Scheduler
		want float64
	}{{fifo{}, 400}, {fifo{backfill: true}, 0}} {
		res, err := sim.Run(sim.Config{Cluster: c, Scheduler: tc.s, Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Summary.IdleWhileWaiting; got != tc.want {
			t.Errorf("%v: idle while waiting %v GPU-s, want %v", tc.s, got, tc.want)
		}
	}
}
