package planner

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/kube/mapping"
	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// StateKind and StateVersion head the planner's saved state.
const (
	StateKind    = "gpusched-kube-planner"
	StateVersion = 1
)

// ErrBadState reports saved state the planner cannot use; it wraps gpusched.ErrBadState.
var ErrBadState = fmt.Errorf("planner: %w", gpusched.ErrBadState)

// savedState is the planner's state: its clock, the jobs it held with their statuses, in
// submission order, and the scheduler's own state (gpusched.Stateful), nested.
type savedState struct {
	Kind      string          `json:"kind"`
	Version   int             `json:"version"`
	Epoch     time.Time       `json:"epoch"`
	Scale     float64         `json:"scale"`
	Now       float64         `json:"now"`
	Jobs      []savedJob      `json:"jobs"`
	Scheduler json.RawMessage `json:"scheduler,omitempty"`
	// Away are the jobs taken out of the scheduler's hands (un-started because their gang
	// could not bind or their pods were gone, or not stoppable because a PodDisruptionBudget
	// refused evicting them), in submission order: a restart keeps their arrival, progress,
	// backoff and reason.
	Away []savedAway `json:"away,omitempty"`
}

// savedAway is a job taken back: it is submitted again, with its arrival and progress, once
// its backoff has passed (RetryAt, wall time; zero: as soon as all its pods exist).
type savedAway struct {
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	PodGroup   bool      `json:"podgroup,omitempty"`
	Arrival    float64   `json:"arrival"`
	Iterations float64   `json:"iterations,omitempty"`
	RetryAt    time.Time `json:"retry_at,omitempty"`
	Why        string    `json:"why,omitempty"`
}

type savedJob struct {
	Namespace  string       `json:"namespace"`
	Name       string       `json:"name"`
	PodGroup   bool         `json:"podgroup,omitempty"`
	Job        gpusched.Job `json:"job"`
	Pods       int          `json:"pods"`
	PodGPUs    int          `json:"pod_gpus"`
	Hint       float64      `json:"hint,omitempty"`
	Progress   float64      `json:"progress,omitempty"`
	Iterations float64      `json:"iterations"`
	Executed   float64      `json:"executed"`
	Attained   float64      `json:"attained"`
	Started    bool         `json:"started,omitempty"`
	FirstStart float64      `json:"first_start,omitempty"`
	Since      float64      `json:"since"`
	Preempted  int          `json:"preemptions,omitempty"`
	GPUs       []savedGPU   `json:"gpus,omitempty"`
	RestoreEnd float64      `json:"restore_end,omitempty"`
	Full       bool         `json:"full,omitempty"`
	Step       float64      `json:"step,omitempty"` // seconds per iteration while it runs (0: unknown)
}

// savedGPU names a GPU by its node and its index on the node, which survive a change of the
// cluster's GPU numbering.
type savedGPU struct {
	Node  string `json:"node"`
	Index int    `json:"index"`
}

// snapshot takes the planner's books (p.mu held): its clock and jobs. The scheduler's own
// state is added by withScheduler, outside p.mu; the encoding is the writer's.
func (p *Planner) snapshot() *savedState {
	st := savedState{Kind: StateKind, Version: StateVersion, Epoch: p.epoch, Scale: p.opt.TimeScale, Now: p.now}
	held := make([]*job, 0, len(p.jobs))
	var away []*job
	for _, j := range p.jobs {
		switch {
		case j.held:
			held = append(held, j)
		case !j.done && (j.saved > 0 || !j.retryAt.IsZero() || j.why != ""):
			away = append(away, j)
		}
	}
	sortBySeq(held)
	sortBySeq(away)
	for _, j := range away {
		st.Away = append(st.Away, savedAway{Namespace: j.key.Namespace, Name: j.key.Name, PodGroup: j.key.PodGroup,
			Arrival: j.arr, Iterations: j.saved, RetryAt: j.retryAt, Why: j.why})
	}
	st.Jobs = make([]savedJob, 0, len(held)) // savedJob is large: grown by append, half the snapshot's CPU at 6,000 jobs
	for _, j := range held {
		s, restoreEnd, ok := p.bk.status(j.id, p.now)
		if !ok {
			continue
		}
		sj := savedJob{
			Namespace: j.key.Namespace, Name: j.key.Name, PodGroup: j.key.PodGroup,
			Job: j.spec.Job, Pods: j.spec.Pods, PodGPUs: j.spec.PodGPUs, Hint: j.spec.Hint, Progress: j.prog,
			Iterations: s.Iterations, Executed: s.Executed, Attained: s.Attained, Started: s.Started,
			FirstStart: s.FirstStart, Since: s.Since, Preempted: s.Preemptions, Full: j.full, Step: p.bk.step(j.id),
		}
		if s.GPUs != nil {
			sj.RestoreEnd = restoreEnd
			for _, g := range s.GPUs {
				srv := p.cl.ServerOf(g)
				first, _ := p.cl.GPUsOf(srv)
				sj.GPUs = append(sj.GPUs, savedGPU{Node: p.cl.Server(srv).ID, Index: int(g - first)})
			}
		}
		st.Jobs = append(st.Jobs, sj)
	}
	return &st
}

