package predict

import (
	"cmp"
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
