package gpusched

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

func testCluster(t testing.TB, servers int) *topology.Cluster {
	t.Helper()
	c, err := topology.Uniform(topology.T4(), servers) // 4 GPUs per server
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func gpus(ids ...int) []topology.GPUID {
	out := make([]topology.GPUID, len(ids))
	for i, g := range ids {
		out[i] = topology.GPUID(g)
	}
	return out
}

func TestDecisionValidateRejections(t *testing.T) {
	c := testCluster(t, 2) // GPUs 0..7
	a := &Job{ID: "a", GPUs: 2}
	b := &Job{ID: "b", GPUs: 3}
	v := View{Now: 5, Cluster: c,
		Running: []JobStatus{{Job: a, GPUs: gpus(0, 1)}},
		Pending: []JobStatus{{Job: b}}}
	cases := []struct {
		name string
		d    Decision
		want error
		msg  []string // substrings the message must hold
	}{
		{"ok", Decision{Run: []Assignment{{Job: "a", GPUs: gpus(0, 1)}, {Job: "b", GPUs: gpus(4, 5, 6)}}}, nil, nil},
		{"empty is ok", Decision{}, nil, nil},
		{"unknown job", Decision{Run: []Assignment{{Job: "zz", GPUs: gpus(0)}}}, ErrUnknownJob, []string{`"zz"`}},
		{"listed twice", Decision{Run: []Assignment{{Job: "a", GPUs: gpus(0, 1)}, {Job: "a", GPUs: gpus(2, 3)}}}, ErrDuplicateJob, []string{`"a"`}},
		{"too few GPUs", Decision{Run: []Assignment{{Job: "b", GPUs: gpus(4, 5)}}}, ErrGPUCount, []string{`"b"`, "needs 3", "has 2"}},
		{"too many GPUs", Decision{Run: []Assignment{{Job: "a", GPUs: gpus(0, 1, 2)}}}, ErrGPUCount, []string{`"a"`}},
		{"negative GPU", Decision{Run: []Assignment{{Job: "a", GPUs: gpus(0, -1)}}}, ErrNoSuchGPU, []string{`"a"`, "GPU -1"}},
		{"GPU past the end", Decision{Run: []Assignment{{Job: "b", GPUs: gpus(6, 7, 8)}}}, ErrNoSuchGPU, []string{`"b"`, "GPU 8", "0..7"}},
		{"two jobs one GPU", Decision{Run: []Assignment{{Job: "a", GPUs: gpus(0, 1)}, {Job: "b", GPUs: gpus(1, 2, 3)}}}, ErrDoubleBooked, []string{"GPU 1", `"a"`, `"b"`, "t4-0/1"}},
		{"one job one GPU twice", Decision{Run: []Assignment{{Job: "b", GPUs: gpus(5, 6, 5)}}}, ErrDoubleBooked, []string{"GPU 5", `"b"`, "two workers"}},
		{"NaN wake", Decision{WakeAt: math.NaN()}, nil, []string{"NaN"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Validate(v)
			if tc.want == nil && tc.msg == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v", tc.d)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want errors.Is %v", err, tc.want)
			}
			for _, s := range tc.msg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %s", err, s)
				}
			}
		})
	}
	if err := (Decision{}).Validate(View{}); !errors.Is(err, ErrInvalidView) {
		t.Errorf("Validate with no cluster = %v, want ErrInvalidView", err)
	}
}

