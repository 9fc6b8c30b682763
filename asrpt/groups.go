package asrpt

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched"
)

// Group fallback (on unless Options.NoGroupFallback): a recurrence group whose predictions
// have been poor, measured online from its own jobs, is sized by Gittins ranks under the
// group's own distribution of lengths instead of by the Estimator. The distribution is the Kaplan-Meier
// estimate over the group's recently finished jobs (exact lengths) and its live jobs
// (censored at the iterations they have done): a group whose first jobs are all still running
// far past their predictions is known to be long although none has finished yet, which no
// learner that only sees finished jobs can know.

// groupHistory is how many finished jobs per group the fallback remembers.
const groupHistory = 64

// groupMargin is how much smaller (in median absolute log error) the group distribution's
// errors must be than the Estimator's for the group to be sized by it: a factor of 2. A group
// distribution cannot tell a group's jobs apart, and on groups of unlike jobs (the Rubick
// workloads' applications) a forest that errs by more still ranks them better.
const groupMargin = math.Ln2

// groupLive is how many of a group's live jobs, the earliest admitted (which have done the
// most), the Kaplan-Meier estimate reads: it bounds the cost of sizing a job of a large group.
const groupLive = 256

// groupMinSamples is the least number of observations (finished or live) a group needs before
// its own distribution replaces the Estimator's.
const groupMinSamples = 3

// groupBook is what the fallback knows about one recurrence group.
type groupBook struct {
	done    []float64     // true iterations of its last finished jobs (a ring of groupHistory)
	errs    []float64     // the Estimator's absolute log errors at their arrival, in the same ring
	gerr    []float64     // the group distribution's absolute log errors (its median at arrival)
	next    int           // the ring's next slot once full
	used    uint64        // Scheduler.groupClock when a job of it last arrived or left
	members int           // while a state is restored: its jobs, to check its live list against
	over    int           // live jobs that have run past their predictions
	live    []*jobState   // its jobs in the system, in admission order
	obs     []observation // scratch for the Kaplan-Meier estimate
	errb    []float64     // scratch for the medians
	// timed marks a burst (Options.BurstGap): its lengths are in seconds at the jobs' best
	// placements (iterations x jobState.tau), since a burst's jobs need not share a model.
	timed bool
	burst string  // a burst's key: its jobs' user and GPU count
	last  float64 // a burst's latest arrival
	// dirty marks a book that learnt something (a job finished or overran) since the last
	// call: its live jobs are sized again at the next.
	dirty bool
	// sdone is done sorted ascending, kept as jobs finish (the Kaplan-Meier estimate reads
	// the lengths in order at every re-estimation), when sorted is set: a book restored with
	// a length that is NaN has none (its observations are sorted whole, as before).
	sdone  []float64
	sorted bool
	lobs   []float64 // scratch: the live jobs' observations (groupLiveLengths; groupObsSorted sorts them)
	// poor is groupPoor's answer while poorOK: it changes only when the book's errors or
	// overrunning jobs do (groupLeave, groupOverrun).
	poor, poorOK bool
}

// groupDirty notes that book g learnt something.
func (s *Scheduler) groupDirty(g *groupBook) {
	if g.timed && !g.dirty {
		g.dirty = true
		s.dirtyGroups = append(s.dirtyGroups, g)
	}
}

