package planner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/kube/mapping"
	"github.com/gpusched/gpusched/topology"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// Sources lists the objects the planner reads: typically informer listers.
type Sources interface {
	Nodes() ([]*v1.Node, error)
	Pods() ([]*v1.Pod, error)
	PodGroups() ([]*v1alpha1.PodGroup, error)
}

// Actuator carries out what the planner decides on the cluster.
type Actuator interface {
	// Evict evicts a pod through the Eviction API.
	Evict(ctx context.Context, pod *v1.Pod) error
	// Activate moves pods that waited for a decision back to the scheduling queue.
	Activate(pods []*v1.Pod)
	// RejectWaiting rejects a pod that waits at Permit for the rest of its gang.
	RejectWaiting(pod *v1.Pod)
	// Event records an event on an object: a Warning (bad input, a rejected job) or Normal.
	Event(obj runtime.Object, warning bool, reason, msg string)
	// PodGroupStatus sets a PodGroup's status: its phase (Pending: waits for the scheduler;
	// Scheduling: started, its gang binding; Running; Finished) and its running pods. The
	// planner calls it only when they change.
	PodGroupStatus(pg *v1alpha1.PodGroup, phase v1alpha1.PodGroupPhase, running int32)
	// PodWaiting sets the condition PodScheduled=False (reason GpuschedWaiting) on a pod that
	// the planner holds back, saying why. The planner calls it only when the reason changes.
	PodWaiting(pod *v1.Pod, why string)
}

// Store keeps the planner's saved state (a ConfigMap: ConfigMapStore).
type Store interface {
	// Load returns the saved state, or nil and no error when there is none.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces the saved state.
	Save(ctx context.Context, data []byte) error
}

// Options configure a Planner. Scheduler, Sources and Actuator are required.
type Options struct {
	// Mapping names the labels, annotations and resources (mapping.Config).
	Mapping mapping.Config
	// SchedulerNames are the pod schedulerName values the planner serves. Pods of other
	// schedulers that hold GPUs make those GPUs unavailable. Default {"gpusched"}.
	SchedulerNames []string
	// SchedulerName names the scheduler in events ("asrpt"). Default "gpusched".
	SchedulerName string
	// Leading, if set, tells whether this replica still holds the lease that lets it act
	// (leader election): the state is written only while it does, so that a replica that
	// lost its lease never overwrites its successor's state. nil: always.
	Leading func() bool
	// AfterSync, if set, is called after every decision with the planner's counters and
	// gauges (metrics).
	AfterSync func(Stats)
	// Scheduler decides what runs where; if it implements gpusched.Stateful its state is saved
	// to Store after every decision and restored at start.
	Scheduler gpusched.Scheduler
	// Cost is the scheduler's cost model, told of jobs that leave (nil: none).
	Cost gpusched.CostModel
	// RestoreTime is the seconds (planner time) a job restarted or migrated spends restoring
	// its checkpoint before it progresses, as the scheduler should assume. Default 0.
	RestoreTime float64
	// TimeScale is the planner's seconds per wall-clock second: 1 in production; tests run
	// a long workload faster. Default 1.
	TimeScale float64
	// Now returns the wall-clock time. Default time.Now. A test may give a virtual clock that
	// it advances itself: the planner then decides at the times it is kicked (Kick), and
	// its own timers (Debounce, Resync, the wait for WakeAt) stay in wall time.
	Now      func() time.Time
	Sources  Sources
	Actuator Actuator
	// Store, when set, keeps the saved state.
	Store Store
	// StatePeriod bounds, on the planner's clock (Now), how long the scheduler's own state
	// goes unsaved while decisions change nothing in the books (A-SRPT re-estimates and
	// advances its virtual queue at every call): the first such decision after StatePeriod
	// since the last state taken writes it, so that a successor of a replica that died
	// without its last write (kill -9) resumes from a state at most StatePeriod (plus Resync)
	// old. Decisions that change the books write at once, as before. Default 30 s; negative:
	// never (only the books' changes and the last state when the planner stops).
	StatePeriod time.Duration
	// Debounce is how long the planner waits after a change for more changes before it
	// decides (events at one instant make one decision). Default 20 ms.
	Debounce time.Duration
	// Resync is the longest time between two decisions when nothing changes. Default 30 s.
	Resync time.Duration
	// Decided, if set, is called after every applied decision with the actions in node
	// terms (tests and metrics).
	Decided func(Decision)
	// Logger logs. Default klog.Background().
	Logger klog.Logger
	// PodSizes, if set, is told the GPUs of each pod of every job the planner submits (and 0
	// when the job leaves): the scheduler's placer needs them (plugin.PodSizes).
	PodSizes func(id gpusched.JobID, podGPUs int)
	// EvictTimeout bounds each call to Actuator.Evict. Evictions run off the decision path,
	// at most 16 at once: a slow or refusing API server never holds up a decision. Default
	// 10 s.
	EvictTimeout time.Duration
	// EvictRetry is how long the planner waits before it asks again to evict a pod whose
	// eviction was refused with 429 Too Many Requests (a PodDisruptionBudget). Default 30 s.
	EvictRetry time.Duration
	// BindTimeout is how long a started job's gang may take to bind. A job not fully bound
	// by then, or one of whose pods no node the decision gave it can hold (Unfit), is taken
	// back (un-started, with an event) and handed to the scheduler again after
	// UnstartBackoff. Default 3 min.
	BindTimeout time.Duration
	// PodsGoneGrace is how long a started job may lack some of its pods (deleted, or being
	// recreated after an eviction) before it is taken back; it is handed to the scheduler
	// again once all its pods exist. Default 30 s.
	PodsGoneGrace time.Duration
	// UnstartBackoff is how long a job taken back waits before it is submitted again.
	// Default 60 s.
	UnstartBackoff time.Duration
	// UnfitGrace is how long after its start a job whose pod no node can hold (Unfit) keeps
	// its GPUs: the pods of the jobs it replaced may still be terminating and hold the CPU
	// or memory it needs. Default 30 s.
	UnfitGrace time.Duration
}

// blockedPod is a pod whose eviction a PodDisruptionBudget refused: its job cannot be stopped
// now. While it stays bound, the GPUs it requests on its node are unavailable to decisions.
type blockedPod struct {
	job   gpusched.JobID
	pod   *v1.Pod
	retry time.Time // wall time of the next try; zero while a try is in flight
}

