package predict

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// The saved state of what the predictor learns online beside its forest, histories and
// calibration windows: the group mixture's runs and scores (Options.GroupMix), the arrival
// store (Options.ArrivalFeatures), each calibrator's own tail offsets (Options.CalibrationJobStep
// and CalibrationUserStep), the per-group accuracies (GroupAccuracy) and, per remembered job,
// its arrival features and first quantiles (Options.CalibrationAtArrival). It is the "online"
// section of a state (version onlineVersion), absent where there is nothing of it to save. A
// state written before the section existed restores with those parts empty, as it did then.

// onlineVersion is the version of the online section.
const onlineVersion = 1

// onlineJSON is the online section of a state (and, with only the entries changed since a
// base, of a delta).
type onlineJSON struct {
	Version  int                      `json:"version"`
	Mix      *mixJSON                 `json:"mix,omitempty"`
	Arrivals *arrivalsJSON            `json:"arrivals,omitempty"`
	Offsets  [numSources]*offsetsJSON `json:"offsets,omitzero"`
	Accuracy *groupAccJSON            `json:"group_accuracy,omitempty"`
}

type mixJSON struct {
	Groups map[string]mixRingJSON `json:"groups"`
	Seq    uint64                 `json:"seq"`
}

type mixRingJSON struct {
	Ring  jfList `json:"ring"` // log-iterations in ring order
	Next  int    `json:"next"`
	Seq   uint64 `json:"seq"`
	Score jf     `json:"score"`
}

type arrivalsJSON struct {
	Groups  map[string]arrivalRingJSON `json:"groups"`
	Users   map[string]arrivalRingJSON `json:"users"`
	Running map[string]int             `json:"running"` // whole, in deltas too
	Seq     uint64                     `json:"seq"`
}

type arrivalRingJSON struct {
	Times jfList `json:"times"`
	Last  jf     `json:"last"`
	Seq   uint64 `json:"seq"`
}

type offsetsJSON struct {
	Job   [2]jf                     `json:"job"`
	Users map[string]userOffsetJSON `json:"users"`
}

type userOffsetJSON struct {
	Lo  jf     `json:"lo"`
	Hi  jf     `json:"hi"`
	Seq uint64 `json:"seq"`
}

type groupAccJSON struct {
	Groups map[string]groupAccStateJSON `json:"groups"`
	Seq    uint64                       `json:"seq"`
}

type groupAccStateJSON struct {
	Jobs   int    `json:"jobs"`
	W      jf     `json:"w"`
	AbsErr jf     `json:"abs_err"`
	Err    jf     `json:"err"`
	Cov    jf     `json:"cov"`
	Seq    uint64 `json:"seq"`
}

// pendingExtraJSON is what a remembered job holds beyond its History and first estimate:
// its arrival features (gap, group hour, user hour, running; -1: unknown, so that a state
// holds no NaN here and decodes to equal values) and group when it
// is counted among its group's running jobs, and its first uncalibrated quantiles and their
// source (Options.CalibrationAtArrival).
type pendingExtraJSON struct {
	Arrival  jfList `json:"arrival,omitempty"`
	Group    string `json:"group,omitempty"`
	FirstQ   jfList `json:"first_q,omitempty"`
	FirstSrc Source `json:"first_src,omitempty"`
}

// encodePendingExtra returns what pj holds beyond its History and first estimate, nil if
// nothing.
func encodePendingExtra(pj *pendingJob) *pendingExtraJSON {
	if !pj.hasArr && pj.firstQ == nil {
		return nil
	}
	e := &pendingExtraJSON{}
	if pj.hasArr {
		a := &pj.arr
		e.Arrival = make(jfList, 4)
		for i, v := range [...]float64{a.gap, a.groupHour, a.userHour, a.running} {
			e.Arrival[i] = jf(v)
			if math.IsNaN(v) {
				e.Arrival[i] = -1
			}
		}
		e.Group = pj.group
	}
	if pj.firstQ != nil {
		e.FirstQ = make(jfList, len(pj.firstQ))
		for i, v := range pj.firstQ {
			e.FirstQ[i] = jf(v)
		}
		e.FirstSrc = pj.firstSrc
	}
	return e
}

