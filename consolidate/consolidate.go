package consolidate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// defaultRestoreTime is the checkpoint/restore cost in seconds that Options.RestoreTime
// selects when it is zero: package sim's default.
const defaultRestoreTime = 30.0

// defaultPayback is the factor Options.Payback selects when it is zero.
const defaultPayback = 2.0

// ErrInvalidOptions reports Options that Apply or Wrap cannot honour.
var ErrInvalidOptions = errors.New("consolidate: invalid options")

// Options configure Apply and Wrap. The zero value is usable.
type Options struct {
	// Cost gives the time per iteration of a job on its current and on a candidate placement
	// (with idle links). Default: gpusched.DefaultCost(). Pass the host's cost model.
	Cost gpusched.CostModel
	// RestoreTime is what a migration costs the job, in seconds of held GPUs without progress
	// (the host's checkpoint/restore cost). Zero selects DefaultRestoreTime; negative means free.
	RestoreTime float64
	// Payback is how many times over the expected saving must repay RestoreTime for a job to
	// move. Zero selects DefaultPayback (2); it must not be negative.
	Payback float64
	// Remaining estimates a running job's remaining iterations, when the caller knows more
	// than the view (a prediction, or the truth in experiments); ok=false falls back to the
	// default. Default: as many iterations as the job has done (the heavy-tail rule Tiresias
	// and LAS rely on: the longer a job has run, the longer it is expected to run).
	Remaining func(st *gpusched.JobStatus) (iterations float64, ok bool)
	// Placer chooses the candidate placement among the GPUs free after the decision plus the
	// job's own. Default: gpusched.Pack (fewest servers, best fit).
	Placer gpusched.Placer
	// Best, when set, gives a running job's time per iteration at its best placement (on the
	// idle cluster, as the caller sizes jobs; ok=false when unknown). A candidate whose
	// saving would not repay the move even at that time is not offered to the Placer, which
	// spares a placement per candidate and call where moves cannot pay (for instance jobs
	// whose time does not depend on their placement). Default: every candidate is tried.
	Best func(st *gpusched.JobStatus) (stepTime float64, ok bool)
	// Memo declares that Cost (with idle links) and Placer are functions of their arguments,
	// as gpusched.Pack, gpusched.FixedCost, gpusched.ModelCost and asrpt.Partitioned are: a
	// Consolidator then remembers, per job, its time on its current placement, the Placer's
	// last proposal with the GPUs it was given, and the times of its last proposals, and asks
	// again only when those arguments change. A scattered job that cannot move is otherwise
	// placed and timed afresh at every call. It changes no decision, given that premise.
	Memo bool
}

func (o Options) check() (Options, error) {
	if math.IsNaN(o.RestoreTime) || math.IsInf(o.RestoreTime, 0) {
		return o, fmt.Errorf("%w: RestoreTime %v is not finite", ErrInvalidOptions, o.RestoreTime)
	}
	if !(o.Payback >= 0) || math.IsInf(o.Payback, 0) {
		return o, fmt.Errorf("%w: Payback %v must be finite and >= 0", ErrInvalidOptions, o.Payback)
	}
	if o.Cost == nil {
		o.Cost = gpusched.DefaultCost()
	}
	switch {
	case o.RestoreTime == 0:
		o.RestoreTime = defaultRestoreTime
	case o.RestoreTime < 0:
		o.RestoreTime = 0
	}
	if o.Payback == 0 {
		o.Payback = defaultPayback
	}
	if o.Placer == nil {
		o.Placer = gpusched.Pack
	}
	return o, nil
}

// Move is one migration that Apply added to a decision.
type Move struct {
	// Job is the job that moves.
	Job gpusched.JobID
	// From and To are its placement before and after.
	From, To []topology.GPUID
	// OldTime and NewTime are its times per iteration (idle links) before and after.
	OldTime, NewTime float64
}

