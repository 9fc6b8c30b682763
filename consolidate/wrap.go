package consolidate

import (
	"fmt"

	"github.com/gpusched/gpusched"
)

// Scheduler wraps another scheduler and consolidates its decisions with Apply. It forwards
// completion reports to the wrapped scheduler when that one observes them. Like most
// schedulers it keeps scratch state between calls: it is not safe for concurrent use. Build
// it with Wrap: the zero value (or a nil pointer) wraps nothing, and its Schedule and
// RestoreState return an error wrapping ErrInvalidOptions.
//
// Deprecated: use WrapScheduler, which returns it as a gpusched.Scheduler (its Stateful and
// CompletionObserver methods, and Unwrap, reached by type assertion); removed in v0.4.0.
type Scheduler struct {
	inner gpusched.Scheduler
	c     *Consolidator
	moves int
}

// WrapScheduler returns s with consolidating migrations (Consolidator.Apply) added to its
// decisions. The result forwards completion reports to s when s observes them, saves and
// restores s's state with its own (gpusched.Stateful), and returns s from
// Unwrap() gpusched.Scheduler. Like most schedulers it is not safe for concurrent use.
func WrapScheduler(s gpusched.Scheduler, opt Options) (gpusched.Scheduler, error) {
	w, err := Wrap(s, opt)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Wrap returns s with consolidating migrations added to its decisions.
//
// Deprecated: use WrapScheduler; removed in v0.4.0.
func Wrap(s gpusched.Scheduler, opt Options) (*Scheduler, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no scheduler to wrap", ErrInvalidOptions)
	}
	c, err := New(opt)
	if err != nil {
		return nil, err
	}
	return &Scheduler{inner: s, c: c}, nil
}

// Schedule asks the wrapped scheduler and consolidates its decision.
func (s *Scheduler) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := s.check(); err != nil {
		return gpusched.Decision{}, err
	}
	d, err := s.inner.Schedule(v)
	if err != nil {
		return d, err
	}
	d = d.Expand(v) // Apply works on the full form
	moves, err := s.c.Apply(&v, &d)
	if err != nil {
		return gpusched.Decision{}, fmt.Errorf("%s: %w", s, err)
	}
	s.moves += len(moves)
	return d, nil
}

// check refuses a nil or zero Scheduler (one not built by Wrap).
func (s *Scheduler) check() error {
	if s == nil || s.inner == nil || s.c == nil {
		return fmt.Errorf("%w: a nil or zero consolidate.Scheduler: build it with WrapScheduler", ErrInvalidOptions)
	}
	return nil
}

// JobCompleted forwards the report to the wrapped scheduler if it observes completions.
func (s *Scheduler) JobCompleted(c gpusched.Completion) {
	if s == nil {
		return
	}
	if o, ok := s.inner.(gpusched.CompletionObserver); ok {
		o.JobCompleted(c)
	}
}

// Moves returns how many migrations the wrapper has added so far.
func (s *Scheduler) Moves() int {
	if s == nil {
		return 0
	}
	return s.moves
}

// Unwrap returns the wrapped scheduler.
func (s *Scheduler) Unwrap() gpusched.Scheduler {
	if s == nil {
		return nil
	}
	return s.inner
}

// String returns the wrapped scheduler's name followed by "+consolidate".
func (s *Scheduler) String() string {
	if s == nil {
		return "<nil>+consolidate"
	}
	return fmt.Sprintf("%v+consolidate", s.inner)
}
