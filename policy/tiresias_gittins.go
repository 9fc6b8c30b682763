package policy

import (
	"math"
	"slices"
	"sort"

	"github.com/gpusched/gpusched"
)

// gittins is the job-size distribution Tiresias' 2D-Gittins order is computed from: the
// service (in the unit of TiresiasOptions.Service) that finished jobs received, as a sorted
// sample with prefix sums, learned as jobs finish.
type gittins struct {
	delta  float64   // the quantum Δ of the index, in service units
	sample []float64 // ascending
	prefix []float64 // prefix[i] = sum of sample[:i]
	added  []float64 // finished jobs' service not yet merged into sample
}

// add records a finished job's service.
func (g *gittins) add(s float64) {
	if s > 0 && !math.IsInf(s, 1) {
		g.added = append(g.added, s)
	}
}

// merge folds the newly finished jobs into the sorted sample: O(n) per call that has any.
func (g *gittins) merge() {
	if len(g.added) == 0 {
		return
	}
	slices.Sort(g.added)
	merged := make([]float64, 0, len(g.sample)+len(g.added))
	i, j := 0, 0
	for i < len(g.sample) || j < len(g.added) {
		if j == len(g.added) || (i < len(g.sample) && g.sample[i] <= g.added[j]) {
			merged = append(merged, g.sample[i])
			i++
		} else {
			merged = append(merged, g.added[j])
			j++
		}
	}
	g.sample, g.added = merged, g.added[:0]
	g.prefix = make([]float64, len(g.sample)+1)
	for k, s := range g.sample {
		g.prefix[k+1] = g.prefix[k] + s
	}
}

// index returns the Gittins index of a job that has received service a, for the fixed
// quantum Δ (Gittins, "Multi-armed bandit allocation indices"; Tiresias, NSDI'19, §4.2):
//
//	G(a) = P(S - a <= Δ | S > a) / E[min(S - a, Δ) | S > a]
//
// over the sample of finished jobs' service S: the chance that the job finishes within the
// next quantum per unit of service that quantum is expected to cost. A job past every
// sample, or any job before a job has finished, has index 0.
func (g *gittins) index(a float64) float64 {
	n := len(g.sample)
	lo := sort.Search(n, func(i int) bool { return g.sample[i] > a }) // alive at a
	if lo == n {
		return 0
	}
	hi := sort.Search(n, func(i int) bool { return g.sample[i] > a+g.delta }) // alive after Δ more
	alive := float64(n - lo)
	p := float64(hi-lo) / alive
	e := (g.prefix[hi] - g.prefix[lo] - a*float64(hi-lo) + g.delta*float64(n-hi)) / alive
	if !(e > 0) {
		return 0
	}
	return p / e
}

// JobCompleted records a finished job's service in the distribution of Tiresias' 2D-Gittins
// order (TiresiasOptions.Gittins): GPUs x run time (run time alone on PlainTime), the run time
// being the job's iterations times its observed time per iteration, or else the service
// Tiresias last saw it with. Other orders ignore it.
func (t *tiresiasPolicy) JobCompleted(c gpusched.Completion) {
	if !observed(t.ready, c) {
		return
	}
	if t.gittins == nil || c.Job == nil {
		return
	}
	run := c.Iterations * c.StepTime
	if !(run > 0) {
		if s := t.jobs[c.Job.ID]; s != nil {
			run = s.exec
		}
	}
	t.gittins.add(run * t.rate(c.Job))
}