// decode sets pj's arrival features and first quantiles from e (nil: none).
func (e *pendingExtraJSON) decode(pj *pendingJob) error {
	if e == nil {
		return nil
	}
	switch len(e.Arrival) {
	case 0:
		if e.Group != "" {
			return fmt.Errorf("group %q without arrival features", e.Group)
		}
	case 4:
		pj.hasArr, pj.group = true, e.Group
		var v [4]float64
		for i, x := range e.Arrival {
			switch {
			case x == -1:
				v[i] = math.NaN() // unknown
			case x >= 0: // +Inf too: a gap beyond float64 (arrivals far apart)
				v[i] = float64(x)
			default:
				return fmt.Errorf("arrival feature %d: %v (at least 0, or -1: unknown)", i, float64(x))
			}
		}
		pj.arr = arrivalFeats{gap: v[0], groupHour: v[1], userHour: v[2], running: v[3]}
	default:
		return fmt.Errorf("%d arrival features (4)", len(e.Arrival))
	}
	if e.FirstQ != nil {
		if len(e.FirstQ) != len(firstLevels) {
			return fmt.Errorf("%d first quantiles (%d)", len(e.FirstQ), len(firstLevels))
		}
		if e.FirstSrc < SourcePrior || e.FirstSrc > SourceForest {
			return fmt.Errorf("first quantiles' source %d", e.FirstSrc)
		}
		pj.firstQ = make([]float32, len(e.FirstQ))
		for i, v := range e.FirstQ {
			pj.firstQ[i] = float32(v)
			if math.IsNaN(float64(v)) {
				return fmt.Errorf("first quantile %d: NaN", i)
			}
		}
		pj.firstSrc = e.FirstSrc
	} else if e.FirstSrc != 0 {
		return fmt.Errorf("first quantiles' source %d without quantiles", e.FirstSrc)
	}
	return nil
}

// sameExtra tells whether two remembered jobs' extras save alike.
func sameExtra(a, b *pendingJob) bool {
	if a.hasArr != b.hasArr || a.group != b.group || len(a.firstQ) != len(b.firstQ) || (a.firstQ == nil) != (b.firstQ == nil) ||
		a.firstSrc != b.firstSrc {
		return false
	}
	if a.hasArr && !(sameBits(a.arr.gap, b.arr.gap) && sameBits(a.arr.groupHour, b.arr.groupHour) &&
		sameBits(a.arr.userHour, b.arr.userHour) && sameBits(a.arr.running, b.arr.running)) {
		return false
	}
	for i := range a.firstQ {
		if math.Float32bits(a.firstQ[i]) != math.Float32bits(b.firstQ[i]) {
			return false
		}
	}
	return true
}

// onlineLocked returns the online section of p's state but its arrival store (see
// arrivalsLocked), nil when there is nothing to save; p.mu is held. Only the entries updated
// after the seqs of since (nil: all) are included, and the arrival store is left out.
func (p *Predictor) onlineLocked(since *onlineMark) *onlineJSON {
	oj := &onlineJSON{Version: onlineVersion}
	any := false
	if s := p.mix; s != nil {
		mj := &mixJSON{Groups: map[string]mixRingJSON{}, Seq: s.seq}
		for k, r := range s.m {
			if since == nil || r.seq > since.mixSeq {
				mj.Groups[k] = mixRingJSON{Ring: jfs(r.ring), Next: r.next, Seq: r.seq, Score: jf(r.score)}
			}
		}
		oj.Mix, any = mj, true
	}
	for i, c := range p.cal {
		if c == nil || c.userStep <= 0 && c.jobStep <= 0 && c.jobOff == [2]float64{} && len(c.local) == 0 {
			continue
		}
		ofs := &offsetsJSON{Job: [2]jf{jf(c.jobOff[0]), jf(c.jobOff[1])}, Users: map[string]userOffsetJSON{}}
		for k, u := range c.local {
			if since == nil || u.seq > since.calSeq[i] {
				ofs.Users[k] = userOffsetJSON{Lo: jf(u.off[0]), Hi: jf(u.off[1]), Seq: u.seq}
			}
		}
		oj.Offsets[i], any = ofs, true
	}
	if g := &p.gacc; len(g.m) > 0 || g.seq > 0 {
		ga := &groupAccJSON{Groups: map[string]groupAccStateJSON{}, Seq: g.seq}
		for k, s := range g.m {
			if since == nil || s.seq > since.accSeq {
				ga.Groups[k] = groupAccStateJSON{Jobs: s.jobs, W: jf(s.w), AbsErr: jf(s.absErr), Err: jf(s.err), Cov: jf(s.cov), Seq: s.seq}
			}
		}
		oj.Accuracy, any = ga, true
	}
	if !any && p.arr == nil {
		return nil
	}
	return oj
}

