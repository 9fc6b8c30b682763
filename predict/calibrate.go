package predict

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	gpusched "github.com/gpusched/gpusched"
)

// pitWindow holds the probability integral transforms (PITs) of the jobs of the most recent
// batches of one key — a group, a user or all jobs — and their weighted empirical quantiles,
// its calibration map. A batch is the jobs of one group that were first predicted between the
// same two completions of their group: they were predicted from the same information,
// typically a burst of near-identical submissions, and their errors go together. Each batch
// weighs 1 in all, shared equally by its jobs, so that a burst of fifty jobs counts as much as
// one independent job, not as fifty; or, with jobs set (Options.CalibrationJobWeights), every
// job weighs 1 and the batches only group the PITs for eviction.
type pitWindow struct {
	ring    []string // batch keys, at most limit; once full, ring[next] is the oldest
	next    int
	batches map[string]*pitBatch
	sorted  []pitEntry // the PITs of every batch, ascending
	grid    [calLevels + 1]float64
	seq     uint64 // calibrator sequence number of the last update, for eviction
	jobs    bool   // every PIT weighs 1 (else each batch weighs 1)
}

// pitBatch is one batch's PITs: at most batchPITs, the first to finish, each weighing
// 1/len(pits).
type pitBatch struct {
	pits []float64
	w    float64 // 1 / len(pits)
}

// pitEntry is one job's PIT and its batch.
type pitEntry struct {
	u float64
	b *pitBatch
}

// batchPITs bounds the PITs kept per batch.
const batchPITs = 64

// add records the PIT u in [0, 1] of a job of batch key, dropping the oldest batch beyond
// limit, and updates the grid.
func (w *pitWindow) add(key string, u float64, limit int, seq uint64) {
	w.seq = seq
	if w.batches == nil {
		w.batches = map[string]*pitBatch{}
	}
	b := w.batches[key]
	switch {
	case b != nil && len(b.pits) >= batchPITs:
		return
	case b == nil:
		if len(w.ring) < limit {
			w.ring = append(w.ring, key)
		} else {
			old := w.batches[w.ring[w.next]]
			delete(w.batches, w.ring[w.next])
			for _, u := range old.pits {
				w.remove(u, old)
			}
			w.ring[w.next] = key
			w.next = (w.next + 1) % len(w.ring)
		}
		b = &pitBatch{}
		w.batches[key] = b
	}
	b.pits = append(b.pits, u)
	b.w = 1 / float64(len(b.pits))
	w.sorted = slices.Insert(w.sorted, w.firstAtLeast(u), pitEntry{u, b})
	w.updateGrid()
}

// firstAtLeast returns the index of the first entry whose PIT is >= u.
func (w *pitWindow) firstAtLeast(u float64) int {
	i, _ := slices.BinarySearchFunc(w.sorted, u, func(e pitEntry, u float64) int { return cmp.Compare(e.u, u) })
	return i
}

// remove deletes one entry of PIT u and batch b.
func (w *pitWindow) remove(u float64, b *pitBatch) {
	for i := w.firstAtLeast(u); i < len(w.sorted) && w.sorted[i].u == u; i++ {
		if w.sorted[i].b == b {
			w.sorted = slices.Delete(w.sorted, i, i+1)
			return
		}
	}
}

// updateGrid recomputes the grid: the weighted empirical quantiles of the PITs at the levels
// m/calLevels. A PIT of weight v whose predecessors weigh C in all sits at the plotting
// position (C + v/2 + 1/2)/(n + 1), n the number of batches (with unit weights: i/(n+1) for
// the i-th smallest), with 0 and 1 at the ends, interpolated linearly. As in split-conformal
// prediction with its finite-sample correction, the interval between the levels a and b then
// holds a new exchangeable batch's jobs with probability about b - a. With w.jobs every PIT
// weighs 1 and n is the number of PITs: the same for a new job.
func (w *pitWindow) updateGrid() {
	n := float64(len(w.ring))
	if w.jobs {
		n = float64(len(w.sorted))
	}
	m := 1
	prevP, prevU := 0.0, 0.0
	cum := 0.0
	next := float64(m) / calLevels // the next level to place
	for _, e := range w.sorted {
		v := e.b.w
		if w.jobs {
			v = 1
		}
		p := (cum + v/2 + 0.5) / (n + 1)
		cum += v
		for next <= p {
			w.grid[m] = prevU
			if p > prevP {
				w.grid[m] += (next - prevP) / (p - prevP) * (e.u - prevU)
			}
			m++
			if m == calLevels {
				break
			}
			next = float64(m) / calLevels
		}
		if m == calLevels {
			break
		}
		prevP, prevU = p, e.u
	}
	for ; m < calLevels; m++ {
		q := float64(m) / calLevels
		w.grid[m] = prevU + (q-prevP)/(1-prevP)*(1-prevU)
	}
	w.grid[0], w.grid[calLevels] = 0, 1
}

