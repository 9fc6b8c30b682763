package policy

import (
	"io"
	"maps"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/statejson"
	"github.com/gpusched/gpusched/topology"
)

// stateVersion is the version of the policies' saved state (gpusched.Stateful). The policies that keep state between calls save it as
// versioned JSON, {"kind": ..., "version": 1, ...}, with per-job values in columns (entry i of
// every column belongs to job ids[i], ids sorted):
//
//	sjf              {"ids": [...], "sizes": [...]}                    size over weight, as first computed
//	srpt-oracle      {"ids": [...], "step_times": [...]}               time per iteration at the best placement
//	tiresias         {"ids", "queues", "entered", "base_attained", "base_executed", "first_run", "promotions"}
//	sjf-bco          {"mode": "online"|"batch", "ids", "iterations", "plan": {...} or null}
//	list-scheduling  {"load": [...], "last": t, "previous": [[GPU ids], ...]}
//	random           {"source": "<base64 of the PCG state>"}
//
// Values that may be infinite or NaN (SJF's sizes, Tiresias' first run, plan times) are
// written as numbers when finite and as "+Inf", "-Inf" or "NaN" otherwise. FIFO, FirstFit and
// GADGET keep no state between calls and have nothing to save; the admission gate in front of
// every policy keeps only verdicts that it recomputes identically, so none is saved.
//
// A host builds the policy again with the same options and calls RestoreState before its first
// Schedule call; every later decision is then the one the saved policy would have made. Bad,
// foreign or other-version data is refused with an error wrapping gpusched.ErrBadState, and
// the policy is left unchanged.
const stateVersion = 1

// byID returns the keys of m in order.
func byID[V any](m map[gpusched.JobID]V) []gpusched.JobID {
	ids := slices.AppendSeq(make([]gpusched.JobID, 0, len(m)), maps.Keys(m))
	slices.Sort(ids)
	return ids
}

