package gpusched_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/teeth"
	"github.com/gpusched/gpusched/topology"
	"pgregory.net/rapid"
)

// deltaCase draws a cluster, a view (running jobs on distinct GPUs, pending jobs) and a valid
// delta decision for it: each running job is left unmentioned, listed where it runs, moved
// to free GPUs, stopped or rejected; each pending job is started on free GPUs, rejected or
// left waiting.
func deltaCase(t *rapid.T) (gpusched.View, gpusched.Decision) {
	c, err := topology.Uniform(topology.T4(), rapid.IntRange(1, 3).Draw(t, "servers"))
	if err != nil {
		t.Fatal(err)
	}
	free := c.AllGPUs()
	take := func(n int) []topology.GPUID {
		s := free.Slice()
		if len(s) < n {
			return nil
		}
		for i := range s {
			j := rapid.IntRange(i, len(s)-1).Draw(t, "shuffle")
			s[i], s[j] = s[j], s[i]
		}
		out := slices.Clone(s[:n])
		for _, g := range out {
			free.Remove(g)
		}
		return out
	}
	v := gpusched.View{Now: 10, Cluster: c, AcceptsKeepOthers: true}
	n := 0
	newJob := func() *gpusched.Job {
		n++
		return &gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("j%d", n)), GPUs: rapid.IntRange(1, 3).Draw(t, "gpus"), StepTime: 1}
	}
	for range rapid.IntRange(0, 6).Draw(t, "running") {
		j := newJob()
		if g := take(j.GPUs); g != nil {
			v.Running = append(v.Running, gpusched.JobStatus{Job: j, GPUs: g, Started: true})
		}
	}
	for range rapid.IntRange(0, 6).Draw(t, "pending") {
		v.Pending = append(v.Pending, gpusched.JobStatus{Job: newJob()})
	}
	d := gpusched.Decision{KeepOthers: true, WakeAt: rapid.SampledFrom([]float64{0, 20}).Draw(t, "wake")}
	var moving []gpusched.JobStatus
	for _, st := range v.Running {
		switch rapid.IntRange(0, 4).Draw(t, "running-act") {
		case 1:
			d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: st.GPUs})
		case 2:
			moving = append(moving, st) // placed once every stop has freed its GPUs
			for _, g := range st.GPUs {
				free.Add(g)
			}
		case 3:
			d.Stop = append(d.Stop, st.Job.ID)
			for _, g := range st.GPUs {
				free.Add(g)
			}
		case 4:
			d.Rejected = append(d.Rejected, &gpusched.JobError{Job: st.Job.ID, Err: gpusched.ErrNoCost})
			for _, g := range st.GPUs {
				free.Add(g)
			}
		}
	}
	for _, st := range moving {
		if g := take(st.Job.GPUs); g != nil {
			d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: g})
		} else {
			d.Stop = append(d.Stop, st.Job.ID)
		}
	}
	for _, st := range v.Pending {
		switch rapid.IntRange(0, 2).Draw(t, "pending-act") {
		case 1:
			if g := take(st.Job.GPUs); g != nil {
				d.Run = append(d.Run, gpusched.Assignment{Job: st.Job.ID, GPUs: g})
			}
		case 2:
			d.Rejected = append(d.Rejected, &gpusched.JobError{Job: st.Job.ID, Err: gpusched.ErrNoCost})
		}
	}
	return v, d
}

// deltaChanges is what a delta decision asks of a host, read straight from its definition
// (not through Expand): starts, preemptions (Stop and rejected running jobs), moves, and keeps
// (every running job not mentioned, and those listed where they run).
func deltaChanges(v gpusched.View, d gpusched.Decision) (start, preempt, migrate, keep []string) {
	running := map[gpusched.JobID]*gpusched.JobStatus{}
	for i := range v.Running {
		running[v.Running[i].Job.ID] = &v.Running[i]
	}
	mentioned := map[gpusched.JobID]bool{}
	for _, a := range d.Run {
		mentioned[a.Job] = true
		st, ok := running[a.Job]
		switch {
		case !ok:
			start = append(start, fmt.Sprint(a.Job, a.GPUs))
		case slices.Equal(st.GPUs, a.GPUs) && st.PlanChoice == a.PlanChoice:
			keep = append(keep, string(a.Job))
		default:
			migrate = append(migrate, fmt.Sprint(a.Job, a.GPUs))
		}
	}
	for _, id := range d.Stop {
		mentioned[id] = true
		preempt = append(preempt, string(id))
	}
	for _, r := range d.Rejected {
		mentioned[r.Job] = true
		if running[r.Job] != nil {
			preempt = append(preempt, string(r.Job))
		}
	}
	for _, st := range v.Running {
		if !mentioned[st.Job.ID] {
			keep = append(keep, string(st.Job.ID))
		}
	}
	for _, l := range [][]string{start, preempt, migrate, keep} {
		slices.Sort(l)
	}
	return
}