// calibrator keeps the PIT windows of one source of estimates (forest, group history,
// prior), per group, per user and overall, and blends them into a job's calibration map.
type calibrator struct {
	limit int     // batches kept per window
	prior float64 // weight, in batches, of the broader level when blending
	step  float64 // step of the tail levels' adaptation (0: none)
	// lo and hi are the levels of the blended map that the nominal 10th and 90th percentiles
	// use, adapted online so that 10% of jobs fall below and 10% above (see grid).
	lo, hi  float64
	maxKeys int
	// userStep is the step of each user's own adaptation of the tail levels, on top of lo and
	// hi (Options.CalibrationUserStep; 0: none); local holds each user's offsets to lo and hi.
	userStep float64
	// userBound bounds each user's offsets (Options.CalibrationUserBound).
	userBound float64
	// jobStep and jobOff: the same over all jobs (Options.CalibrationJobStep).
	jobStep   float64
	jobOff    [2]float64
	userBatch bool // weight a user's jobs 1/sqrt(k) as the k-th of their batch (else 1)
	// jobWeights makes every window weigh each job 1 instead of each batch
	// (Options.CalibrationJobWeights).
	jobWeights bool
	local      map[string]*userOffsets
	groups     map[string]*pitWindow
	users      map[string]*pitWindow
	global     pitWindow
	seq        uint64
}

func newCalibrator(limit int, prior, step float64, maxKeys int) *calibrator {
	return &calibrator{limit: limit, prior: prior, step: step, lo: 0.1, hi: 0.9, maxKeys: maxKeys, userBound: 0.5,
		groups: map[string]*pitWindow{}, users: map[string]*pitWindow{}}
}

// add records the PIT u of a finished job with features f, of batch key.
func (c *calibrator) add(f *gpusched.Features, key string, u float64) {
	if c.step > 0 {
		// Adaptive conformal inference on the two tails: a job above the map's 90th
		// percentile raises hi by 0.9 step, one below it lowers hi by 0.1 step (and the
		// same for lo), so that in the long run 10% of jobs fall above and 10% below.
		var buf [calLevels + 1]float64
		if g := c.gridWith(f, buf[:], false); g != nil {
			above, below := 0.0, 0.0
			if u > g[calLevels*9/10] {
				above = 1
			}
			if u < g[calLevels/10] {
				below = 1
			}
			c.hi = math.Min(1-1e-6, math.Max(0.5, c.hi+c.step*(above-0.1)))
			c.lo = math.Max(1e-6, math.Min(0.5, c.lo-c.step*(below-0.1)))
		}
	}
	c.seq++
	c.global.jobs = c.jobWeights
	c.global.add(key, u, c.limit, c.seq)
	for _, kv := range [...]struct {
		m   map[string]*pitWindow
		key string
	}{{c.groups, f.Group}, {c.users, f.User}} {
		if kv.key == "" {
			continue
		}
		w := kv.m[kv.key]
		if w == nil {
			if len(kv.m) >= c.maxKeys {
				evictPIT(kv.m)
			}
			w = &pitWindow{}
			kv.m[kv.key] = w
		}
		w.jobs = c.jobWeights
		w.add(key, u, c.limit, c.seq)
	}
}

// setJobWeights sets how the windows weigh their PITs (Options.CalibrationJobWeights) and
// recomputes the maps of those it changes: for a calibrator restored from saved state.
func (c *calibrator) setJobWeights(on bool) {
	c.jobWeights = on
	set := func(w *pitWindow) {
		if w.jobs != on {
			w.jobs = on
			if len(w.ring) > 0 {
				w.updateGrid()
			}
		}
	}
	set(&c.global)
	for _, m := range [...]map[string]*pitWindow{c.groups, c.users} {
		for _, w := range m {
			set(w)
		}
	}
}