// apply is New(opt) and its Apply: the deprecated package function Apply.
func apply(v *gpusched.View, d *gpusched.Decision, opt Options) ([]Move, error) {
	c, err := New(opt)
	if err != nil {
		return nil, err
	}
	return c.Apply(v, d)
}

// Consolidator applies the rule of its Apply method with fixed options, reusing its scratch space
// between calls. It is not safe for concurrent use.
type Consolidator struct {
	opt Options
	s   state
}

// New returns a Consolidator with the given options.
func New(opt Options) (*Consolidator, error) {
	opt, err := opt.check()
	if err != nil {
		return nil, err
	}
	return &Consolidator{opt: opt}, nil
}

// candidate is a kept running job that might move.
type candidate struct {
	run     int // index in d.Run
	st      *gpusched.JobStatus
	spanned int // servers its GPUs span
	excess  int // servers spanned beyond the least the job could need
}

// Apply rewrites d, a decision for view v, so that running jobs that d keeps where they are
// move onto fewer servers when the GPUs d leaves free allow it and the move pays for itself.
// It returns the moves it made, in the order it made them.
//
// A job is a candidate when d keeps it on exactly its current GPUs, it has at least two
// GPUs, and its GPUs span more servers than the GPUs left free plus its own could hold it
// on. Candidates are taken most-spread first (then by id). For each, the Placer proposes a
// placement among the free GPUs plus the job's own; the job moves when the proposal spans
// fewer servers, is faster per iteration (by Options.Cost, idle links), and
//
//	remaining iterations x (old - new time per iteration) >= Payback x RestoreTime.
//
// The GPUs it leaves become free for the next candidate. Jobs that d starts, migrates or
// preempts are left as d has them, so Apply never undoes a policy's choice. Every decision
// Apply returns is valid for v if d was.
//
// It reuses the Consolidator's scratch space between calls.
func (k *Consolidator) Apply(v *gpusched.View, d *gpusched.Decision) ([]Move, error) {
	c := v.Cluster
	if c == nil || len(v.Running) == 0 || len(d.Run) == 0 {
		return nil, nil
	}
	opt, s := &k.opt, &k.s
	s.opt = opt
	s.prepare(c)
	// Assignments spread over more servers than they need: cheap to find, usually none.
	s.cands = s.cands[:0]
	used := 0
	for i, a := range d.Run {
		used += len(a.GPUs)
		if len(a.GPUs) < 2 {
			continue
		}
		spanned, ok := s.spanned(c, a.GPUs)
		if least := (len(a.GPUs) + s.maxPer - 1) / s.maxPer; ok && spanned > least {
			s.cands = append(s.cands, candidate{run: i, spanned: spanned, excess: spanned - least})
		}
	}
	if len(s.cands) == 0 || used >= c.NumGPUs() {
		return nil, nil
	}
	if opt.Memo {
		s.epoch++
		defer s.prune(len(v.Running))
	}
	free := c.AllGPUs()
	free.RemoveAll(v.Unavailable)
	for _, a := range d.Run {
		for _, g := range a.GPUs {
			free.Remove(g) // an id outside the cluster is not in free: nothing to remove
		}
	}
	if free.Len() == 0 {
		return nil, nil
	}
	s.count(c, free)
	// Until a move changes them, every candidate sees these free GPUs, so one that they cannot
	// put on fewer servers is skipped wherever it comes in the order: only the others are
	// matched with their running jobs and sorted. After a move, the walk goes on over every
	// candidate that comes after it.
	surv := s.surv[:0]
	for _, cd := range s.cands {
		if s.fewest(c, d.Run[cd.run].GPUs) < cd.spanned {
			surv = append(surv, cd)
		}
	}
	s.surv = surv
	cands := s.kept(v, d, surv, &s.order1, candidate{run: -1})
	var moves []Move
	full := false
	for i := 0; i < len(cands); i++ {
		cd := cands[i]
		moved, err := k.try(v, d, cd, &free, &moves)
		if err != nil {
			return moves, err
		}
		if moved && !full {
			full = true
			all := s.kept(v, d, s.cands, &s.order2, cd) // cd has moved: it is kept as it was

			i = slices.IndexFunc(all, func(x candidate) bool { return x.run == cd.run })
			cands = all
		}
	}
	return moves, nil
}

