package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/kube/mapping"
	"github.com/gpusched/gpusched/kube/planner"
	"github.com/gpusched/gpusched/kube/queues"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "Gpusched"

// Args are the plugin's arguments (pluginConfig args in a KubeSchedulerConfiguration).
type Args struct {
	// Scheduler names the gpusched scheduler: "asrpt" (default), "fifo", "tiresias" or
	// "first-fit" (Policies).
	Scheduler string `json:"scheduler,omitempty"`
	// Backfill lets lower-priority jobs start on GPUs the priority order leaves free.
	Backfill bool `json:"backfill,omitempty"`
	// MinRunTime is the least seconds a job runs before it may be preempted (A-SRPT,
	// Tiresias).
	MinRunTime float64 `json:"minRunTime,omitempty"`
	// NoConsolidate turns off A-SRPT's consolidating migrations.
	NoConsolidate bool `json:"noConsolidate,omitempty"`
	// RestoreTime is the seconds a restarted job spends restoring its checkpoint. Default 30.
	RestoreTime float64 `json:"restoreTime,omitempty"`
	// SchedulerNames are the schedulerName values of the profiles the plugin serves.
	// Default {"gpusched"}.
	SchedulerNames []string `json:"schedulerNames,omitempty"`
	// Mapping names labels, annotations and resources (mapping.Config).
	Mapping mapping.Config `json:"mapping,omitempty"`
	// StateNamespace and StateName name the ConfigMap that keeps the saved state. Default
	// kube-system/gpusched-state; StateName "-" keeps none.
	StateNamespace string `json:"stateNamespace,omitempty"`
	StateName      string `json:"stateName,omitempty"`
	// StatePeriodSeconds bounds how long the scheduler's own state goes unsaved while
	// decisions change nothing else (planner.Options.StatePeriod): default 30, negative never.
	StatePeriodSeconds float64 `json:"statePeriodSeconds,omitempty"`
	// TimeScale is the planner's seconds per wall-clock second. Default 1. (Tests that need
	// another clock give the planner one: Hooks.Now.)
	TimeScale float64 `json:"timeScale,omitempty"`
	// DebounceMillis is how long the planner gathers changes before it decides. Default 20.
	DebounceMillis int `json:"debounceMillis,omitempty"`
	// PermitTimeoutSeconds is how long a reserved pod waits for the rest of its gang.
	// Default 60.
	PermitTimeoutSeconds int `json:"permitTimeoutSeconds,omitempty"`
	// BindTimeoutSeconds is how long a started job's gang may take to bind before the
	// planner takes the job back (planner.Options.BindTimeout). Default 180.
	BindTimeoutSeconds int `json:"bindTimeoutSeconds,omitempty"`
	// EvictTimeoutSeconds bounds each eviction call (planner.Options.EvictTimeout).
	// Default 10.
	EvictTimeoutSeconds int `json:"evictTimeoutSeconds,omitempty"`
	// PodsGoneGraceSeconds (default 30), UnfitGraceSeconds (30) and UnstartBackoffSeconds
	// (60) are planner.Options.PodsGoneGrace, UnfitGrace and UnstartBackoff.
	PodsGoneGraceSeconds  float64 `json:"podsGoneGraceSeconds,omitempty"`
	UnfitGraceSeconds     float64 `json:"unfitGraceSeconds,omitempty"`
	UnstartBackoffSeconds float64 `json:"unstartBackoffSeconds,omitempty"`
	// StatusQPS and StatusBurst limit the plugin's status writes (pods' pending reasons,
	// PodGroup statuses), which have their own client so that a burst of them never delays
	// kube-scheduler's bindings: default 20 per second, bursts of twice that.
	StatusQPS   float64 `json:"statusQPS,omitempty"`
	StatusBurst int     `json:"statusBurst,omitempty"`
	// Queues, when set, shares the GPUs between teams' queues (guarantees, borrowing,
	// weighted fair share) around the scheduler, which orders inside and across them
	// (package queues). A job names its queue with the annotation gpusched.io/queue, or
	// belongs to the queue that lists its namespace.
	Queues *queues.Config `json:"queues,omitempty"`
	// LeaderElection, when set, lets several replicas run: only the one that holds the
	// Lease plans (and writes the state); the others hold every pod at PreEnqueue until they
	// take over, restoring the state the leader wrote. Leave kube-scheduler's own
	// leaderElection off: every replica's framework runs, and only the leader's admits pods.
	LeaderElection *LeaderElectionArgs `json:"leaderElection,omitempty"`
}