// groupRefresh sizes again the live jobs of the books that learnt something since the last
// call, when their predictions are poor: a job waiting while its siblings finish is sized by
// what they took, not by what was known when it arrived.
func (s *Scheduler) groupRefresh(v *gpusched.View) error {
	for _, g := range s.dirtyGroups {
		g.dirty = false
		if len(g.live) == 0 || !s.groupPoor(g) {
			continue
		}
		// The observations are read, sorted and run through the Kaplan-Meier pass once, at
		// the first job that needs them (kmCurve): jobs that have not run share one estimate
		// but for its tail (each its own prediction's), taken once and its tail set for each;
		// the others condition the same curve on what they have done (a job's own censored
		// observation, at what it has done, does not change its group's distribution
		// conditioned on exceeding that).
		var fresh *kmDist
		obs, read := 0, false
		for k, st := range g.live {
			if k == groupLive {
				break
			}
			done, ok := s.doneOf(v, st)
			if !ok || st.overruns > 0 {
				continue
			}
			if !read {
				s.groupObsSorted(v, g, nil)
				obs, read = len(g.obs), true
				s.km.fill(g.obs)
				if obs >= groupMinSamples {
					fresh = s.km.at(&s.kmFresh, 0, 0)
				}
			}
			var until, rank float64
			if done == 0 {
				if fresh == nil {
					continue
				}
				until, rank, ok = fresh.rankWithTail(g.tailOf(st), g.scale(st))
			} else {
				if obs-1 < groupMinSamples {
					continue
				}
				sc := g.scale(st)
				km := s.km.at(&s.kmJob, done*sc, g.tailOf(st))
				if km == nil {
					continue
				}
				until, rank, ok = km.rank(done, sc)
			}
			if !ok || until == st.iters {
				continue
			}
			s.setIters(st, until)
			if err := s.resize(st, float64(st.gpus)*rank*st.tau/s.g0); err != nil {
				return err
			}
		}
	}
	clear(s.dirtyGroups)
	s.dirtyGroups = s.dirtyGroups[:0]
	return nil
}

// scale is what converts job st's iterations into the units of its group's book.
func (g *groupBook) scale(st *jobState) float64 {
	if g.timed && st.tau > 0 {
		return st.tau
	}
	return 1
}

// burstPrefix starts the name of a burst's book, which no Features.Group can be confused with
// (a group name is what a trace or user gave; this one starts with a NUL byte).
const burstPrefix = "\x00burst\x00"

// burstOf returns the book of the burst job j belongs to, creating it; nil with bursts off.
func (s *Scheduler) burstOf(j *gpusched.Job) *groupBook {
	gap := s.opt.BurstGap
	if gap == 0 {
		gap = DefaultBurstGap
	}
	if !(gap > 0) {
		return nil
	}
	bk := j.Features.User + "\x00" + strconv.Itoa(j.GPUs)
	if name, ok := s.bursts[bk]; ok {
		if g := s.groups[name]; g != nil && j.Arrival-g.last <= gap {
			g.last = math.Max(g.last, j.Arrival)
			return g
		}
	}
	name := burstPrefix + bk + "\x00" + string(j.ID)
	g := s.newGroup(name)
	g.timed, g.burst, g.last = true, bk, j.Arrival
	if s.bursts == nil {
		s.bursts = map[string]string{}
	}
	s.bursts[bk] = name
	return g
}

// newGroup makes an empty book named k.
func (s *Scheduler) newGroup(k string) *groupBook {
	g := &groupBook{sorted: true}
	if s.groups == nil {
		s.groups = map[string]*groupBook{}
	}
	s.groups[k] = g
	if len(s.groups) > 2*groupBooks {
		s.groupSweep()
	}
	return g
}

// observation is one length for the Kaplan-Meier estimate: exact (a finished job) or censored
// (a live job that has done at least that much).
type observation struct {
	n     float64
	exact bool
}

// groupOf returns job j's group book, creating it; nil without the fallback or a group.
func (s *Scheduler) groupOf(j *gpusched.Job) *groupBook {
	if s.opt.NoGroupFallback {
		return nil
	}
	k := j.Features.Group
	var g *groupBook
	if k == "" {
		if g = s.burstOf(j); g == nil {
			return nil
		}
	} else if g = s.groups[k]; g == nil {
		g = s.newGroup(k)
	}
	s.groupClock++
	g.used = s.groupClock
	return g
}

// groupBooks is how many groups without live jobs the fallback keeps (the most recently used):
// one-off jobs each make a group, which must not make memory grow with the jobs seen.
const groupBooks = 4096

