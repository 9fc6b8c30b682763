package queues

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// QueueFeature is the categorical feature (Job.Features.Categorical) that names a job's queue.
const QueueFeature = "gpusched.io/queue"

// Queue is one team's queue.
type Queue struct {
	// Name names the queue.
	Name string `json:"name"`
	// Namespaces are the namespaces whose jobs go to this queue unless they name another.
	Namespaces []string `json:"namespaces,omitempty"`
	// GuaranteedGPUs is the GPUs the queue gets whenever its jobs want them, by preempting
	// borrowers if need be.
	GuaranteedGPUs int `json:"guaranteedGPUs,omitempty"`
	// Weight is the queue's weight in the split of the GPUs beyond the guarantees. Default 1.
	Weight float64 `json:"weight,omitempty"`
	// NoBorrowing keeps the queue within its guarantee.
	NoBorrowing bool `json:"noBorrowing,omitempty"`
}

// Config lists the queues.
type Config struct {
	Queues []Queue `json:"queues"`
	// Default is the queue of jobs that name none and whose namespace no queue lists. It must
	// be one of Queues, or empty: then such jobs share a queue "default" with weight 1 and no
	// guarantee.
	Default string `json:"default,omitempty"`
}

// ErrConfig reports a queue configuration that cannot be used.
var ErrConfig = errors.New("queues: bad configuration")

// Validate checks the configuration: named, distinct queues, guarantees and weights >= 0, no
// namespace in two queues, a default that exists.
func (c Config) Validate() error {
	if len(c.Queues) == 0 {
		return fmt.Errorf("%w: no queue", ErrConfig)
	}
	seen, ns := map[string]bool{}, map[string]string{}
	for i, q := range c.Queues {
		switch {
		case q.Name == "":
			return fmt.Errorf("%w: queue %d has no name", ErrConfig, i)
		case seen[q.Name]:
			return fmt.Errorf("%w: queue %q listed twice", ErrConfig, q.Name)
		case q.GuaranteedGPUs < 0:
			return fmt.Errorf("%w: queue %q: guaranteed GPUs %d < 0", ErrConfig, q.Name, q.GuaranteedGPUs)
		case q.Weight < 0 || math.IsNaN(q.Weight) || math.IsInf(q.Weight, 0):
			return fmt.Errorf("%w: queue %q: weight %v", ErrConfig, q.Name, q.Weight)
		}
		seen[q.Name] = true
		for _, n := range q.Namespaces {
			if other, ok := ns[n]; ok {
				return fmt.Errorf("%w: namespace %q in queues %q and %q", ErrConfig, n, other, q.Name)
			}
			ns[n] = q.Name
		}
	}
	if c.Default != "" && !seen[c.Default] {
		return fmt.Errorf("%w: default queue %q is not listed", ErrConfig, c.Default)
	}
	return nil
}