// LeaderElectionArgs name the planner's Lease and its timing.
type LeaderElectionArgs struct {
	// LeaseNamespace and LeaseName name the Lease. Default gpusched-system/gpusched-planner.
	LeaseNamespace string `json:"leaseNamespace,omitempty"`
	LeaseName      string `json:"leaseName,omitempty"`
	// LeaseDurationSeconds (default 15), RenewDeadlineSeconds (10) and RetryPeriodSeconds
	// (2) are client-go's leader election timing: a failover takes up to the lease duration.
	LeaseDurationSeconds float64 `json:"leaseDurationSeconds,omitempty"`
	RenewDeadlineSeconds float64 `json:"renewDeadlineSeconds,omitempty"`
	RetryPeriodSeconds   float64 `json:"retryPeriodSeconds,omitempty"`
}

// Plugin enforces a gpusched planner's decisions in the scheduling framework: PreEnqueue and
// PreFilter hold the pods of jobs the decision does not run, Filter, Score and Reserve put
// each pod only where the decision gave its job GPUs, Permit binds a gang all or nothing.
type Plugin struct {
	h           framework.Handle
	p           *planner.Planner
	timeout     time.Duration
	gpuResource string
	elector     *leaderelection.LeaderElector
	mapping     mapping.Config
}

// podDeleted tells the scheduling queue whether a deleted pod may let a pod the plugin
// rejected be scheduled: only when they belong to the same job (a slot of the job's GPUs came
// free). Pods of other jobs wait for the planner, which activates them when their job starts;
// without the hint every deletion would retry every waiting pod (5,000 of them, each asking
// the planner).
func (pl *Plugin) podDeleted(_ klog.Logger, pod *v1.Pod, oldObj, _ any) (framework.QueueingHint, error) {
	gone, ok := oldObj.(*v1.Pod)
	if !ok {
		if d, isTomb := oldObj.(cache.DeletedFinalStateUnknown); isTomb {
			gone, ok = d.Obj.(*v1.Pod)
		}
	}
	if !ok {
		return framework.Queue, nil
	}
	a, ok1 := pl.mapping.KeyOf(pod)
	b, ok2 := pl.mapping.KeyOf(gone)
	if ok1 && ok2 && a != b {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}

var (
	_ framework.PreEnqueuePlugin  = (*Plugin)(nil)
	_ framework.PreFilterPlugin   = (*Plugin)(nil)
	_ framework.FilterPlugin      = (*Plugin)(nil)
	_ framework.PostFilterPlugin  = (*Plugin)(nil)
	_ framework.ScorePlugin       = (*Plugin)(nil)
	_ framework.ReservePlugin     = (*Plugin)(nil)
	_ framework.PermitPlugin      = (*Plugin)(nil)
	_ framework.EnqueueExtensions = (*Plugin)(nil)
)

// Hooks let a test watch the planner (nil fields are ignored). With hooks, a replica that
// loses its planner's Lease stays up, its planner stopped (without them the process exits, as
// kube-scheduler does), so that a test can run replicas in one process.
type Hooks struct {
	// Decided is called after every applied decision.
	Decided func(planner.Decision)
	// Planner is called with the planner once it is built.
	Planner func(*planner.Planner)
	// Now, if set, is the planner's clock (planner.Options.Now): a test drives a virtual
	// clock with it.
	Now func() time.Time
}

// Factory returns the plugin's factory, for app.WithPlugin(Name, Factory(nil)).
func Factory(hooks *Hooks) frameworkruntime.PluginFactory {
	return func(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
		return New(ctx, obj, h, hooks)
	}
}

// DecodeArgs reads the plugin's arguments, with defaults.
func DecodeArgs(obj runtime.Object) (Args, error) {
	var a Args
	if obj != nil {
		if err := frameworkruntime.DecodeInto(obj, &a); err != nil {
			return Args{}, fmt.Errorf("gpusched plugin args: %w", err)
		}
	}
	if a.RestoreTime == 0 {
		a.RestoreTime = 30
	}
	if len(a.SchedulerNames) == 0 {
		a.SchedulerNames = []string{"gpusched"}
	}
	if a.StateNamespace == "" {
		a.StateNamespace = "kube-system"
	}
	if a.StateName == "" {
		a.StateName = "gpusched-state"
	}
	if a.DebounceMillis <= 0 {
		a.DebounceMillis = 20
	}
	if a.PermitTimeoutSeconds <= 0 {
		a.PermitTimeoutSeconds = 60
	}
	if a.StatusQPS <= 0 {
		a.StatusQPS = 20
	}
	if a.StatusBurst <= 0 {
		a.StatusBurst = 2 * int(math.Ceil(a.StatusQPS))
	}
	if le := a.LeaderElection; le != nil {
		if le.LeaseNamespace == "" {
			le.LeaseNamespace = "gpusched-system"
		}
		if le.LeaseName == "" {
			le.LeaseName = "gpusched-planner"
		}
		if le.LeaseDurationSeconds <= 0 {
			le.LeaseDurationSeconds = 15
		}
		if le.RenewDeadlineSeconds <= 0 {
			le.RenewDeadlineSeconds = 10
		}
		if le.RetryPeriodSeconds <= 0 {
			le.RetryPeriodSeconds = 2
		}
	}
	return a, nil
}

// New builds the plugin and starts its planner (it runs until ctx ends).
func New(ctx context.Context, obj runtime.Object, h framework.Handle, hooks *Hooks) (*Plugin, error) {
	args, err := DecodeArgs(obj)
	if err != nil {
		return nil, err
	}
	sizes := &PodSizes{}
	sched, cost, err := NewScheduler(args, sizes)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx).WithName(Name)
	// Pods of every phase (the scheduler's own informer drops finished pods, and the planner
	// sees a job finish by its pods succeeding), PodGroups.
	podFactory := informers.NewSharedInformerFactory(h.ClientSet(), 0)
	// kube-scheduler talks protobuf to the API server; custom resources speak only JSON.
	pgcfg := rest.CopyConfig(h.KubeConfig())
	pgcfg.ContentType, pgcfg.AcceptContentTypes = "application/json", "application/json"
	pgc, err := pgclient.NewForConfig(pgcfg)
	if err != nil {
		return nil, err
	}
	pgFactory := pginformers.NewSharedInformerFactory(pgc, 0)
	src := &sources{
		nodes: h.SharedInformerFactory().Core().V1().Nodes().Lister(),
		pods:  podFactory.Core().V1().Pods().Lister(),
		pgs:   pgFactory.Scheduling().V1alpha1().PodGroups().Lister(),
	}
	// Status writes: their own clients and rate limiter, so that they never hold up the
	// scheduler's bindings (which share kube-scheduler's client).
	scfg := rest.CopyConfig(pgcfg)
	scfg.QPS, scfg.Burst, scfg.RateLimiter = float32(args.StatusQPS), args.StatusBurst, nil
	scs, err := kubernetes.NewForConfig(scfg)
	if err != nil {
		return nil, err
	}
	spgc, err := pgclient.NewForConfig(scfg)
	if err != nil {
		return nil, err
	}
	act := &actuator{h: h, log: logger, ctx: ctx, cs: scs, pgc: spgc, w: newStatusWriter()}
	act.w.run(ctx, 8)
	pl := &Plugin{h: h, timeout: time.Duration(args.PermitTimeoutSeconds) * time.Second, gpuResource: string(args.Mapping.WithDefaults().GPUResource), mapping: args.Mapping.WithDefaults()}
	opt := planner.Options{
		Mapping: args.Mapping, SchedulerNames: args.SchedulerNames, Scheduler: sched, Cost: cost,
		RestoreTime: args.RestoreTime, TimeScale: args.TimeScale, Sources: src,
		Actuator: act, Debounce: time.Duration(args.DebounceMillis) * time.Millisecond,
		Logger: logger, PodSizes: sizes.Set,
		BindTimeout:    time.Duration(args.BindTimeoutSeconds) * time.Second,
		EvictTimeout:   time.Duration(args.EvictTimeoutSeconds) * time.Second,
		PodsGoneGrace:  time.Duration(args.PodsGoneGraceSeconds * float64(time.Second)),
		UnfitGrace:     time.Duration(args.UnfitGraceSeconds * float64(time.Second)),
		UnstartBackoff: time.Duration(args.UnstartBackoffSeconds * float64(time.Second)),
		StatePeriod:    time.Duration(args.StatePeriodSeconds * float64(time.Second)),
	}
	registerMetrics()
	obs := &observer{}
	opt.AfterSync = obs.observe
	opt.SchedulerName = args.Scheduler
	if opt.SchedulerName == "" {
		opt.SchedulerName = "asrpt"
	}
	if args.StateName != "-" {
		opt.Store = &planner.ConfigMapStore{Client: h.ClientSet(), Namespace: args.StateNamespace, Name: args.StateName}
	}
	if hooks != nil {
		opt.Decided = hooks.Decided
		opt.Now = hooks.Now
	}
	p, err := planner.New(opt)
	if err != nil {
		return nil, err
	}
	pl.p = p
	if hooks != nil && hooks.Planner != nil {
		hooks.Planner(p)
	}
	// Every change the planner reads kicks it; updates that change nothing it reads (the
	// pending reasons and PodGroup statuses it writes itself, node heartbeats) do not, so
	// that a storm of them does not hold its lock, which the extension points share.
	kick := func(changed func(old, new any) bool) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { p.Kick() },
			UpdateFunc: func(old, new any) {
				if changed(old, new) {
					p.Kick()
				}
			},
			DeleteFunc: func(any) { p.Kick() },
		}
	}
	for _, r := range []struct {
		inf     cache.SharedIndexInformer
		changed func(old, new any) bool
	}{
		{h.SharedInformerFactory().Core().V1().Nodes().Informer(), NodeChanged},
		{podFactory.Core().V1().Pods().Informer(), PodChanged},
		{pgFactory.Scheduling().V1alpha1().PodGroups().Informer(), PodGroupChanged},
	} {
		if _, err := r.inf.AddEventHandler(kick(r.changed)); err != nil {
			return nil, err
		}
	}
	var elector *leaderelection.LeaderElector
	if le := args.LeaderElection; le != nil {
		host, _ := os.Hostname()
		id := host + "_" + string(uuid.NewUUID())
		// The Lease has a client of its own, as kube-scheduler's leader election does: on
		// kube-scheduler's client its renewals would wait in the rate limiter behind a burst of
		// bindings, events and evictions past the renew deadline, and the leader would lose
		// the Lease while it works.
		lcfg := rest.CopyConfig(h.KubeConfig())
		lcfg.RateLimiter = nil
		lcs, err := kubernetes.NewForConfig(rest.AddUserAgent(lcfg, "gpusched-leader-election"))
		if err != nil {
			return nil, fmt.Errorf("gpusched plugin: leader election client: %w", err)
		}
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: le.LeaseNamespace, Name: le.LeaseName},
			Client:     lcs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		}
		sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
		elector, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: "gpusched-planner",
			LeaseDuration: sec(le.LeaseDurationSeconds), RenewDeadline: sec(le.RenewDeadlineSeconds), RetryPeriod: sec(le.RetryPeriodSeconds),
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					running.Add(1)
					defer running.Done()
					logger.Info("gpusched planner: leading", "identity", id)
					p.Run(lctx)
				},
				OnStoppedLeading: func() {
					logger.Info("gpusched planner: lease lost or released; this replica no longer plans", "identity", id)
					if hooks == nil && ctx.Err() == nil {
						// As kube-scheduler does when it loses its lease: restart as a follower.
						klog.FlushAndExit(klog.ExitFlushTimeout, 0)
					}
				},
			},
		})
		if err != nil {
			return nil, fmt.Errorf("gpusched plugin: leader election: %w", err)
		}
		pl.elector = elector
		p.SetLeading(elector.IsLeader)
	}
	running.Add(1)
	go func() {
		defer running.Done()
		podFactory.Start(ctx.Done())
		pgFactory.Start(ctx.Done())
		h.SharedInformerFactory().Start(ctx.Done())
		podFactory.WaitForCacheSync(ctx.Done())
		pgFactory.WaitForCacheSync(ctx.Done())
		h.SharedInformerFactory().WaitForCacheSync(ctx.Done())
		if elector != nil {
			elector.Run(ctx)
			return
		}
		p.Run(ctx)
	}()
	return pl, nil
}