// groupSweep forgets all but the groupBooks most recently used groups without live jobs.
func (s *Scheduler) groupSweep() {
	type idle struct {
		name string
		used uint64
	}
	var idles []idle
	for k, g := range s.groups {
		if len(g.live) == 0 {
			idles = append(idles, idle{k, g.used})
		}
	}
	if len(idles) <= groupBooks {
		return
	}
	slices.SortFunc(idles, func(a, b idle) int {
		return cmp.Or(cmp.Compare(b.used, a.used), strings.Compare(a.name, b.name))
	})
	for _, x := range idles[groupBooks:] {
		delete(s.groups, x.name)
	}
	for bk, name := range s.bursts {
		if s.groups[name] == nil {
			delete(s.bursts, bk)
		}
	}
}

// groupJoin adds a newly admitted job to its group's live jobs.
func (s *Scheduler) groupJoin(st *jobState) {
	if g := s.groupOf(st.job); g != nil {
		st.pred0 = st.iters
		st.group = g
		g.live = append(g.live, st)
		s.regroup = append(s.regroup, st)
	}
}

// groupLeave removes a job that left from its group's live jobs and, when it finished, records
// its length and the error of its prediction at arrival.
func (s *Scheduler) groupLeave(st *jobState, finished bool, iterations float64) {
	if st.group == nil {
		return
	}
	g := st.group
	s.groupClock++
	g.used = s.groupClock
	if i := slices.Index(g.live, st); i >= 0 {
		g.live = slices.Delete(g.live, i, i+1) // keeps admission order
	}
	if st.overruns > 0 {
		g.over--
		g.poorOK = false
	}
	st.group = nil
	if !finished || !(iterations > 0) || math.IsInf(iterations, 0) || !(st.pred0 > 0) {
		return
	}
	e := math.Abs(math.Log(iterations / st.pred0))
	ge := math.NaN()
	if st.gpred0 > 0 {
		ge = math.Abs(math.Log(iterations / st.gpred0))
	}
	iterations *= g.scale(st)
	if g.timed && len(g.done) > 0 {
		// A burst's jobs mostly arrive together, before any has finished: the group's
		// prediction is scored by what its finished jobs would have said when this one left,
		// the estimate that the refresh gives its waiting siblings.
		sorted := g.sdone
		if !g.sorted {
			g.errb = append(g.errb[:0], g.done...)
			slices.Sort(g.errb)
			sorted = g.errb
		}
		ge = math.Abs(math.Log(iterations / sorted[len(sorted)/2]))
	}
	s.groupDirty(g)
	g.poorOK = false
	if len(g.done) < groupHistory {
		g.done = append(g.done, iterations)
		g.errs = append(g.errs, e)
		g.gerr = append(g.gerr, ge)
		g.sortedAdd(iterations)
		return
	}
	if !s.brokenSorted {
		g.sortedDrop(g.done[g.next])
	}
	g.done[g.next], g.errs[g.next], g.gerr[g.next] = iterations, e, ge
	g.next = (g.next + 1) % groupHistory
	g.sortedAdd(iterations)
}

// sortedAdd adds length n, which is not NaN, to g.sdone.
func (g *groupBook) sortedAdd(n float64) {
	if g.sorted {
		i, _ := slices.BinarySearch(g.sdone, n)
		g.sdone = slices.Insert(g.sdone, i, n)
	}
}

// sortedDrop removes one length n from g.sdone.
func (g *groupBook) sortedDrop(n float64) {
	if !g.sorted {
		return
	}
	if i, ok := slices.BinarySearch(g.sdone, n); ok {
		g.sdone = slices.Delete(g.sdone, i, i+1)
		return
	}
	g.sorted, g.sdone = false, nil // not reached: g.sdone holds g.done
}

// sortDone sets g.sdone from g.done (a restored book): sorted unless a length is NaN.
func (g *groupBook) sortDone() {
	g.sdone = append(g.sdone[:0], g.done...)
	slices.Sort(g.sdone)
	g.sorted = !slices.ContainsFunc(g.done, math.IsNaN)
	if !g.sorted {
		g.sdone = nil
	}
}

// groupOverrun notes that a live job of a group ran past its prediction for the first time.
func (s *Scheduler) groupOverrun(st *jobState) {
	if st.group != nil && st.overruns == 1 {
		st.group.over++
		if !s.brokenPoor {
			st.group.poorOK = false
		}
		s.groupDirty(st.group)
	}
}