// sortedChanges returns a Changes' lists as sorted strings.
func sortedChanges(ch gpusched.Changes) (start, preempt, migrate, keep []string) {
	for _, a := range ch.Start {
		start = append(start, fmt.Sprint(a.Job, a.GPUs))
	}
	for _, id := range ch.Preempt {
		preempt = append(preempt, string(id))
	}
	for _, a := range ch.Migrate {
		migrate = append(migrate, fmt.Sprint(a.Job, a.GPUs))
	}
	for _, id := range ch.Keep {
		keep = append(keep, string(id))
	}
	for _, l := range [][]string{start, preempt, migrate, keep} {
		slices.Sort(l)
	}
	return
}

// expandProperty: for random valid delta decisions, the full form that expand gives is valid,
// is a full form (no KeepOthers, no Stop, WakeAt and Rejected kept), and asks of the host
// exactly what the delta's definition asks (deltaChanges); Diff and Validate of the delta
// agree with those of its full form.
func expandProperty(expand func(gpusched.Decision, gpusched.View) gpusched.Decision) func(*rapid.T) {
	return func(t *rapid.T) {
		v, d := deltaCase(t)
		if err := d.Validate(v); err != nil {
			t.Fatalf("a valid delta refused: %v", err)
		}
		f := expand(d, v)
		if f.KeepOthers || len(f.Stop) != 0 || f.WakeAt != d.WakeAt || !slices.Equal(f.Rejected, d.Rejected) {
			t.Fatalf("not the full form of %+v: %+v", d, f)
		}
		if err := f.Validate(v); err != nil {
			t.Fatalf("the full form of a valid delta refused: %v\n%+v", err, f)
		}
		s0, p0, m0, k0 := deltaChanges(v, d)
		s1, p1, m1, k1 := sortedChanges(f.Diff(v))
		for _, pair := range [][2][]string{{s0, s1}, {p0, p1}, {m0, m1}, {k0, k1}} {
			if !slices.Equal(pair[0], pair[1]) {
				t.Fatalf("delta asks start %v preempt %v migrate %v keep %v; its full form %v %v %v %v", s0, p0, m0, k0, s1, p1, m1, k1)
			}
		}
		s2, p2, m2, k2 := sortedChanges(d.Diff(v))
		if !slices.Equal(s1, s2) || !slices.Equal(p1, p2) || !slices.Equal(m1, m2) || !slices.Equal(k1, k2) {
			t.Fatalf("Diff of the delta differs from Diff of its full form")
		}
	}
}

// TestPropertyExpand runs expandProperty with Decision.Expand.
func TestPropertyExpand(t *testing.T) {
	rapid.Check(t, expandProperty(gpusched.Decision.Expand))
}

// TestExpandPropertyCatchesAForgottenStop: an Expand that forgets Stop (the stopped jobs keep
// running) is caught.
func TestExpandPropertyCatchesAForgottenStop(t *testing.T) {
	broken := func(d gpusched.Decision, v gpusched.View) gpusched.Decision {
		d.Stop = nil
		return d.Expand(v)
	}
	if !teeth.Fails(expandProperty(broken)) {
		t.Fatal("the Expand property does not catch an Expand that forgets Stop")
	}
}

