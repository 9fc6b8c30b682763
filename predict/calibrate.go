package predict

import (
	"cmp"
	"math"
	"slices"

	gpusched "github.com/gpusched/gpusched"
)

// pitWindow holds the most recent probability integral transforms (PITs) of one key — a
// group, a user or all jobs — and the empirical quantiles of them that form its calibration
// map.
type pitWindow struct {
	ring   []float64 // at most limit PITs; once full, ring[next] is the oldest
	next   int
	sorted []float64 // the same PITs, ascending
	grid   [calLevels + 1]float64
	// delta is the adaptive correction of the map at each level (adaptive conformal
	// inference), for the finest key of a job.
	delta [calLevels + 1]float64
	seq   uint64 // store sequence number of the last update, for eviction
}

// add records a PIT u in (0, 1), dropping the oldest beyond limit, and updates the grid.
func (w *pitWindow) add(u float64, limit int, seq uint64) {
	w.seq = seq
	if len(w.ring) < limit {
		w.ring = append(w.ring, u)
	} else {
		old := w.ring[w.next]
		w.ring[w.next] = u
		w.next = (w.next + 1) % len(w.ring)
		i, _ := slices.BinarySearch(w.sorted, old)
		w.sorted = slices.Delete(w.sorted, i, i+1)
	}
	i, _ := slices.BinarySearch(w.sorted, u)
	w.sorted = slices.Insert(w.sorted, i, u)
	w.updateGrid()
}

// updateGrid recomputes the grid: the empirical quantiles of the PITs at the levels
// m/calLevels, with plotting positions i/(n+1) for the i-th smallest of n PITs and 0 and 1 at
// the ends, interpolated linearly. With split-conformal prediction's finite-sample
// correction, the interval between the levels a and b then holds a new exchangeable job with
// probability about b - a.
func (w *pitWindow) updateGrid() {
	s := w.sorted
	n := len(s)
	at := func(i int) float64 { // position i in 0..n+1
		switch {
		case i <= 0:
			return 0
		case i > n:
			return 1
		}
		return s[i-1]
	}
	for m := range w.grid {
		t := float64(m) * float64(n+1) / calLevels
		i := int(t)
		f := t - float64(i)
		w.grid[m] = at(i) + f*(at(i+1)-at(i))
	}
}

// calibrator keeps the PIT windows of one source of estimates (forest, group history,
// prior), per group, per user and overall, and blends them into a job's calibration map.
type calibrator struct {
	limit   int     // PITs kept per window
	prior   float64 // weight, in jobs, of the broader level when blending
	step    float64 // adaptive correction step (0: none)
	maxKeys int
	groups  map[string]*pitWindow
	users   map[string]*pitWindow
	global  pitWindow
	seq     uint64
}

func newCalibrator(limit int, prior, step float64, maxKeys int) *calibrator {
	return &calibrator{limit: limit, prior: prior, step: step, maxKeys: maxKeys,
		groups: map[string]*pitWindow{}, users: map[string]*pitWindow{}}
}

// add records the PIT u of a finished job with features f.
func (c *calibrator) add(f *gpusched.Features, u float64, scratch []float64) {
	if c.step > 0 {
		// Adaptive correction of the finest key: each level moves towards the frequency it
		// should have, by the job's miss or hit under the map it would get now.
		if w := c.finest(f); w != nil {
			e := c.grid(f, scratch)
			if e == nil {
				e = identityGrid(scratch)
			}
			for m := 1; m < calLevels; m++ {
				hit := 0.0
				if u <= e[m] {
					hit = 1
				}
				w.delta[m] = math.Max(-1, math.Min(1, w.delta[m]+c.step*(float64(m)/calLevels-hit)))
			}
		}
	}
	c.seq++
	c.global.add(u, c.limit, c.seq)
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
		w.add(u, c.limit, c.seq)
	}
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
// group's, each level weighted n/(n + prior) by its own number n of PITs (quantile functions
// averaged level by level, which keeps them monotone). It returns nil when no PIT has been
// recorded.
func (c *calibrator) grid(f *gpusched.Features, dst []float64) []float64 {
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
	if w := c.finest(f); w != nil && c.step > 0 {
		for m := range dst {
			dst[m] += w.delta[m]
		}
	}
	// Monotone, and inside the PITs' range so that every quantile is finite.
	dst[0], dst[calLevels] = 0, 1
	for m := 1; m < calLevels; m++ {
		dst[m] = math.Min(1-pitEps, math.Max(dst[m], math.Max(dst[m-1], pitEps)))
	}
	return dst
}

// finest returns the window of a job's group, else of its user, else the overall one, or nil
// when the key has no window yet.
func (c *calibrator) finest(f *gpusched.Features) *pitWindow {
	switch {
	case f.Group != "":
		return c.groups[f.Group]
	case f.User != "":
		return c.users[f.User]
	}
	return &c.global
}

// identityGrid writes the identity map into dst.
func identityGrid(dst []float64) []float64 {
	dst = dst[:calLevels+1]
	for m := range dst {
		dst[m] = float64(m) / calLevels
	}
	return dst
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