// withScheduler adds the scheduler's own state (gpusched.Stateful) to a snapshot of the
// books. p.smu must be held since the snapshot was taken, so that the scheduler's state is
// that of the same instant; p.mu need not be: the framework's extension points, which take
// only p.mu, go on while the scheduler encodes its state (at 1,000 nodes and 6,000 jobs, A-SRPT's
// SaveState was about a third of a decision's CPU).
func (p *Planner) withScheduler(st *savedState) error {
	if s, ok := p.opt.Scheduler.(gpusched.Stateful); ok {
		var buf bytes.Buffer
		if err := s.SaveState(&buf); err != nil {
			return fmt.Errorf("planner: save the scheduler's state: %w", err)
		}
		st.Scheduler = buf.Bytes()
	}
	return nil
}

// encodeState encodes saved state: gzipped JSON.
func encodeState(st *savedState) ([]byte, error) {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if err := json.NewEncoder(zw).Encode(st); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// encoded returns the latest state handed to the writer, encoded (nil when none).
func (p *Planner) encoded() ([]byte, error) {
	p.mu.Lock()
	st := p.state
	p.mu.Unlock()
	if st == nil {
		return nil, nil
	}
	return encodeState(st)
}

// save takes the books for the writer when they changed, or when decisions since the last
// state taken changed only the scheduler's own state and Options.StatePeriod has passed since
// (p.mu held); publish completes them with the scheduler's state once p.mu is released.
func (p *Planner) save() {
	if p.opt.Store == nil || p.bk == nil {
		return
	}
	if !p.bk.takeChanged() {
		p.unsaved = true
		if p.opt.StatePeriod < 0 || p.opt.Now().Sub(p.takenAt) < p.opt.StatePeriod {
			return
		}
	}
	p.unsaved = false
	p.takenAt = p.opt.Now()
	p.pend = p.snapshot()
}

// final hands the writer the planner's state as it is now when decisions since the last
// save changed nothing in the books, or the books changed since the last decision: the
// scheduler's own state may have changed (A-SRPT
// re-estimates and advances its virtual queue at every call), and a successor restores
// exactly the state this planner stopped in. Run calls it as it stops.
func (p *Planner) final() {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.mu.Lock()
	if p.bk == nil || p.opt.Store == nil || (!p.bk.takeChanged() && !p.unsaved) {
		// (A refused eviction after the last decision changed the books: written too.)
		p.mu.Unlock()
		return
	}
	p.unsaved = false
	p.pend = p.snapshot()
	p.mu.Unlock()
	p.publish()
}

// publish completes the books that save took with the scheduler's state and hands them to
// the writer, which keeps only the latest (p.smu held, p.mu not): at most one write per
// decision that changed something, fewer when decisions come faster than the writes.
func (p *Planner) publish() {
	p.mu.Lock()
	st := p.pend
	p.pend = nil
	p.mu.Unlock()
	if st == nil {
		return
	}
	if err := p.withScheduler(st); err != nil {
		p.log.Error(err, "gpusched planner: save state")
		return
	}
	p.mu.Lock()
	p.state = st
	p.mu.Unlock()
	select {
	case p.stateCh <- struct{}{}:
	default:
	}
}

// writer writes the latest state to the store, and once more when stop is closed.
func (p *Planner) writer(stop <-chan struct{}) {
	write := func(ctx context.Context) {
		p.mu.Lock()
		st := p.state
		p.state = nil
		p.mu.Unlock()
		if st == nil || (p.opt.Leading != nil && !p.opt.Leading()) {
			return
		}
		data, err := encodeState(st)
		if err != nil {
			p.log.Error(err, "gpusched planner: encode state")
			return
		}
		if err := p.opt.Store.Save(ctx, data); err != nil {
			p.log.Error(err, "gpusched planner: write state")
			p.mu.Lock()
			if p.state == nil {
				p.state = st // write it again with the next change
			}
			p.mu.Unlock()
			return
		}
		p.mu.Lock()
		p.metrics.stateWrites++
		p.metrics.stateBytes = len(data)
		p.mu.Unlock()
	}
	// A write in progress is not cut short when the planner stops (the state it carries would
	// be lost, and a successor would restore an older one): each has its own time limit.
	for {
		select {
		case <-stop:
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			write(c)
			cancel()
			return
		case <-p.stateCh:
			c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			write(c)
			cancel()
		}
	}
}

// decodeState reads saved state, checking its kind and version.
func decodeState(data []byte) (*savedState, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadState, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadState, err)
	}
	var head struct {
		Kind    string `json:"kind"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadState, err)
	}
	if head.Kind != StateKind || head.Version != StateVersion {
		return nil, fmt.Errorf("%w: kind %q version %d, want %q version %d", ErrBadState, head.Kind, head.Version, StateKind, StateVersion)
	}
	var st savedState
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadState, err)
	}
	if !(st.Scale > 0) || !(st.Now >= 0) {
		return nil, fmt.Errorf("%w: scale %v, time %v", ErrBadState, st.Scale, st.Now)
	}
	return &st, nil
}

// restore loads the saved state, if any, into fresh books and the scheduler. On any problem
// it logs and starts afresh: a scheduler that cannot restore treats live jobs as new.
func (p *Planner) restore(ctx context.Context) {
	if p.opt.Store == nil {
		return
	}
	data, err := p.opt.Store.Load(ctx)
	if err != nil || data == nil {
		if err != nil {
			p.log.Error(err, "gpusched planner: load state")
		}
		return
	}
	st, err := decodeState(data)
	if err != nil {
		p.log.Error(err, "gpusched planner: saved state unusable, starting afresh")
		return
	}
	p.smu.Lock()
	defer p.smu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.restoreLocked(ctx, st); err != nil {
		p.log.Error(err, "gpusched planner: restore failed, starting afresh")
		p.bk, p.cl, p.jobs, p.seq = nil, nil, map[gpusched.JobID]*job{}, 0
		p.epoch, p.now = p.opt.Now(), 0
		return
	}
	p.takenAt = p.opt.Now() // the store holds the state as it is now
	p.log.Info("gpusched planner: restored", "jobs", len(st.Jobs), "time", st.Now)

	p.restored = len(st.Jobs)
}

func (p *Planner) restoreLocked(ctx context.Context, st *savedState) error {
	p.epoch = st.Epoch
	if st.Scale != p.opt.TimeScale {
		// Keep the planner time continuous under a new scale.
		wall := p.opt.Now().Sub(st.Epoch).Seconds()
		p.epoch = p.opt.Now().Add(-time.Duration(wall * st.Scale / p.opt.TimeScale * float64(time.Second)))
	}
	p.now = st.Now
	nodes, err := p.opt.Sources.Nodes()
	if err != nil {
		return err
	}
	pods, err := p.opt.Sources.Pods()
	if err != nil {
		return err
	}
	now := p.clock()
	if err := p.syncCluster(ctx, nodes, pods, now); err != nil {
		return err
	}
	if p.bk == nil {
		return errors.New("no GPU node")
	}
	for i, sj := range st.Jobs {
		k := mapping.JobKey{Namespace: sj.Namespace, Name: sj.Name, PodGroup: sj.PodGroup}
		switch {
		case sj.Name == "" || sj.Namespace == "":
			return fmt.Errorf("%w: job %d: no namespace or name", ErrBadState, i)
		case sj.Job.ID != k.ID():
			return fmt.Errorf("%w: job %d: id %q is not that of %s/%s (%q)", ErrBadState, i, sj.Job.ID, sj.Namespace, sj.Name, k.ID())
		case sj.Pods < 1 || sj.PodGPUs < 1 || sj.Pods*sj.PodGPUs != sj.Job.GPUs:
			return fmt.Errorf("%w: job %q: %d pods of %d GPUs for %d GPUs", ErrBadState, sj.Job.ID, sj.Pods, sj.PodGPUs, sj.Job.GPUs)
		case p.jobs[k.ID()] != nil:
			return fmt.Errorf("%w: job %q saved twice", ErrBadState, sj.Job.ID)
		}
		status := gpusched.JobStatus{
			Iterations: sj.Iterations, Executed: sj.Executed, Attained: sj.Attained, Started: sj.Started,
			FirstStart: sj.FirstStart, Since: sj.Since, Preemptions: sj.Preempted,
		}
		var nodesOf map[string]int
		if len(sj.GPUs) > 0 {
			gpus := make([]topology.GPUID, 0, len(sj.GPUs))
			nodesOf = map[string]int{}
			for _, g := range sj.GPUs {
				// A GPU on a node that left (or shrank) while the planner was down: the job
				// is resumed waiting, and its pods there are evicted.
				if g.Index < 0 {
					return fmt.Errorf("%w: job %q: GPU index %d on node %s", ErrBadState, sj.Job.ID, g.Index, g.Node)
				}
				s, ok := p.cl.ServerIndex(g.Node)
				if !ok {
					break
				}
				first, n := p.cl.GPUsOf(s)
				if g.Index >= n {
					break
				}
				gpus = append(gpus, first+topology.GPUID(g.Index))
				nodesOf[g.Node]++
			}
			if len(gpus) == len(sj.GPUs) {
				status.GPUs = gpus
			} else {
				nodesOf = nil
			}
		}
		restoreEnd := sj.RestoreEnd
		if status.GPUs == nil {
			restoreEnd = 0
		} else if dt := now - st.Now; dt > 0 {
			// The state is written when something changes, not as time passes: a job that
			// ran meanwhile held its GPUs, and progressed at its saved speed (Step) if its
			// gang was bound.
			status.Executed += dt
			status.Attained += dt * float64(len(status.GPUs))
			if sj.Full && sj.Step > 0 {
				status.Iterations += max(0, now-max(st.Now, restoreEnd)) / sj.Step
			}
		}
		if err := p.bk.resume(sj.Job, status, restoreEnd, now); err != nil {
			return fmt.Errorf("resume job %q: %w", sj.Job.ID, err)
		}
		p.seq++
		p.sized(sj.Job.ID, sj.PodGPUs)
		p.jobs[k.ID()] = &job{
			key: k, id: k.ID(), spec: mapping.Spec{Job: sj.Job, Pods: sj.Pods, PodGPUs: sj.PodGPUs, Hint: sj.Hint},
			seq: p.seq, arr: sj.Job.Arrival, held: true, prog: sj.Progress, nodes: nodesOf, full: sj.Full && nodesOf != nil,
			startAt: p.opt.Now(), complete: p.opt.Now(),
		}
		if nodesOf != nil && !sj.Full {
			if err := p.bk.bound(k.ID(), now, false); err != nil {
				return fmt.Errorf("resume job %q: %w", sj.Job.ID, err)
			}
		}
	}
	for i, sa := range st.Away {
		k := mapping.JobKey{Namespace: sa.Namespace, Name: sa.Name, PodGroup: sa.PodGroup}
		switch {
		case sa.Name == "" || sa.Namespace == "":
			return fmt.Errorf("%w: job taken back %d: no namespace or name", ErrBadState, i)
		case p.jobs[k.ID()] != nil:
			return fmt.Errorf("%w: job %q saved twice", ErrBadState, k.ID())
		case !(sa.Arrival >= 0) || math.IsInf(sa.Arrival, 0) || !(sa.Iterations >= 0) || math.IsInf(sa.Iterations, 0):
			return fmt.Errorf("%w: job %q taken back: arrival %v, iterations %v", ErrBadState, k.ID(), sa.Arrival, sa.Iterations)
		}
		p.jobs[k.ID()] = &job{key: k, id: k.ID(), arr: sa.Arrival, saved: sa.Iterations, retryAt: sa.RetryAt, why: sa.Why}
	}
	if s, ok := p.opt.Scheduler.(gpusched.Stateful); ok && len(st.Scheduler) > 0 {
		if err := s.RestoreState(bytes.NewReader(st.Scheduler)); err != nil {
			return fmt.Errorf("restore the scheduler: %w", err)
		}
	}
	return nil
}

func sortBySeq(js []*job) {
	slices.SortFunc(js, func(a, b *job) int { return cmp.Compare(a.seq, b.seq) })
}

// ConfigMapStore keeps the planner's state in a ConfigMap, gzipped JSON under the binary key
// "state.json.gz" (a ConfigMap holds at most 1 MiB: about 10,000 live jobs with A-SRPT).
type ConfigMapStore struct {
	Client          kubernetes.Interface
	Namespace, Name string
}

// stateKey is the ConfigMap key of the state.
const stateKey = "state.json.gz"

// Load returns the saved state, or nil when the ConfigMap does not exist.
func (s *ConfigMapStore) Load(ctx context.Context) ([]byte, error) {
	cm, err := s.Client.CoreV1().ConfigMaps(s.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return cm.BinaryData[stateKey], nil
}

// Save writes the state, creating the ConfigMap if needed.
func (s *ConfigMapStore) Save(ctx context.Context, data []byte) error {
	cms := s.Client.CoreV1().ConfigMaps(s.Namespace)
	cm, err := cms.Get(ctx, s.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: map[string]string{"app.kubernetes.io/managed-by": "gpusched"}},
			BinaryData: map[string][]byte{stateKey: data},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cm = cm.DeepCopy()
	if cm.BinaryData == nil {
		cm.BinaryData = map[string][]byte{}
	}
	cm.BinaryData[stateKey] = data
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