// running counts the planners of this process that have not stopped (Wait).
var running sync.WaitGroup

// Wait waits, at most timeout, until every planner of the process has stopped and written its
// last state: call it after kube-scheduler's Run returns and before the process exits.
func Wait(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Leading tells whether this replica plans: it holds the planner's Lease, or leader
// election is off.
func (pl *Plugin) Leading() bool { return pl.elector == nil || pl.elector.IsLeader() }

// Planner returns the plugin's planner.
func (pl *Plugin) Planner() *planner.Planner { return pl.p }

// Name returns Name.
func (pl *Plugin) Name() string { return Name }

// PreEnqueue keeps the pods of jobs the decision does not run out of the active queue; the
// planner activates them when a decision starts their job.
func (pl *Plugin) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	if ok, why := pl.p.Admit(pod); !ok {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, why)
	}
	return nil
}

// PreFilter admits the pod as PreEnqueue does and narrows the nodes to those where its job
// has GPUs left.
func (pl *Plugin) PreFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	if ok, why := pl.p.Admit(pod); !ok {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, why)
	}
	if pl.p.Launcher(pod) {
		return nil, nil // a launcher without GPUs goes wherever it fits
	}
	left, k := pl.p.Slots(pod)
	nodes := sets.New[string]()
	for n, g := range left {
		if g >= k && k > 0 {
			nodes.Insert(n)
		}
	}
	if nodes.Len() == 0 {
		return nil, framework.NewStatus(framework.Unschedulable, "every GPU the decision gave the pod's job is taken by its other pods")
	}
	return &framework.PreFilterResult{NodeNames: nodes}, nil
}