// adaptUser moves the tail levels of user f.User (Options.CalibrationUserStep) after one of
// its jobs, of batch key, finished below (below) or above (above) the 80% interval it was
// given at its first prediction: adaptive conformal inference on the coverage the scheduler
// saw, each job weighted 1/sqrt(k) as the k-th of its batch (a burst of n jobs predicted alike
// moves the levels as much as about 2 sqrt(n) jobs).
func (c *calibrator) adaptUser(f *gpusched.Features, key string, below, above bool) {
	if c.jobStep > 0 {
		// Over all jobs, each weighing 1 (Options.CalibrationJobStep).
		b, a := 0.0, 0.0
		if below {
			b = 1
		}
		if above {
			a = 1
		}
		c.jobOff[0] = math.Max(-0.5, math.Min(0.5, c.jobOff[0]-c.jobStep*(b-0.1)))
		c.jobOff[1] = math.Max(-0.5, math.Min(0.5, c.jobOff[1]+c.jobStep*(a-0.1)))
	}
	if c.userStep <= 0 || f.User == "" {
		return
	}
	w := 1.0
	if c.userBatch {
		if b := c.global.batches[key]; b != nil {
			w = 1 / math.Sqrt(float64(len(b.pits)))
		}
	}
	if c.local == nil || len(c.local) >= c.maxKeys {
		c.local = map[string]*userOffsets{}
	}
	u := c.local[f.User]
	if u == nil {
		u = &userOffsets{}
		c.local[f.User] = u
	}
	u.seq = c.seq
	o := &u.off
	b, a := 0.0, 0.0
	if below {
		b = 1
	}
	if above {
		a = 1
	}
	o[0] = math.Max(-c.userBound, math.Min(c.userBound, o[0]-c.userStep*w*(b-0.1)))
	o[1] = math.Max(-c.userBound, math.Min(c.userBound, o[1]+c.userStep*w*(a-0.1)))
}

// userBound returns the bound of the users' offsets for Options.CalibrationUserBound b.
func userBound(b float64) float64 {
	if b > 0 {
		return b
	}
	return 0.5
}

// userOffsets are one user's offsets to the tail levels lo and hi (Options.CalibrationUserStep)
// and the calibrator's seq at their last change (saving by changes).
type userOffsets struct {
	off [2]float64
	seq uint64
}

// evictPIT drops the least recently updated quarter of m's keys (at least one).
func evictPIT(m map[string]*pitWindow) {
	type ks struct {
		key string
		seq uint64
	}
	all := make([]ks, 0, len(m))
	for k, w := range m {
		all = append(all, ks{k, w.seq})
	}
	slices.SortFunc(all, func(a, b ks) int { return cmp.Compare(a.seq, b.seq) })
	for _, e := range all[:max(1, len(all)/4)] {
		delete(m, e.key)
	}
}

// grid writes into dst (length calLevels+1) the calibration map of a job with features f:
// the identity blended with the overall window, that with the user's window, that with the
// group's, each level weighted n/(n + prior) by its own number n of batches (quantile
// functions averaged level by level, which keeps them monotone). It returns nil when no PIT
// has been recorded.
func (c *calibrator) grid(f *gpusched.Features, dst []float64) []float64 {
	return c.gridWith(f, dst, true)
}

// gridWith is grid, with the user's own tail levels (CalibrationUserStep) when user is true.
func (c *calibrator) gridWith(f *gpusched.Features, dst []float64, user bool) []float64 {
	if len(c.global.ring) == 0 {
		return nil
	}
	dst = dst[:calLevels+1]
	for m := range dst {
		dst[m] = float64(m) / calLevels
	}
	blend := func(w *pitWindow) {
		if w == nil || len(w.ring) == 0 {
			return
		}
		n := float64(len(w.ring))
		lam := n / (n + c.prior)
		for m := range dst {
			dst[m] = lam*w.grid[m] + (1-lam)*dst[m]
		}
	}
	blend(&c.global)
	if f.User != "" {
		blend(c.users[f.User])
	}
	if f.Group != "" {
		blend(c.groups[f.Group])
	}
	lo, hi := c.lo, c.hi
	if user {
		lo, hi = lo+c.jobOff[0], hi+c.jobOff[1]
		if u := c.local[f.User]; u != nil {
			lo, hi = lo+u.off[0], hi+u.off[1]
		}
		lo = math.Max(1e-6, math.Min(0.5, lo))
		hi = math.Min(1-1e-6, math.Max(0.5, hi))
	}
	if lo != 0.1 || hi != 0.9 {
		// The nominal level q reads the blended map at W(q), W piecewise linear through
		// (0, 0), (0.1, lo), (0.5, 0.5), (0.9, hi), (1, 1).
		g := [calLevels + 1]float64(dst)
		knots := [...][2]float64{{0, 0}, {0.1, lo}, {0.5, 0.5}, {0.9, hi}, {1, 1}}
		k := 0
		for m := range dst {
			q := float64(m) / calLevels
			for k < len(knots)-2 && q > knots[k+1][0] {
				k++
			}
			a, b := knots[k], knots[k+1]
			t := (a[1] + (q-a[0])/(b[0]-a[0])*(b[1]-a[1])) * calLevels
			i := min(int(t), calLevels-1)
			dst[m] = g[i] + (t-float64(i))*(g[i+1]-g[i])
		}
	}
	// Monotone, and inside the PITs' range so that every quantile is finite.
	dst[0], dst[calLevels] = 0, 1
	for m := 1; m < calLevels; m++ {
		dst[m] = math.Min(1-pitEps, math.Max(dst[m], math.Max(dst[m-1], pitEps)))
	}
	return dst
}

