package policy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// Errors returned by constructors and by Schedule. Every returned error wraps one of these (or
// one of package gpusched's) and names the offending option, job or GPU.
var (
	// ErrInvalidOptions reports an options struct that a constructor cannot honour: a negative
	// or NaN parameter, thresholds out of order, a missing required function.
	ErrInvalidOptions = errors.New("policy: invalid options")
	// ErrPlacement reports a Placer that returned a placement of the wrong size, with a GPU that
	// is not free, or with a GPU twice.
	ErrPlacement = errors.New("policy: invalid placement from placer")
)

// Order says what a policy does when the next job in its order cannot start.
type Order uint8

const (
	// DefaultOrder selects the policy's documented default.
	DefaultOrder Order = iota
	// Strict keeps the policy's order: no waiting job starts while a job before it in the
	// order waits (head-of-line blocking).
	Strict
	// Backfill lets a later job start on GPUs that the earlier waiting jobs cannot use.
	Backfill
)

// String returns "default", "strict" or "backfill".
func (o Order) String() string {
	switch o {
	case DefaultOrder:
		return "default"
	case Strict:
		return "strict"
	case Backfill:
		return "backfill"
	}
	return fmt.Sprintf("Order(%d)", uint8(o))
}

// Options are the settings every placement-based policy shares.
type Options struct {
	// Placer places a starting job on free GPUs. Default: gpusched.Pack (consolidation); a
	// partition-based placer for worker graphs (asrpt.Partitioned) can be plugged in.
	Placer gpusched.Placer
	// Order chooses strict order or backfilling; each policy documents its default.
	Order Order
	// Name, when set, replaces the policy's name in reports (String), to tell variants apart.
	Name string
}

// name returns the report name.
func name(set, def string) string {
	if set != "" {
		return set
	}
	return def
}

func (o Options) placer() gpusched.Placer {
	if o.Placer == nil {
		return gpusched.Pack
	}
	return o.Placer
}

// backfill resolves the order against the policy's default.
func (o Options) backfill(def bool) bool {
	switch o.Order {
	case Strict:
		return false
	case Backfill:
		return true
	}
	return def
}

func (o Options) check(policy string) error {
	if o.Order > Backfill {
		return fmt.Errorf("%w: %s: unknown Order %d", ErrInvalidOptions, policy, o.Order)
	}
	return nil
}