// groupPoor reports whether group g's predictions are poor: over its recently finished jobs
// that both predicted at arrival (at least groupMinSamples), the group's own distribution
// (its median) erred less than the Estimator (median absolute log errors); or, before that,
// at least two of its live jobs have run past their predictions.
func (s *Scheduler) groupPoor(g *groupBook) bool {
	if !g.poorOK {
		g.poor, g.poorOK = groupPoorOf(g), true
	}
	return g.poor
}

// groupPoorOf is groupPoor computed afresh.
func groupPoorOf(g *groupBook) bool {
	g.errb = g.errb[:0]
	for i, ge := range g.gerr {
		if !math.IsNaN(ge) {
			g.errb = append(g.errb, g.errs[i])
		}
	}
	if n := len(g.errb); n >= groupMinSamples {
		slices.Sort(g.errb)
		ef := g.errb[n/2]
		g.errb = g.errb[:0]
		for _, ge := range g.gerr {
			if !math.IsNaN(ge) {
				g.errb = append(g.errb, ge)
			}
		}
		slices.Sort(g.errb)
		return g.errb[n/2]+groupMargin < ef
	}
	return g.over >= 2
}

// doneOf returns the iterations a job present in the current view has done.
func (s *Scheduler) doneOf(v *gpusched.View, st *jobState) (float64, bool) {
	if st.gone {
		return 0, false
	}
	m := s.marks[st.key]
	if m.runs(s.epoch) {
		return v.Running[m.idx].Iterations, true
	}
	return s.waitDone[st.key], true
}

// groupRank sizes job st, which has done `done` iterations, by its Gittins rank under its
// group's Kaplan-Meier distribution conditioned on done, when the group's predictions are poor
// and it has enough observations: the end of its quantum and its rank, in iterations.
func (s *Scheduler) groupRank(v *gpusched.View, st *jobState, done float64) (until, rank float64, ok bool) {
	g := st.group
	if g == nil || !s.groupPoor(g) {
		return 0, 0, false
	}
	sc := g.scale(st)
	km := s.groupDist(v, g, st, done*sc)
	if km == nil {
		return 0, 0, false
	}
	return km.rank(done, sc)
}

// rank is GittinsRank(d, done*sc) converted from the book's units to job iterations by dividing
// by sc: the end of the job's quantum and its rank, ok only when the quantum ends past done.
func (d *kmDist) rank(done, sc float64) (until, rank float64, ok bool) {
	rank, until, ok = d.gittins(done * sc)
	until, rank = until/sc, rank/sc
	if !ok || !(until > done) {
		return 0, 0, false
	}
	return until, rank, true
}

// groupDist returns group g's Kaplan-Meier distribution of lengths conditioned on exceeding
// done, from its finished jobs and its groupLive earliest live ones other than st; nil with
// fewer than groupMinSamples observations.
func (s *Scheduler) groupDist(v *gpusched.View, g *groupBook, st *jobState, done float64) *kmDist {
	return s.groupDistTail(v, g, st, done, g.tailOf(st))
}

// groupDistTail is groupDist with the tail given (see tailOf); st may be nil (none excluded).
func (s *Scheduler) groupDistTail(v *gpusched.View, g *groupBook, st *jobState, done, tail float64) *kmDist {
	s.groupObsSorted(v, g, st)
	if len(g.obs) < groupMinSamples {
		return nil
	}
	s.kmOne.fill(g.obs) // kaplanMeier, its curve in a buffer of the scheduler's
	return s.kmOne.at(&kmDist{}, done, tail)
}

// groupObs fills g.obs with group g's observations: its finished jobs' lengths and the
// progress of its groupLive earliest live jobs other than st (st may be nil) that have done
// some, in the book's units.
func (s *Scheduler) groupObs(v *gpusched.View, g *groupBook, st *jobState) {
	g.obs = g.obs[:0]
	for _, n := range g.done {
		g.obs = append(g.obs, observation{n, true})
	}
	s.groupLiveLengths(v, g, st)
	for _, n := range g.lobs {
		g.obs = append(g.obs, observation{n, false})
	}
}

