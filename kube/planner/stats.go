package planner

import "time"

// counters are the planner's running totals (p.mu held); Stats copies them.
type counters struct {
	evictions   int // pods evicted (the API server accepted the eviction)
	blocked     int // evictions refused with 429 (a PodDisruptionBudget)
	evictErrors int // evictions that failed otherwise (time-outs included)
	unstarted   int // started jobs taken back because their gang did not bind
	stateWrites int // saves of the state to the Store
	stateBytes  int // size of the last state saved, in bytes
	lastDecide  time.Duration
}

// Stats are the planner's counters and gauges, for metrics and tests.
type Stats struct {
	// Decisions is the number of decisions made (Sync calls that reached the scheduler or not).
	Decisions int
	// Pending and Running are the jobs the scheduler holds waiting and running; Blocked the
	// pods whose eviction a PodDisruptionBudget refuses now.
	Pending, Running, Blocked int
	// Evictions counts the pods evicted, EvictionsRefused the evictions refused with 429
	// Too Many Requests, EvictionErrors the evictions that failed otherwise.
	Evictions, EvictionsRefused, EvictionErrors int
	// Unstarted counts the jobs taken back after a decision started them because their gang
	// did not bind (Options.BindTimeout, pods gone, no node fits a pod).
	Unstarted int
	// StateWrites counts the saves of the state to the Store, StateBytes is the size of the
	// last one in bytes.
	StateWrites, StateBytes int
	// LastDecision is the wall time the last decision took.
	LastDecision time.Duration
}

// Stats returns the planner's counters and gauges.
func (p *Planner) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Stats{
		Decisions: p.syncs, Blocked: len(p.blocked),
		Evictions: p.metrics.evictions, EvictionsRefused: p.metrics.blocked, EvictionErrors: p.metrics.evictErrors,
		Unstarted: p.metrics.unstarted, StateWrites: p.metrics.stateWrites, StateBytes: p.metrics.stateBytes,
		LastDecision: p.metrics.lastDecide,
	}
	for _, j := range p.jobs {
		if !j.held {
			continue
		}
		if p.bk != nil && p.bk.running(j.id) {
			st.Running++
		} else {
			st.Pending++
		}
	}
	return st
}