// TestPropertyDeltaSpoiled: a valid delta spoiled in one of the ways only a delta can be (a
// stopped job that waits, is unknown, is stopped twice, or is also run or rejected; a start on
// a GPU of a running job the delta keeps without listing it) is refused by Validate with the
// sentinel that names the fault, and the same decision as a full form would be refused too
// where the fault is in its Run list.
func TestPropertyDeltaSpoiled(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v, d := deltaCase(t)
		d.Run, d.Stop, d.Rejected = slices.Clone(d.Run), slices.Clone(d.Stop), slices.Clone(d.Rejected)
		var want error
		switch k := rapid.IntRange(0, 5).Draw(t, "spoil"); {
		case k == 0 && len(v.Pending) > 0:
			d.Stop = append(d.Stop, v.Pending[0].Job.ID)
			want = gpusched.ErrUnknownJob
		case k == 1:
			d.Stop = append(d.Stop, "nobody")
			want = gpusched.ErrUnknownJob
		case k == 2 && len(d.Stop) > 0:
			d.Stop = append(d.Stop, d.Stop[0])
			want = gpusched.ErrDuplicateJob
		case k == 3 && len(d.Run) > 0 && slices.ContainsFunc(v.Running, func(st gpusched.JobStatus) bool { return st.Job.ID == d.Run[0].Job }):
			d.Stop = append(d.Stop, d.Run[0].Job)
			want = gpusched.ErrDuplicateJob
		case k == 4 && len(d.Stop) > 0:
			d.Rejected = append(d.Rejected, &gpusched.JobError{Job: d.Stop[0], Err: gpusched.ErrNoCost})
			want = gpusched.ErrDuplicateJob
		case k == 5 && len(v.Pending) > 0:
			// A start on a GPU of a running job nobody mentions (kept implicitly).
			for _, st := range v.Running {
				if slices.Contains(d.Stop, st.Job.ID) || slices.ContainsFunc(d.Run, func(a gpusched.Assignment) bool { return a.Job == st.Job.ID }) ||
					slices.ContainsFunc(d.Rejected, func(r *gpusched.JobError) bool { return r.Job == st.Job.ID }) || st.Job.GPUs != v.Pending[0].Job.GPUs {
					continue
				}
				p := v.Pending[0].Job.ID
				d.Run = slices.DeleteFunc(d.Run, func(a gpusched.Assignment) bool { return a.Job == p })
				d.Rejected = slices.DeleteFunc(d.Rejected, func(r *gpusched.JobError) bool { return r.Job == p })
				d.Run = append(d.Run, gpusched.Assignment{Job: p, GPUs: st.GPUs})
				want = gpusched.ErrDoubleBooked
				break
			}
		}
		if want == nil {
			t.Skip("no spoil applies")
		}
		if err := d.Validate(v); !errors.Is(err, want) {
			t.Fatalf("got %v, want %v", err, want)
		}
	})
}

// TestExpandFullForm: Expand returns a full decision as it is, without its (redundant) Stop.
func TestExpandFullForm(t *testing.T) {
	c, err := topology.Uniform(topology.T4(), 1)
	if err != nil {
		t.Fatal(err)
	}
	a := &gpusched.Job{ID: "a", GPUs: 1, StepTime: 1}
	b := &gpusched.Job{ID: "b", GPUs: 1, StepTime: 1}
	v := gpusched.View{Cluster: c, Running: []gpusched.JobStatus{{Job: a, GPUs: []topology.GPUID{0}}, {Job: b, GPUs: []topology.GPUID{1}}}}
	d := gpusched.Decision{Run: []gpusched.Assignment{{Job: "a", GPUs: []topology.GPUID{2}}}, Stop: []gpusched.JobID{"b"}, WakeAt: 5}
	if err := d.Validate(v); err != nil {
		t.Fatal(err)
	}
	f := d.Expand(v)
	if len(f.Run) != 1 || f.Run[0].GPUs[0] != 2 || f.Stop != nil || f.WakeAt != 5 {
		t.Fatalf("got %+v", f)
	}
	ch := d.Diff(v)
	if len(ch.Migrate) != 1 || !slices.Equal(ch.Preempt, []gpusched.JobID{"b"}) {
		t.Fatalf("diff %+v", ch)
	}
	// The same as a delta that does not mention b keeps it.
	d = gpusched.Decision{KeepOthers: true, Run: []gpusched.Assignment{{Job: "a", GPUs: []topology.GPUID{2}}}}
	if f := d.Expand(v); len(f.Run) != 2 || f.Run[0].Job != "a" || f.Run[1].Job != "b" || f.Run[1].GPUs[0] != 1 {
		t.Fatalf("got %+v", f)
	}
}
