package sim_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
	"github.com/gpusched/gpusched/trace"
	"pgregory.net/rapid"
)

// rejecter wraps a scheduler and, from its call number `from` on, rejects the jobs of `ids`
// it sees (taking them out of the inner decision): a scheduler that turns jobs away.
type rejecter struct {
	inner gpusched.Scheduler
	ids   map[gpusched.JobID]bool
	from  int
	calls int
}

func (r *rejecter) String() string { return "rejecter" }

func (r *rejecter) Schedule(v gpusched.View) (gpusched.Decision, error) {
	d, err := r.inner.Schedule(v)
	r.calls++
	if err != nil || r.calls < r.from {
		return d, err
	}
	out := d.Run[:0:0]
	for _, a := range d.Run {
		if !r.ids[a.Job] {
			out = append(out, a)
		}
	}
	d.Run = out
	for _, l := range [][]gpusched.JobStatus{v.Running, v.Pending} {
		for _, st := range l {
			if r.ids[st.Job.ID] {
				d.Rejected = append(d.Rejected, gpusched.Reject(st.Job.ID, fmt.Errorf("%w: job %q: test rejection", gpusched.ErrNoCost, st.Job.ID)))
			}
		}
	}
	return d, nil
}

// genFailures draws a failure schedule for c: a random process, a list of outages, or both.
func genFailures(t *rapid.T, c *topology.Cluster) sim.Failures {
	var f sim.Failures
	if rapid.Bool().Draw(t, "mtbf") {
		f.MTBF = rapid.Float64Range(100, 2000).Draw(t, "mtbf-s")
		f.MTTR = rapid.Float64Range(1, 100).Draw(t, "mttr-s")
		f.Seed = rapid.Uint64().Draw(t, "failure-seed")
	}
	for range rapid.IntRange(0, 4).Draw(t, "outages") {
		down := rapid.Float64Range(0, 400).Draw(t, "down")
		f.Outages = append(f.Outages, sim.Outage{
			Server: c.Server(rapid.IntRange(0, c.NumServers()-1).Draw(t, "server")).ID,
			Down:   down, Up: down + rapid.Float64Range(0.5, 150).Draw(t, "duration"),
		})
	}
	return f
}

// failureProperty: over random workloads, schedulers, failure schedules and checkpoint
// intervals, with some jobs rejected, nothing is lost: every job finishes with its iterations
// or is reported rejected with a reason, no job holds a GPU of a server while it is down, the
// lost GPU-time is exactly the productive time each interrupted placement ran past its last
// checkpoint, and replaying the placements (their rolled-back parts excluded) gives every job
// its iterations (checkResult). The run is deterministic.
func failureProperty(broken string) func(*rapid.T) {
	return func(t *rapid.T) {
		cfg, mk := genConfig(t)
		cfg.Failures = genFailures(t, cfg.Cluster)
		cfg.Checkpoint = rapid.SampledFrom([]float64{0, 7, 25}).Draw(t, "checkpoint")
		ids := map[gpusched.JobID]bool{}
		for _, r := range cfg.Jobs {
			if rapid.IntRange(0, 9).Draw(t, "reject") == 0 {
				ids[r.Job.ID] = true
			}
		}
		from := rapid.IntRange(1, 6).Draw(t, "reject-from")
		cfg.Scheduler = &rejecter{inner: mk(), ids: ids, from: from}
		if broken != "" {
			sim.Break(&cfg, broken)
		}
		res, err := sim.Run(cfg)
		if errors.Is(err, sim.ErrNoProgress) && cfg.Failures.MTBF > 0 {
			// Failures drawn far more often than a job can run between checkpoints: the run
			// stops with an error naming the job (TestNoProgress), which loses nothing.
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := checkResult(cfg, res, false); err != nil {
			t.Fatal(err)
		}
		for _, j := range res.Jobs {
			if j.Rejected != "" && !strings.Contains(j.Rejected, "test rejection") {
				t.Fatalf("job %s rejected for %q", j.ID, j.Rejected)
			}
			if j.Rejected == "" && ids[j.ID] && res.Summary.Events >= from {
				// It may have finished before the rejections began.
				if j.Finish > 0 && j.Iterations == 0 {
					t.Fatalf("job %s neither finished nor rejected", j.ID)
				}
			}
		}
		cfg.Scheduler = &rejecter{inner: mk(), ids: ids, from: from}
		again, err := sim.Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res, again) {
			t.Fatal("same config, different results")
		}
	}
}