// arrivalsLocked returns the arrival store's section (nil: ArrivalFeatures off), with only the
// rings updated after since's seq (nil: all); p.cacheMu is held.
func (p *Predictor) arrivalsLocked(since *onlineMark) *arrivalsJSON {
	s := p.arr
	if s == nil {
		return nil
	}
	aj := &arrivalsJSON{Groups: map[string]arrivalRingJSON{}, Users: map[string]arrivalRingJSON{},
		Running: make(map[string]int, len(s.running)), Seq: s.seq}
	for _, kv := range [...]struct {
		in  map[string]*arrivalRing
		out map[string]arrivalRingJSON
	}{{s.groups, aj.Groups}, {s.users, aj.Users}} {
		for k, r := range kv.in {
			if since == nil || r.seq > since.arrSeq {
				kv.out[k] = arrivalRingJSON{Times: jfs(r.times), Last: jf(r.last), Seq: r.seq}
			}
		}
	}
	for k, n := range s.running {
		aj.Running[k] = n
	}
	return aj
}

// restore sets p's online state (p.opts set, its calibrators made) from oj (nil: nothing
// saved: empty stores).
func (oj *onlineJSON) restore(p *Predictor) error {
	o := &p.opts
	p.mix = o.newMix()
	if o.ArrivalFeatures {
		p.arr = newArrivalStore(o.MaxKeys)
	}
	p.gacc = groupAccuracies{maxKeys: o.MaxKeys}
	if oj == nil {
		return nil
	}
	if oj.Version != onlineVersion {
		return fmt.Errorf("online: version %d (this package reads version %d)", oj.Version, onlineVersion)
	}
	if err := oj.restoreMix(p); err != nil {
		return fmt.Errorf("online: mix: %w", err)
	}
	if err := oj.Arrivals.restore(p); err != nil {
		return fmt.Errorf("online: arrivals: %w", err)
	}
	for i, ofs := range oj.Offsets {
		if ofs == nil {
			continue
		}
		c := p.cal[i]
		if c == nil {
			return fmt.Errorf("online: offsets[%d]: present without calibration", i)
		}
		if err := ofs.restore(c); err != nil {
			return fmt.Errorf("online: offsets[%d]: %w", i, err)
		}
	}
	if err := oj.Accuracy.restore(&p.gacc); err != nil {
		return fmt.Errorf("online: group_accuracy: %w", err)
	}
	return nil
}

