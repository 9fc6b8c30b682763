package predict

import (
	"cmp"
	"math"
	"slices"

	gpusched "github.com/gpusched/gpusched"
)

// History is what the predictor knew, when a job arrived, about earlier finished runs that
// resemble it: runs of the same recurrence group, of the same user, and of the same cohort
// (model family and dataset). Iteration figures are medians over the most recent runs
// (Options.HistoryRuns of them); zero means "no such run". The encoder turns it into the
// history features; the predictor computes it only from jobs observed before the job was
// first seen, so that training rows never see their own future.
//
// Deprecated: not needed by embedders (the predictor keeps its jobs' histories); removed in v0.3.0.
type History struct {
	// GroupRuns is the number of finished runs of the job's group observed so far.
	GroupRuns int
	// GroupLast is the iteration count of the group's most recently observed run.
	GroupLast float64
	// GroupMedian is the median iteration count of the group's recent runs.
	GroupMedian float64
	// GroupSamples is the median of iterations times batch size (training samples processed)
	// over the group's recent runs with a known batch size.
	GroupSamples float64
	// GroupSpread is the standard deviation of the natural log of iterations over the group's
	// recent runs (meaningful with two runs or more).
	GroupSpread float64
	// UserRuns and UserMedian describe the submitting user's observed runs.
	UserRuns   int
	UserMedian float64
	// CohortRuns, CohortMedian and CohortSamples describe observed runs of the same model
	// family and dataset.
	CohortRuns    int
	CohortMedian  float64
	CohortSamples float64
}

// runRing holds the most recent runs of one key (group, user or cohort) and their summary.
type runRing struct {
	logN  []float64 // log iterations, ring of at most cap entries
	logS  []float64 // log(iterations * batch size), NaN when the batch size is unknown
	next  int       // ring position of the next write once full
	runs  int       // runs ever added
	seq   uint64    // store sequence number of the last update, for eviction
	last  float64   // log iterations of the latest run
	med   float64   // median log iterations over the ring
	medS  float64   // median log samples over the ring (NaN: none)
	sd    float64   // standard deviation of log iterations over the ring
	limit int
	// noSummary skips the summary (the global ring only serves the prior's points).
	noSummary bool
}

func (r *runRing) add(logN, logS float64, seq uint64, scratch []float64) []float64 {
	if len(r.logN) < r.limit {
		r.logN = append(r.logN, logN)
		r.logS = append(r.logS, logS)
	} else {
		r.logN[r.next] = logN
		r.logS[r.next] = logS
		r.next = (r.next + 1) % r.limit
	}
	r.runs++
	r.seq = seq
	r.last = logN
	if r.noSummary {
		return scratch
	}
	return r.summarize(scratch)
}

// summarize recomputes the ring's median, spread and median samples; scratch is reusable
// space, returned.
func (r *runRing) summarize(scratch []float64) []float64 {
	scratch = append(scratch[:0], r.logN...)
	r.med = median(scratch)
	mean := 0.0
	for _, v := range r.logN {
		mean += v
	}
	mean /= float64(len(r.logN))
	ss := 0.0
	for _, v := range r.logN {
		ss += (v - mean) * (v - mean)
	}
	r.sd = 0
	if len(r.logN) > 1 {
		r.sd = math.Sqrt(ss / float64(len(r.logN)-1))
	}
	scratch = scratch[:0]
	for _, v := range r.logS {
		if !math.IsNaN(v) {
			scratch = append(scratch, v)
		}
	}
	r.medS = math.NaN()
	if len(scratch) > 0 {
		r.medS = median(scratch)
	}
	return scratch
}

// median returns the median of v (the mean of the two middle values for an even count),
// sorting v in place. v must not be empty.
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// historyStore keeps the recent runs per group, user and cohort, and the most recent runs
// overall (for the global prior). It is not safe for concurrent use; the Predictor guards it.
type historyStore struct {
	runs    int // runs kept per key
	maxKeys int // keys kept per map before the least recently updated are evicted
	groups  map[string]*runRing
	users   map[string]*runRing
	cohorts map[string]*runRing
	global  runRing
	seq     uint64
	scratch []float64
}

