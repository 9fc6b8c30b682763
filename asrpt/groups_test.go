package asrpt

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gpusched/gpusched"
	"pgregory.net/rapid"
)

// kmReference is the product-limit estimate computed straight from its definition: at each
// distinct exact length u, S drops by the factor 1 - d(u)/n(u), with d(u) the exact lengths
// equal to u and n(u) the observations (exact or censored) of at least u. It returns the mass
// at each exact length above done and the survival beyond the largest observation, placed at
// twice the largest of it and done, normalised: what kaplanMeier must return.
func kmReference(obs []observation, done float64) (x, p []float64) {
	var us []float64
	top := done
	for _, o := range obs {
		top = math.Max(top, o.n)
		if o.exact && !slices.Contains(us, o.n) {
			us = append(us, o.n)
		}
	}
	slices.Sort(us)
	surv := 1.0
	for _, u := range us {
		n, d := 0, 0
		for _, o := range obs {
			if o.n >= u {
				n++
			}
			if o.exact && o.n == u {
				d++
			}
		}
		next := surv * (1 - float64(d)/float64(n))
		if u > done {
			x, p = append(x, u), append(p, surv-next)
		}
		surv = next
	}
	if surv > 1e-12 {
		x, p = append(x, 2*top), append(p, surv)
	}
	sum := 0.0
	for _, v := range p {
		sum += v
	}
	for i := range p {
		p[i] /= sum
	}
	return x, p
}

func TestKaplanMeierExample(t *testing.T) {
	// Exact 10 and 20, censored at 15: S drops to 2/3 at 10 (3 at risk) and to 0 at 20 (1 at
	// risk), so the masses are 1/3 at 10 and 2/3 at 20.
	d := kaplanMeier([]observation{{20, true}, {15, false}, {10, true}}, 0, 0)
	if d == nil || !slices.Equal(d.x, []float64{10, 20}) || math.Abs(d.cdf[0]-1.0/3) > 1e-12 || d.cdf[1] != 1 {
		t.Fatalf("got %+v, want x [10 20], cdf [1/3 1]", d)
	}
	if q := d.Quantile(0.5); q != 20 {
		t.Errorf("median %v, want 20", q)
	}
	// All censored: nothing is known but that the length exceeds the largest, 40.
	d = kaplanMeier([]observation{{40, false}, {15, false}}, 0, 0)
	if d == nil || !slices.Equal(d.x, []float64{80}) {
		t.Fatalf("all censored: got %+v, want all mass at 80", d)
	}
	// Conditioned on having done 25: only the mass above 25 is left.
	d = kaplanMeier([]observation{{20, true}, {15, false}, {10, true}, {30, true}, {50, false}}, 25, 0)
	if d == nil || d.x[0] != 30 || d.x[len(d.x)-1] != 100 {
		t.Fatalf("conditioned on 25: got %+v, want mass at 30 and the rest at 100", d)
	}
}

// kaplanMeier agrees with the definition on random samples with ties, censoring and any done.
func TestKaplanMeierMatchesDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		obs := make([]observation, n)
		for i := range obs {
			obs[i] = observation{float64(rapid.IntRange(1, 12).Draw(t, "n")), rapid.Bool().Draw(t, "exact")}
		}
		done := float64(rapid.IntRange(0, 14).Draw(t, "done"))
		wx, wp := kmReference(slices.Clone(obs), done)
		d := kaplanMeier(obs, done, 0)
		if len(wx) == 0 {
			if d != nil {
				t.Fatalf("got %+v, want nil", d)
			}
			return
		}
		if d == nil || !slices.Equal(d.x, wx) {
			t.Fatalf("values %v, want %v", d, wx)
		}
		acc := 0.0
		for i, p := range wp {
			acc += p
			if math.Abs(d.cdf[i]-acc) > 1e-9 {
				t.Fatalf("cdf %v, want cumulative of %v", d.cdf, wp)
			}
		}
	})
}

// One-off jobs each make a group: the books of groups without live jobs are forgotten beyond
// the groupBooks most recently used, so memory does not grow with the jobs seen.
func TestGroupBooksAreBounded(t *testing.T) {
	c := oneServer(1)
	s := mustNew(t, Options{Estimator: Oracle(func(gpusched.JobID) (float64, bool) { return 10, true })})
	n := 2*groupBooks + 500
	for i := range n {
		j := &gpusched.Job{ID: gpusched.JobID(fmt.Sprint("j", i)), GPUs: 1, StepTime: 1, Arrival: float64(i)}
		j.Features.Group = fmt.Sprint("once-", i)
		if _, err := s.Schedule(gpusched.View{Now: float64(i), Cluster: c, Pending: []gpusched.JobStatus{{Job: j}}}); err != nil {
			t.Fatal(err)
		}
		s.JobCompleted(gpusched.Completion{Job: j, Time: float64(i) + 0.5, Iterations: 10})
	}
	if len(s.groups) > 2*groupBooks {
		t.Errorf("%d group books after %d one-off groups, want at most %d", len(s.groups), n, 2*groupBooks)
	}
	if len(s.groups) < groupBooks {
		t.Errorf("%d group books: the %d most recently used should be kept", len(s.groups), groupBooks)
	}
}