// Decision is an applied decision in node terms.
type Decision struct {
	// Time is the planner time of the decision, in seconds.
	Time float64
	// Stops are the jobs stopped (their pods evicted; first those whose nodes left the
	// cluster, then the scheduler's), Starts the jobs started with the GPUs
	// each node gives them, Rejected the jobs rejected with the reason.
	Stops    []gpusched.JobID
	Starts   []Start
	Rejected []*gpusched.JobError
	// Submitted are the jobs handed to the scheduler since the last decision, with their
	// arrival (planner time, seconds).
	Submitted map[gpusched.JobID]float64
	// Finished are the jobs whose pods all succeeded since the last decision.
	Finished []gpusched.JobID
}

// Start is one job started: its GPUs per node, and the decision's GPUs in worker order (ids
// of the cluster the planner built: mapping.Config.Cluster of the nodes).
type Start struct {
	Job   gpusched.JobID
	Nodes map[string]int
	GPUs  []topology.GPUID
}

// noGroupGrace is how long a pod may name a PodGroup that does not exist before the planner
// reports it.
const noGroupGrace = 30 * time.Second

// job is the planner's record of one job seen in the cluster.
type job struct {
	key   mapping.JobKey
	id    gpusched.JobID
	spec  mapping.Spec
	obj   runtime.Object // the PodGroup, or the first pod of a label job: where events go
	pods  []*v1.Pod      // live worker pods (not terminating, not finished), from the last sync
	aux   []*v1.Pod      // live pods without GPUs (an MPI launcher): they run while the job runs
	succ  int            // pods Succeeded
	seen  bool           // seen in the last sync
	seq   uint64         // submission order
	arr   float64        // arrival, planner time
	held  bool           // submitted to the books (waiting, running or parked)
	done  bool           // finished or given up: never submitted again
	prob  string         // the mapping problem, if any
	prog  float64        // last progress reported
	full  bool           // every pod was bound in the current placement
	nodes map[string]int // the decision's GPUs per node while the job should run
	resv  map[types.UID]string
	// listed holds the reserved pods the planner's pod lister has listed: a reservation of a
	// pod not listed yet (the scheduler's informer saw the pod first) is kept by reconcile.
	listed map[types.UID]bool
	gone   map[types.UID]bool // pods evicted by the planner

	startAt  time.Time              // when the current decision started the job (Options.Now)
	complete time.Time              // last time all the job's pods existed while it ran unbound
	retryAt  time.Time              // a job taken back waits until then before it is submitted again
	saved    float64                // iterations done when the job was taken back
	unfit    string                 // why a pod of the started job fits none of its nodes (PostFilter)
	why      string                 // why the job waits, when the planner knows more than "not started"
	fitWhy   string                 // why the last decision's start of the job was left out (hostFit)
	needSet  bool                   // its pods' CPU and memory requests are known to hostFit
	phase    v1alpha1.PodGroupPhase // the PodGroup status phase last set
	running  int32                  // and the running pods it said
	told     map[types.UID]string   // the wait reason last set on each pod
}

// Planner keeps a gpusched View of a Kubernetes cluster, calls a gpusched.Scheduler at every
// change and says which pods may be scheduled where. See the package documentation.
type Planner struct {
	opt   Options
	names map[string]bool
	log   klog.Logger
	// dropUnlisted is the variant before the fix that tests must catch: reconcile drops the
	// reservations of pods its lister has not listed yet.
	dropUnlisted bool

	// smu is the scheduler's lock: held while the books or the scheduler change (a decision,
	// a refused eviction, the restore) and while the scheduler's state is saved. mu guards
	// the rest, which the framework's extension points read; smu is taken before mu, so the
	// scheduler's SaveState runs outside mu and never holds up the extension points.
	smu      sync.Mutex
	mu       sync.Mutex
	bk       books
	cl       *topology.Cluster
	jobs     map[gpusched.JobID]*job
	seq      uint64
	epoch    time.Time
	now      float64
	wakeAt   float64
	events   map[string]string // object uid -> last problem reported
	arrived  map[gpusched.JobID]float64
	finished []gpusched.JobID
	lost     []gpusched.JobID // jobs stopped because their nodes left, for the next Decision
	pend     *savedState      // the books of the last decision that changed them, waiting for the scheduler's state (publish)
	unsaved  bool             // a decision since the last state taken (the scheduler's own state may have changed)
	takenAt  time.Time        // when (Options.Now) the last state was taken for the writer
	state    *savedState      // latest state, waiting for the writer to encode and save it
	stateCh  chan struct{}
	kick     chan struct{}
	started  bool
	errs     int
	restored int
	after    []func() // actuator calls, made once the lock is released
	busy     time.Duration
	held     time.Duration // the part of busy spent holding mu
	syncs    int

	metrics  counters
	done     chan struct{}             // closed when Run has returned
	nodeRes  map[string]nodeRes        // the GPU nodes' allocatable resources
	blocked  map[types.UID]*blockedPod // pods whose eviction a PodDisruptionBudget refused
	evicting sync.WaitGroup            // eviction calls in flight
	evictSem chan struct{}             // bounds the eviction calls in flight
	fit      *hostFit                  // plans the nodes' CPU and memory around the scheduler
}

// Busy returns the wall time spent deciding so far (reading the cluster, the scheduler,
// applying its decision, taking the state to save; not the actuator's API calls, nor the
// encoding and writing of the state) and the number of decisions.
func (p *Planner) Busy() (time.Duration, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy, p.syncs
}

// WakeAt returns the planner time at which the last decision asked to be called again (0:
// none). Run calls the scheduler then; a test that drives the clock (Options.Now) advances
// it there and calls Kick.
func (p *Planner) WakeAt() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wakeAt
}

// Restored returns the number of jobs restored from saved state at start.
func (p *Planner) Restored() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restored
}

