package predict

import (
	"math"
	"slices"

	gpusched "github.com/gpusched/gpusched"
)

// Arrival features (Options.ArrivalFeatures): what a host knows about the submissions around
// a job when it arrives, added to the job's numeric extras (Features.Numeric) under these
// keys, so that they travel with its training row and are coded like any extra.
const (
	// ArrivalGroupGap is ln(1 + seconds since the previous submission of the job's group);
	// absent for the first.
	ArrivalGroupGap = "arrival:group_gap"
	// ArrivalGroupHour is the number of the group's jobs submitted in the hour before the job.
	ArrivalGroupHour = "arrival:group_hour"
	// ArrivalUserHour is the number of the user's jobs submitted in the hour before the job.
	ArrivalUserHour = "arrival:user_hour"
	// ArrivalGroupRunning is the number of the group's jobs predicted and not yet observed
	// (running or queued) when the job arrived.
	ArrivalGroupRunning = "arrival:group_running"
)

// arrivalWindow is the span, in seconds, over which ArrivalGroupHour and ArrivalUserHour count.
const arrivalWindow = 3600

// arrivalFeats are a job's arrival features (NaN: unknown).
type arrivalFeats struct {
	gap, groupHour, userHour, running float64
}

// arrivalStore keeps the recent submissions per group and user and the jobs of each group
// awaiting observation. It is not safe for concurrent use; the Predictor guards it with
// cacheMu.
type arrivalStore struct {
	maxKeys int
	groups  map[string]*arrivalRing
	users   map[string]*arrivalRing
	running map[string]int
	seq     uint64 // submissions recorded, for the rings' seq (saving by changes)
}

// arrivalRing holds one key's submission times within arrivalWindow of the latest, ascending.
type arrivalRing struct {
	times []float64
	last  float64
	seq   uint64 // the store's seq at the ring's last update
}

func newArrivalStore(maxKeys int) *arrivalStore {
	return &arrivalStore{maxKeys: maxKeys, groups: map[string]*arrivalRing{},
		users: map[string]*arrivalRing{}, running: map[string]int{}}
}

// count returns the submissions of key in (t - arrivalWindow, t) and the time of the latest
// one before t (NaN: none).
func (s *arrivalStore) count(m map[string]*arrivalRing, key string, t float64) (n int, last float64) {
	r := m[key]
	if r == nil || key == "" {
		return 0, math.NaN()
	}
	for i := len(r.times) - 1; i >= 0 && r.times[i] > t-arrivalWindow; i-- {
		if r.times[i] < t {
			n++
		}
	}
	return n, r.last
}

// features returns the arrival features of a job with features f arriving at t (finite).
func (s *arrivalStore) features(f *gpusched.Features, t float64) arrivalFeats {
	a := arrivalFeats{gap: math.NaN(), running: float64(s.running[f.Group])}
	if f.Group == "" {
		a.running = math.NaN()
	}
	gn, last := s.count(s.groups, f.Group, t)
	un, _ := s.count(s.users, f.User, t)
	a.groupHour, a.userHour = float64(gn), float64(un)
	if !math.IsNaN(last) {
		a.gap = math.Log1p(math.Max(0, t-last))
	}
	return a
}

// arrive records a job with features f submitted at t; pending tells whether it now awaits
// observation (counted in its group's running jobs).
func (s *arrivalStore) arrive(f *gpusched.Features, t float64, pending bool) {
	for _, kv := range [...]struct {
		m   map[string]*arrivalRing
		key string
	}{{s.groups, f.Group}, {s.users, f.User}} {
		if kv.key == "" {
			continue
		}
		s.seq++
		r := kv.m[kv.key]
		if r == nil {
			if len(kv.m) >= s.maxKeys {
				clear(kv.m) // rare: a fresh start costs a few hours of counts
			}
			r = &arrivalRing{last: t}
			kv.m[kv.key] = r
		}
		i := 0
		for i < len(r.times) && r.times[i] <= t-arrivalWindow {
			i++
		}
		r.times = slices.Insert(r.times[i:], firstAbove(r.times[i:], t), t)
		r.last = math.Max(r.last, t)
		r.seq = s.seq
	}
	if pending && f.Group != "" {
		if len(s.running) >= s.maxKeys {
			clear(s.running)
		}
		s.running[f.Group]++
	}
}

// done records that a job of group g that was counted as pending was observed or forgotten.
func (s *arrivalStore) done(g string) {
	if n := s.running[g]; n > 1 {
		s.running[g] = n - 1
	} else {
		delete(s.running, g)
	}
}

// withArrival returns a copy of job whose numeric extras hold a's features (unknown ones
// left out); the caller's map is not changed.
func withArrival(job *gpusched.Job, a *arrivalFeats) *gpusched.Job {
	j := *job
	m := make(map[string]float64, len(job.Features.Numeric)+4)
	for k, v := range job.Features.Numeric {
		m[k] = v
	}
	for _, kv := range [...]struct {
		k string
		v float64
	}{{ArrivalGroupGap, a.gap}, {ArrivalGroupHour, a.groupHour}, {ArrivalUserHour, a.userHour},
		{ArrivalGroupRunning, a.running}} {
		if !math.IsNaN(kv.v) {
			m[kv.k] = kv.v
		}
	}
	j.Features.Numeric = m
	return &j
}

// fitArrivals returns the arrival features of samples (indexed like samples), given their
// finish times and their order of arrival, and the store as it stands after all of them.
func fitArrivals(samples []Sample, finish []float64, byArrival []int, maxKeys int) ([]arrivalFeats, *arrivalStore) {
	s := newArrivalStore(maxKeys)
	out := make([]arrivalFeats, len(samples))
	fin := map[string][]float64{} // each group's finish times of earlier arrivals, ascending
	for _, i := range byArrival {
		f := &samples[i].Job.Features
		t := samples[i].Job.Arrival
		out[i] = s.features(f, t)
		if f.Group != "" {
			fg := fin[f.Group]
			out[i].running = float64(len(fg) - firstAbove(fg, t))
			fin[f.Group] = slices.Insert(fg, firstAbove(fg, finish[i]), finish[i])
		}
		s.arrive(f, t, false)
	}
	return out, s
}