// PreFilterExtensions returns nil.
func (pl *Plugin) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter lets a pod only onto a node where the decision gave its job GPUs that its other pods
// have not taken.
func (pl *Plugin) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pl.p.Launcher(pod) {
		return nil
	}
	left, k := pl.p.Slots(pod)
	name := ni.Node().Name
	if k == 0 || left[name] < k {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("the decision gives the pod's job no GPUs left on node %s", name))
	}
	return nil
}

// PostFilter runs when no node can hold the pod. Where other plugins' Filters (CPU, memory,
// affinity, volumes) rejected it on a node the decision gave its job, the planner is told
// (planner.Unfit) and takes the job back: the gang cannot bind as decided. It nominates no
// node (the plugin's decisions preempt, through evictions).
func (pl *Plugin) PostFilter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, m framework.NodeToStatusReader) (*framework.PostFilterResult, *framework.Status) {
	if pl.p.Launcher(pod) {
		return nil, framework.NewStatus(framework.Unschedulable, "no node can hold the launcher pod")
	}
	left, k := pl.p.Slots(pod)
	reasons := map[string]string{}
	for n, g := range left {
		if g < k {
			continue
		}
		st := m.Get(n)
		if st == nil || st.IsSuccess() || st.Plugin() == Name {
			continue
		}
		// GPUs are the planner's to count: a node short of GPUs holds pods that are still
		// terminating (the jobs the decision stopped), which will go.
		var rs []string
		for _, r := range st.Reasons() {
			if !strings.Contains(r, pl.gpuResource) {
				rs = append(rs, r)
			}
		}
		if len(rs) > 0 {
			reasons[n] = st.Plugin() + ": " + strings.Join(rs, ", ")
		}
	}
	pl.p.Unfit(pod, reasons)
	return nil, framework.NewStatus(framework.Unschedulable, "no node the decision gave the pod's job can hold it")
}