// New returns a planner. Run starts it.
func New(opt Options) (*Planner, error) {
	if opt.Scheduler == nil || opt.Sources == nil || opt.Actuator == nil {
		return nil, errors.New("planner: Scheduler, Sources and Actuator are required")
	}
	opt.Mapping = opt.Mapping.WithDefaults()
	if len(opt.SchedulerNames) == 0 {
		opt.SchedulerNames = []string{"gpusched"}
	}
	if !(opt.TimeScale > 0) || math.IsInf(opt.TimeScale, 0) {
		opt.TimeScale = 1
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Debounce <= 0 {
		opt.Debounce = 20 * time.Millisecond
	}
	if opt.Resync <= 0 {
		opt.Resync = 30 * time.Second
	}
	if opt.StatePeriod == 0 {
		opt.StatePeriod = 30 * time.Second
	}
	if opt.Logger.GetSink() == nil {
		opt.Logger = klog.Background()
	}
	if opt.EvictTimeout <= 0 {
		opt.EvictTimeout = 10 * time.Second
	}
	if opt.EvictRetry <= 0 {
		opt.EvictRetry = 30 * time.Second
	}
	if opt.BindTimeout <= 0 {
		opt.BindTimeout = 3 * time.Minute
	}
	if opt.PodsGoneGrace <= 0 {
		opt.PodsGoneGrace = 30 * time.Second
	}
	if opt.UnfitGrace <= 0 {
		opt.UnfitGrace = 30 * time.Second
	}
	if opt.UnstartBackoff <= 0 {
		opt.UnstartBackoff = 60 * time.Second
	}
	p := &Planner{
		opt: opt, log: opt.Logger, names: map[string]bool{},
		jobs: map[gpusched.JobID]*job{}, events: map[string]string{},
		kick: make(chan struct{}, 1), stateCh: make(chan struct{}, 1),
		epoch: opt.Now(), blocked: map[types.UID]*blockedPod{}, evictSem: make(chan struct{}, 16),
		done: make(chan struct{}), fit: newHostFit(opt.Scheduler),
	}
	for _, n := range opt.SchedulerNames {
		p.names[n] = true
	}
	return p, nil
}

// Done is closed when Run has returned, its last state written: a successor should restore
// only then.
func (p *Planner) Done() <-chan struct{} { return p.done }

// SetLeading sets Options.Leading (before Run).
func (p *Planner) SetLeading(f func() bool) { p.opt.Leading = f }

// Kick asks for a decision soon (after Debounce): informer event handlers call it.
func (p *Planner) Kick() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run restores the saved state, then decides at every change until ctx ends. Then the
// planner stops: its gates hold every pod again (a replica that lost its lease), and Run
// must not be called again.
func (p *Planner) Run(ctx context.Context) {
	wrote, stopping := make(chan struct{}), make(chan struct{})
	if p.opt.Store != nil {
		go func() { p.writer(stopping); close(wrote) }()
	} else {
		close(wrote)
	}
	defer func() {
		// The last state: the scheduler's as it is now, even if the decisions since the last
		// save changed only the scheduler's own state (A-SRPT's virtual queue advances with
		// time), so that a successor continues exactly where this planner stopped.
		p.final()
		close(stopping)
		<-wrote
		p.mu.Lock()
		p.started = false
		p.mu.Unlock()
		close(p.done)
	}()
	p.restore(ctx)
	p.mu.Lock()
	p.started = true
	p.mu.Unlock()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-timer.C:
		}
		// Gather the changes of one instant.
		t := time.NewTimer(p.opt.Debounce)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		select {
		case <-p.kick:
		default:
		}
		wait := p.Sync(ctx)
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// clock returns the planner time now, never before the last.
func (p *Planner) clock() float64 {
	t := p.opt.Now().Sub(p.epoch).Seconds() * p.opt.TimeScale
	if t < p.now {
		t = p.now
	}
	p.now = t
	return t
}

// Now returns the planner time, in seconds since its epoch.
func (p *Planner) Now() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clock()
}

func (p *Planner) ours(pod *v1.Pod) bool { return p.names[pod.Spec.SchedulerName] }

