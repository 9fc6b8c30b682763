package consolidate

import (
	"fmt"

	"github.com/gpusched/gpusched"
)

// Scheduler wraps another scheduler and consolidates its decisions with Apply. It forwards
// completion reports to the wrapped scheduler when that one observes them. Like most
// schedulers it keeps scratch state between calls: it is not safe for concurrent use.
type Scheduler struct {
	inner gpusched.Scheduler
	c     *Consolidator
	moves int
}

// Wrap returns s with consolidating migrations added to its decisions.
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

// JobCompleted forwards the report to the wrapped scheduler if it observes completions.
func (s *Scheduler) JobCompleted(c gpusched.Completion) {
	if o, ok := s.inner.(gpusched.CompletionObserver); ok {
		o.JobCompleted(c)
	}
}

// Moves returns how many migrations the wrapper has added so far.
func (s *Scheduler) Moves() int { return s.moves }

// Unwrap returns the wrapped scheduler.
func (s *Scheduler) Unwrap() gpusched.Scheduler { return s.inner }

// String returns the wrapped scheduler's name followed by "+consolidate".
func (s *Scheduler) String() string { return fmt.Sprintf("%v+consolidate", s.inner) }