// Score prefers the nodes where the pod's job has the most GPUs left.
func (pl *Plugin) Score(_ context.Context, _ *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	left, _ := pl.p.Slots(pod)
	return min(int64(max(left[ni.Node().Name], 0)), framework.MaxNodeScore), nil
}

// ScoreExtensions returns nil.
func (pl *Plugin) ScoreExtensions() framework.ScoreExtensions { return nil }

// Reserve takes the pod's slot on the node.
func (pl *Plugin) Reserve(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	if pl.p.Launcher(pod) {
		return nil
	}
	if err := pl.p.Reserve(pod, node); err != nil {
		return framework.NewStatus(framework.Unschedulable, err.Error())
	}
	return nil
}

// Unreserve gives the slot back.
func (pl *Plugin) Unreserve(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) {
	pl.p.Unreserve(pod)
}

// Permit holds every pod of a gang until all of them are reserved, then lets them all bind.
func (pl *Plugin) Permit(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) (*framework.Status, time.Duration) {
	if pl.p.Launcher(pod) {
		return nil, 0 // admitted: its job runs
	}
	complete, members, err := pl.p.Gang(pod)
	if err != nil {
		return framework.NewStatus(framework.Unschedulable, err.Error()), 0
	}
	if !complete {
		return framework.NewStatus(framework.Wait, "waiting for the rest of the gang"), pl.timeout
	}
	for _, uid := range members {
		if uid == pod.UID {
			continue
		}
		if wp := pl.h.GetWaitingPod(uid); wp != nil {
			wp.Allow(Name)
		}
	}
	return nil, 0
}