// kmSortedOnePass is kmSorted as it was before kmCurve: one pass over every observation per
// call, with done and tail applied inside the pass. The shared curve must give the same bits.
func kmSortedOnePass(obs []observation, done, tail float64) *kmDist {
	d := &kmDist{}
	surv, atRisk := 1.0, float64(len(obs))
	top := done
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
			if n > done {
				d.x = append(d.x, n)
				d.cdf = append(d.cdf, mass)
			}
		}
		atRisk -= total
	}
	if surv > 1e-12 {
		d.x = append(d.x, max(2*top, tail))
		d.cdf = append(d.cdf, surv)
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

// kmCurves conditioned in turn on many lengths done and tails, into reused buffers (as the
// group refresh does for the live jobs of one group after another), give bit for bit what the
// one-pass estimate gives for each, with its Gittins rank; done is drawn at, between, below and
// above the observed lengths, so that the suffix of events it keeps is taken at every boundary,
// and groups with and without a tail follow each other in the same buffers.
func TestKMCurveMatchesOnePass(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var c kmCurve
		var d kmDist
		for range rapid.IntRange(1, 3).Draw(t, "groups") {
			n := rapid.IntRange(0, 40).Draw(t, "n")
			obs := make([]observation, n)
			for i := range obs {
				obs[i] = observation{float64(rapid.IntRange(1, 12).Draw(t, "len")) * rapid.SampledFrom([]float64{1, 0.7, 1.3}).Draw(t, "scale"), rapid.Bool().Draw(t, "exact")}
			}
			sortObservations(obs)
			c.fill(obs)
			for range rapid.IntRange(1, 8).Draw(t, "jobs") {
				done := float64(rapid.IntRange(0, 28).Draw(t, "done")) / 2
				tail := float64(rapid.IntRange(0, 40).Draw(t, "tail"))
				want := kmSortedOnePass(obs, done, tail)
				got := c.at(&d, done, tail)
				if (got == nil) != (want == nil) {
					t.Fatalf("done %v tail %v: got %+v, want %+v", done, tail, got, want)
				}
				if want == nil {
					continue
				}
				if !slices.Equal(got.x, want.x) || !slices.Equal(got.cdf, want.cdf) || got.tail != want.tail {
					t.Fatalf("done %v tail %v: got %+v, want %+v", done, tail, got, want)
				}
				gu, gr, gok := got.rank(done, 1.5)
				wu, wr, wok := want.rank(done, 1.5)
				if gu != wu || gr != wr || gok != wok {
					t.Fatalf("done %v: rank (%v, %v, %v), want (%v, %v, %v)", done, gu, gr, gok, wu, wr, wok)
				}
			}
		}
	})
}

// kmDist.gittins (one walk up the probabilities) is GittinsRank through Quantile (a binary
// search per atom) bit for bit: on the estimates the group fallback builds, and on
// distributions whose cumulative probabilities fall exactly on the atoms' (j/80), where a walk
// that stops at the first probability above an atom's, not at or above it, reads the wrong atom.
func TestKMGittinsMatchesGittinsRank(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var d *kmDist
		done := float64(rapid.IntRange(0, 20).Draw(t, "done")) / 2
		if rapid.Bool().Draw(t, "grid") {
			n := rapid.IntRange(1, 30).Draw(t, "n")
			d = &kmDist{}
			j, x := 0, done
			for i := range n {
				x += float64(rapid.IntRange(0, 3).Draw(t, "step"))
				j += rapid.IntRange(1, 6).Draw(t, "mass")
				if i == n-1 || j >= 80 {
					d.x, d.cdf = append(d.x, x), append(d.cdf, 1)
					break
				}
				d.x, d.cdf = append(d.x, x), append(d.cdf, float64(j)/80)
			}
		} else {
			obs := make([]observation, rapid.IntRange(1, 40).Draw(t, "obs"))
			for i := range obs {
				obs[i] = observation{float64(rapid.IntRange(1, 12).Draw(t, "len")), rapid.Bool().Draw(t, "exact")}
			}
			if d = kaplanMeier(obs, done, float64(rapid.IntRange(0, 30).Draw(t, "tail"))); d == nil {
				return
			}
		}
		gr, gu, gok := d.gittins(done)
		wr, wu, wok := GittinsRank(d, done)
		if gr != wr || gu != wu || gok != wok {
			t.Fatalf("%+v done %v: (%v, %v, %v), want (%v, %v, %v)", d, done, gr, gu, gok, wr, wu, wok)
		}
	})
}