func TestViewValidate(t *testing.T) {
	c := testCluster(t, 1)
	a := &Job{ID: "a", GPUs: 2}
	b := &Job{ID: "b", GPUs: 1}
	good := View{Cluster: c, Running: []JobStatus{{Job: a, GPUs: gpus(0, 1)}}, Pending: []JobStatus{{Job: b}}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []View{
		{},
		{Cluster: c, Now: math.Inf(1)},
		{Cluster: c, Pending: []JobStatus{{Job: a}, {Job: a}}},
		{Cluster: c, Pending: []JobStatus{{Job: a}}, Running: []JobStatus{{Job: a, GPUs: gpus(0, 1)}}},
		{Cluster: c, Pending: []JobStatus{{Job: b, GPUs: gpus(0)}}},
		{Cluster: c, Pending: []JobStatus{{}}},
		{Cluster: c, Running: []JobStatus{{Job: a, GPUs: gpus(0)}}},
		{Cluster: c, Running: []JobStatus{{Job: a, GPUs: gpus(0, 1)}, {Job: b, GPUs: gpus(1)}}},
	}
	for i, v := range bad {
		if err := v.Validate(); !errors.Is(err, ErrInvalidView) {
			t.Errorf("bad view %d: Validate = %v, want ErrInvalidView", i, err)
		}
	}
	if got := good.Free(); got.String() != "{2-3}" {
		t.Errorf("Free = %v, want {2-3}", got)
	}
}

// TestSetHeld: Free uses the host's record of held GPUs only for the Running slice and
// cluster it was recorded with, and Validate catches a record that disagrees with the jobs.
func TestSetHeld(t *testing.T) {
	c := testCluster(t, 2)
	a := &Job{ID: "a", GPUs: 2}
	v := View{Cluster: c, Running: []JobStatus{{Job: a, GPUs: gpus(0, 1)}}}
	v.SetHeld(topology.SetOf(0, 1))
	v.Unavailable = topology.SetOf(7)
	if got := v.Free(); got.String() != "{2-6}" {
		t.Errorf("Free with the record = %v, want {2-6}", got)
	}
	if err := v.Validate(); err != nil {
		t.Errorf("Validate with a true record: %v", err)
	}
	wrong := v
	wrong.SetHeld(topology.SetOf(0, 1, 2)) // claims GPU 2, which no job holds
	if got := wrong.Free(); got.String() != "{3-6}" {
		t.Errorf("Free trusts the record: got %v, want {3-6}", got)
	}
	if err := wrong.Validate(); !errors.Is(err, ErrInvalidView) {
		t.Errorf("Validate with a false record = %v, want ErrInvalidView", err)
	}
	// A copy with other running jobs does not use the record.
	other := wrong
	other.Running = []JobStatus{{Job: a, GPUs: gpus(4, 5)}}
	if got := other.Free(); got.String() != "{0-3,6}" {
		t.Errorf("Free of a copy with other running jobs = %v, want {0-3,6}", got)
	}
	fewer := wrong
	fewer.Running = wrong.Running[:0]
	if got := fewer.Free(); got.String() != "{0-6}" {
		t.Errorf("Free of a copy with fewer running jobs = %v, want {0-6}", got)
	}
	bigger := wrong
	bigger.Cluster = testCluster(t, 3)
	if got := bigger.Free(); got.String() != "{2-6,8-11}" {
		t.Errorf("Free of a copy on another cluster = %v, want {2-6,8-11}", got)
	}
}

func TestJobValidate(t *testing.T) {
	c := testCluster(t, 1)
	ok := Job{ID: "x", GPUs: 4, Arrival: 3, StepTime: 0.1, Weight: 2}
	if err := ok.Validate(c); err != nil {
		t.Fatal(err)
	}
	if ok.EffectiveWeight() != 2 || (&Job{}).EffectiveWeight() != 1 {
		t.Error("EffectiveWeight")
	}
	for _, j := range []Job{
		{GPUs: 1},
		{ID: "x", GPUs: 0},
		{ID: "x", GPUs: 5},
		{ID: "x", GPUs: 1, Arrival: -1},
		{ID: "x", GPUs: 1, Arrival: math.NaN()},
		{ID: "x", GPUs: 1, StepTime: math.Inf(1)},
		{ID: "x", GPUs: 1, Weight: -2},
	} {
		err := j.Validate(c)
		if !errors.Is(err, ErrInvalidJob) {
			t.Errorf("%+v: Validate = %v, want ErrInvalidJob", j, err)
		}
	}
}

func TestDiff(t *testing.T) {
	c := testCluster(t, 2)
	a, b, x, y := &Job{ID: "a", GPUs: 2}, &Job{ID: "b", GPUs: 1}, &Job{ID: "x", GPUs: 1}, &Job{ID: "y", GPUs: 2}
	v := View{Cluster: c,
		Running: []JobStatus{{Job: a, GPUs: gpus(0, 1)}, {Job: b, GPUs: gpus(2)}, {Job: x, GPUs: gpus(3)}},
		Pending: []JobStatus{{Job: y}}}
	d := Decision{Run: []Assignment{{Job: "a", GPUs: gpus(1, 0)}, {Job: "y", GPUs: gpus(4, 5)}, {Job: "b", GPUs: gpus(2)}}}
	if err := d.Validate(v); err != nil {
		t.Fatal(err)
	}
	ch := d.Diff(v)
	if len(ch.Start) != 1 || ch.Start[0].Job != "y" {
		t.Errorf("Start = %v", ch.Start)
	}
	if !slices.Equal(ch.Preempt, []JobID{"x"}) {
		t.Errorf("Preempt = %v", ch.Preempt)
	}
	if len(ch.Migrate) != 1 || ch.Migrate[0].Job != "a" {
		t.Errorf("Migrate = %v (a changed worker order)", ch.Migrate)
	}
	if !slices.Equal(ch.Keep, []JobID{"b"}) {
		t.Errorf("Keep = %v", ch.Keep)
	}
}

// validByDefinition is an independent statement of what Validate must accept: every listed job
// is in the view, no job is listed twice, each has exactly its demand of GPUs, every GPU exists,
// is available and of the job's type (the test's clusters have one GPU model per type), and no
// GPU appears twice across the whole decision.
func validByDefinition(c *topology.Cluster, v View, d Decision) bool {
	n := c.NumGPUs()
	jobs := map[JobID]*Job{}
	for _, s := range append(append([]JobStatus{}, v.Pending...), v.Running...) {
		jobs[s.Job.ID] = s.Job
	}
	var all []topology.GPUID
	seen := map[JobID]bool{}
	for _, a := range d.Run {
		j, ok := jobs[a.Job]
		if !ok || seen[a.Job] || len(a.GPUs) != j.GPUs {
			return false
		}
		seen[a.Job] = true
		for _, g := range a.GPUs {
			if g < 0 || int(g) >= n || v.Unavailable.Contains(g) {
				return false
			}
			if j.GPUType != "" && !strings.EqualFold(c.GPU(g).Model[:len(j.GPUType)], j.GPUType) {
				return false
			}
		}
		all = append(all, a.GPUs...)
	}
	for i, g := range all {
		for _, h := range all[:i] {
			if g == h {
				return false
			}
		}
	}
	return true
}

// TestValidateAcceptsExactlyDisjointPlacements checks, on random views and decisions (many of
// them near-misses), that Validate accepts exactly the decisions that give existing, available,
// eligible, disjoint GPUs in the right counts to known jobs, each listed once.
func TestValidateAcceptsExactlyDisjointPlacements(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkValidate(t, Decision.Validate) })
}