// EventsToRegister asks for a retry of a pod the plugin rejected when a pod is deleted (its
// gang's slot may be free again) or a node changes; the planner activates the pods of jobs
// its decisions start.
func (pl *Plugin) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.Pod, ActionType: framework.Delete}, QueueingHintFn: pl.podDeleted},
		{Event: framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAllocatable | framework.UpdateNodeTaint}},
	}, nil
}

type sources struct {
	nodes interface {
		List(labels.Selector) ([]*v1.Node, error)
	}
	pods interface {
		List(labels.Selector) ([]*v1.Pod, error)
	}
	pgs pglisters.PodGroupLister
}

func (s *sources) Nodes() ([]*v1.Node, error) { return s.nodes.List(labels.Everything()) }
func (s *sources) Pods() ([]*v1.Pod, error)   { return s.pods.List(labels.Everything()) }
func (s *sources) PodGroups() ([]*v1alpha1.PodGroup, error) {
	return s.pgs.List(labels.Everything())
}

type actuator struct {
	h   framework.Handle
	log klog.Logger
	ctx context.Context
	// The status writes' own clients (their own rate limiter: Args.StatusQPS) and queue.
	cs  kubernetes.Interface
	pgc pgclient.Interface
	w   *statusWriter
}

// PodWaiting patches the pod's PodScheduled condition (False, reason GpuschedWaiting, the
// planner's reason as message) off the decision path. (The reason is not Unschedulable, which
// cluster autoscalers take as a request for nodes.)
func (a *actuator) PodWaiting(pod *v1.Pod, why string) {
	data, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": v1.PodScheduled, "status": v1.ConditionFalse, "reason": "GpuschedWaiting", "message": why,
		"lastTransitionTime": metav1.Now(),
	}}}})
	if err != nil {
		return
	}
	a.w.push("pod/"+string(pod.UID), false, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := a.cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			a.log.V(2).Info("pod condition", "pod", klog.KObj(pod), "err", err)
		}
	})
}

// PodGroupStatus patches the PodGroup's status subresource off the decision path (a merge
// patch: no conflict with other writers).
func (a *actuator) PodGroupStatus(pg *v1alpha1.PodGroup, phase v1alpha1.PodGroupPhase, running int32) {
	st := map[string]any{"phase": phase, "running": running}
	if phase == v1alpha1.PodGroupScheduling {
		st["scheduleStartTime"] = metav1.Now()
	}
	data, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return
	}
	a.w.push("podgroup/"+string(pg.UID), phase != v1alpha1.PodGroupPending, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := a.pgc.SchedulingV1alpha1().PodGroups(pg.Namespace).Patch(ctx, pg.Name, types.MergePatchType, data, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) {
			a.log.V(2).Info("PodGroup status", "podgroup", klog.KObj(pg), "err", err)
		}
	})
}

// Evict posts an Eviction for the pod once: client-go's typed Evict retries a 429 that comes
// with Retry-After (a PodDisruptionBudget's refusal) up to ten times, for about 100 s; the
// planner takes the refusal at once and asks again later itself.
func (a *actuator) Evict(ctx context.Context, pod *v1.Pod) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	err := a.h.ClientSet().PolicyV1().RESTClient().Post().AbsPath("/api/v1").
		Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("eviction").
		Body(ev).MaxRetries(0).Do(ctx).Error()
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (a *actuator) Activate(pods []*v1.Pod) {
	m := make(map[string]*v1.Pod, len(pods))
	for _, p := range pods {
		m[p.Namespace+"/"+p.Name] = p
	}
	a.h.Activate(a.log, m)
}

func (a *actuator) RejectWaiting(pod *v1.Pod) { a.h.RejectWaitingPod(pod.UID) }

func (a *actuator) Event(obj runtime.Object, warning bool, reason, msg string) {
	typ := v1.EventTypeNormal
	if warning {
		typ = v1.EventTypeWarning
	}
	if pg, ok := obj.(*v1alpha1.PodGroup); ok {
		pg = pg.DeepCopy()
		pg.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup"}
		obj = pg
	}
	a.h.EventRecorder().Eventf(obj, nil, typ, reason, "Scheduling", "%s", msg)
}

var _ gpusched.Scheduler = gpusched.SchedulerFunc(nil)