func (oj *onlineJSON) restoreMix(p *Predictor) error {
	mj := oj.Mix
	if mj == nil {
		return nil
	}
	s := p.mix
	if s == nil {
		return errors.New("present with GroupMix 0")
	}
	s.seq = mj.Seq
	if len(mj.Groups) > s.maxKeys {
		return fmt.Errorf("%d groups, more than Options.MaxKeys %d", len(mj.Groups), s.maxKeys)
	}
	for k, rj := range mj.Groups {
		n := len(rj.Ring)
		switch {
		case k == "":
			return errors.New("empty group")
		case n == 0 || n > s.limit:
			return fmt.Errorf("group %q: %d runs (1 to Options.GroupMixRuns %d)", k, n, s.limit)
		case rj.Next < 0 || rj.Next >= n || n < s.limit && rj.Next != 0:
			return fmt.Errorf("group %q: next %d invalid for %d of %d runs", k, rj.Next, n, s.limit)
		case rj.Seq > mj.Seq:
			return fmt.Errorf("group %q: seq %d after the store's %d", k, rj.Seq, mj.Seq)
		case !(math.Abs(float64(rj.Score)) <= mixScoreCap):
			return fmt.Errorf("group %q: score %v outside [-%v, %v]", k, float64(rj.Score), mixScoreCap, mixScoreCap)
		}
		r := &sampleRing{ring: floats(rj.Ring), next: rj.Next, seq: rj.Seq, score: float64(rj.Score)}
		for i, v := range r.ring {
			if !finite(v) {
				return fmt.Errorf("group %q: run %d: %v", k, i, v)
			}
		}
		r.sorted = slices.Sorted(slices.Values(r.ring))
		s.m[k] = r
	}
	return nil
}

func (aj *arrivalsJSON) restore(p *Predictor) error {
	if aj == nil {
		return nil
	}
	s := p.arr
	if s == nil {
		return errors.New("present without ArrivalFeatures")
	}
	s.seq = aj.Seq
	for _, kv := range [...]struct {
		name string
		in   map[string]arrivalRingJSON
		out  map[string]*arrivalRing
	}{{"groups", aj.Groups, s.groups}, {"users", aj.Users, s.users}} {
		if len(kv.in) > s.maxKeys {
			return fmt.Errorf("%s: %d keys, more than Options.MaxKeys %d", kv.name, len(kv.in), s.maxKeys)
		}
		for k, rj := range kv.in {
			r := &arrivalRing{times: floats(rj.Times), last: float64(rj.Last), seq: rj.Seq}
			switch {
			case k == "":
				return fmt.Errorf("%s: empty key", kv.name)
			case !finite(r.last):
				return fmt.Errorf("%s[%q]: last %v", kv.name, k, r.last)
			case rj.Seq > aj.Seq:
				return fmt.Errorf("%s[%q]: seq %d after the store's %d", kv.name, k, rj.Seq, aj.Seq)
			}
			for i, t := range r.times {
				if !finite(t) || i > 0 && t < r.times[i-1] || t > r.last {
					return fmt.Errorf("%s[%q]: time %d: %v not finite, ascending and at most the last %v", kv.name, k, i, t, r.last)
				}
			}
			kv.out[k] = r
		}
	}
	if len(aj.Running) > s.maxKeys {
		return fmt.Errorf("running: %d groups, more than Options.MaxKeys %d", len(aj.Running), s.maxKeys)
	}
	for k, n := range aj.Running {
		if k == "" || n <= 0 {
			return fmt.Errorf("running[%q]: %d", k, n)
		}
		s.running[k] = n
	}
	return nil
}

func (ofs *offsetsJSON) restore(c *calibrator) error {
	for i, v := range ofs.Job {
		if !(math.Abs(float64(v)) <= 0.5) {
			return fmt.Errorf("job offset %d: %v outside [-0.5, 0.5]", i, float64(v))
		}
		c.jobOff[i] = float64(v)
	}
	if len(ofs.Users) > c.maxKeys {
		return fmt.Errorf("users: %d, more than Options.MaxKeys %d", len(ofs.Users), c.maxKeys)
	}
	for k, u := range ofs.Users {
		if k == "" || !(math.Abs(float64(u.Lo)) <= c.userBound && math.Abs(float64(u.Hi)) <= c.userBound) || u.Seq > c.seq {
			return fmt.Errorf("users[%q]: offsets %v, %v (in [-%v, %v]) at seq %d (calibrator's %d)", k, float64(u.Lo), float64(u.Hi),
				c.userBound, c.userBound, u.Seq, c.seq)
		}
		if c.local == nil {
			c.local = make(map[string]*userOffsets, len(ofs.Users))
		}
		c.local[k] = &userOffsets{off: [2]float64{float64(u.Lo), float64(u.Hi)}, seq: u.Seq}
	}
	return nil
}