func checkValidate(t *rapid.T, validate func(Decision, View) error) {
	var servers []topology.Server
	for i := range rapid.IntRange(1, 3).Draw(t, "servers") {
		spec := topology.T4()
		if rapid.Bool().Draw(t, "a100") {
			spec = topology.A100()
			spec.GPUs = 4
		}
		servers = append(servers, topology.Server{ID: fmt.Sprint("s", i), ServerSpec: spec})
	}
	c, err := topology.New("mixed", servers, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := c.NumGPUs()
	njobs := rapid.IntRange(0, 5).Draw(t, "jobs")
	v := View{Cluster: c}
	for k := rapid.IntRange(0, 3).Draw(t, "unavailable"); k > 0; k-- {
		v.Unavailable.Add(topology.GPUID(rapid.IntRange(0, n-1).Draw(t, "unavailable gpu")))
	}
	var ids []JobID
	for i := 0; i < njobs; i++ {
		j := &Job{ID: JobID(rune('a' + i)), GPUs: rapid.IntRange(1, 4).Draw(t, "demand"),
			GPUType: rapid.SampledFrom([]string{"", "", "t4", "A100"}).Draw(t, "type")}
		v.Pending = append(v.Pending, JobStatus{Job: j})
		ids = append(ids, j.ID)
	}
	ids = append(ids, "ghost")
	var d Decision
	for k := rapid.IntRange(0, 4).Draw(t, "assignments"); k > 0; k-- {
		k := rapid.IntRange(0, len(ids)-1).Draw(t, "job")
		size := 2 // the ghost job's "demand"
		if k < njobs {
			size = v.Pending[k].Job.GPUs
		}
		// Mostly the right count, sometimes one off.
		size += rapid.SampledFrom([]int{0, 0, 0, -1, 1}).Draw(t, "count error")
		a := Assignment{Job: ids[k]}
		for w := 0; w < size; w++ {
			// Mostly existing GPUs, sometimes one just outside the cluster.
			g := rapid.IntRange(0, n-1).Draw(t, "gpu")
			if rapid.IntRange(0, 9).Draw(t, "out of range") == 0 {
				g = rapid.SampledFrom([]int{-1, n}).Draw(t, "bad gpu")
			}
			a.GPUs = append(a.GPUs, topology.GPUID(g))
		}
		d.Run = append(d.Run, a)
	}
	want := validByDefinition(c, v, d)
	got := validate(d, v) == nil
	if got != want {
		t.Fatalf("Validate accepted=%v, definition says %v, for %+v (unavailable %v)", got, want, d.Run, v.Unavailable)
	}
}

// TestValidatePropertyHasTeeth runs the same property against a validator that forgets to check
// for double-booking across jobs, and requires rapid to find a counterexample.
func TestValidatePropertyHasTeeth(t *testing.T) {
	broken := func(d Decision, v View) error {
		for i := range d.Run { // validate each assignment alone: misses clashes between jobs
			if err := (Decision{Run: d.Run[i : i+1]}).Validate(v); err != nil {
				return err
			}
		}
		seen := map[JobID]bool{}
		for _, a := range d.Run {
			if seen[a.Job] {
				return ErrDuplicateJob
			}
			seen[a.Job] = true
		}
		return nil
	}
	if !propertyFails(func(t *rapid.T) { checkValidate(t, broken) }) {
		t.Fatal("the property did not catch a validator that misses cross-job double-booking")
	}
	ignoresUnavailable := func(d Decision, v View) error {
		v.Unavailable = topology.GPUSet{}
		return d.Validate(v)
	}
	if !propertyFails(func(t *rapid.T) { checkValidate(t, ignoresUnavailable) }) {
		t.Fatal("the property did not catch a validator that ignores unavailable GPUs")
	}
	ignoresType := func(d Decision, v View) error {
		v.Pending = slices.Clone(v.Pending)
		for i := range v.Pending {
			j := *v.Pending[i].Job
			j.GPUType = ""
			v.Pending[i].Job = &j
		}
		return d.Validate(v)
	}
	if !propertyFails(func(t *rapid.T) { checkValidate(t, ignoresType) }) {
		t.Fatal("the property did not catch a validator that ignores GPU types")
	}
}

func propertyFails(prop func(*rapid.T)) bool { return teeth.Fails(prop) }
