package gpusched

import "fmt"

// Expand returns the full form of the decision for the view it answers: Run lists every job
// that should hold GPUs. For a delta decision (KeepOthers) that is every running job of the
// view in the view's order (the assignment of d.Run where d.Run lists the job, its current
// placement and plan choice where nothing mentions it, left out where Stop or Rejected names
// it), followed by the assignments of d.Run for jobs that are not running, in d.Run's order.
// A full decision is returned as it is, without its redundant Stop list. WakeAt and Rejected
// are kept; the result shares d's and the view's slices.
//
// Expand is what an embedder that wants the declarative answer calls; hosts need not (package
// host applies a delta decision without expanding it). The decision should pass Validate;
// Expand of an invalid one never panics, and its full form is invalid too (a job listed twice
// stays listed twice), except that a job both stopped and run is run.
func (d Decision) Expand(v View) Decision {
	if !d.KeepOthers {
		d.Stop = nil
		return d
	}
	out := Decision{WakeAt: d.WakeAt, Rejected: d.Rejected}
	// where tells, for each job the decision mentions, its first index in d.Run, or -1 for a
	// job only stopped or rejected.
	where := make(map[JobID]int, len(d.Run)+len(d.Stop)+len(d.Rejected))
	for _, id := range d.Stop {
		where[id] = -1
	}
	for _, r := range d.Rejected {
		if r != nil {
			where[r.Job] = -1
		}
	}
	for i, a := range d.Run {
		if k, ok := where[a.Job]; !ok || k < 0 {
			where[a.Job] = i
		}
	}
	used := make([]bool, len(d.Run))
	out.Run = make([]Assignment, 0, len(v.Running)+len(d.Run))
	for i := range v.Running {
		st := &v.Running[i]
		if st.Job == nil {
			continue
		}
		k, ok := where[st.Job.ID]
		switch {
		case !ok:
			out.Run = append(out.Run, Assignment{Job: st.Job.ID, GPUs: st.GPUs, PlanChoice: st.PlanChoice})
		case k >= 0 && !used[k]:
			out.Run = append(out.Run, d.Run[k])
			used[k] = true
		}
	}
	for i, a := range d.Run {
		if !used[i] {
			out.Run = append(out.Run, a)
		}
	}
	return out
}

// checkStop checks d.Stop against the view and the rest of the decision: every job in it runs
// in the view and is stopped once and not also run or rejected.
func (d Decision) checkStop(v View) error {
	running := make(map[JobID]struct{}, len(v.Running))
	for i := range v.Running {
		if v.Running[i].Job == nil {
			return fmt.Errorf("%w: a job status without a job", ErrInvalidView)
		}
		running[v.Running[i].Job.ID] = struct{}{}
	}
	stopped := make(map[JobID]struct{}, len(d.Stop))
	for _, id := range d.Stop {
		if _, ok := running[id]; !ok {
			return fmt.Errorf("%w: stopped job %q is not running in the view", ErrUnknownJob, id)
		}
		if _, dup := stopped[id]; dup {
			return fmt.Errorf("%w: job %q is stopped twice", ErrDuplicateJob, id)
		}
		stopped[id] = struct{}{}
	}
	if len(stopped) == 0 {
		return nil
	}
	for _, a := range d.Run {
		if _, ok := stopped[a.Job]; ok {
			return fmt.Errorf("%w: job %q is both stopped and run", ErrDuplicateJob, a.Job)
		}
	}
	for _, r := range d.Rejected {
		if r == nil {
			continue // the full check reports it
		}
		if _, ok := stopped[r.Job]; ok {
			return fmt.Errorf("%w: job %q is both stopped and rejected", ErrDuplicateJob, r.Job)
		}
	}
	return nil
}