func (ga *groupAccJSON) restore(g *groupAccuracies) error {
	if ga == nil {
		return nil
	}
	g.seq = ga.Seq
	if len(ga.Groups) > max(g.maxKeys, 1) {
		return fmt.Errorf("%d groups, more than Options.MaxKeys %d", len(ga.Groups), g.maxKeys)
	}
	for k, sj := range ga.Groups {
		s := &groupAccState{jobs: sj.Jobs, w: float64(sj.W), absErr: float64(sj.AbsErr), err: float64(sj.Err), cov: float64(sj.Cov), seq: sj.Seq}
		if k == "" || s.jobs <= 0 || !(s.w > 0 && s.w <= float64(s.jobs)) || !finite(s.absErr) || s.absErr < 0 || !finite(s.err) ||
			!(s.cov >= 0 && s.cov <= s.w) || s.seq > g.seq {
			return fmt.Errorf("groups[%q]: %d jobs, weight %v, errors %v, %v, coverage %v, seq %d (store's %d)",
				k, s.jobs, s.w, s.absErr, s.err, s.cov, s.seq, g.seq)
		}
		if g.m == nil {
			g.m = make(map[string]*groupAccState, len(ga.Groups))
		}
		g.m[k] = s
	}
	return nil
}

// onlineMark is what a base held of the online state, for deltas: the seqs up to which its
// entries were included and the keys it held (those missing later were evicted).
type onlineMark struct {
	mixSeq uint64
	mix    map[string]struct{}
	arrSeq uint64
	arr    [2]map[string]struct{}
	calSeq [numSources]uint64
	off    [numSources]map[string]struct{}
	accSeq uint64
	acc    map[string]struct{}
}

// onlineMarkLocked returns the mark of p's online state but the arrival store
// (markArrivalsLocked); p.mu is held.
func (p *Predictor) onlineMarkLocked() *onlineMark {
	mk := &onlineMark{}
	if p.mix != nil {
		mk.mixSeq, mk.mix = p.mix.seq, keySet(p.mix.m)
	}
	for i, c := range p.cal {
		if c != nil {
			mk.calSeq[i], mk.off[i] = c.seq, keySet(c.local)
		}
	}
	mk.accSeq, mk.acc = p.gacc.seq, keySet(p.gacc.m)
	return mk
}

// markArrivalsLocked adds the arrival store to mk; p.cacheMu is held.
func (p *Predictor) markArrivalsLocked(mk *onlineMark) {
	if p.arr != nil {
		mk.arrSeq = p.arr.seq
		mk.arr = [2]map[string]struct{}{keySet(p.arr.groups), keySet(p.arr.users)}
	}
}

// onlineMarkOf returns the mark of a state's online section (nil: an empty one).
func onlineMarkOf(oj *onlineJSON, calSeq [numSources]uint64) *onlineMark {
	mk := &onlineMark{calSeq: calSeq}
	if oj == nil {
		return mk
	}
	if oj.Mix != nil {
		mk.mixSeq, mk.mix = oj.Mix.Seq, keySet(oj.Mix.Groups)
	}
	if a := oj.Arrivals; a != nil {
		mk.arrSeq, mk.arr = a.Seq, [2]map[string]struct{}{keySet(a.Groups), keySet(a.Users)}
	}
	for i, ofs := range oj.Offsets {
		if ofs != nil {
			mk.off[i] = keySet(ofs.Users)
		}
	}
	if oj.Accuracy != nil {
		mk.accSeq, mk.acc = oj.Accuracy.Seq, keySet(oj.Accuracy.Groups)
	}
	return mk
}

// onlineDelta is the online section's changes since a base: the entries updated since (and
// the scalars, and the running counts whole) in Changed, the keys evicted since in Removed.
type onlineDelta struct {
	Changed onlineJSON    `json:"changed"`
	Removed onlineRemoved `json:"removed"`
}