// groupLiveLengths fills g.lobs with the progress, in the book's units, of group g's
// groupLive earliest live jobs other than st (st may be nil) that have done some.
func (s *Scheduler) groupLiveLengths(v *gpusched.View, g *groupBook, st *jobState) {
	g.lobs = g.lobs[:0]
	for k, m := range g.live {
		if k == groupLive {
			break
		}
		if m == st {
			continue
		}
		if d, ok := s.doneOf(v, m); ok && d > 0 {
			g.lobs = append(g.lobs, d*g.scale(m)) // d > 0 and the scale > 0: not NaN
		}
	}
}

// groupObsSorted is groupObs followed by sortObservations: the finished jobs' lengths are
// kept sorted (g.sdone), so only the live jobs' observations are sorted here, and merged.
func (s *Scheduler) groupObsSorted(v *gpusched.View, g *groupBook, st *jobState) {
	if !g.sorted {
		s.groupObs(v, g, st)
		sortObservations(g.obs)
		return
	}
	s.groupLiveLengths(v, g, st)
	slices.Sort(g.lobs)
	// The merge: an event before a censoring at the same length, as sortObservations orders
	// them; observations that compare equal are equal, so the result is the sort's.
	g.obs = g.obs[:0]
	i, j := 0, 0
	for i < len(g.sdone) && j < len(g.lobs) {
		if g.sdone[i] <= g.lobs[j] {
			g.obs = append(g.obs, observation{g.sdone[i], true})
			i++
		} else {
			g.obs = append(g.obs, observation{g.lobs[j], false})
			j++
		}
	}
	for ; i < len(g.sdone); i++ {
		g.obs = append(g.obs, observation{g.sdone[i], true})
	}
	for ; j < len(g.lobs); j++ {
		g.obs = append(g.obs, observation{g.lobs[j], false})
	}
}

// tailOf is the least length at which the group distribution places what is left beyond its
// observations, for job st: a burst whose jobs have all run briefly says little about its
// length, so there it is the Estimator's own prediction for st; 0 (none) for groups.
func (g *groupBook) tailOf(st *jobState) float64 {
	if !g.timed {
		return 0
	}
	return st.pred0 * g.scale(st)
}

// rankWithTail is GittinsRank(d, 0) with d's tail (if it has one) placed at least at tail,
// converted from the book's units by dividing by sc: the end of the first quantum and the rank.
// It leaves d as it was.
func (d *kmDist) rankWithTail(tail, sc float64) (until, rank float64, ok bool) {
	last := len(d.x) - 1
	x := d.x[last]
	if d.tail && tail > x {
		d.x[last] = tail
	}
	until, rank, ok = d.rank(0, sc)
	d.x[last] = x
	return until, rank, ok
}

// groupArrive sizes a job admitted in this call: it notes the group distribution's median as
// the group's prediction at arrival (scored against the Estimator's when the job finishes),
// and when the group's predictions are poor sizes the job by its group.
func (s *Scheduler) groupArrive(v *gpusched.View, st *jobState) error {
	g := st.group
	if g == nil {
		return nil
	}
	km := s.groupDist(v, g, st, 0)
	if km == nil {
		return nil
	}
	sc := g.scale(st)
	st.gpred0 = km.Quantile(0.5) / sc
	if !s.groupPoor(g) {
		return nil
	}
	until, rank, ok := km.rank(0, sc)
	if !ok {
		return nil
	}
	s.setIters(st, until)
	return s.resize(st, float64(st.gpus)*rank*st.tau/s.g0)
}

// kmDist is a discrete distribution of total iterations: values ascending with their
// cumulative probabilities (the last is 1).
type kmDist struct {
	x, cdf []float64
	tail   bool // the last value is the survival beyond the largest observation
}

// Quantile returns the least value whose cumulative probability reaches q.
func (d *kmDist) Quantile(q float64) float64 {
	i, _ := slices.BinarySearch(d.cdf, q)
	if i >= len(d.x) {
		i = len(d.x) - 1
	}
	return d.x[i]
}