// batchKey returns the calibration batch of a job with features f whose History at its first
// prediction was h (known: remembered), or a key of its own (seq) when the job has no group
// or was never predicted.
func batchKey(f *gpusched.Features, h *History, known bool, seq uint64) string {
	if f.Group == "" || !known {
		return "\x01" + strconv.FormatUint(seq, 10)
	}
	return f.Group + "\x00" + strconv.Itoa(h.GroupRuns)
}

// numSources is the number of Source values.
const numSources = int(SourceForest) + 1

// accuracyRuns is the number of latest observed jobs that Accuracy summarises.
const accuracyRuns = 1000

// accuracyRing keeps the log errors of the first estimates of the latest observed jobs, and
// whether each fell within its first P10-P90.
type accuracyRing struct {
	logErr  []float64
	covered []bool
	next    int
}

func (a *accuracyRing) add(logErr float64, covered bool) {
	if len(a.logErr) < accuracyRuns {
		a.logErr = append(a.logErr, logErr)
		a.covered = append(a.covered, covered)
		return
	}
	a.logErr[a.next], a.covered[a.next] = logErr, covered
	a.next = (a.next + 1) % accuracyRuns
}

// Accuracy summarises how far the first estimates (Predict at arrival) of the latest observed
// jobs (at most 1,000, those with a remembered estimate: see Outcome.Known) were from their
// true lengths. The zero value means no such job.
type Accuracy struct {
	// Jobs is the number of jobs summarised.
	Jobs int
	// MedianFactor and P90Factor are the median and the 90th percentile of the error factor
	// max(true/predicted, predicted/true) of the point estimates: the mu of a
	// prediction-assisted scheduler's bound, as measured.
	MedianFactor, P90Factor float64
	// Bias is the median of ln(true/predicted): positive when jobs ran longer than predicted.
	Bias float64
	// Coverage is the share of the jobs whose true length fell within their first [P10, P90]
	// (nominal 0.8).
	Coverage float64
}

// Accuracy returns the summary of the latest observed jobs' first estimates (see Accuracy).
// It costs a sort of at most 1,000 numbers.
func (p *Predictor) Accuracy() Accuracy {
	p.mu.RLock()
	errs := slices.Clone(p.acc.logErr)
	in := 0
	for _, c := range p.acc.covered {
		if c {
			in++
		}
	}
	p.mu.RUnlock()
	n := len(errs)
	if n == 0 {
		return Accuracy{}
	}
	a := Accuracy{Jobs: n, Coverage: float64(in) / float64(n), Bias: median(errs)}
	for i, e := range errs {
		errs[i] = math.Abs(e)
	}
	slices.Sort(errs)
	a.MedianFactor = math.Exp(sortedQuantile(errs, 0.5))
	a.P90Factor = math.Exp(sortedQuantile(errs, 0.9))
	return a
}

// sortedQuantile returns the q-quantile of the ascending, non-empty s, interpolated linearly
// between order statistics.
func sortedQuantile(s []float64, q float64) float64 {
	h := q * float64(len(s)-1)
	i := int(h)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (h-float64(i))*(s[i+1]-s[i])
}

// userBatchWeights selects, for benchmarks, the batch weighting of CalibrationUserStep's
// updates. Off: every job weighs 1 (the jobs of a batch that finish first are its short ones,
// so weights falling within a batch bias the adaptation towards narrow intervals).
const userBatchWeights = false