func terminated(pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// Sync reads the cluster, updates the books, calls the scheduler and carries out its
// decision. It returns how long until it wants to run again.
func (p *Planner) Sync(ctx context.Context) time.Duration {
	p.smu.Lock()
	defer p.smu.Unlock()
	p.mu.Lock()
	t0 := time.Now()
	wait, err := p.sync(ctx)
	held := time.Since(t0)
	p.held += held
	after := p.after
	p.after = nil
	p.mu.Unlock()
	// Activation runs the plugin's PreEnqueue, which takes the lock: act outside it.
	for _, f := range after {
		f()
	}
	// The scheduler's state, with the books the decision left (p.smu still held: nothing
	// has changed them since), outside mu.
	t1 := time.Now()
	p.publish()
	p.mu.Lock()
	p.metrics.lastDecide = held + time.Since(t1)
	p.busy += p.metrics.lastDecide
	p.syncs++ // counted once the state is with the writer
	p.mu.Unlock()
	if p.opt.AfterSync != nil {
		p.opt.AfterSync(p.Stats())
	}
	if err != nil {
		p.mu.Lock()
		p.errs++
		p.mu.Unlock()
		p.log.Error(err, "gpusched planner: sync failed")
		return min(wait, time.Second)
	}
	return wait
}

func (p *Planner) sync(ctx context.Context) (time.Duration, error) {
	nodes, err := p.opt.Sources.Nodes()
	if err != nil {
		return p.opt.Resync, err
	}
	pods, err := p.opt.Sources.Pods()
	if err != nil {
		return p.opt.Resync, err
	}
	pgs, err := p.opt.Sources.PodGroups()
	if err != nil {
		return p.opt.Resync, err
	}
	now := p.clock()
	if err := p.syncCluster(ctx, nodes, pods, now); err != nil {
		return p.opt.Resync, err
	}
	if p.bk == nil {
		return p.opt.Resync, nil // no GPU node yet
	}
	p.syncJobs(ctx, pods, pgs, now)
	d, err := p.bk.schedule(now)
	if err != nil {
		return p.opt.Resync, fmt.Errorf("planner: schedule at t=%g s: %w", now, err)
	}
	p.wakeAt = d.WakeAt
	for _, j := range p.jobs {
		why := p.fit.waits[j.id]
		if why != "" && j.held {
			p.problem(j.obj, "InsufficientResources", why)
		}
		j.fitWhy = why
	}
	p.apply(ctx, d, now)
	p.reconcile(ctx)
	p.statuses()
	p.save()
	wait := p.opt.Resync
	if d.WakeAt > now {
		w := time.Duration((d.WakeAt - now) / p.opt.TimeScale * float64(time.Second))
		wait = min(wait, max(w, time.Millisecond))
	}
	for _, b := range p.blocked {
		if !b.retry.IsZero() {
			wait = min(wait, max(time.Until(b.retry), time.Millisecond))
		}
	}
	// The planner's own deadlines: a gang that must bind, pods that must come back, a job
	// taken back that may be submitted again.
	wall := p.opt.Now()
	due := func(at time.Time) { wait = min(wait, max(at.Sub(wall), time.Millisecond)) }
	for _, j := range p.jobs {
		switch {
		case j.held && j.nodes != nil && !j.full:
			due(j.startAt.Add(p.opt.BindTimeout))
			if len(j.pods) < j.spec.Pods {
				due(j.complete.Add(p.opt.PodsGoneGrace))
			}
			if j.unfit != "" {
				due(j.startAt.Add(p.opt.UnfitGrace))
			}
		case !j.held && !j.retryAt.IsZero() && wall.Before(j.retryAt):
			due(j.retryAt)
		}
	}
	return wait, nil
}

// syncCluster rebuilds the cluster from the nodes and marks unavailable GPUs.
func (p *Planner) syncCluster(ctx context.Context, nodes []*v1.Node, pods []*v1.Pod, now float64) error {
	cl, unusable, problems, err := p.opt.Mapping.Cluster(nodes)
	if err != nil {
		return err
	}
	byName := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	for _, perr := range problems {
		var me *mapping.Error
		if errors.As(perr, &me) {
			if n := byName[me.Object]; n != nil {
				reason := "BadNode"
				if errors.Is(perr, mapping.ErrUnknownGPUType) {
					reason = "UnknownGPUType"
				}
				p.problem(n, reason, perr.Error())
			}
		}
	}
	if cl == nil {
		return nil
	}
	p.nodeRes = make(map[string]nodeRes, cl.NumServers())
	for i := range cl.NumServers() {
		n := byName[cl.Server(i).ID]
		if n == nil {
			continue
		}
		a := n.Status.Allocatable
		r := nodeRes{gpus: int64(cl.Server(i).GPUs), cpu: a.Cpu().MilliValue(), mem: a.Memory().Value()}
		if _, ok := a[v1.ResourceCPU]; !ok {
			r.cpu = math.MaxInt64 / 2 // not reported: not limiting
		}
		if _, ok := a[v1.ResourceMemory]; !ok {
			r.mem = math.MaxInt64 / 2
		}
		p.nodeRes[n.Name] = r
	}
	if p.bk == nil {
		bk, err := newHostBooks(cl, p.fit, p.opt.Cost, p.opt.RestoreTime)
		if err != nil {
			return err
		}
		p.bk, p.cl = bk, cl
	} else if !cl.Equal(p.cl) {
		stopped, err := p.bk.setCluster(cl, now)
		if err != nil {
			return err
		}
		p.cl = cl
		for _, id := range stopped {
			if j := p.jobs[id]; j != nil {
				p.stop(ctx, j)
			}
		}
		p.lost = append(p.lost, stopped...)
	}
	// Unavailable: GPUs of unusable nodes, and GPUs that other schedulers' pods hold.
	un := topology.NewGPUSet(cl.NumGPUs())
	for _, name := range unusable {
		s, _ := cl.ServerIndex(name)
		first, n := cl.GPUsOf(s)
		for g := first; g < first+topology.GPUID(n); g++ {
			un.Add(g)
		}
	}
	foreign := map[string]int64{}
	live := make(map[types.UID]*v1.Pod, len(p.blocked))
	// What each GPU node has left for the pods the planner places: its allocatable CPU and
	// memory less the requests of the bound pods it does not place (other schedulers' pods,
	// pods without GPUs, pods whose eviction was refused).
	free := make([]nodeRes, cl.NumServers())
	for s := range free {
		free[s] = p.nodeRes[cl.Server(s).ID]
	}
	take := func(pod *v1.Pod) {
		if s, ok := cl.ServerIndex(pod.Spec.NodeName); ok {
			c, m := mapping.PodRequests(pod)
			free[s].cpu -= c
			free[s].mem -= m
		}
	}
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || terminated(pod) {
			continue
		}
		_, isBlocked := p.blocked[pod.UID]
		if isBlocked {
			live[pod.UID] = pod
		}
		g, gerr := p.opt.Mapping.PodGPUs(pod)
		if isBlocked || !p.ours(pod) || gerr != nil || g == 0 {
			take(pod)
		}
		if p.ours(pod) {
			continue
		}
		if gerr == nil && g > 0 {
			foreign[pod.Spec.NodeName] += g
		}
	}
	p.fit.free = free
	// Pods whose eviction was refused hold their GPUs until they go: the decisions must not
	// give those GPUs to another job. Ask again when their time comes.
	for uid, b := range p.blocked {
		pod := live[uid]
		if pod == nil {
			delete(p.blocked, uid)
			continue
		}
		if g, err := p.opt.Mapping.PodGPUs(pod); err == nil && g > 0 {
			foreign[pod.Spec.NodeName] += g
		}
		if !b.retry.IsZero() && !time.Now().Before(b.retry) {
			b.retry = time.Time{}
			p.evictAsync(ctx, b.job, pod)
		}
	}
	for name, k := range foreign {
		s, ok := cl.ServerIndex(name)
		if !ok {
			continue
		}
		first, n := cl.GPUsOf(s)
		for g := first + topology.GPUID(n) - 1; g >= first && k > 0; g-- {
			un.Add(g)
			k--
		}
	}
	return p.bk.setUnavailable(un)
}

// refSpec is the server kind a job's default plan is made for.
func (p *Planner) refSpec(gpuType string) topology.ServerSpec {
	for i := range p.cl.NumServers() {
		if s := p.cl.Server(i); s.GPU.Is(gpuType) {
			return s.ServerSpec
		}
	}
	return p.cl.Server(0).ServerSpec
}