// kept returns the candidates of list that the decision keeps on exactly their running job's
// GPUs, with their job's status, most spread first (then by id), in *buf. The candidate moved
// (run >= 0) is taken as matched, with its status: the decision holds its new GPUs.
func (s *state) kept(v *gpusched.View, d *gpusched.Decision, list []candidate, buf *[]candidate, moved candidate) []candidate {
	out := (*buf)[:0]
	for _, cd := range list {
		if cd.run == moved.run {
			out = append(out, moved)
			continue
		}
		a := d.Run[cd.run]
		st := s.sharing(v, a)
		if st == nil {
			st = s.running(v, a.Job)
		}
		if st != nil && slices.Equal(a.GPUs, st.GPUs) {
			cd.st = st
			out = append(out, cd)
		}
	}
	slices.SortFunc(out, func(a, b candidate) int {
		if a.excess != b.excess {
			return b.excess - a.excess
		}
		return cmp.Compare(a.st.Job.ID, b.st.Job.ID)
	})
	*buf = out
	return out
}

// try moves one candidate if the rule allows, updating free, the decision and moves, and
// reports whether it moved.
func (k *Consolidator) try(v *gpusched.View, d *gpusched.Decision, cd candidate, free *topology.GPUSet, moves *[]Move) (bool, error) {
	opt, s, c := &k.opt, &k.s, v.Cluster
	st, spanned := cd.st, cd.spanned
	if s.fewest(c, st.GPUs) >= spanned {
		return false, nil // the free GPUs cannot put it on fewer servers
	}
	rem := remaining(opt, st)
	if !(rem > 0) {
		return false, nil
	}
	var m *jobMemo
	if opt.Memo {
		m = s.memoOf(c, st.Job)
	}
	old, err := m.oldCost(opt.Cost, c, st)
	if err != nil {
		return false, fmt.Errorf("consolidate: job %q: %w", st.Job.ID, err)
	}
	if opt.Best != nil {
		if best, ok := opt.Best(st); ok && (!(best < old.Time) || rem*(old.Time-best) < opt.Payback*opt.RestoreTime) {
			return false, nil // no placement can pay for the move
		}
	}
	pool := free.Clone()
	for _, g := range st.GPUs {
		pool.Add(g)
	}
	to, ok := m.place(opt.Placer, c, pool, st)
	if !ok || len(to) != len(st.GPUs) {
		return false, nil
	}
	// Every GPU of the proposal must be in the pool, once: checked by taking each out of a
	// copy of the pool (the pool itself may be the memo's now).
	seen := &s.seen
	seen.RemoveAll(*seen)
	seen.AddAll(pool)
	for _, g := range to {
		if c.Check(g) != nil || !seen.Contains(g) {
			return false, fmt.Errorf("%w: placer put job %q on GPU %d, which is neither free nor its own", ErrInvalidOptions, st.Job.ID, g)
		}
		seen.Remove(g)
	}
	if n, _ := s.spanned(c, to); n >= spanned {
		return false, nil
	}
	nu, err := m.newCost(opt.Cost, c, st.Job, to)
	if err != nil {
		return false, fmt.Errorf("consolidate: job %q: %w", st.Job.ID, err)
	}
	if !(nu.Time < old.Time) || rem*(old.Time-nu.Time) < opt.Payback*opt.RestoreTime {
		return false, nil
	}
	for _, g := range st.GPUs {
		free.Add(g)
	}
	for _, g := range to {
		free.Remove(g)
	}
	s.count(c, *free)
	to = slices.Clone(to) // the decision's own: the memo keeps its copy
	d.Run[cd.run] = gpusched.Assignment{Job: st.Job.ID, GPUs: to}
	*moves = append(*moves, Move{Job: st.Job.ID, From: st.GPUs, To: to, OldTime: old.Time, NewTime: nu.Time})
	return true, nil
}