func TestPropertyFailuresLoseNothing(t *testing.T) {
	rapid.Check(t, failureProperty(""))
}

// TestFailurePropertyHasTeeth: a simulator that keeps the progress a failure should throw
// away, and one that lets jobs restart on a server that is still down, are both caught.
func TestFailurePropertyHasTeeth(t *testing.T) {
	for _, kind := range []string{"norollback", "earlyrepair"} {
		if !teeth.Fails(failureProperty(kind)) {
			t.Errorf("the failure property does not catch the %s variant", kind)
		}
	}
}

// TestFailureByHand: one job of 100 s on one server that fails at t=70 for 20 s, with
// checkpoints every 30 s and a 5 s restore: it goes back to its checkpoint at t=60 (60
// iterations), loses 10 s on its 2 GPUs, restarts at the repair (t=90), restores until 95
// and finishes 40 s later.
func TestFailureByHand(t *testing.T) {
	c := cluster(t, topology.T4(), 1)
	cfg := sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("a", 0, 2, 1, 100)},
		RestoreTime: 5, Checkpoint: 30, RecordSegments: true,
		Failures: sim.Failures{Outages: []sim.Outage{{Server: c.Server(0).ID, Down: 70, Up: 90}}}}
	res, err := sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	j := res.Jobs[0]
	if j.Finish != 135 || j.Restarts != 1 || j.LostGPUTime != 20 || j.Preemptions != 0 || j.RunTime != 115 || j.Productive != 110 {
		t.Errorf("got %+v", j)
	}
	s := res.Summary
	if s.ServerFailures != 1 || s.LostGPUTime != 20 || s.RestartsPerJob != 1 {
		t.Errorf("summary %+v", s)
	}
	if want := []sim.Outage{{Server: c.Server(0).ID, Down: 70, Up: 90}}; !reflect.DeepEqual(res.Outages, want) {
		t.Errorf("outages %+v", res.Outages)
	}
	if err := checkResult(cfg, res, false); err != nil {
		t.Fatal(err)
	}
	// Without periodic checkpoints it goes back to its start.
	cfg.Checkpoint = 0
	res, err = sim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if j := res.Jobs[0]; j.Finish != 195 || j.LostGPUTime != 140 {
		t.Errorf("no checkpoints: got %+v", j)
	}
}