// syncJobs maps the pods and PodGroups to jobs and brings the books up to date: new jobs,
// progress, completions, lost pods, deleted jobs.
func (p *Planner) syncJobs(ctx context.Context, pods []*v1.Pod, pgs []*v1alpha1.PodGroup, now float64) {
	for _, j := range p.jobs {
		j.seen, j.pods, j.aux, j.succ = false, j.pods[:0], j.aux[:0], 0
	}
	groups := make(map[mapping.JobKey]*v1alpha1.PodGroup, len(pgs))
	for _, pg := range pgs {
		groups[mapping.JobKey{Namespace: pg.Namespace, Name: pg.Name, PodGroup: true}] = pg
	}
	get := func(k mapping.JobKey) *job {
		id := k.ID()
		j := p.jobs[id]
		if j == nil {
			j = &job{key: k, id: id, arr: now}
			p.jobs[id] = j
		}
		j.seen = true
		return j
	}
	for _, pod := range pods {
		if !p.ours(pod) {
			continue
		}
		k, ok := p.opt.Mapping.KeyOf(pod)
		if !ok {
			if !terminated(pod) {
				p.problem(pod, "NoJob", fmt.Sprintf("pod %s/%s belongs to no job: label it %s=NAME (a PodGroup) or %s=NAME (a job of pods)",
					pod.Namespace, pod.Name, p.opt.Mapping.PodGroupLabel, p.opt.Mapping.Key(mapping.LabelJob)))
			}
			continue
		}
		j := get(k)
		switch {
		case pod.Status.Phase == v1.PodSucceeded:
			j.succ++
		case terminated(pod) || j.gone[pod.UID]:
		case p.Launcher(pod):
			j.aux = append(j.aux, pod)
		default:
			j.pods = append(j.pods, pod)
		}
	}
	for k, pg := range groups {
		get(k).obj = pg
	}
	// Stable order: by arrival, then id.
	list := make([]*job, 0, len(p.jobs))
	for _, j := range p.jobs {
		list = append(list, j)
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].arr != list[b].arr {
			return list[a].arr < list[b].arr
		}
		return list[a].id < list[b].id
	})
	for _, j := range list {
		if !j.seen {
			// Every object of the job is gone: it was deleted.
			if j.held {
				_ = p.bk.finish(j.id, now, 0, true)
				p.sized(j.id, 0)
			}
			delete(p.jobs, j.id)
			continue
		}
		slices.SortFunc(j.pods, func(a, b *v1.Pod) int { return cmpString(a.Name, b.Name) })
		if j.key.PodGroup {
			if j.obj == nil {
				// A PodGroup may be created after its pods, and the informers may see them in
				// either order: only a pod that has waited noGroupGrace is a problem.
				if len(j.pods) > 0 && p.opt.Now().Sub(j.pods[0].CreationTimestamp.Time) > noGroupGrace {
					p.problem(j.pods[0], "NoPodGroup", fmt.Sprintf("pod %s/%s names PodGroup %s, which does not exist", j.pods[0].Namespace, j.pods[0].Name, j.key.Name))
				}
				continue
			}
		} else if len(j.pods) > 0 {
			j.obj = j.pods[0]
		} else if len(j.aux) > 0 {
			j.obj = j.aux[0]
		}
		if j.done {
			continue
		}
		p.syncJob(ctx, j, groups[j.key], now)
	}
}

func (p *Planner) syncJob(ctx context.Context, j *job, pg *v1alpha1.PodGroup, now float64) {
	m := p.opt.Mapping
	// Progress.
	var prog float64
	var perr error
	if pg != nil {
		prog, _, perr = m.Progress(pg.Annotations)
	} else {
		for _, pod := range j.pods {
			v, _, err := m.Progress(pod.Annotations)
			if err != nil {
				perr = err
			}
			prog = max(prog, v)
		}
	}
	if perr != nil {
		p.problem(j.obj, "BadProgress", fmt.Sprintf("job %s: %v", j.key.Name, perr))
	}
	if j.held {
		if !j.needSet {
			p.setNeed(j) // a job restored from the state
		}
		if j.succ > 0 {
			// A worker exited successfully: the training is done, and the gang finishes pod
			// by pod (its other pods are not evicted). The progress is the job's report if it
			// is new, else the runtime's extrapolation (a report from before may be stale).
			fin := 0.0
			if prog != j.prog {
				fin = prog
			} else if st, _, ok := p.bk.status(j.id, now); ok && st.Iterations >= 0.5 {
				// A job does whole iterations: the extrapolation, rounded. (Whether the job's
				// last report or its pods' exit reaches the planner first is a race between two
				// informers; with the cost model exact, the extrapolation differs from the
				// report by float rounding only, and a learning scheduler must learn the same
				// count either way: A-SRPT's calibration compares it with forest predictions
				// of the same count for recurring jobs.)
				fin = math.Round(st.Iterations)
			}
			if err := p.bk.finish(j.id, now, fin, false); err != nil {
				p.log.Error(err, "finish", "job", j.id)
			}
			j.held, j.done, j.nodes = false, true, nil
			p.sized(j.id, 0)
			p.finished = append(p.finished, j.id)
			return
		}
		if prog != j.prog {
			if err := p.bk.report(j.id, now, prog); err == nil {
				j.prog = prog
			}
		}
		if p.bk.running(j.id) {
			p.checkGang(ctx, j, now)
		}
		return
	}
	if !j.retryAt.IsZero() && p.opt.Now().Before(j.retryAt) {
		return // taken back: waits before it is submitted again
	}
	for _, b := range p.blocked {
		if b.job == j.id {
			return // runs on until the budget lets its pods be evicted
		}
	}
	if j.succ > 0 && len(j.pods) == 0 {
		j.done = true // finished before the planner saw it
		return
	}
	// Map the job; it is submitted once every pod exists.
	var (
		s        mapping.Spec
		complete bool
		err      error
	)
	gpuType := ""
	if pg != nil {
		gpuType = pg.Annotations[m.Key(mapping.AnnGPUType)]
		s, complete, err = m.JobFromPodGroup(pg, append(slices.Clip(j.pods), j.aux...), p.refSpec(gpuType))
	} else {
		if len(j.pods) > 0 {
			gpuType = j.pods[0].Annotations[m.Key(mapping.AnnGPUType)]
		}
		s, complete, err = m.JobFromPods(j.key, append(slices.Clip(j.pods), j.aux...), p.refSpec(gpuType))
	}
	if err != nil {
		target := j.obj
		var me *mapping.Error
		if errors.As(err, &me) && me.Kind == "Pod" {
			for _, pod := range j.pods {
				if pod.Namespace+"/"+pod.Name == me.Object {
					target = pod
				}
			}
		}
		j.prob = err.Error()
		p.problem(target, "BadJob", err.Error())
		return
	}
	j.prob = ""
	if !complete {
		return
	}
	if err := gpusched.Fits(&s.Job, p.cl); err != nil {
		// Too large for the cluster as it is: the scheduler rejects and parks it; say so.
		p.problem(j.obj, "TooLarge", err.Error())
	}
	if why := p.fitsNodes(j, s); why != "" {
		j.prob = why
		p.problem(j.obj, "DoesNotFit", why)
		return
	}
	s.Job.Arrival = j.arr
	if err := p.bk.submit(s.Job); err != nil {
		j.prob = err.Error()
		p.problem(j.obj, "BadJob", err.Error())
		return
	}
	p.seq++
	j.spec, j.seq, j.held, j.prog = s, p.seq, true, 0
	j.retryAt, j.why = time.Time{}, ""
	prog = max(prog, j.saved)
	p.sized(j.id, s.PodGPUs)
	p.setNeed(j)
	if p.arrived == nil {
		p.arrived = map[gpusched.JobID]float64{}
	}
	p.arrived[j.id] = j.arr
	if prog > 0 {
		if err := p.bk.report(j.id, now, prog); err == nil {
			j.prog = prog
		}
	}
}

