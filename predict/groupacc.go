package predict

import (
	"cmp"
	"math"
	"slices"
)

// GroupAccuracy is how well a group's recent jobs were predicted, measured online from the
// jobs of the group that finished: each finished job with a remembered first estimate (see
// Outcome.Known) counts, the older ones less and less (each new job weighs as much as the
// jobs before it decayed by a factor 1 - 1/20: about the last 20 count). A scheduler can lean
// towards a prediction-free order for a group whose estimates have been poor, e.g. when
// exp(LogError) is large or Coverage far below 0.8 (see the package documentation, "When to
// trust it").
type GroupAccuracy struct {
	// Jobs is the number of the group's finished jobs measured (all of them, not only the
	// recent ones that dominate the averages).
	Jobs int
	// Weight is the effective number of jobs behind the averages, at most about 20: small
	// values mean little evidence.
	Weight float64
	// LogError is the weighted mean of |ln(true / predicted)| of the first point estimates:
	// exp(LogError) is the typical error factor (the mu of a prediction-assisted bound).
	LogError float64
	// Bias is the weighted mean of ln(true / predicted): positive when the group's jobs ran
	// longer than predicted.
	Bias float64
	// Coverage is the weighted share of the jobs whose length fell within their first
	// [P10, P90] (nominal 0.8).
	Coverage float64
}

// groupAccDecay is the factor by which earlier jobs' weight decays at each finished job of the
// group.
const groupAccDecay = 1 - 1.0/20

// groupAccState is one group's running sums.
type groupAccState struct {
	jobs                int
	w, absErr, err, cov float64
	seq                 uint64
}

// groupAccuracies keeps the GroupAccuracy of every group (bounded by maxKeys, the least
// recently updated quarter dropped beyond it). Guarded by the Predictor's mu.
type groupAccuracies struct {
	maxKeys int
	m       map[string]*groupAccState
	seq     uint64
}

func (g *groupAccuracies) add(group string, logErr float64, covered bool) {
	if group == "" || math.IsNaN(logErr) || math.IsInf(logErr, 0) {
		return
	}
	if g.m == nil {
		g.m = map[string]*groupAccState{}
	}
	g.seq++
	s := g.m[group]
	if s == nil {
		if limit := cmp.Or(g.maxKeys, 1<<18); len(g.m) >= limit && len(g.m) > 0 {
			type ks struct {
				key string
				seq uint64
			}
			all := make([]ks, 0, len(g.m))
			for k, v := range g.m {
				all = append(all, ks{k, v.seq})
			}
			slices.SortFunc(all, func(a, b ks) int { return cmp.Compare(a.seq, b.seq) })
			for _, e := range all[:max(1, len(all)/4)] {
				delete(g.m, e.key)
			}
		}
		s = &groupAccState{}
		g.m[group] = s
	}
	c := 0.0
	if covered {
		c = 1
	}
	s.jobs++
	s.seq = g.seq
	s.w = groupAccDecay*s.w + 1
	s.absErr = groupAccDecay*s.absErr + math.Abs(logErr)
	s.err = groupAccDecay*s.err + logErr
	s.cov = groupAccDecay*s.cov + c
}

func (g *groupAccuracies) get(group string) (GroupAccuracy, bool) {
	s := g.m[group]
	if s == nil || s.w == 0 {
		return GroupAccuracy{}, false
	}
	return GroupAccuracy{Jobs: s.jobs, Weight: s.w, LogError: s.absErr / s.w, Bias: s.err / s.w, Coverage: s.cov / s.w}, true
}

// GroupAccuracy returns how well the recent jobs of group (Features.Group) were predicted,
// measured from those that finished (see GroupAccuracy); false when none of the group's
// finished jobs had a remembered estimate. It is a map lookup. The figures are part of the
// saved state (see Save).
func (p *Predictor) GroupAccuracy(group string) (GroupAccuracy, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.gacc.get(group)
}