// remaining is the job's remaining iterations by Options.Remaining, or the default.
func remaining(opt *Options, st *gpusched.JobStatus) float64 {
	rem := st.Iterations
	if opt.Remaining != nil {
		if r, ok := opt.Remaining(st); ok && r >= 0 && !math.IsInf(r, 1) {
			rem = r
		}
	}
	return rem
}

// state is Apply's per-cluster scratch: the largest server, the free GPUs per server and the
// servers sorted by free GPUs.
type state struct {
	opt      *Options
	cluster  *topology.Cluster
	maxPer   int
	byID     map[gpusched.JobID]*gpusched.JobStatus // running jobs by id, when the cursor gives up
	byIDOK   bool                                   // byID holds this call's running jobs
	cursor   int                                    // where the search for a running job goes on
	pcursor  int                                    // where the search by GPU slice goes on
	pscanned int                                    // running jobs compared by GPU slice in this call
	scanned  int                                    // running jobs looked at in this call
	memo     map[*gpusched.Job]*jobMemo             // with Options.Memo
	epoch    uint64                                 // calls with Options.Memo
	freeOn   []int                                  // free GPUs per server
	order    []int                                  // servers by free GPUs, most first
	own      []int                                  // scratch: a job's GPUs per server
	ownSrv   []int                                  // scratch: servers the job uses
	bucket   []int                                  // scratch: count's counting sort
	seen     topology.GPUSet                        // scratch: the pool less a proposal's GPUs
	cands    []candidate
	surv     []candidate // scratch: candidates the free GPUs might put on fewer servers
	order1   []candidate // scratch: those kept in place, in order
	order2   []candidate // scratch: every candidate kept in place, in order (after a move)
}

// spanned returns the number of servers gpus spans, and false if a GPU is not in the
// cluster.
func (s *state) spanned(c *topology.Cluster, gpus []topology.GPUID) (int, bool) {
	n, ok := 0, true
	s.ownSrv = s.ownSrv[:0]
	last := -1
	for _, g := range gpus {
		if g < 0 || int(g) >= c.NumGPUs() {
			ok = false
			continue
		}
		sv := c.ServerOf(g)
		if sv == last {
			continue // placements list a server's GPUs together: counted already
		}
		last = sv
		if s.own[sv] == 0 {
			s.ownSrv = append(s.ownSrv, sv)
			n++
		}
		s.own[sv]++
	}
	for _, sv := range s.ownSrv {
		s.own[sv] = 0
	}
	return n, ok
}

func (s *state) prepare(c *topology.Cluster) {
	if s.byID == nil {
		s.byID = map[gpusched.JobID]*gpusched.JobStatus{}
	}
	s.byIDOK, s.cursor, s.scanned, s.pcursor, s.pscanned = false, 0, 0, 0, 0
	if s.cluster == c {
		return
	}
	s.cluster = c
	s.maxPer = 1
	n := c.NumServers()
	for i := range n {
		_, k := c.GPUsOf(i)
		s.maxPer = max(s.maxPer, k)
	}
	s.freeOn = make([]int, n)
	s.order = make([]int, n)
	s.own = make([]int, n)
}

// count recomputes the free GPUs per server and the order of servers by them (most free
// first, then by index): a counting sort, as a server has at most maxPer free GPUs.
func (s *state) count(c *topology.Cluster, free topology.GPUSet) {
	if cap(s.bucket) < s.maxPer+2 {
		s.bucket = make([]int, s.maxPer+2)
	}
	b := s.bucket[:s.maxPer+2]
	clear(b)
	for i := range s.freeOn {
		first, k := c.GPUsOf(i)
		f := free.CountRange(first, k)
		s.freeOn[i] = f
		b[s.maxPer-f+1]++ // slot of f: servers with more free GPUs come first
	}
	for i := 1; i < len(b); i++ {
		b[i] += b[i-1]
	}
	for i, f := range s.freeOn {
		s.order[b[s.maxPer-f]] = i
		b[s.maxPer-f]++
	}
}