// checkGang watches a job the decision runs: once its whole gang is bound it progresses;
// a gang that lost a pod after it bound restarts; a started gang that does not bind in
// time, lacks pods, or one of whose pods fits none of its nodes is taken back.
func (p *Planner) checkGang(ctx context.Context, j *job, now float64) {
	bound := 0
	for _, pod := range j.pods {
		if pod.Spec.NodeName != "" {
			bound++
		}
	}
	wall := p.opt.Now()
	switch {
	case bound == j.spec.Pods:
		if !j.full {
			j.full, j.unfit = true, ""
			if err := p.bk.bound(j.id, now, true); err != nil {
				p.log.Error(err, "bound", "job", j.id)
			}
		}
	case j.full && len(j.pods) < j.spec.Pods:
		// A pod of the running gang is gone (deleted, failed, its node lost): the job
		// restarts from its checkpoint; the rest of the gang is evicted.
		p.log.Info("gang lost a pod: interrupted", "job", j.id)
		_ = p.bk.interrupt(j.id, now)
		p.stop(ctx, j)
	case j.full:
	case len(j.pods) < j.spec.Pods && wall.Sub(j.complete) >= p.opt.PodsGoneGrace:
		p.unstart(ctx, j, now, "PodsGone", fmt.Sprintf("job %s was started but has %d of its %d pods (for %v): taken back until all its pods exist",
			j.key.Name, len(j.pods), j.spec.Pods, wall.Sub(j.complete).Round(time.Second)), false)
	case j.unfit != "" && wall.Sub(j.startAt) >= p.opt.UnfitGrace:
		p.unstart(ctx, j, now, "Unschedulable", fmt.Sprintf("job %s was started but a pod fits none of the nodes the decision gave it (%s): taken back for %v",
			j.key.Name, j.unfit, p.opt.UnstartBackoff), true)
	case wall.Sub(j.startAt) >= p.opt.BindTimeout:
		p.unstart(ctx, j, now, "NotBound", fmt.Sprintf("job %s was started but only %d of its %d pods bound in %v: taken back for %v",
			j.key.Name, bound, j.spec.Pods, p.opt.BindTimeout, p.opt.UnstartBackoff), true)
	default:
		if len(j.pods) == j.spec.Pods {
			j.complete = wall
		}
	}
}

// unstart takes back a job the decision started whose gang cannot bind: it leaves the
// scheduler (cancelled, its progress kept for when it comes back), its waiting pods are
// rejected and its bound pods evicted, and its owner gets a Warning event. With backoff it is
// submitted again after Options.UnstartBackoff, else as soon as all its pods exist.
func (p *Planner) unstart(ctx context.Context, j *job, now float64, reason, msg string, backoff bool) {
	if st, _, ok := p.bk.status(j.id, now); ok {
		j.saved = st.Iterations
	}
	if err := p.bk.finish(j.id, now, j.saved, true); err != nil {
		p.log.Error(err, "take back", "job", j.id)
	}
	p.stop(ctx, j)
	j.held = false
	p.sized(j.id, 0)
	j.retryAt = time.Time{}
	if backoff {
		j.retryAt = p.opt.Now().Add(p.opt.UnstartBackoff)
	}
	j.why = msg
	p.metrics.unstarted++
	p.lost = append(p.lost, j.id)
	p.log.Info("gpusched: "+reason, "msg", msg)
	p.later(func() { p.opt.Actuator.Event(j.obj, true, reason, msg) })
}

// fitsNodes tells why no set of the GPU nodes can hold the job's pods by their CPU and
// memory requests (each node's allocatable, other pods not counted), or "" when one can.
func (p *Planner) fitsNodes(j *job, s mapping.Spec) string {
	var cpu, mem int64
	for _, pod := range j.pods {
		c, m := mapping.PodRequests(pod)
		cpu, mem = max(cpu, c), max(mem, m)
	}
	if cpu == 0 && mem == 0 {
		return ""
	}
	fit, bigCPU, bigMem := 0, int64(0), int64(0)
	for _, r := range p.nodeRes {
		bigCPU, bigMem = max(bigCPU, r.cpu), max(bigMem, r.mem)
		n := r.gpus / int64(s.PodGPUs)
		if cpu > 0 {
			n = min(n, r.cpu/cpu)
		}
		if mem > 0 {
			n = min(n, r.mem/mem)
		}
		fit += int(n)
	}
	if fit >= s.Pods {
		return ""
	}
	return fmt.Sprintf("job %s: the GPU nodes can hold %d of its %d pods of %d GPUs, %dm CPU and %d bytes of memory each (largest allocatable: %dm CPU, %d bytes)",
		j.key.Name, fit, s.Pods, s.PodGPUs, cpu, mem, bigCPU, bigMem)
}

// setNeed records the CPU and memory each pod of a held job requests (the largest of its
// pods') for hostFit, when it requests any. Requests do not change while a pod lives: it is
// called when the job is submitted (or first seen after a restore).
func (p *Planner) setNeed(j *job) {
	if len(j.pods) == 0 {
		return
	}
	j.needSet = true
	n := podNeed{gpus: j.spec.PodGPUs}
	for _, pod := range j.pods {
		c, m := mapping.PodRequests(pod)
		n.cpu, n.mem = max(n.cpu, c), max(n.mem, m)
	}
	if n.cpu > 0 || n.mem > 0 {
		p.fit.need[j.id] = n
	} else {
		delete(p.fit.need, j.id)
	}
}

// nodeRes is what a GPU node offers: allocatable GPUs, CPU (millicores) and memory (bytes).
type nodeRes struct{ gpus, cpu, mem int64 }