// TestMTBFDeterministic: the random failure process depends on its seed only, and fails
// servers about as often as its MTBF says.
func TestMTBFDeterministic(t *testing.T) {
	c := cluster(t, topology.A100(), 16)
	recs := make([]trace.Record, 200)
	for i := range recs {
		recs[i] = rec(fmt.Sprintf("j%d", i), float64(100*i), 1+i%8, 1, 3600)
	}
	run := func(seed uint64) *sim.Result {
		res, err := sim.Run(sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: recs, Checkpoint: 600,
			Failures: sim.Failures{MTBF: 20 * 3600, MTTR: 3600, Seed: seed}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, other := run(1), run(1), run(2)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different results")
	}
	if reflect.DeepEqual(a.Outages, other.Outages) {
		t.Error("another seed gives the same failures")
	}
	// 16 servers over the run: about run time / (MTBF + MTTR) failures each.
	want := 16 * a.Summary.Makespan / (21 * 3600)
	if n := float64(a.Summary.ServerFailures); n < want/2 || n > 2*want {
		t.Errorf("%v failures over %v s, want about %v", n, a.Summary.Makespan, want)
	}
	if a.Summary.LostGPUTime <= 0 || a.Summary.RestartsPerJob <= 0 {
		t.Errorf("failures lost nothing: %+v", a.Summary)
	}
}

// TestFailureConfigErrors: bad failure settings are errors naming the field, before any
// simulation.
func TestFailureConfigErrors(t *testing.T) {
	c := cluster(t, topology.A100(), 1)
	jobs := []trace.Record{rec("a", 0, 1, 1, 10)}
	for name, cfg := range map[string]sim.Config{
		"NaN MTBF":          {Failures: sim.Failures{MTBF: math.NaN(), MTTR: 1}},
		"MTBF without MTTR": {Failures: sim.Failures{MTBF: 10}},
		"MTTR alone":        {Failures: sim.Failures{MTTR: 10}},
		"unknown server":    {Failures: sim.Failures{Outages: []sim.Outage{{Server: "nope", Down: 1, Up: 2}}}},
		"up before down":    {Failures: sim.Failures{Outages: []sim.Outage{{Server: c.Server(0).ID, Down: 5, Up: 2}}}},
		"negative ckpt":     {Checkpoint: -1},
		"infinite ckpt":     {Checkpoint: math.Inf(1)},
	} {
		cfg.Cluster, cfg.Scheduler, cfg.Jobs = c, fifo{}, jobs
		if _, err := sim.Run(cfg); !errors.Is(err, sim.ErrInvalidConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNeverRepaired: a server that never comes back leaves a job too large for the rest
// waiting forever: the run stops with ErrStalled naming the job, rather than looping.
func TestNeverRepaired(t *testing.T) {
	c := cluster(t, topology.T4(), 2)
	_, err := sim.Run(sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("big", 10, 8, 1, 10)},
		Failures: sim.Failures{Outages: []sim.Outage{{Server: c.Server(1).ID, Down: 0, Up: math.Inf(1)}}}})
	if !errors.Is(err, sim.ErrStalled) || !strings.Contains(err.Error(), `"big"`) {
		t.Errorf("got %v", err)
	}
}

func TestReadOutages(t *testing.T) {
	in := "\ufeff# a failure trace\r\nserver,down,up,note\r\na100-0,10,20,psu\r\n\r\n a100-1 , 1e3 ,inf,\r\na100-0,30,,never back\r\n"
	got, err := sim.ReadOutages(strings.NewReader(in), "f.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.Outage{{"a100-0", 10, 20}, {"a100-1", 1000, math.Inf(1)}, {"a100-0", 30, math.Inf(1)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
	bad := map[string]string{
		"empty":            "",
		"no header":        "a100-0,1,2\n",
		"missing column":   "server,down\na,1\n",
		"twice":            "server,down,up,down\n",
		"not a number":     "server,down,up\na,x,2\n",
		"up before down":   "server,down,up\na,5,2\n",
		"negative":         "server,down,up\na,-1,2\n",
		"NaN":              "server,down,up\na,NaN,2\n",
		"past the horizon": "server,down,up\na,1e20,1e21\n",
		"short row":        "server,down,up\na,1\n",
		"empty server":     "server,down,up\n,1,2\n",
		"bad quote":        "server,down,up\n\"a,1,2\n",
		"long line":        "server,down,up\n" + strings.Repeat("x", 1<<17) + "\n",
	}
	for name, in := range bad {
		_, err := sim.ReadOutages(strings.NewReader(in), "f.csv")
		if !errors.Is(err, sim.ErrBadOutages) || !strings.Contains(err.Error(), "f.csv") || len(err.Error()) > 300 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzReadOutages: no input makes the reader panic or hang, and whatever it accepts is well
// formed (up after down, times within the horizon) and reads back the same when written out.
func FuzzReadOutages(f *testing.F) {
	f.Add("server,down,up\na100-0,10,20\n")
	f.Add("up,server,down\r\n5,x,1\r\n")
	f.Add("\ufeffserver,down,up\n# c\n\"a,b\",1,inf\n")
	f.Fuzz(func(t *testing.T, in string) {
		out, err := sim.ReadOutages(strings.NewReader(in), "fuzz")
		if err != nil {
			if !errors.Is(err, sim.ErrBadOutages) {
				t.Fatalf("error %v does not wrap ErrBadOutages", err)
			}
			return
		}
		// Written back with the server's name always quoted: unquoted, a name that starts
		// with '#' would read as a comment line (encoding/csv quotes it only for commas,
		// quotes, line breaks and leading spaces).
		var b strings.Builder
		b.WriteString("server,down,up\n")
		for _, o := range out {
			if o.Server == "" || !(o.Down >= 0 && o.Down <= sim.Horizon) || !(o.Up > o.Down) {
				t.Fatalf("accepted %+v", o)
			}
			fmt.Fprintf(&b, "\"%s\",%s,%s\n", strings.ReplaceAll(o.Server, `"`, `""`),
				strconv.FormatFloat(o.Down, 'g', -1, 64), strconv.FormatFloat(o.Up, 'g', -1, 64))
		}
		back, err := sim.ReadOutages(strings.NewReader(b.String()), "back")
		if err != nil || !reflect.DeepEqual(back, out) {
			t.Fatalf("round trip: %v, %+v vs %+v", err, back, out)
		}
	})
}

// TestNoProgress: with random failures far more frequent than a job can run without one and
// no checkpoints, every start of the job loses all it did; the run stops with ErrNoProgress
// naming the job after MaxLostAttempts lost starts, instead of simulating failures until
// memory runs out. MaxEvents is only a guard that turns a missing check into a failed test
// rather than a hang. With checkpoints frequent enough the same run ends, and a finite
// failure trace, however hostile, is never given up on.
func TestNoProgress(t *testing.T) {
	c := cluster(t, topology.T4(), 1)
	cfg := sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("long", 0, 1, 1, 36000)},
		RestoreTime: 5, MaxEvents: 20 * sim.MaxLostAttempts,
		Failures: sim.Failures{MTBF: 60, MTTR: 1, Seed: 1}}
	_, err := sim.Run(cfg)
	if !errors.Is(err, sim.ErrNoProgress) || !strings.Contains(err.Error(), `job "long" lost its progress to 1000 server failures in a row`) {
		t.Fatalf("no checkpoints: got %v, want ErrNoProgress naming the job", err)
	}

	cfg.Checkpoint, cfg.Jobs = 10, []trace.Record{rec("long", 0, 1, 1, 3600)}
	res, err := sim.Run(cfg)
	if err != nil {
		t.Fatalf("checkpoints every 10 s: %v", err)
	}
	if res.Summary.ServerFailures < 10 {
		t.Errorf("checkpoints every 10 s: %d failures, want a run that failures kept interrupting", res.Summary.ServerFailures)
	}

	// 1,500 outages 50 s apart, each 1 s long, hit a job that needs 100 s: it loses every
	// start until the trace ends, then finishes.
	var outs []sim.Outage
	for k := range 1500 {
		outs = append(outs, sim.Outage{Server: c.Server(0).ID, Down: float64(50 * (k + 1)), Up: float64(50*(k+1) + 1)})
	}
	cfg = sim.Config{Cluster: c, Scheduler: fifo{}, Jobs: []trace.Record{rec("a", 0, 1, 1, 100)}, RestoreTime: -1,
		Failures: sim.Failures{Outages: outs}}
	res, err = sim.Run(cfg)
	if err != nil {
		t.Fatalf("a finite failure trace: %v", err)
	}
	if j := res.Jobs[0]; j.Restarts != 1500 || j.Finish != 75001+100 {
		t.Errorf("a finite failure trace: %d restarts, finish at %v s; want 1500 and 75101", j.Restarts, j.Finish)
	}
}
