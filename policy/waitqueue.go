package policy

import (
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// sortedList is an ordered multiset of keys in blocks of bounded size (a B+-tree of height
// two): insertion and removal cost O(log n + blockSize + n/blockSize) moves, iteration in
// order costs O(1) per key. The ordering policies keep their waiting jobs in one, so that a
// call looks at the jobs at the head of their order without sorting the queue.
type sortedList[K any] struct {
	cmp    func(a, b K) int
	blocks [][]K
	n      int
}

// sortedBlock is the largest block; a full block splits in two.
const sortedBlock = 512

func newSortedList[K any](cmp func(a, b K) int) *sortedList[K] {
	return &sortedList[K]{cmp: cmp}
}

// Len returns the number of keys.
func (l *sortedList[K]) Len() int { return l.n }

// reset empties the list.
func (l *sortedList[K]) reset() {
	l.blocks, l.n = l.blocks[:0], 0
}

// block returns the index of the first block whose last key is not below k (len: none).
func (l *sortedList[K]) block(k K) int {
	i, _ := slices.BinarySearchFunc(l.blocks, k, func(b []K, k K) int { return l.cmp(b[len(b)-1], k) })
	return i
}

// insert adds k.
func (l *sortedList[K]) insert(k K) {
	l.n++
	if len(l.blocks) == 0 {
		l.blocks = append(l.blocks, append(make([]K, 0, sortedBlock), k))
		return
	}
	i := l.block(k)
	if i == len(l.blocks) {
		i--
	}
	b := l.blocks[i]
	j, _ := slices.BinarySearchFunc(b, k, l.cmp)
	b = slices.Insert(b, j, k)
	if len(b) > sortedBlock {
		half := len(b) / 2
		tail := append(make([]K, 0, sortedBlock), b[half:]...)
		clear(b[half:])
		b = b[:half]
		l.blocks = slices.Insert(l.blocks, i+1, tail)
	}
	l.blocks[i] = b
}

// remove deletes one key equal to k (under cmp) and reports whether there was one.
func (l *sortedList[K]) remove(k K) bool {
	i := l.block(k)
	if i == len(l.blocks) {
		return false
	}
	b := l.blocks[i]
	j, found := slices.BinarySearchFunc(b, k, l.cmp)
	if !found {
		return false
	}
	b = slices.Delete(b, j, j+1)
	l.n--
	if len(b) == 0 {
		l.blocks = slices.Delete(l.blocks, i, i+1)
		return true
	}
	l.blocks[i] = b
	return true
}

// cursor walks a sortedList in order. The list must not change while a cursor is in use.
type cursor[K any] struct {
	l    *sortedList[K]
	b, i int
}

func (l *sortedList[K]) cursor() cursor[K] { return cursor[K]{l: l} }

// next returns the next key in order, or false at the end.
func (c *cursor[K]) next() (K, bool) {
	for c.b < len(c.l.blocks) {
		if blk := c.l.blocks[c.b]; c.i < len(blk) {
			c.i++
			return blk[c.i-1], true
		}
		c.b, c.i = c.b+1, 0
	}
	var zero K
	return zero, false
}

// waitFollow follows a host's views (gpusched.ViewDelta) for a policy that keeps its waiting
// jobs in an order of its own: it tells the policy, at each call, which jobs left the view,
// which arrived, which started (waiting at the previous call, running now) and which stopped
// (running at the previous call, waiting now), looking only at the delta and the running jobs
// (bounded by the cluster's size), never at the whole queue. A policy rescans the view when
// follow reports that the delta cannot be used: the first view, a view of another host or
// one it missed, another cluster, or a job that stopped without the policy's last decision
// preempting it (its progress then is unknown without the view's status).
//
// A host whose deltas list the jobs that started and stopped (ViewDelta.Transitions) is
// followed from those lists alone, in time independent of the number of running jobs too.
// Otherwise the running jobs of two views are matched by the address of their Job (the view contract
// keeps a job's description unchanged while the host holds it; hosts usually keep it in
// place), each match confirmed by its JobID: cheaper than hashing ids. A host that moves a
// running job's description only costs a rescan (the old address looks stopped without a
// preemption).
type waitFollow struct {
	sync    deltaSync
	cluster *topology.Cluster
	run     map[*gpusched.Job]gpusched.JobID // running jobs of the last view
	next    map[*gpusched.Job]gpusched.JobID // scratch
	valid   bool                             // the policy's state follows the last view
	runOK   bool                             // run holds the last view's running jobs
	stopped map[gpusched.JobID]bool          // running jobs the last decision preempted
}

// waitEvents are a policy's handlers of what changed since its last view.
type waitEvents struct {
	left    func(id gpusched.JobID)
	arrived func(st *gpusched.JobStatus) error // a job new to the view, waiting or running
	started func(st *gpusched.JobStatus) error // a waiting job that now runs
	stopped func(j *gpusched.Job)              // a running job the last decision preempted
}

// follow applies v's delta through ev and reports whether it could: false means the policy
// must rescan the view (and then call rescanned).
func (f *waitFollow) follow(v *gpusched.View, ev waitEvents) (bool, error) {
	d, ok := f.sync.next(v)
	if !ok || v.Cluster != f.cluster || !f.valid {
		f.valid = false
		return false, nil
	}
	f.valid = false // until this view is recorded
	if d.Transitions {
		return f.followTransitions(d, ev)
	}
	if !f.runOK {
		return false, nil // the last view was followed from its transitions
	}
	var left map[gpusched.JobID]bool
	if len(d.Left) > 0 {
		left = make(map[gpusched.JobID]bool, len(d.Left))
		for _, id := range d.Left {
			left[id] = true
			ev.left(id)
		}
	}
	var arrived map[gpusched.JobID]bool
	for _, st := range d.Arrived {
		if st.GPUs != nil {
			if arrived == nil {
				arrived = map[gpusched.JobID]bool{}
			}
			arrived[st.Job.ID] = true
		}
		if err := ev.arrived(st); err != nil {
			return false, err
		}
	}
	clear(f.next)
	still := 0 // running jobs of the last view running now
	for i := range v.Running {
		j := v.Running[i].Job
		f.next[j] = j.ID
		if id, was := f.run[j]; was && id == j.ID {
			still++
		} else if !arrived[j.ID] {
			if err := ev.started(&v.Running[i]); err != nil {
				return false, err
			}
		}
	}
	if still < len(f.run) {
		for j, id := range f.run {
			if nid, runs := f.next[j]; runs && nid == id {
				continue
			}
			switch {
			case left[id]:
			case f.stopped[id]:
				ev.stopped(j)
			default:
				return false, nil
			}
		}
	}
	f.run, f.next = f.next, f.run
	f.valid, f.runOK = true, true
	return true, nil
}

// followTransitions is follow over a delta that lists the jobs that started and stopped.
func (f *waitFollow) followTransitions(d *gpusched.ViewDelta, ev waitEvents) (bool, error) {
	for _, id := range d.Left {
		ev.left(id)
	}
	for _, st := range d.Arrived {
		if err := ev.arrived(st); err != nil {
			return false, err
		}
	}
	for _, st := range d.Started {
		if err := ev.started(st); err != nil {
			return false, err
		}
	}
	for _, st := range d.Stopped {
		if !f.stopped[st.Job.ID] {
			return false, nil // stopped without the last decision: its progress is the view's
		}
		ev.stopped(st.Job)
	}
	f.runOK = false
	f.valid = true
	return true, nil
}

// rescanned records v as the view the policy rescanned.
func (f *waitFollow) rescanned(v *gpusched.View) {
	f.cluster = v.Cluster
	if f.run == nil {
		f.run, f.next = map[*gpusched.Job]gpusched.JobID{}, map[*gpusched.Job]gpusched.JobID{}
	}
	clear(f.run)
	for i := range v.Running {
		f.run[v.Running[i].Job] = v.Running[i].Job.ID
	}
	f.valid, f.runOK = true, true
}

// decided records the running jobs a decision preempts.
func (f *waitFollow) decided(preempted []gpusched.JobID) {
	if f.stopped == nil {
		f.stopped = map[gpusched.JobID]bool{}
	}
	clear(f.stopped)
	for _, id := range preempted {
		f.stopped[id] = true
	}
}

// reset forgets the sequence: the next view is rescanned.
func (f *waitFollow) reset() {
	f.sync.reset()
	f.valid = false
}

// runSeq is the running jobs of a preemptive policy's order as preemptMerged reads them, so
// that a policy may sort them only as far as the merge looks: at(i) is the i-th in order (asked
// for i = 0, 1, 2, ... in turn, each possibly more than once), and tail(i), asked for at most
// once after at(i-1), the jobs from the i-th on in any order. protected is the GPUs the
// protected running jobs hold, held those the others hold.
//
// The first `first` jobs (firstGPUs GPUs in all, none protected) come before every waiting
// job (a policy's lazyRun knows them without sorting): when they fit in the budget, a merge
// for a host that takes deltas leaves them out of the order it hands preempt (keptPrefix).
type runSeq struct {
	n         int
	protected int
	held      int
	first     int
	firstGPUs int
	at        func(i int) *ranked
	tail      func(i int) []ranked
}

// runSlice is the runSeq of running jobs already sorted.
func runSlice(running []ranked) runSeq {
	rs := runSeq{n: len(running), at: func(i int) *ranked { return &running[i] }, tail: func(i int) []ranked { return running[i:] }}
	for i := range running {
		rs.count(&running[i])
	}
	return rs
}

// count adds a running job's GPUs to protected or held.
func (rs *runSeq) count(r *ranked) {
	if r.protected {
		rs.protected += r.st.Job.GPUs
	} else {
		rs.held += r.st.Job.GPUs
	}
}

// preemptMerged is preempt over the order that merges the running jobs (in their order, every
// one) with the waiting jobs of a sorted list, in time independent of the queue's length: it
// takes waiting jobs from next only while one more could be chosen (GPUs left in the budget
// and, in strict order, no waiting job blocked), then lets preempt decide on that prefix and
// continues its backfilling over the rest of the queue only while GPUs are free. The decision
// is the one preempt makes on the whole merged order; sc lends buffers as to preempt (the
// returned order lives in it too). before(i, w) tells whether the i-th
// running job (rs.at(i), asked for first) goes before waiting job w. With all, every waiting job
// is taken (the returned order is the whole merged order).
//
// For a host that takes deltas the first rs.first running jobs, when they fit in the budget,
// are left out of the returned order (and of the selection's runs): the selection's skipped
// says how many (all of them run).
//
// The running jobs after the last waiting job taken come in the returned order as rs.tail gives
// them when the budget is spent (preempt then chooses none of them but the protected, whatever
// their order, and each keeps its GPUs exactly when nobody takes them) or when no waiting job
// is left and they all fit in it (preempt chooses them all), and in order otherwise.
func preemptMerged(v *gpusched.View, rs runSeq, next func() (ranked, bool), before func(i int, w *ranked) bool,
	backfill, all bool, place placeFunc, sc *scratch) (selection, []ranked, error) {
	budget := v.Available() - rs.protected
	var order []ranked
	if sc != nil {
		clear(sc.order)
		order = slices.Grow(sc.order[:0], rs.n+16)
		defer func() { sc.order = order }() // cleared at the next call
	} else {
		order = make([]ranked, 0, rs.n+16)
	}
	blocked := false
	choose := func(r *ranked) {
		switch {
		case r.protected:
		case !r.running && blocked:
		case r.st.Job.GPUs <= budget:
			budget -= r.st.Job.GPUs
		case !r.running && !backfill:
			blocked = true
		}
	}
	w, ok := next()
	i := 0
	rest := rs.held // GPUs of the unprotected running jobs not yet in order
	// The first running jobs, which go before every waiting job and fit, are all chosen: for a
	// host that takes deltas they are counted, not listed (rs.at is not asked for them).
	var pre keptPrefix
	if rs.first > 0 && !all && v.AcceptsKeepOthers && rs.n == len(v.Running) && rs.firstGPUs <= budget {
		pre = keptPrefix{n: rs.first, gpus: rs.firstGPUs}
		budget -= rs.firstGPUs
		rest -= rs.firstGPUs
		i = rs.first
	}
	for i < rs.n || ok {
		if ok && !all && (budget <= 0 || blocked) {
			break // no more waiting job can be chosen
		}
		if !ok && rest <= budget {
			break // every running job left is chosen, whatever their order
		}
		if i < rs.n {
			if r := rs.at(i); !ok || before(i, &w) {
				choose(r)
				if !r.protected {
					rest -= r.st.Job.GPUs
				}
				order = append(order, *r)
				i++
				continue
			}
		}
		choose(&w)
		order = append(order, w)
		w, ok = next()
	}
	// The running jobs after the cut: in loop order after every waiting job taken, which they
	// do not compete with (no budget is left, or only running jobs may still be chosen).
	if i < rs.n {
		if budget <= 0 || (!ok && rest <= budget) {
			order = append(order, rs.tail(i)...)
		} else {
			for ; i < rs.n; i++ {
				order = append(order, *rs.at(i))
			}
		}
	}
	sel, err := preemptAfter(v, pre, order, backfill, place, sc)
	sel.skipped = pre.n
	if err != nil || !ok {
		return sel, order, err
	}
	if !backfill {
		sel.waiting = true // the waiting jobs not taken
		return sel, order, nil
	}
	var free topology.GPUSet
	if sel.decision.KeepOthers {
		// A delta: the running jobs not stopped keep their GPUs.
		free = v.Free()
		for _, st := range sel.stopped {
			for _, g := range st.GPUs {
				if !v.Unavailable.Contains(g) {
					free.Add(g)
				}
			}
		}
	} else {
		free = v.Cluster.AllGPUs()
		free.RemoveAll(v.Unavailable)
	}
	for _, a := range sel.decision.Run {
		for _, g := range a.GPUs {
			free.Remove(g)
		}
	}
	nfree := free.Len() // checkPlacement: a placement takes len(gpus) free GPUs
	for ; ok; w, ok = next() {
		if nfree == 0 {
			sel.waiting = true
			break
		}
		if w.st.Job.GPUs > nfree {
			sel.waiting = true
			continue
		}
		gpus, fits := place(free, w.st)
		if !fits {
			sel.waiting = true
			continue
		}
		if err := checkPlacement(w.st.Job, gpus, free); err != nil {
			return selection{}, nil, err
		}
		for _, g := range gpus {
			free.Remove(g)
		}
		nfree -= len(gpus)
		sel.decision.Run = append(sel.decision.Run, gpusched.Assignment{Job: w.st.Job.ID, GPUs: gpus})
	}
	return sel, order, nil
}

// dispatchNext is dispatch over the waiting jobs that next returns in order: the walk stops
// once no GPU is free (or, in strict order, at the first job that does not start). Every
// running job is kept: for a host that takes deltas (View.AcceptsKeepOthers) the decision is a
// delta that lists only the starts, otherwise it lists the running jobs first, in the view's
// order.
func dispatchNext(v *gpusched.View, next func() (*gpusched.JobStatus, bool), backfill bool, place placeFunc) (gpusched.Decision, error) {
	var run []gpusched.Assignment
	if !v.AcceptsKeepOthers {
		run = keepAll(v)
	}
	free := v.Free()
	nfree := free.Len()
	for nfree > 0 {
		st, ok := next()
		if !ok {
			break
		}
		if st.Job.GPUs > nfree {
			if !backfill {
				break
			}
			continue
		}
		gpus, ok := place(st.Job.EligibleIn(v.Cluster, free), st)
		if !ok {
			if !backfill {
				break
			}
			continue
		}
		if err := checkPlacement(st.Job, gpus, free); err != nil {
			return gpusched.Decision{}, err
		}
		for _, g := range gpus {
			free.Remove(g)
		}
		nfree -= len(gpus)
		run = append(run, gpusched.Assignment{Job: st.Job.ID, GPUs: gpus})
	}
	return gpusched.Decision{Run: run, KeepOthers: v.AcceptsKeepOthers}, nil
}

// statusPool hands out the stand-in statuses of waiting jobs that an ordering policy takes
// from its kept order at one call, from blocks reused across calls, so that a call allocates
// nothing per job it looks at (allocation would make the garbage collector's cost, which
// grows with the heap and so with the queue, a cost per call).
type statusPool struct {
	blocks [][]gpusched.JobStatus
	n      int
}

const statusBlock = 256

// reset makes every status of the pool available again (and drops the jobs they held).
func (p *statusPool) reset() {
	for i := 0; i*statusBlock < p.n; i++ {
		clear(p.blocks[i][:min(statusBlock, p.n-i*statusBlock)])
	}
	p.n = 0
}

// get returns a status for waiting job j, valid until reset.
func (p *statusPool) get(j *gpusched.Job) *gpusched.JobStatus {
	b := p.n / statusBlock
	if b == len(p.blocks) {
		p.blocks = append(p.blocks, make([]gpusched.JobStatus, statusBlock))
	}
	st := &p.blocks[b][p.n%statusBlock]
	*st = gpusched.JobStatus{Job: j}
	p.n++
	return st
}

// posCache finds a policy's record of each running job of a view without a map lookup when the
// host lists its running jobs in the same relative order from view to view (host.Runtime lists
// them in submission order, so a job that starts lands among them): it walks the last view's
// list alongside the current one, looking up to posWindow places ahead. A job it does not find
// there (new, out of order, or behind a longer run of jobs that left) is a miss, for the
// caller's map, and leaves the walk where it was, so that the jobs after a new one still hit.
type posCache[T any] struct {
	d posDense[*T]
}

// begin starts a walk over a view's running jobs.
func (c *posCache[T]) begin() { c.d.begin() }

// posWindow is how many places ahead of its walk posCache looks for a job.
const posWindow = 64

// get returns the record put for job in the last walk, if the walk finds it.
func (c *posCache[T]) get(job *gpusched.Job) *T {
	if v, ok := c.d.get(job); ok {
		return *v
	}
	return nil
}

// put records job's record for the next walk, in the view's order.
func (c *posCache[T]) put(job *gpusched.Job, v *T) { c.d.put(job, v) }

// end finishes the walk: the next one follows this view.
func (c *posCache[T]) end() { c.d.end() }

// reset forgets every record (the caller's records changed).
func (c *posCache[T]) reset() { c.d.reset() }

// posDense is posCache keeping values, not pointers: a policy keeps there, by the running
// jobs' places, the few numbers it reads of each at every call, so that the walk reads them
// front to back instead of fetching each job's record.
type posDense[V any] struct {
	jobs, nextJobs []*gpusched.Job
	vals, nextVals []V
	j              int
}

// begin starts a walk over a view's running jobs.
func (c *posDense[V]) begin() {
	c.nextJobs, c.nextVals, c.j = c.nextJobs[:0], c.nextVals[:0], 0
}

// get returns the value put for job in the last walk, if the walk finds it (valid until end).
func (c *posDense[V]) get(job *gpusched.Job) (*V, bool) {
	for k, end := c.j, min(len(c.jobs), c.j+posWindow); k < end; k++ {
		if c.jobs[k] == job {
			c.j = k + 1
			return &c.vals[k], true
		}
	}
	return nil, false
}

// put records job's value for the next walk, in the view's order.
func (c *posDense[V]) put(job *gpusched.Job, v V) {
	c.nextJobs, c.nextVals = append(c.nextJobs, job), append(c.nextVals, v)
}

// end finishes the walk: the next one follows this view.
func (c *posDense[V]) end() {
	clear(c.jobs)
	clear(c.vals)
	c.jobs, c.nextJobs = c.nextJobs, c.jobs[:0]
	c.vals, c.nextVals = c.nextVals, c.vals[:0]
}

// reset forgets every value.
func (c *posDense[V]) reset() {
	clear(c.jobs)
	clear(c.vals)
	c.jobs, c.vals = c.jobs[:0], c.vals[:0]
}

// lazyRun is a preemptive policy's running jobs in its order as a runSeq: first the n jobs
// that come before every waiting job (in any order among themselves: when the running jobs fit,
// they are all chosen), then the others by cmp, sorted (hintSorter) only when preemptMerged
// reads past the first n; the jobs the merge never reaches follow as they lie (runSeq.tail).
type lazyRun[T any] struct {
	all    []T // [0:n) first; [n:] sorted when first read
	n      int
	sorted bool // all[n:] is sorted
	cmp    func(a, b T) int
	hint   func(*T) *int    // an element's place in the last sort
	rank   func(*T) *ranked // an element's job
	// key, when set, is an element's number by which cmp ranks it first (hintSorter.sortKeyed)
	key  func(*T) (float64, bool)
	hs   hintSorter[T]
	tail []ranked
}

// reset starts the order over all, whose first n jobs come first.
func (l *lazyRun[T]) reset(all []T, n int) {
	l.all, l.n, l.sorted = all, n, false
}

// clear drops the pointers into the view.
func (l *lazyRun[T]) clear() {
	clear(l.tail)
	l.all = nil
}

// at returns the i-th job in order.
func (l *lazyRun[T]) at(i int) *ranked {
	if i >= l.n && !l.sorted {
		if l.key != nil {
			l.hs.sortKeyed(l.all[l.n:], l.cmp, l.hint, l.key)
		} else {
			l.hs.sort(l.all[l.n:], l.cmp, l.hint)
		}
		l.sorted = true
	}
	return l.rank(&l.all[i])
}

// seqCounted is the runSeq of the order, for a caller that counted the GPUs of the protected
// running jobs, of the others, and of the first n (unprotected).
func (l *lazyRun[T]) seqCounted(protected, held, firstGPUs int) runSeq {
	return runSeq{n: len(l.all), protected: protected, held: held, first: l.n, firstGPUs: firstGPUs, at: l.at, tail: l.tailFrom}
}

func (l *lazyRun[T]) tailFrom(i int) []ranked {
	t := l.tail[:0]
	for j := i; j < len(l.all); j++ {
		t = append(t, *l.rank(&l.all[j]))
	}
	l.tail = t
	return t
}

// hintSorter sorts slices whose order changes little from call to call: it starts from each
// element's place in the last sort (its hint, which the caller keeps with the element) and
// insertion-sorts, in time linear in the elements and the pairs that changed places (past a
// bound on moves it sorts afresh); the elements without a usable hint (new, or claiming a place
// another holds) are sorted apart and merged in. cmp must be a total order.
type hintSorter[T any] struct {
	slot  []int // by hint, the element that holds it
	extra []int // the elements without a usable hint
	buf   []T
	keys  []float64 // sortKeyed: each element's key
	pairs []keyIdx  // sortKeyed: the elements' keys and places, moved instead of the elements
}

// keyIdx is an element's key and its place, which sortKeyed sorts.
type keyIdx struct {
	k float64
	i int
}

// sortKeyed is sort for an order cmp that ranks elements by a number first: key reports an
// element's number and whether cmp ranks it by that number (smaller first) and, on equal
// numbers, by cmp. Where key reports false for an element, it sorts as sort does; otherwise
// it sorts the numbers with the elements' places, comparing numbers inline and calling cmp
// only on ties, and moves each element once.
func (hs *hintSorter[T]) sortKeyed(s []T, cmp func(a, b T) int, hint func(*T) *int, key func(*T) (float64, bool)) {
	keys := slices.Grow(hs.keys[:0], len(s))[:len(s)]
	hs.keys = keys
	for i := range s {
		k, ok := key(&s[i])
		if !ok || k != k {
			hs.sort(s, cmp, hint)
			return
		}
		keys[i] = k
	}
	slot, extra := hs.byHint(s, hint)
	ps := slices.Grow(hs.pairs[:0], len(s))
	for _, i := range slot {
		if i >= 0 {
			ps = append(ps, keyIdx{keys[i], i})
		}
	}
	hinted := ps
	for _, i := range extra {
		ps = append(ps, keyIdx{keys[i], i})
	}
	rest := ps[len(hinted):]
	less := func(a, b keyIdx) int {
		if a.k < b.k {
			return -1
		}
		if a.k > b.k {
			return 1
		}
		return cmp(s[a.i], s[b.i])
	}
	// Insertion sort from the last order, bounded as sort's.
	sorted := true
	limit := 4*len(hinted) + 64
	for i := 1; i < len(hinted) && sorted; i++ {
		for j := i; j > 0; j-- {
			a, b := hinted[j], hinted[j-1]
			if a.k > b.k || (a.k == b.k && cmp(s[a.i], s[b.i]) >= 0) {
				break
			}
			hinted[j], hinted[j-1] = b, a
			if limit--; limit < 0 {
				sorted = false
				break
			}
		}
	}
	if !sorted {
		slices.SortFunc(hinted, less)
	}
	slices.SortFunc(rest, less)
	// Merge into buf, then back into s.
	buf := slices.Grow(hs.buf[:0], len(s))
	i, j := 0, 0
	for i < len(hinted) && j < len(rest) {
		if less(rest[j], hinted[i]) < 0 {
			buf = append(buf, s[rest[j].i])
			j++
		} else {
			buf = append(buf, s[hinted[i].i])
			i++
		}
	}
	for ; i < len(hinted); i++ {
		buf = append(buf, s[hinted[i].i])
	}
	for ; j < len(rest); j++ {
		buf = append(buf, s[rest[j].i])
	}
	copy(s, buf)
	for i := range s {
		*hint(&s[i]) = i
	}
	clear(buf)
	hs.buf, hs.slot, hs.extra, hs.pairs = buf[:0], slot[:0], extra[:0], ps[:0]
}

// byHint files the elements of s by their hints, in hs's scratch: slot[h] is the index of the
// first element whose hint is h (-1: none), extra the indices of the others (no hint, one out of
// range or one already taken), in s's order.
func (hs *hintSorter[T]) byHint(s []T, hint func(*T) *int) (slot, extra []int) {
	slot, extra = hs.slot[:0], hs.extra[:0]
	for i := range s {
		if h := *hint(&s[i]); h >= 0 && h < 2*len(s) {
			for len(slot) <= h {
				slot = append(slot, -1)
			}
			if slot[h] < 0 {
				slot[h] = i
				continue
			}
		}
		extra = append(extra, i)
	}
	return slot, extra
}

func (hs *hintSorter[T]) sort(s []T, cmp func(a, b T) int, hint func(*T) *int) {
	slot, others := hs.byHint(s, hint)
	hinted := slices.Grow(hs.buf[:0], len(s))
	for _, i := range slot {
		if i >= 0 {
			hinted = append(hinted, s[i])
		}
	}
	extra := hinted[len(hinted):]
	for _, i := range others {
		extra = append(extra, s[i])
	}
	if !insertionSortBounded(hinted, cmp, 4*len(hinted)+64) {
		slices.SortFunc(hinted, cmp)
	}
	slices.SortFunc(extra, cmp)
	// Merge.
	k, i, j := 0, 0, 0
	for ; i < len(hinted) && j < len(extra); k++ {
		if cmp(extra[j], hinted[i]) < 0 {
			s[k] = extra[j]
			j++
		} else {
			s[k] = hinted[i]
			i++
		}
	}
	k += copy(s[k:], hinted[i:])
	copy(s[k:], extra[j:])
	for i := range s {
		*hint(&s[i]) = i
	}
	clear(hinted[:len(s)])
	hs.buf, hs.slot, hs.extra = hinted[:0], slot[:0], others[:0]
}

// insertionSortBounded insertion-sorts s by cmp unless that takes more than limit moves; it
// reports whether it sorted s (otherwise s holds the same elements, partly sorted).
func insertionSortBounded[T any](s []T, cmp func(a, b T) int, limit int) bool {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && cmp(s[j], s[j-1]) < 0; j-- {
			s[j], s[j-1] = s[j-1], s[j]
			if limit--; limit < 0 {
				return false
			}
		}
	}
	return true
}