// checkIDs returns an error for an empty or repeated id, or columns of other lengths than ids.
func checkIDs(kind string, ids []gpusched.JobID, columns ...int) error {
	for _, n := range columns {
		if n != len(ids) {
			return statejson.Errorf(kind, "columns of %d ids and %d values", len(ids), n)
		}
	}
	seen := make(map[gpusched.JobID]struct{}, len(ids))
	for _, id := range ids {
		if id == "" {
			return statejson.Errorf(kind, "a job without an id")
		}
		if _, dup := seen[id]; dup {
			return statejson.Errorf(kind, "job %q is listed twice", id)
		}
		seen[id] = struct{}{}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// SJF

type sjfState struct {
	statejson.Header
	IDs   []gpusched.JobID  `json:"ids"`
	Sizes []statejson.Float `json:"sizes"`
}

// SaveState writes SJF's state: the size over weight it fixed for each job in the system (kind
// "sjf", version 1). A predictor behind SJFOptions.Size keeps its own state, which the host
// saves with it.
func (s *sjfPolicy) SaveState(w io.Writer) error {
	if err := s.ready(); err != nil {
		return err
	}
	out := sjfState{Header: statejson.Header{Kind: "sjf", Version: stateVersion}, IDs: byID(s.sizes)}
	out.Sizes = make([]statejson.Float, len(out.IDs))
	for i, id := range out.IDs {
		out.Sizes[i] = statejson.Float(s.sizes[id])
	}
	return statejson.Encode(w, &out)
}

// RestoreState replaces SJF's state by one SaveState wrote. Sizes may be infinite, not NaN.
func (s *sjfPolicy) RestoreState(r io.Reader) error {
	if err := s.ready(); err != nil {
		return err
	}
	var in sjfState
	if err := statejson.Decode(r, "sjf", stateVersion, &in); err != nil {
		return err
	}
	if err := checkIDs("sjf", in.IDs, len(in.Sizes)); err != nil {
		return err
	}
	sizes := make(map[gpusched.JobID]float64, len(in.IDs))
	for i, id := range in.IDs {
		if math.IsNaN(float64(in.Sizes[i])) {
			return statejson.Errorf("sjf", "job %q: size is NaN", id)
		}
		sizes[id] = float64(in.Sizes[i])
	}
	s.sizes = sizes
	s.follow.reset() // the kept order is rebuilt from the next view
	return nil
}

// SRPT-oracle

type oracleState struct {
	statejson.Header
	IDs       []gpusched.JobID `json:"ids"`
	StepTimes []float64        `json:"step_times"`
}

// SaveState writes the oracle's state: the time per iteration it fixed for each job in the
// system, which later decisions rank by even if the cluster changes (kind "srpt-oracle",
// version 1).
func (s *oraclePolicy) SaveState(w io.Writer) error {
	if err := s.ready(); err != nil {
		return err
	}
	out := oracleState{Header: statejson.Header{Kind: "srpt-oracle", Version: stateVersion}, IDs: byID(s.tau)}
	out.StepTimes = make([]float64, len(out.IDs))
	for i, id := range out.IDs {
		out.StepTimes[i] = s.tau[id]
	}
	return statejson.Encode(w, &out)
}

// RestoreState replaces the oracle's state by one SaveState wrote.
func (s *oraclePolicy) RestoreState(r io.Reader) error {
	if err := s.ready(); err != nil {
		return err
	}
	var in oracleState
	if err := statejson.Decode(r, "srpt-oracle", stateVersion, &in); err != nil {
		return err
	}
	if err := checkIDs("srpt-oracle", in.IDs, len(in.StepTimes)); err != nil {
		return err
	}
	tau := make(map[gpusched.JobID]float64, len(in.IDs))
	for i, id := range in.IDs {
		if x := in.StepTimes[i]; !(x > 0) || !finite(x) {
			return statejson.Errorf("srpt-oracle", "job %q: time per iteration %v s must be finite and > 0", id, x)
		}
		tau[id] = in.StepTimes[i]
	}
	s.tau = tau
	s.forgetJobs()
	s.follow.reset()
	return nil
}

// Tiresias

type tiresiasState struct {
	statejson.Header
	IDs          []gpusched.JobID  `json:"ids"`
	Queues       []int             `json:"queues"`
	Entered      []float64         `json:"entered"`
	BaseAttained []float64         `json:"base_attained"`
	BaseExecuted []float64         `json:"base_executed"`
	FirstRun     []statejson.Float `json:"first_run"`
	Promotions   []int             `json:"promotions"`
	// GittinsSample is 2D-Gittins' learned distribution of finished jobs' service, sorted
	// (absent for the other orders, so that their state is unchanged).
	GittinsSample []float64 `json:"gittins_sample,omitempty"`
}

// SaveState writes Tiresias' state: for each job in the system its queue, when it entered it,
// its attained service and executed time when it last entered the first queue, its first run
// since then (NaN: none yet) and its promotions (kind "tiresias", version 1).
func (t *tiresiasPolicy) SaveState(w io.Writer) error {
	if err := t.ready(); err != nil {
		return err
	}
	ids := byID(t.jobs)
	n := len(ids)
	out := tiresiasState{Header: statejson.Header{Kind: "tiresias", Version: stateVersion}, IDs: ids,
		Queues: make([]int, 0, n), Entered: make([]float64, 0, n), BaseAttained: make([]float64, 0, n),
		BaseExecuted: make([]float64, 0, n), FirstRun: make([]statejson.Float, 0, n), Promotions: make([]int, 0, n)}
	for _, id := range out.IDs {
		j := t.jobs[id]
		out.Queues = append(out.Queues, j.queue)
		out.Entered = append(out.Entered, j.entered)
		out.BaseAttained = append(out.BaseAttained, j.baseAtt)
		out.BaseExecuted = append(out.BaseExecuted, j.baseExec)
		out.FirstRun = append(out.FirstRun, statejson.Float(j.firstRun))
		out.Promotions = append(out.Promotions, j.promotion)
	}
	if t.gittins != nil {
		t.gittins.merge()
		out.GittinsSample = t.gittins.sample
	}
	return statejson.Encode(w, &out)
}

// RestoreState replaces Tiresias' state by one SaveState wrote. A job's queue must exist under
// this scheduler's thresholds.
func (t *tiresiasPolicy) RestoreState(r io.Reader) error {
	if err := t.ready(); err != nil {
		return err
	}
	const kind = "tiresias"
	var in tiresiasState
	if err := statejson.Decode(r, kind, stateVersion, &in); err != nil {
		return err
	}
	if err := checkIDs(kind, in.IDs, len(in.Queues), len(in.Entered), len(in.BaseAttained), len(in.BaseExecuted),
		len(in.FirstRun), len(in.Promotions)); err != nil {
		return err
	}
	jobs := make(map[gpusched.JobID]*tirJob, len(in.IDs))
	for i, id := range in.IDs {
		j := &tirJob{hint: -1, queue: in.Queues[i], entered: in.Entered[i], baseAtt: in.BaseAttained[i], baseExec: in.BaseExecuted[i],
			firstRun: float64(in.FirstRun[i]), promotion: in.Promotions[i]}
		switch {
		case j.queue < 0 || j.queue > len(t.opt.Thresholds):
			return statejson.Errorf(kind, "job %q: queue %d, this scheduler has queues 0..%d", id, j.queue, len(t.opt.Thresholds))
		case !finite(j.entered) || !finite(j.baseAtt) || !finite(j.baseExec) || math.IsInf(j.firstRun, 0):
			return statejson.Errorf(kind, "job %q: times and services must be finite", id)
		case j.promotion < 0:
			return statejson.Errorf(kind, "job %q: %d promotions", id, j.promotion)
		}
		jobs[id] = j
	}
	if len(in.GittinsSample) > 0 && t.gittins == nil {
		return statejson.Errorf(kind, "the state has a Gittins distribution; this scheduler does not order by Gittins index")
	}
	for i, s := range in.GittinsSample {
		if !(s > 0) || math.IsInf(s, 1) || (i > 0 && s < in.GittinsSample[i-1]) {
			return statejson.Errorf(kind, "gittins_sample[%d] = %v: want finite, positive and sorted values", i, s)
		}
	}
	if t.gittins != nil {
		t.gittins.sample, t.gittins.prefix = nil, nil
		t.gittins.added = append(t.gittins.added[:0], in.GittinsSample...)
		t.gittins.merge()
	}
	t.jobs = jobs
	t.byPos.reset()
	t.follow.reset()
	return nil
}

// SJF-BCO

type bcoState struct {
	statejson.Header
	Mode       string           `json:"mode"`
	IDs        []gpusched.JobID `json:"ids"`
	Iterations []float64        `json:"iterations"`
	Plan       *savedPlan       `json:"plan"`
	// Cluster is the cluster the batch plan was made for (batch mode; absent in states
	// written before it was saved, which then take the first cluster seen).
	Cluster *topology.Cluster `json:"cluster,omitempty"`
	// Following tells whether batch mode is following the plan (false after a cluster change
	// dropped it and nothing was waiting to plan afresh); absent in older states, which then
	// follow the plan.
	Following *bool `json:"following,omitempty"`
}

type savedPlan struct {
	Kappa    int              `json:"kappa"`
	Theta    statejson.Float  `json:"theta"`
	Makespan statejson.Float  `json:"makespan"`
	Jobs     []savedPlacement `json:"jobs"`
}

type savedPlacement struct {
	ID    gpusched.JobID   `json:"id"`
	GPUs  []topology.GPUID `json:"gpus"`
	Start statejson.Float  `json:"start"`
	End   statejson.Float  `json:"end"`
}

func (s *sjfbcoPolicy) mode() string {
	if s.opt.Batch {
		return "batch"
	}
	return "online"
}

// SaveState writes SJF-BCO's state: the iteration estimate it fixed for each job in the
// system, and its last plan, which batch mode follows until every job of it has started, with
// the cluster it was made for (kind "sjf-bco", version 1). A predictor behind SJFBCOOptions.Iterations keeps its own state.
func (s *sjfbcoPolicy) SaveState(w io.Writer) error {
	if err := s.ready(); err != nil {
		return err
	}
	ids := byID(s.iters)
	out := bcoState{Header: statejson.Header{Kind: "sjf-bco", Version: stateVersion}, Mode: s.mode(), IDs: ids,
		Iterations: make([]float64, 0, len(ids))}
	for _, id := range out.IDs {
		out.Iterations = append(out.Iterations, s.iters[id])
	}
	if p := s.last; p != nil {
		out.Plan = &savedPlan{Kappa: p.Kappa, Theta: statejson.Float(p.Theta), Makespan: statejson.Float(p.Makespan)}
		for _, pl := range p.Jobs {
			out.Plan.Jobs = append(out.Plan.Jobs, savedPlacement{ID: pl.Job.ID, GPUs: pl.GPUs, Start: statejson.Float(pl.Start), End: statejson.Float(pl.End)})
		}
	}
	if s.opt.Batch {
		following := s.batch != nil
		out.Cluster, out.Following = s.planned, &following
	}
	return statejson.Encode(w, &out)
}

// RestoreState replaces SJF-BCO's state by one SaveState wrote, in the same mode (online or
// batch). The restored plan's placements (LastPlan) name their jobs by a Job that carries only
// its ID and GPU count, until the next plan.
func (s *sjfbcoPolicy) RestoreState(r io.Reader) error {
	if err := s.ready(); err != nil {
		return err
	}
	const kind = "sjf-bco"
	var in bcoState
	if err := statejson.Decode(r, kind, stateVersion, &in); err != nil {
		return err
	}
	if in.Mode != s.mode() {
		return statejson.Errorf(kind, "the state is of the %q mode, this scheduler runs in the %q mode", in.Mode, s.mode())
	}
	if err := checkIDs(kind, in.IDs, len(in.Iterations)); err != nil {
		return err
	}
	iters := make(map[gpusched.JobID]float64, len(in.IDs))
	for i, id := range in.IDs {
		if !finiteNonNeg(in.Iterations[i]) {
			return statejson.Errorf(kind, "job %q: %v iterations", id, in.Iterations[i])
		}
		iters[id] = in.Iterations[i]
	}
	var plan *BCOPlan
	if p := in.Plan; p != nil {
		plan = &BCOPlan{Kappa: p.Kappa, Theta: float64(p.Theta), Makespan: float64(p.Makespan)}
		seen := map[gpusched.JobID]bool{}
		for _, pl := range p.Jobs {
			switch {
			case pl.ID == "" || seen[pl.ID]:
				return statejson.Errorf(kind, "plan: job %q is empty or listed twice", pl.ID)
			case len(pl.GPUs) == 0:
				return statejson.Errorf(kind, "plan: job %q has no GPUs", pl.ID)
			case slices.ContainsFunc(pl.GPUs, func(g topology.GPUID) bool { return g < 0 }):
				return statejson.Errorf(kind, "plan: job %q has a negative GPU id", pl.ID)
			}
			seen[pl.ID] = true
			plan.Jobs = append(plan.Jobs, BCOPlacement{Job: &gpusched.Job{ID: pl.ID, GPUs: len(pl.GPUs)}, GPUs: pl.GPUs,
				Start: float64(pl.Start), End: float64(pl.End)})
		}
	}
	s.iters, s.last = iters, plan
	s.batch, s.done, s.planned = nil, nil, nil
	if s.opt.Batch {
		s.planned = in.Cluster
	}
	if s.opt.Batch && plan != nil && (in.Following == nil || *in.Following) {
		s.batch, s.done = plan.Jobs, make([]bool, len(plan.Jobs))
		s.checkBatch = true
	}
	return nil
}

// List-Scheduling

type listState struct {
	statejson.Header
	Load     []float64          `json:"load"`
	Last     float64            `json:"last"`
	Previous [][]topology.GPUID `json:"previous"`
}

// SaveState writes List-Scheduling's state: each GPU's accumulated busy time, the time of the
// last call, and the GPUs of the jobs it left running then, which keep loading until the next
// call, as one list (kind "list-scheduling", version 1; a state listing them per job, as
// earlier versions wrote it, restores the same).
func (l *listPolicy) SaveState(w io.Writer) error {
	if err := l.ready(); err != nil {
		return err
	}
	return statejson.Encode(w, &listState{Header: statejson.Header{Kind: "list-scheduling", Version: stateVersion},
		Load: l.load, Last: l.last, Previous: [][]topology.GPUID{l.busy.Slice()}})
}

// RestoreState replaces List-Scheduling's state by one SaveState wrote.
func (l *listPolicy) RestoreState(r io.Reader) error {
	if err := l.ready(); err != nil {
		return err
	}
	const kind = "list-scheduling"
	var in listState
	if err := statejson.Decode(r, kind, stateVersion, &in); err != nil {
		return err
	}
	if !finite(in.Last) {
		return statejson.Errorf(kind, "last call at %v s", in.Last)
	}
	for g, x := range in.Load {
		if !finiteNonNeg(x) {
			return statejson.Errorf(kind, "GPU %d: load %v s", g, x)
		}
	}
	for _, gpus := range in.Previous {
		if slices.ContainsFunc(gpus, func(g topology.GPUID) bool { return g < 0 }) {
			return statejson.Errorf(kind, "a placement with a negative GPU id: %v", gpus)
		}
	}
	busy := topology.NewGPUSet(len(in.Load))
	for _, gpus := range in.Previous {
		for _, g := range gpus {
			busy.Add(g)
		}
	}
	l.load, l.last, l.busy = in.Load, in.Last, busy
	return nil
}

// Random

type randomState struct {
	statejson.Header
	Source []byte `json:"source"`
}

// SaveState writes Random's state: its random source (a PCG, as encoding.BinaryMarshaler
// writes it, in base64), so that a restored Random draws the same numbers (kind "random",
// version 1).
func (r *randomPolicy) SaveState(w io.Writer) error {
	if err := r.ready(); err != nil {
		return err
	}
	b, err := r.src.MarshalBinary()
	if err != nil {
		return err
	}
	return statejson.Encode(w, &randomState{Header: statejson.Header{Kind: "random", Version: stateVersion}, Source: b})
}

// RestoreState replaces Random's state by one SaveState wrote.
func (r *randomPolicy) RestoreState(rd io.Reader) error {
	if err := r.ready(); err != nil {
		return err
	}
	var in randomState
	if err := statejson.Decode(rd, "random", stateVersion, &in); err != nil {
		return err
	}
	// Unmarshal into a copy, so that a failure leaves the source as it was.
	src := *r.src
	if err := src.UnmarshalBinary(in.Source); err != nil {
		return statejson.Errorf("random", "source: %v", err)
	}
	*r.src = src
	return nil
}

// compile-time checks: the stateful policies implement gpusched.Stateful.
var (
	_ gpusched.Stateful = (*sjfPolicy)(nil)
	_ gpusched.Stateful = (*oraclePolicy)(nil)
	_ gpusched.Stateful = (*tiresiasPolicy)(nil)
	_ gpusched.Stateful = (*sjfbcoPolicy)(nil)
	_ gpusched.Stateful = (*listPolicy)(nil)
	_ gpusched.Stateful = (*randomPolicy)(nil)
)