// apply carries out an applied decision: evictions for stops, node assignments and
// activations for starts, events for rejections.
func (p *Planner) apply(ctx context.Context, d decided, now float64) {
	out := Decision{Time: now, Stops: append(p.lost, d.Stops...), Rejected: d.Rejected, Submitted: p.arrived, Finished: p.finished}
	p.arrived, p.finished, p.lost = nil, nil, nil
	// Where each job starts, in node terms, for the events.
	startNodes := make(map[gpusched.JobID]map[string]int, len(d.Starts))
	for _, a := range d.Starts {
		nodes := map[string]int{}
		for _, g := range a.GPUs {
			nodes[p.cl.Server(p.cl.ServerOf(g)).ID]++
		}
		startNodes[a.Job] = nodes
	}
	for _, id := range d.Stops {
		j := p.jobs[id]
		if j == nil {
			continue
		}
		if _, moved := startNodes[id]; !moved && j.nodes != nil {
			p.normal(j, "Preempted", fmt.Sprintf("job %s stopped by the %s scheduler's decision: %s", j.key.Name, p.schedName(), p.preemptReason(j, startNodes)))
		}
		p.stop(ctx, j)
	}
	for _, a := range d.Starts {
		j := p.jobs[a.Job]
		if j == nil {
			continue
		}
		nodes := startNodes[a.Job]
		switch {
		case slices.Contains(d.Stops, a.Job):
			p.normal(j, "Migrated", fmt.Sprintf("job %s moved by the %s scheduler to %s", j.key.Name, p.schedName(), nodeList(nodes)))
		default:
			p.normal(j, "Started", fmt.Sprintf("job %s started by the %s scheduler on %s", j.key.Name, p.schedName(), nodeList(nodes)))
		}
		j.nodes, j.resv, j.listed, j.full, j.told = nodes, map[types.UID]string{}, nil, false, nil
		j.startAt, j.complete, j.unfit = p.opt.Now(), p.opt.Now(), ""
		out.Starts = append(out.Starts, Start{Job: a.Job, Nodes: nodes, GPUs: a.GPUs})
		var act []*v1.Pod
		for _, pod := range j.pods {
			if pod.Spec.NodeName == "" {
				act = append(act, pod)
			}
		}
		if len(act) > 0 {
			p.later(func() { p.opt.Actuator.Activate(act) })
		}
	}
	for _, r := range d.Rejected {
		j := p.jobs[r.Job]
		if j == nil {
			continue
		}
		j.nodes = nil
		if !errors.Is(r.Err, gpusched.ErrTooLarge) {
			j.held, j.done = false, true
			p.sized(j.id, 0)
		}
		p.problem(j.obj, "Rejected", fmt.Sprintf("job %s rejected by the scheduler: %v", j.key.Name, r.Err))
	}
	if p.opt.Decided != nil && (len(out.Stops) > 0 || len(out.Starts) > 0 || len(out.Rejected) > 0 || len(out.Submitted) > 0 || len(out.Finished) > 0) {
		p.opt.Decided(out)
	}
}

func (p *Planner) sized(id gpusched.JobID, k int) {
	if k == 0 {
		delete(p.fit.need, id)
	}
	if p.opt.PodSizes != nil {
		p.opt.PodSizes(id, k)
	}
}

// stop takes a job's assignment away and evicts its pods.
func (p *Planner) stop(ctx context.Context, j *job) {
	j.nodes, j.full = nil, false
	for _, pod := range j.pods {
		if _, waiting := j.resv[pod.UID]; waiting && pod.Spec.NodeName == "" {
			pod := pod
			p.later(func() { p.opt.Actuator.RejectWaiting(pod) })
		}
		if pod.Spec.NodeName != "" {
			p.evict(ctx, j, pod)
		}
	}
	for _, pod := range j.aux {
		if pod.Spec.NodeName != "" {
			p.evict(ctx, j, pod)
		}
	}
	j.resv, j.listed = nil, nil
}

// Launcher tells whether a pod requests no GPU: an MPI launcher or another helper of its
// job, which runs (anywhere) while its job runs and is not one of its workers.
func (p *Planner) Launcher(pod *v1.Pod) bool {
	g, err := p.opt.Mapping.PodGPUs(pod)
	return err == nil && g == 0
}

func (p *Planner) evict(ctx context.Context, j *job, pod *v1.Pod) {
	if j.gone == nil {
		j.gone = map[types.UID]bool{}
	}
	if j.gone[pod.UID] {
		return
	}
	j.gone[pod.UID] = true
	p.evictAsync(ctx, j.id, pod)
}