type onlineRemoved struct {
	Mix      []string             `json:"mix,omitempty"`
	Arrivals [2][]string          `json:"arrivals,omitzero"`
	Offsets  [numSources][]string `json:"offsets,omitzero"`
	Accuracy []string             `json:"group_accuracy,omitempty"`
}

// removed returns the keys of was missing from now, sorted.
func removed[V any](was map[string]struct{}, now map[string]V) []string {
	var out []string
	for k := range was {
		if _, ok := now[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// onlineDeltaLocked returns the online section's changes since mk (nil: nothing to save);
// p.mu and p.cacheMu are held.
func (p *Predictor) onlineDeltaLocked(mk *onlineMark) *onlineDelta {
	oj := p.onlineLocked(mk)
	if oj == nil {
		return nil
	}
	oj.Arrivals = p.arrivalsLocked(mk)
	d := &onlineDelta{Changed: *oj}
	if p.mix != nil {
		d.Removed.Mix = removed(mk.mix, p.mix.m)
	}
	if p.arr != nil {
		d.Removed.Arrivals = [2][]string{removed(mk.arr[0], p.arr.groups), removed(mk.arr[1], p.arr.users)}
	}
	for i, c := range p.cal {
		if c != nil {
			d.Removed.Offsets[i] = removed(mk.off[i], c.local)
		}
	}
	d.Removed.Accuracy = removed(mk.acc, p.gacc.m)
	return d
}

// apply changes a base's online section (*oj, nil when it had none) into the one the delta
// describes.
func (d *onlineDelta) apply(oj **onlineJSON) error {
	c := &d.Changed
	if c.Version != onlineVersion {
		return fmt.Errorf("online: version %d (this package reads version %d)", c.Version, onlineVersion)
	}
	if *oj == nil {
		*oj = &onlineJSON{Version: onlineVersion}
	}
	b := *oj
	if b.Version != onlineVersion {
		return fmt.Errorf("online: the base's version %d (this package reads version %d)", b.Version, onlineVersion)
	}
	if c.Mix != nil {
		if b.Mix == nil {
			b.Mix = &mixJSON{Groups: map[string]mixRingJSON{}}
		}
		mergeKeyed(&b.Mix.Groups, c.Mix.Groups, d.Removed.Mix)
		b.Mix.Seq = c.Mix.Seq
	}
	if c.Arrivals != nil {
		if b.Arrivals == nil {
			b.Arrivals = &arrivalsJSON{}
		}
		mergeKeyed(&b.Arrivals.Groups, c.Arrivals.Groups, d.Removed.Arrivals[0])
		mergeKeyed(&b.Arrivals.Users, c.Arrivals.Users, d.Removed.Arrivals[1])
		b.Arrivals.Running, b.Arrivals.Seq = c.Arrivals.Running, c.Arrivals.Seq
	}
	for i, ofs := range c.Offsets {
		if ofs == nil {
			continue
		}
		if b.Offsets[i] == nil {
			b.Offsets[i] = &offsetsJSON{}
		}
		mergeKeyed(&b.Offsets[i].Users, ofs.Users, d.Removed.Offsets[i])
		b.Offsets[i].Job = ofs.Job
	}
	if c.Accuracy != nil {
		if b.Accuracy == nil {
			b.Accuracy = &groupAccJSON{}
		}
		mergeKeyed(&b.Accuracy.Groups, c.Accuracy.Groups, d.Removed.Accuracy)
		b.Accuracy.Seq = c.Accuracy.Seq
	}
	return nil
}

// mergeKeyed deletes the keys gone from *m and sets those of changed.
func mergeKeyed[V any](m *map[string]V, changed map[string]V, gone []string) {
	if *m == nil {
		*m = make(map[string]V, len(changed))
	}
	for _, k := range gone {
		delete(*m, k)
	}
	for k, v := range changed {
		(*m)[k] = v
	}
}