// gittins is GittinsRank(d, done), its atoms read in one walk up d's cumulative probabilities
// instead of a binary search per atom: the atoms' probabilities ascend, and the least index
// whose cumulative probability reaches each is the one Quantile's search finds (the
// probabilities ascend but for the last, set to 1, which reaches every atom's).
func (d *kmDist) gittins(done float64) (rank, until float64, ok bool) {
	var x [GittinsAtoms]float64
	i, last := 0, len(d.x)-1
	for k := range x {
		q := (float64(k) + 0.5) / GittinsAtoms
		for i < last && d.cdf[i] < q {
			i++
		}
		if !gittinsAtom(&x, k, d.x[i], done) {
			return 0, 0, false
		}
	}
	return gittinsOfAtoms(&x, done)
}

// kaplanMeier returns the Kaplan-Meier estimate of the length distribution from obs, conditioned
// on exceeding done: its mass at each exact length above done, and the survival left after the
// largest observation at twice the largest of it and done (the doubling that re-estimation
// assumes without a better estimate), or at tail if that is larger. nil when nothing is left
// above done. It sorts obs.
func kaplanMeier(obs []observation, done, tail float64) *kmDist {
	sortObservations(obs)
	return kmSorted(obs, done, tail)
}

// sortObservations sorts obs by length, an event before a censoring at the same length.
func sortObservations(obs []observation) {
	slices.SortFunc(obs, func(a, b observation) int {
		switch {
		case a.n < b.n:
			return -1
		case a.n > b.n:
			return 1
		case a.exact && !b.exact: // an event before a censoring at the same length
			return -1
		case !a.exact && b.exact:
			return 1
		}
		return 0
	})
}

// kmSorted is kaplanMeier on observations sorted by sortObservations.
func kmSorted(obs []observation, done, tail float64) *kmDist {
	var c kmCurve
	c.fill(obs)
	return c.at(&kmDist{}, done, tail)
}

// kmCurve is the part of the Kaplan-Meier estimate over sorted observations that does not
// depend on the length a job has done: the lengths with an event, ascending, the mass the
// estimate puts at each, the survival left after the largest observation, and that largest
// observation. The group refresh computes it once per group and conditions it on each live
// job's progress (at), where running kmSorted for each job cost a pass over every observation.
type kmCurve struct {
	x, mass []float64
	surv    float64
	top     float64 // math.Max over the observations' lengths; -Inf without any
}

// fill computes the curve of obs, sorted by sortObservations, reusing c's buffers.
func (c *kmCurve) fill(obs []observation) {
	c.x, c.mass = c.x[:0], c.mass[:0]
	surv, atRisk := 1.0, float64(len(obs))
	top := math.Inf(-1)
	for i := 0; i < len(obs); {
		n := obs[i].n
		events, total := 0.0, 0.0
		for i < len(obs) && obs[i].n == n {
			if obs[i].exact {
				events++
			}
			total++
			i++
		}
		top = math.Max(top, n)
		if events > 0 {
			mass := surv * events / atRisk
			surv -= mass
			c.x = append(c.x, n)
			c.mass = append(c.mass, mass)
		}
		atRisk -= total
	}
	c.surv, c.top = surv, top
}

// at returns the curve conditioned on exceeding done, with its tail at least at tail, as
// kaplanMeier defines it, written into d's buffers: d, or nil when nothing is left above done.
func (c *kmCurve) at(d *kmDist, done, tail float64) *kmDist {
	// The event lengths ascend, so those above done are a suffix.
	lo, hi := 0, len(c.x)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); c.x[m] > done {
			hi = m
		} else {
			lo = m + 1
		}
	}
	d.x = append(d.x[:0], c.x[lo:]...)
	d.cdf = append(d.cdf[:0], c.mass[lo:]...)
	d.tail = false
	if c.surv > 1e-12 {
		d.x = append(d.x, max(2*math.Max(done, c.top), tail))
		d.cdf = append(d.cdf, c.surv)
		d.tail = true
	}
	sum := 0.0
	for _, p := range d.cdf {
		sum += p
	}
	if len(d.x) == 0 || !(sum > 0) {
		return nil
	}
	acc := 0.0
	for i, p := range d.cdf {
		acc += p / sum
		d.cdf[i] = acc
	}
	d.cdf[len(d.cdf)-1] = 1
	return d
}