// Shares splits total GPUs between queues by water-filling: each queue gets its demand up to
// its guarantee (guarantees beyond total are cut in the order of cfg), then the rest goes to
// the queues whose demand is not met in proportion to their weights, each capped at its demand
// (at its guarantee with NoBorrowing). Queues absent from cfg (and the implicit "default")
// have weight 1 and no guarantee. Shares are whole GPUs; the sum never exceeds total.
func Shares(cfg Config, demand map[string]int, total int) map[string]int {
	type qs struct {
		name       string
		want, have int
		cap        int
		base       int // the guarantee it got
		w          float64
	}
	var qsl []*qs
	byName := map[string]*qs{}
	add := func(name string, g int, w float64, noBorrow bool) {
		if _, ok := byName[name]; ok {
			return
		}
		if w <= 0 {
			w = 1
		}
		q := &qs{name: name, want: demand[name], w: w, base: min(demand[name], g)}
		q.cap = q.want
		if noBorrow {
			q.cap = min(q.want, g)
		}
		q.have = min(q.want, g)
		byName[name] = q
		qsl = append(qsl, q)
	}
	for _, q := range cfg.Queues {
		add(q.Name, q.GuaranteedGPUs, q.Weight, q.NoBorrowing)
	}
	var extra []string
	for name := range demand {
		if _, ok := byName[name]; !ok {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		add(name, 0, 1, false)
	}
	left := total
	for _, q := range qsl {
		q.have = min(q.have, max(left, 0))
		q.base = q.have
		left -= q.have
	}
	// Split the rest by weight, a GPU at a time to the queue whose GPUs beyond its guarantee
	// are fewest for its weight (ties: the order of cfg), so that the split is exact in whole
	// GPUs.
	for left > 0 {
		var best *qs
		for _, q := range qsl {
			if q.have >= q.cap {
				continue
			}
			if best == nil || float64(q.have-q.base)/q.w < float64(best.have-best.base)/best.w {
				best = q
			}
		}
		if best == nil {
			break
		}
		best.have++
		left--
	}
	out := make(map[string]int, len(qsl))
	for _, q := range qsl {
		out[q.name] = q.have
	}
	return out
}

// Wrap returns inner behind the queues of cfg (see the package documentation).
func Wrap(inner gpusched.Scheduler, cfg Config) (gpusched.Scheduler, error) {
	if inner == nil {
		return nil, fmt.Errorf("%w: no scheduler to wrap", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &wrapper{inner: inner, cfg: cfg, ns: map[string]string{}, guar: map[string]int{}}
	for _, q := range cfg.Queues {
		w.guar[q.Name] = q.GuaranteedGPUs
		for _, n := range q.Namespaces {
			w.ns[n] = q.Name
		}
	}
	w.def = cfg.Default
	if w.def == "" {
		w.def = "default"
	}
	return w, nil
}

type wrapper struct {
	inner gpusched.Scheduler
	cfg   Config
	ns    map[string]string
	guar  map[string]int
	def   string
}

// QueueOf returns the queue of a job under cfg's rules (the package documentation).
func (w *wrapper) queueOf(j *gpusched.Job) string {
	if q := j.Features.Categorical[QueueFeature]; q != "" {
		return q
	}
	id := string(j.ID)
	if i := strings.IndexByte(id, '/'); i >= 0 {
		rest := id[i+1:]
		if k := strings.IndexByte(rest, '/'); k >= 0 {
			if q, ok := w.ns[rest[:k]]; ok {
				return q
			}
		}
	}
	return w.def
}

// Schedule applies the queues' shares around the inner scheduler's decision.
func (w *wrapper) Schedule(v gpusched.View) (gpusched.Decision, error) {
	total := v.Cluster.NumGPUs() - v.Unavailable.Len()
	demand, running := map[string]int{}, map[string]int{}
	for i := range v.Running {
		q := w.queueOf(v.Running[i].Job)
		demand[q] += len(v.Running[i].GPUs)
		running[q] += len(v.Running[i].GPUs)
	}
	for i := range v.Pending {
		demand[w.queueOf(v.Pending[i].Job)] += v.Pending[i].Job.GPUs
	}
	share := Shares(w.cfg, demand, total)
	// Reclaim: the GPUs that queues below their guarantee want, beyond the free ones, come
	// from the queues over their share, most recently started first.
	held := 0
	for _, g := range running {
		held += g
	}
	need := -(total - held)
	for q, d := range demand {
		need += max(0, min(w.guar[q], d, share[q])-running[q])
	}
	keep := v.Running
	if need > 0 {
		order := make([]int, len(v.Running))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			sa, sb := v.Running[a].Since, v.Running[b].Since
			switch {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			return strings.Compare(string(v.Running[b].Job.ID), string(v.Running[a].Job.ID))
		})
		drop := map[int]bool{}
		for _, i := range order {
			if need <= 0 {
				break
			}
			q := w.queueOf(v.Running[i].Job)
			if running[q] <= share[q] {
				continue
			}
			drop[i] = true
			g := len(v.Running[i].GPUs)
			running[q] -= g
			need -= g
		}
		if len(drop) > 0 {
			keep = make([]gpusched.JobStatus, 0, len(v.Running)-len(drop))
			for i := range v.Running {
				if !drop[i] {
					keep = append(keep, v.Running[i])
				}
			}
		}
	}
	// Admission: the wrapped scheduler sees the waiting jobs of the queues with room (running
	// less than their share) and of the full queues that run jobs (their waiting jobs may take
	// their own queue's GPUs: intra-queue preemption); admit applies the rules to its decision.
	// Where admit drops a start, the wrapped scheduler may have given that job GPUs that a
	// lower-priority job could take, so it decides again without the jobs dropped so far and,
	// of the full queues, only with the jobs whose start the first call accepted; then (a third
	// call, the last) without the full queues' jobs.
	room := func(q string) bool { return running[q] < share[q] }
	fullShown := func(id gpusched.JobID) bool { return true }
	var hidden map[gpusched.JobID]bool
	for call := 1; ; call++ {
		show := func(js *gpusched.JobStatus) bool {
			if hidden[js.Job.ID] {
				return false
			}
			q := w.queueOf(js.Job)
			return room(q) || (running[q] > 0 && fullShown(js.Job.ID))
		}
		d, dropped, started, err := w.decide(v, keep, show, running, share)
		if err != nil || len(dropped) == 0 || call == maxCalls {
			return d, err
		}
		if hidden == nil {
			hidden = map[gpusched.JobID]bool{}
		}
		for _, id := range dropped {
			hidden[id] = true
		}
		if call == 1 {
			ok := map[gpusched.JobID]bool{}
			for _, id := range started {
				ok[id] = true
			}
			fullShown = func(id gpusched.JobID) bool { return ok[id] }
		} else {
			fullShown = func(gpusched.JobID) bool { return false }
		}
	}
}

// maxCalls bounds the wrapped scheduler's calls per decision.
const maxCalls = 3

// decide calls the wrapped scheduler on the view of the running jobs keep and the waiting
// jobs show accepts, and applies the queues' rules to its decision (admit). It returns the
// decision, the jobs whose start admit dropped and those whose start it kept.
func (w *wrapper) decide(v gpusched.View, keep []gpusched.JobStatus, show func(*gpusched.JobStatus) bool, running, share map[string]int) (gpusched.Decision, []gpusched.JobID, []gpusched.JobID, error) {
	pending := make([]gpusched.JobStatus, 0, len(v.Pending))
	for i := range v.Pending {
		if show(&v.Pending[i]) {
			pending = append(pending, v.Pending[i])
		}
	}
	iv := v
	iv.Running, iv.Pending, iv.Delta = keep, pending, nil
	if len(keep) == len(v.Running) && len(pending) == len(v.Pending) {
		iv = v // nothing hidden: the host's view as it is (its Delta holds)
	}
	d, err := w.inner.Schedule(iv)
	if err != nil {
		return d, nil, nil, err
	}
	d, dropped, started := w.admit(iv, d, running, share)
	return d, dropped, started, nil
}

// admit applies the queues' rules to the wrapped scheduler's decision d for the view iv, where
// running and share are the GPUs each queue runs (after the reclaim) and its share:
//
//   - a start may take the GPUs of a running job that d stops only if that job is of the same
//     queue or of a queue that runs more than its share: a queue at or below its share loses
//     GPUs only to its own jobs (and to the reclaim);
//   - a queue never grows beyond the larger of its share and what it runs: a queue with room
//     fills up to its share, a full queue starts a job only in place of its own jobs that d
//     stops (intra-queue preemption, as the wrapped scheduler decides it);
//   - the starts that break a rule are dropped (in d's order: a start is checked after those
//     d lists before it), and a running job that d stops only to make room for dropped starts
//     keeps running (unless it holds unavailable GPUs, d rejects it or its queue's cap is
//     reached).
//
// It returns the decision in its full form, the jobs whose start it dropped and those whose
// start it kept.
func (w *wrapper) admit(iv gpusched.View, d gpusched.Decision, running, share map[string]int) (gpusched.Decision, []gpusched.JobID, []gpusched.JobID) {
	d = d.Expand(iv) // the checks below read the full form
	capOf := func(q string) int { return max(share[q], running[q]) }
	was := make(map[gpusched.JobID]bool, len(iv.Running))
	holder := map[topology.GPUID]*gpusched.Job{} // the running job on each GPU
	for i := range iv.Running {
		was[iv.Running[i].Job.ID] = true
		for _, g := range iv.Running[i].GPUs {
			holder[g] = iv.Running[i].Job
		}
	}
	jobs := make(map[gpusched.JobID]*gpusched.Job, len(iv.Running)+len(iv.Pending))
	for _, list := range [][]gpusched.JobStatus{iv.Running, iv.Pending} {
		for i := range list {
			jobs[list[i].Job.ID] = list[i].Job
		}
	}
	queueOf := func(id gpusched.JobID) string {
		if j := jobs[id]; j != nil {
			return w.queueOf(j)
		}
		return w.def
	}
	use := map[string]int{}
	kept := make(map[gpusched.JobID]bool, len(d.Run)) // running jobs the decision keeps (or moves)
	for _, a := range d.Run {
		if was[a.Job] {
			use[queueOf(a.Job)] += len(a.GPUs)
			kept[a.Job] = true
		}
	}
	var dropped, started []gpusched.JobID
	var droppedGPUs []topology.GPUID
	out := d.Run[:0:0]
	for _, a := range d.Run {
		if !was[a.Job] {
			q := queueOf(a.Job)
			ok := use[q]+len(a.GPUs) <= capOf(q)
			for _, g := range a.GPUs {
				if h := holder[g]; ok && h != nil && !kept[h.ID] {
					if r := w.queueOf(h); r != q && running[r] <= share[r] {
						ok = false
					}
				}
			}
			if !ok {
				dropped = append(dropped, a.Job)
				droppedGPUs = append(droppedGPUs, a.GPUs...)
				continue
			}
			use[q] += len(a.GPUs)
			started = append(started, a.Job)
		}
		out = append(out, a)
	}
	if len(dropped) > 0 {
		// The running jobs stopped only for the dropped starts keep running.
		taken, freed := map[topology.GPUID]bool{}, map[topology.GPUID]bool{}
		for _, a := range out {
			for _, g := range a.GPUs {
				taken[g] = true
			}
		}
		for _, g := range droppedGPUs {
			freed[g] = true
		}
		listed := make(map[gpusched.JobID]bool, len(d.Run)+len(d.Rejected))
		for _, a := range d.Run {
			listed[a.Job] = true
		}
		for _, r := range d.Rejected {
			if r != nil {
				listed[r.Job] = true
			}
		}
		for i := range iv.Running {
			js := &iv.Running[i]
			if listed[js.Job.ID] {
				continue
			}
			served, blocked := false, false
			for _, g := range js.GPUs {
				served = served || freed[g]
				blocked = blocked || taken[g] || iv.Unavailable.Contains(g)
			}
			q := w.queueOf(js.Job)
			if !served || blocked || use[q]+len(js.GPUs) > capOf(q) {
				continue
			}
			use[q] += len(js.GPUs)
			for _, g := range js.GPUs {
				taken[g] = true
			}
			out = append(out, gpusched.Assignment{Job: js.Job.ID, GPUs: js.GPUs, PlanChoice: js.PlanChoice})
		}
		// Dropped starts leave GPUs a queue with room may take: decide again soon.
		if again := iv.Now + 1; d.WakeAt <= iv.Now || again < d.WakeAt {
			d.WakeAt = again
		}
	}
	d.Run = out
	return d, dropped, started
}

// JobCompleted passes completions to the inner scheduler.
func (w *wrapper) JobCompleted(c gpusched.Completion) {
	if o, ok := w.inner.(gpusched.CompletionObserver); ok {
		o.JobCompleted(c)
	}
}

// SaveState saves the inner scheduler's state (nothing when it keeps none).
func (w *wrapper) SaveState(out io.Writer) error {
	if s, ok := w.inner.(gpusched.Stateful); ok {
		return s.SaveState(out)
	}
	return nil
}

// RestoreState restores the inner scheduler's state.
func (w *wrapper) RestoreState(in io.Reader) error {
	if s, ok := w.inner.(gpusched.Stateful); ok {
		return s.RestoreState(in)
	}
	return nil
}