// fewest returns the fewest servers that the free GPUs plus gpus could hold len(gpus)
// workers on: servers taken greedily by free-plus-own GPUs, which is optimal for this count.
func (s *state) fewest(c *topology.Cluster, gpus []topology.GPUID) int {
	s.ownSrv = s.ownSrv[:0]
	for _, g := range gpus {
		sv := c.ServerOf(g)
		if s.own[sv] == 0 {
			s.ownSrv = append(s.ownSrv, sv)
		}
		s.own[sv]++
	}
	// Own servers, by free plus own, most first.
	slices.SortFunc(s.ownSrv, func(a, b int) int {
		return (s.freeOn[b] + s.own[b]) - (s.freeOn[a] + s.own[a])
	})
	need, used, i, k := len(gpus), 0, 0, 0
	for need > 0 {
		// Next server of the free order that is not the job's own.
		for i < len(s.order) && s.own[s.order[i]] > 0 {
			i++
		}
		a, b := -1, -1
		if k < len(s.ownSrv) {
			a = s.freeOn[s.ownSrv[k]] + s.own[s.ownSrv[k]]
		}
		if i < len(s.order) {
			b = s.freeOn[s.order[i]]
		}
		if a <= 0 && b <= 0 {
			break // not reached: the job's own GPUs always suffice
		}
		if a >= b {
			need -= a
			k++
		} else {
			need -= b
			i++
		}
		used++
	}
	for _, sv := range s.ownSrv {
		s.own[sv] = 0
	}
	return used
}

// sharing returns the running job of v that a keeps by sharing its GPU slice (as decisions that
// copy the view's placements do), or nil if none is found within a walk over the running jobs
// per call from where the last one ended: comparing slice addresses loads no job's
// description, as comparing ids would.
func (s *state) sharing(v *gpusched.View, a gpusched.Assignment) *gpusched.JobStatus {
	n := len(v.Running)
	if len(a.GPUs) == 0 {
		return nil
	}
	p := unsafe.SliceData(a.GPUs)
	for s.pscanned < n {
		i := s.pcursor
		if s.pcursor++; s.pcursor == n {
			s.pcursor = 0
		}
		s.pscanned++
		if st := &v.Running[i]; unsafe.SliceData(st.GPUs) == p && len(st.GPUs) == len(a.GPUs) {
			if st.Job != nil && st.Job.ID == a.Job {
				return st
			}
			return nil
		}
	}
	return nil
}

// running returns the running job of v with the given id, or nil. Decisions usually list the
// jobs they keep in the view's order, so it searches on from where the last search ended, and
// builds a map of the running jobs only once it has looked at twice as many as there are:
// no hashing of every running job's id at every call.
func (s *state) running(v *gpusched.View, id gpusched.JobID) *gpusched.JobStatus {
	n := len(v.Running)
	if !s.byIDOK && s.scanned <= 2*n {
		for range n {
			i := s.cursor
			if s.cursor++; s.cursor == n {
				s.cursor = 0
			}
			s.scanned++
			if j := v.Running[i].Job; j != nil && j.ID == id {
				return &v.Running[i]
			}
		}
	}
	if !s.byIDOK {
		clear(s.byID)
		for i := range v.Running {
			if j := v.Running[i].Job; j != nil {
				s.byID[j.ID] = &v.Running[i]
			}
		}
		s.byIDOK = true
	}
	return s.byID[id]
}