// evictAsync evicts a pod off the decision path, within Options.EvictTimeout; evicted takes
// the answer.
func (p *Planner) evictAsync(ctx context.Context, id gpusched.JobID, pod *v1.Pod) {
	p.evicting.Add(1)
	go func() {
		defer p.evicting.Done()
		select {
		case p.evictSem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		c, cancel := context.WithTimeout(ctx, p.opt.EvictTimeout)
		err := p.opt.Actuator.Evict(c, pod)
		cancel()
		<-p.evictSem
		p.evicted(id, pod, err)
	}()
}

// evicted takes the answer to an eviction. A refusal with 429 Too Many Requests (a
// PodDisruptionBudget) means the job cannot be stopped now: the pod is kept as blocked, its
// GPUs stay out of the decisions while it is bound (syncCluster), the job's owner is told,
// and the planner asks again after Options.EvictRetry. Any other failure (a timeout
// included) is tried again at the next decision.
func (p *Planner) evicted(id gpusched.JobID, pod *v1.Pod, err error) {
	if apierrors.IsTooManyRequests(err) {
		p.smu.Lock() // the job leaves the books
		defer p.smu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j := p.jobs[id]
	switch {
	case err == nil:
		delete(p.blocked, pod.UID)
		p.metrics.evictions++
		return
	case apierrors.IsTooManyRequests(err):
		p.metrics.blocked++
		p.blocked[pod.UID] = &blockedPod{job: id, pod: pod, retry: time.Now().Add(p.opt.EvictRetry)}
		if j != nil && j.held && p.bk != nil {
			// The job runs on, whatever the books say: it leaves the scheduler's hands until
			// its pods are gone (else the scheduler would start it elsewhere, without pods,
			// or has already: a migration), with its progress kept, and comes back as a job
			// that waits.
			now := p.clock()
			if st, _, ok := p.bk.status(id, now); ok {
				j.saved = st.Iterations
			}
			if err := p.bk.finish(id, now, j.saved, true); err == nil {
				j.held, j.nodes, j.full = false, nil, false
				p.sized(id, 0)
			}
		}
		if j != nil {
			j.why = fmt.Sprintf("job %s cannot be stopped now: a PodDisruptionBudget refuses evicting its pods", j.key.Name)
			p.problem(j.obj, "EvictionBlocked", fmt.Sprintf("cannot stop job %s now: the eviction of pod %s/%s was refused (%v); its GPUs on node %s stay out of the plan while it runs, asking again every %v",
				j.key.Name, pod.Namespace, pod.Name, err, pod.Spec.NodeName, p.opt.EvictRetry))
		}
	default:
		p.metrics.evictErrors++
		p.log.Error(err, "evict", "pod", klog.KObj(pod))
		delete(p.blocked, pod.UID)
		if j != nil {
			delete(j.gone, pod.UID) // try again at the next sync
		}
	}
	p.Kick()
}

// waitEvictions waits for the eviction calls in flight (tests).
func (p *Planner) waitEvictions() { p.evicting.Wait() }

// later queues an actuator call for when the lock is released.
func (p *Planner) later(f func()) { p.after = append(p.after, f) }

// reconcile evicts bound pods that no decision put where they are: pods of jobs that should
// not run, and pods beyond their job's GPUs on a node.
func (p *Planner) reconcile(ctx context.Context) {
	for _, j := range p.jobs {
		if j.done && !j.held {
			continue
		}
		if j.nodes == nil || !j.held {
			for _, pod := range j.aux {
				if pod.Spec.NodeName != "" {
					p.evict(ctx, j, pod)
				}
			}
		}
		used := map[string]int{}
		for _, pod := range j.pods {
			n := pod.Spec.NodeName
			if n == "" {
				continue
			}
			if j.nodes == nil || !j.held {
				p.evict(ctx, j, pod)
				continue
			}
			used[n] += j.spec.PodGPUs
			if used[n] > j.nodes[n] {
				p.evict(ctx, j, pod)
				used[n] -= j.spec.PodGPUs
			}
		}
		// Pods of a job the decision runs that wait: back to the active queue (Activate
		// ignores pods already there).
		if j.nodes != nil && j.held {
			var act []*v1.Pod
			for _, pod := range j.pods {
				if _, r := j.resv[pod.UID]; pod.Spec.NodeName == "" && !r {
					act = append(act, pod)
				}
			}
			if len(act) > 0 {
				p.later(func() { p.opt.Actuator.Activate(act) })
			}
		}
		// Reservations of pods now bound or gone. The scheduler reserves a pod as soon as its
		// own informer has it, which may be before the planner's pod lister lists it: such a
		// reservation is kept until the pod is listed (or the framework's Unreserve, or the
		// job's stop, drops it). Dropping it left the gang one member short at Permit, every
		// pod waiting for the last until the permit timeout.
		for uid := range j.resv {
			var pod *v1.Pod
			for _, q := range j.pods {
				if q.UID == uid {
					pod = q
					break
				}
			}
			switch {
			case pod == nil && !j.listed[uid] && !p.dropUnlisted:
				// not listed yet
			case pod == nil || pod.Spec.NodeName != "":
				delete(j.resv, uid)
				delete(j.listed, uid)
			default:
				if j.listed == nil {
					j.listed = map[types.UID]bool{}
				}
				j.listed[uid] = true
			}
		}
	}
}

// statuses sets the status of every PodGroup whose phase or running pods changed, and the
// reason its pods wait on every pod held back whose reason changed.
func (p *Planner) statuses() {
	for _, j := range p.jobs {
		if why := p.waitReason(j); why != "" {
			for _, list := range [][]*v1.Pod{j.pods, j.aux} {
				for _, pod := range list {
					if pod.Spec.NodeName != "" || j.told[pod.UID] == why {
						continue
					}
					if j.told == nil {
						j.told = map[types.UID]string{}
					}
					j.told[pod.UID] = why
					pod := pod
					p.later(func() { p.opt.Actuator.PodWaiting(pod, why) })
				}
			}
		}
		pg, ok := j.obj.(*v1alpha1.PodGroup)
		if !ok {
			continue
		}
		var running int32
		for _, pod := range j.pods {
			if pod.Spec.NodeName != "" {
				running++
			}
		}
		phase := v1alpha1.PodGroupPending
		switch {
		case j.done && j.succ > 0:
			phase = v1alpha1.PodGroupFinished
		case j.held && j.nodes != nil && j.full:
			phase = v1alpha1.PodGroupRunning
		case j.held && j.nodes != nil:
			phase = v1alpha1.PodGroupScheduling
		}
		if (phase == j.phase && running == j.running) || (phase == pg.Status.Phase && running == pg.Status.Running) {
			j.phase, j.running = phase, running
			continue
		}
		j.phase, j.running = phase, running
		p.later(func() { p.opt.Actuator.PodGroupStatus(pg, phase, running) })
	}
}

// normal records a Normal event on a job's object.
func (p *Planner) normal(j *job, reason, msg string) {
	obj := j.obj
	if obj == nil {
		return
	}
	p.later(func() { p.opt.Actuator.Event(obj, false, reason, msg) })
}

// schedName names the scheduler in events.
func (p *Planner) schedName() string {
	if p.opt.SchedulerName != "" {
		return p.opt.SchedulerName
	}
	return "gpusched"
}

// preemptReason says why a running job was stopped: its GPUs became unavailable (a node
// cordoned, NotReady, tainted, or held by pods that cannot be evicted), or the jobs the
// decision started on its nodes.
func (p *Planner) preemptReason(j *job, starts map[gpusched.JobID]map[string]int) string {
	var took []string
	for id, nodes := range starts {
		for n := range nodes {
			if _, ok := j.nodes[n]; ok {
				if o := p.jobs[id]; o != nil {
					took = append(took, o.key.Name)
				}
				break
			}
		}
	}
	if len(took) > 0 {
		sort.Strings(took)
		return fmt.Sprintf("its GPUs on %s go to %s", nodeList(j.nodes), strings.Join(took, ", "))
	}
	for n := range j.nodes {
		if s, ok := p.cl.ServerIndex(n); ok {
			first, k := p.cl.GPUsOf(s)
			if un := p.bk.unavailable(); un.CountRange(first, k) > 0 {
				return fmt.Sprintf("GPUs of node %s are unavailable (cordoned, not Ready, tainted, or held by other pods)", n)
			}
		}
	}
	return "a job of higher priority waits for its GPUs"
}

// nodeList writes GPUs per node as "node a (4 GPUs), node b (4 GPUs)", by node name.
func nodeList(nodes map[string]int) string {
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "node %s (%d GPUs)", n, nodes[n])
	}
	return b.String()
}

// problem records a Warning event on obj once per distinct message.
func (p *Planner) problem(obj runtime.Object, reason, msg string) {
	if obj == nil {
		return
	}
	key := objUID(obj) + "/" + reason
	if p.events[key] == msg {
		return
	}
	p.events[key] = msg
	p.log.Info("gpusched: "+reason, "msg", msg)
	p.later(func() { p.opt.Actuator.Event(obj, true, reason, msg) })
}

func objUID(obj runtime.Object) string {
	switch o := obj.(type) {
	case *v1.Pod:
		return string(o.UID)
	case *v1.Node:
		return string(o.UID) + o.Name
	case *v1alpha1.PodGroup:
		return string(o.UID)
	}
	return fmt.Sprintf("%p", obj)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