// globalRuns is the number of recent runs behind the global prior.
const globalRuns = 257

func newHistoryStore(runs, maxKeys int) *historyStore {
	return &historyStore{
		runs:    runs,
		maxKeys: maxKeys,
		groups:  map[string]*runRing{},
		users:   map[string]*runRing{},
		cohorts: map[string]*runRing{},
		global:  runRing{limit: globalRuns, noSummary: true},
	}
}

// cohortKey returns the key of a job's family and dataset, or "" when both are unknown.
func cohortKey(f *gpusched.Features) string {
	if f.Family == "" && f.Dataset == "" {
		return ""
	}
	return f.Family + "\x00" + f.Dataset
}

// logIters returns the natural log of an iteration count, counts below 1 counting as 1.
func logIters(n float64) float64 { return math.Log(math.Max(n, 1)) }

// add records a finished run with logN = log iterations.
func (s *historyStore) add(f *gpusched.Features, logN float64) {
	s.seq++
	logS := math.NaN()
	if f.BatchSize > 0 {
		logS = logN + math.Log(float64(f.BatchSize))
	}
	s.scratch = s.global.add(logN, logS, s.seq, s.scratch)
	for _, kv := range [...]struct {
		m   map[string]*runRing
		key string
	}{{s.groups, f.Group}, {s.users, f.User}, {s.cohorts, cohortKey(f)}} {
		if kv.key == "" {
			continue
		}
		r := kv.m[kv.key]
		if r == nil {
			if len(kv.m) >= s.maxKeys {
				s.evict(kv.m)
			}
			r = &runRing{limit: s.runs}
			kv.m[kv.key] = r
		}
		s.scratch = r.add(logN, logS, s.seq, s.scratch)
	}
}

// evict drops the least recently updated quarter of m's keys (at least one).
func (s *historyStore) evict(m map[string]*runRing) {
	type ks struct {
		key string
		seq uint64
	}
	all := make([]ks, 0, len(m))
	for k, r := range m {
		all = append(all, ks{k, r.seq})
	}
	slices.SortFunc(all, func(a, b ks) int { return cmp.Compare(a.seq, b.seq) })
	for _, e := range all[:max(1, len(all)/4)] {
		delete(m, e.key)
	}
}

// context returns the History of a job with features f.
func (s *historyStore) context(f *gpusched.Features) History {
	var h History
	if r := s.lookup(s.groups, f.Group); r != nil {
		h.GroupRuns = r.runs
		h.GroupLast = math.Exp(r.last)
		h.GroupMedian = math.Exp(r.med)
		h.GroupSamples = expOrZero(r.medS)
		h.GroupSpread = r.sd
	}
	if r := s.lookup(s.users, f.User); r != nil {
		h.UserRuns = r.runs
		h.UserMedian = math.Exp(r.med)
	}
	if r := s.lookup(s.cohorts, cohortKey(f)); r != nil {
		h.CohortRuns = r.runs
		h.CohortMedian = math.Exp(r.med)
		h.CohortSamples = expOrZero(r.medS)
	}
	return h
}

func (s *historyStore) lookup(m map[string]*runRing, key string) *runRing {
	if key == "" {
		return nil
	}
	return m[key]
}

// groupRuns returns a copy of the log iterations of the recent runs of group g (nil: none).
func (s *historyStore) groupRuns(g string) []float64 {
	if r := s.lookup(s.groups, g); r != nil {
		return slices.Clone(r.logN)
	}
	return nil
}

// globalRunsCopy returns a copy of the log iterations of the most recent runs overall.
func (s *historyStore) globalRunsCopy() []float64 { return slices.Clone(s.global.logN) }

func expOrZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return math.Exp(v)
}