// jobMemo is what a Consolidator with Options.Memo remembers of one job (a nil *jobMemo
// remembers nothing): its time on the placement it had, and the Placer's last proposal and
// the times of recent proposals.
type jobMemo struct {
	cluster *topology.Cluster
	seen    uint64 // epoch of the last call that looked at the job

	gpus    []topology.GPUID // the placement whose time is old
	old     gpusched.StepCost
	oldOK   bool
	pool    topology.GPUSet // the GPUs the Placer was offered last, for a job on gpus
	poolOK  bool
	to      []topology.GPUID // what it proposed
	placeOK bool
	times   [memoTimes]proposalTime // times of recent proposals, the newest first
}

// memoTimes is how many proposals' times a jobMemo keeps.
const memoTimes = 4

type proposalTime struct {
	gpus []topology.GPUID
	cost gpusched.StepCost
}

// memoOf returns j's memo, forgetting it if it was for another cluster.
func (s *state) memoOf(c *topology.Cluster, j *gpusched.Job) *jobMemo {
	if s.memo == nil {
		s.memo = map[*gpusched.Job]*jobMemo{}
	}
	m := s.memo[j]
	if m == nil || m.cluster != c {
		m = &jobMemo{cluster: c}
		s.memo[j] = m
	}
	m.seen = s.epoch
	return m
}

// prune forgets the memos of jobs no call has looked at lately, once they outnumber the
// running jobs, so that the memo does not grow with the jobs that ever ran.
func (s *state) prune(running int) {
	if len(s.memo) <= 2*running+64 {
		return
	}
	for j, m := range s.memo {
		if s.epoch-m.seen > 16 {
			delete(s.memo, j)
		}
	}
}

// oldCost is the job's time on its current GPUs.
func (m *jobMemo) oldCost(cost gpusched.CostModel, c *topology.Cluster, st *gpusched.JobStatus) (gpusched.StepCost, error) {
	if m != nil && m.oldOK && slices.Equal(m.gpus, st.GPUs) {
		return m.old, nil
	}
	sc, err := cost.StepCost(st.Job, c, st.GPUs, nil)
	if m != nil && err == nil {
		if !slices.Equal(m.gpus, st.GPUs) {
			m.gpus = append(m.gpus[:0], st.GPUs...)
			m.poolOK = false // proposals were for the old placement
		}
		m.old, m.oldOK = sc, true
	}
	return sc, err
}

// place is the Placer's proposal for the job on pool. The result must not be kept: it may be
// the memo's.
func (m *jobMemo) place(placer gpusched.Placer, c *topology.Cluster, pool topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool) {
	if m == nil {
		return placer(c, pool, st.Job)
	}
	if m.poolOK && m.oldOK && slices.Equal(m.gpus, st.GPUs) && sameSet(m.pool, pool) {
		return m.to, m.placeOK
	}
	to, ok := placer(c, pool, st.Job)
	m.pool = pool // the caller's own copy, not changed after the call
	m.to = append(m.to[:0], to...)
	m.placeOK, m.poolOK = ok, m.oldOK && slices.Equal(m.gpus, st.GPUs)
	return m.to, ok
}

// newCost is the job's time on a proposed placement.
func (m *jobMemo) newCost(cost gpusched.CostModel, c *topology.Cluster, j *gpusched.Job, to []topology.GPUID) (gpusched.StepCost, error) {
	if m == nil {
		return cost.StepCost(j, c, to, nil)
	}
	for i := range m.times {
		if p := &m.times[i]; p.gpus != nil && slices.Equal(p.gpus, to) {
			return p.cost, nil
		}
	}
	sc, err := cost.StepCost(j, c, to, nil)
	if err == nil {
		last := m.times[memoTimes-1].gpus
		copy(m.times[1:], m.times[:memoTimes-1])
		m.times[0] = proposalTime{gpus: append(last[:0], to...), cost: sc}
	}
	return sc, err
}

// sameSet reports whether two sets hold the same GPUs.
func sameSet(a, b topology.GPUSet) bool {
	if a.Len() != b.Len() {
		return false
	}
	eq := true
	a.Range(func(g topology.GPUID) bool {
		eq = b.Contains(g)
		return eq
	})
	return eq
}