// checkView rejects what would make a policy misbehave: no cluster, a time that is not
// finite, a status without a job. A job that cannot run as described (no GPU, NaN features)
// is not an error of the view: the gate rejects that job alone. The rest of View.Validate is
// the host's duty.
func checkView(v *gpusched.View) error {
	if v.Cluster == nil {
		return fmt.Errorf("%w: no cluster", gpusched.ErrInvalidView)
	}
	if math.IsNaN(v.Now) || math.IsInf(v.Now, 0) {
		return fmt.Errorf("%w: time %v is not finite", gpusched.ErrInvalidView, v.Now)
	}
	for _, list := range [][]gpusched.JobStatus{v.Pending, v.Running} {
		for i := range list {
			if err := checkStatus(&list[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkStatus is checkView's test of one job.
func checkStatus(st *gpusched.JobStatus) error {
	j := st.Job
	if j == nil {
		return fmt.Errorf("%w: a job status without a job", gpusched.ErrInvalidView)
	}
	return nil
}

// keepAll lists every running job on its current GPUs (shared with the view, as
// gpusched.Decision allows).
func keepAll(v *gpusched.View) []gpusched.Assignment {
	run := make([]gpusched.Assignment, 0, len(v.Running)+min(len(v.Pending), 16))
	for i := range v.Running {
		run = append(run, keep(&v.Running[i]))
	}
	return run
}

// keepsFor returns what a decision that keeps every running job of v lists before its starts:
// nothing for a host that takes deltas (the decision is a delta then: KeepOthers set to
// v.AcceptsKeepOthers), every running job otherwise (keepAll).
func keepsFor(v *gpusched.View) []gpusched.Assignment {
	if v.AcceptsKeepOthers {
		return nil
	}
	return keepAll(v)
}

func keep(st *gpusched.JobStatus) gpusched.Assignment {
	return gpusched.Assignment{Job: st.Job.ID, GPUs: st.GPUs}
}

// checkPlacement verifies a placer's answer against the free set.
func checkPlacement(j *gpusched.Job, gpus []topology.GPUID, free topology.GPUSet) error {
	if len(gpus) != j.GPUs {
		return fmt.Errorf("%w: job %q needs %d GPUs, got %d", ErrPlacement, j.ID, j.GPUs, len(gpus))
	}
	seen := make(map[topology.GPUID]struct{}, len(gpus))
	for _, g := range gpus {
		if !free.Contains(g) {
			return fmt.Errorf("%w: job %q placed on GPU %d, which is not free", ErrPlacement, j.ID, g)
		}
		if _, dup := seen[g]; dup {
			return fmt.Errorf("%w: job %q placed twice on GPU %d", ErrPlacement, j.ID, g)
		}
		seen[g] = struct{}{}
	}
	return nil
}

// placeFunc places one waiting job on free GPUs. The engines hand it only the free GPUs the job
// may use (gpusched.Job.EligibleIn).
type placeFunc func(free topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool)

// placeOn adapts a Placer to one cluster.
func placeOn(p gpusched.Placer, c *topology.Cluster) placeFunc {
	return func(free topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool) {
		return p(c, free, st.Job)
	}
}

// dispatch is the engine of the non-preemptive policies: every running job keeps its GPUs, and
// the waiting jobs, in the given order (nil: the view's Pending as listed), start on free GPUs
// as the place function finds them. With backfill a job that cannot start is skipped; without,
// it blocks the rest. The walk stops once no GPU is free, so a call costs the jobs it looks at
// before the cluster is full (or, in strict order, before the first that does not fit), not
// the queue's length.
func dispatch(v *gpusched.View, order []*gpusched.JobStatus, backfill bool, place placeFunc) (gpusched.Decision, error) {
	k := 0
	next := func() (*gpusched.JobStatus, bool) {
		switch {
		case order != nil && k < len(order):
			k++
			return order[k-1], true
		case order == nil && k < len(v.Pending):
			k++
			return &v.Pending[k-1], true
		}
		return nil, false
	}
	return dispatchNext(v, next, backfill, place)
}

// ranked is a job in a preemptive policy's priority order.
type ranked struct {
	st        *gpusched.JobStatus
	running   bool
	protected bool // running and may not be preempted now
	// pos is a running job's index in the view's Running, when the policy sets it (st is
	// &View.Running[pos]): preempt then lists the jobs it keeps in the view's order, which hosts
	// match without a lookup.
	pos int
}

// selection is the outcome of a preemptive policy's choice.
type selection struct {
	decision gpusched.Decision
	// waiting reports that some job is left without GPUs: a waiting job that did not start,
	// or a running job that is preempted.
	waiting bool
	// preempted lists the running jobs the decision stops.
	preempted []gpusched.JobID
	stopped   []*gpusched.JobStatus // the statuses of the preempted jobs, in the same order
	// runs tells, for each job of the order preempt was given, whether the decision runs it
	// (keeps it or starts it).
	runs []bool
	// skipped is the number of running jobs preemptMerged left out of the order (and of runs)
	// in front of it: all of them run (keptPrefix).
	skipped int
}

// preempt is the engine of the preemptive policies. order is the full priority order (running
// and waiting jobs, highest first). Protected running jobs always keep their GPUs. The others
// are taken greedily in order while their GPU demands fit in what the protected and the earlier
// chosen jobs leave of the cluster; a chosen running job keeps its GPUs, a chosen waiting job is
// placed on the GPUs that no kept job holds. A running job that is not chosen is preempted,
// unless its GPUs end up unused anyway (then it keeps them: a preemption that frees GPUs nobody
// takes is pure loss).
//
// With backfill a job whose demand does not fit is skipped and later ones may still be chosen;
// in strict order no waiting job after it starts (running jobs after it are still kept while
// they fit: the blocked job could not use their GPUs anyway).
//
// sc, when not nil, lends its buffers: the selection's runs then lives in sc until the next
// call with it.
func preempt(v *gpusched.View, order []ranked, backfill bool, place placeFunc, sc *scratch) (selection, error) {
	return preemptAfter(v, keptPrefix{}, order, backfill, place, sc)
}

// keptPrefix is the head of a priority order that a caller of preemptAfter leaves out: n
// unprotected running jobs holding gpus GPUs in all, which the order would have listed first
// and preempt would have chosen, all of them (their GPUs fit in the available GPUs less the
// protected jobs'). Only for a host that takes deltas (View.AcceptsKeepOthers), whose decision
// does not list the jobs kept.
type keptPrefix struct {
	n, gpus int
}

// preemptAfter is preempt over the order pre followed by order: the same decision, with runs
// for order's jobs alone. pre must be empty unless v.AcceptsKeepOthers and order holds every
// other running job of the view.
func preemptAfter(v *gpusched.View, pre keptPrefix, order []ranked, backfill bool, place placeFunc, sc *scratch) (selection, error) {
	c := v.Cluster
	budget := v.Available() - pre.gpus
	for _, r := range order {
		if r.protected {
			budget -= r.st.Job.GPUs
		}
	}
	chosen := sc.bools(chosenFlags, len(order))
	blocked := false
	// Counted on the way: the running jobs in order and those chosen, and the waiting jobs
	// not chosen (which only the backfilling below may still start).
	kept, inOrder, passed := pre.n, pre.n, 0
	for i, r := range order {
		if r.running {
			inOrder++
		}
		switch {
		case r.protected:
			chosen[i] = true
		case !r.running && blocked:
		case r.st.Job.GPUs <= budget:
			chosen[i] = true
			budget -= r.st.Job.GPUs
		case !r.running && !backfill:
			blocked = true
		}
		if r.running && chosen[i] {
			kept++
		} else if !r.running && !chosen[i] {
			passed++
		}
	}
	var free topology.GPUSet
	switch {
	case kept == len(v.Running):
		// Every running job of the view keeps its GPUs (an order holds each at most once).
		free = v.Free()
	case inOrder == len(v.Running):
		// Every running job of the view is in the order: the GPUs that neither a chosen one
		// holds nor are unavailable are the free ones and those of the running jobs not
		// chosen, which are few (while the chosen ones are most).
		free = v.Free()
		for i, r := range order {
			if r.running && !chosen[i] {
				for _, g := range r.st.GPUs {
					if !v.Unavailable.Contains(g) {
						free.Add(g)
					}
				}
			}
		}
	default:
		free = c.AllGPUs()
		free.RemoveAll(v.Unavailable)
	}
	// For a host that takes deltas (View.AcceptsKeepOthers) the decision lists the starts and,
	// as Stop, the preemptions; otherwise the keeps too.
	delta := v.AcceptsKeepOthers
	var run []gpusched.Assignment
	if !delta {
		run = make([]gpusched.Assignment, 0, kept+4)
	}
	var isKeep []bool // run[i] keeps a running job (kept only when not every running job is kept)
	if kept == len(v.Running) {
		// The keeps in the view's order, which hosts match without a lookup.
		for i := range v.Running {
			if !delta {
				run = append(run, keep(&v.Running[i]))
			}
		}
	} else {
		isKeep = sc.bools(keepFlags, kept+4)[:0]
		removed := inOrder == len(v.Running) // free already leaves out the chosen jobs' GPUs
		for i, r := range order {
			if chosen[i] && r.running {
				if !removed {
					for _, g := range r.st.GPUs {
						free.Remove(g)
					}
				}
				if !delta {
					run, isKeep = append(run, keep(r.st)), append(isKeep, true)
				}
			}
		}
	}
	started := sc.bools(startedFlags, len(order))
	blocked = false
	for i, r := range order {
		if !chosen[i] || r.running {
			continue
		}
		if blocked {
			break
		}
		gpus, ok := place(r.st.Job.EligibleIn(c, free), r.st)
		if !ok {
			if !backfill {
				blocked = true
			}
			continue
		}
		if err := checkPlacement(r.st.Job, gpus, free); err != nil {
			return selection{}, err
		}
		for _, g := range gpus {
			free.Remove(g)
		}
		started[i] = true
		run, isKeep = append(run, gpusched.Assignment{Job: r.st.Job.ID, GPUs: gpus}), append(isKeep, false)
	}
	// Keep the running jobs whose preemption would free GPUs that nobody takes (none to look
	// at when every running job in order is chosen).
	var preempted []gpusched.JobID
	var stopped []*gpusched.JobStatus
	for i, r := range order {
		if kept == inOrder {
			break
		}
		if chosen[i] || !r.running {
			continue
		}
		unused := true
		for _, g := range r.st.GPUs {
			if !free.Contains(g) {
				unused = false
				break
			}
		}
		if unused {
			for _, g := range r.st.GPUs {
				free.Remove(g)
			}
			chosen[i] = true
			if !delta {
				run, isKeep = append(run, keep(r.st)), append(isKeep, true)
			}
			continue
		}
		preempted, stopped = append(preempted, r.st.Job.ID), append(stopped, r.st)
	}
	// Backfill what a failed placement left free.
	if backfill && passed > 0 {
		nfree := free.Len() // checkPlacement: a placement takes len(gpus) free GPUs
		for i, r := range order {
			if chosen[i] || r.running {
				continue
			}
			if r.st.Job.GPUs > nfree {
				continue
			}
			gpus, ok := place(free, r.st)
			if !ok {
				continue
			}
			if err := checkPlacement(r.st.Job, gpus, free); err != nil {
				return selection{}, err
			}
			for _, g := range gpus {
				free.Remove(g)
			}
			nfree -= len(gpus)
			chosen[i], started[i] = true, true
			run, isKeep = append(run, gpusched.Assignment{Job: r.st.Job.ID, GPUs: gpus}), append(isKeep, false)
		}
	}
	if !delta && kept != len(v.Running) && len(preempted) < len(v.Running) {
		run = keepsInViewOrder(v, order, chosen, run, isKeep, sc)
	}
	waiting := len(preempted) > 0
	runs := started
	for i, r := range order {
		if !r.running && !started[i] {
			waiting = true
		}
		if r.running && chosen[i] {
			runs[i] = true
		}
	}
	d := gpusched.Decision{Run: run}
	if delta {
		d.KeepOthers, d.Stop = true, slices.Clone(preempted)
	}
	return selection{decision: d, waiting: waiting, preempted: preempted, stopped: stopped, runs: runs}, nil
}

// scratch lends a preemptive policy's engine (preempt, preemptMerged) buffers from call to
// call. A nil *scratch lends fresh ones.
type scratch struct {
	order []ranked
	flags [numFlags][]bool
}

// The flag buffers of a scratch.
const (
	chosenFlags = iota
	startedFlags
	keepFlags
	atFlags
	numFlags
)

// bools returns n false values in buffer k (grown as needed), or fresh ones when sc is nil.
func (sc *scratch) bools(k, n int) []bool {
	if sc == nil {
		return make([]bool, n)
	}
	b := slices.Grow(sc.flags[k][:0], n)[:n]
	clear(b)
	sc.flags[k] = b
	return b
}

// keepsInViewOrder returns the decision run (the keeps of the running jobs chosen in order,
// and the starts) with the keeps first, in the view's order of running jobs, when every running
// job of order knows its place in the view (ranked.pos); otherwise run as it is. The starts
// keep their order.
func keepsInViewOrder(v *gpusched.View, order []ranked, chosen []bool, run []gpusched.Assignment, isKeep []bool, sc *scratch) []gpusched.Assignment {
	at := sc.bools(atFlags, len(v.Running))
	kept := 0
	for i := range order {
		r := &order[i]
		if !r.running {
			continue
		}
		if r.pos < 0 || r.pos >= len(v.Running) || &v.Running[r.pos] != r.st {
			return run
		}
		if chosen[i] {
			at[r.pos] = true
			kept++
		}
	}
	out := make([]gpusched.Assignment, 0, len(run))
	for p := range v.Running {
		if at[p] {
			out = append(out, keep(&v.Running[p]))
		}
	}
	if len(out) != kept {
		return run // a job listed twice
	}
	for i, a := range run {
		if !isKeep[i] {
			out = append(out, a)
		}
	}
	return out
}
func byArrival(a, b *gpusched.JobStatus) int {
	if c := cmp.Compare(a.Job.Arrival, b.Job.Arrival); c != 0 {
		return c
	}
	return cmp.Compare(a.Job.ID, b.Job.ID)
}

// pendingByArrival returns pointers to the view's waiting jobs in arrival order, jobs that
// arrived at the same time in the view's order. Hosts usually list them so already
// (View.Pending is documented in arrival order), so it checks before it sorts: O(n) per call
// instead of O(n log n) on long queues.
func pendingByArrival(v *gpusched.View) []*gpusched.JobStatus {
	out := make([]*gpusched.JobStatus, len(v.Pending))
	sorted := true
	for i := range v.Pending {
		out[i] = &v.Pending[i]
		if sorted && i > 0 && out[i-1].Job.Arrival > out[i].Job.Arrival {
			sorted = false
		}
	}
	if !sorted {
		slices.SortStableFunc(out, func(a, b *gpusched.JobStatus) int { return cmp.Compare(a.Job.Arrival, b.Job.Arrival) })
	}
	return out
}

// arrivalOrder is pendingByArrival for dispatch: nil when the host's delta says the view's
// waiting jobs are already in arrival order (dispatch then walks View.Pending in place, at no
// cost per waiting job it does not reach).
func arrivalOrder(v *gpusched.View) []*gpusched.JobStatus {
	if v.Delta != nil && v.Delta.ArrivalOrder {
		return nil
	}
	return pendingByArrival(v)
}

// present returns the ids of the jobs in the view.
func present(v *gpusched.View) map[gpusched.JobID]struct{} {
	ids := make(map[gpusched.JobID]struct{}, len(v.Pending)+len(v.Running))
	for i := range v.Pending {
		ids[v.Pending[i].Job.ID] = struct{}{}
	}
	for i := range v.Running {
		ids[v.Running[i].Job.ID] = struct{}{}
	}
	return ids
}

// forget drops the entries of m whose jobs have left the view.
func forget[V any](m map[gpusched.JobID]V, v *gpusched.View) {
	if len(m) == 0 {
		return
	}
	ids := present(v)
	for id := range m {
		if _, ok := ids[id]; !ok {
			delete(m, id)
		}
	}
}

// minWake folds a candidate wake-up time into w (0 = none), keeping only times after now.
func minWake(w, t, now float64) float64 {
	if !(t > now) || math.IsInf(t, 1) || math.IsNaN(t) {
		return w
	}
	if w == 0 || t < w {
		return t
	}
	return w
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }
