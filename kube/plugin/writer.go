package plugin

import (
	"context"
	"sync"
)

// statusWriter makes the status writes the planner asks for (pending reasons on pods, PodGroup
// statuses) off the decision path, through its own API client and rate limiter, so that a
// burst of them (5,000 jobs queued at once: 10,000 writes) never queues the scheduler's
// bindings behind it. Writes are coalesced by object (only the latest write of an object is
// made) and made by a few workers, urgent ones (a started or running gang's PodGroup) before
// the others (pending reasons).
type statusWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]*statusWrite
	urgent  []string // keys, oldest first
	later   []string
	closed  bool
	written int // writes made (tests)
}

type statusWrite struct {
	urgent bool
	do     func(ctx context.Context)
}

func newStatusWriter() *statusWriter {
	w := &statusWriter{pending: map[string]*statusWrite{}}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// push queues the write of an object; it replaces one queued for the same key.
func (w *statusWriter) push(key string, urgent bool, do func(ctx context.Context)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.pending[key]
	switch {
	case prev == nil && urgent:
		w.urgent = append(w.urgent, key)
	case prev == nil:
		w.later = append(w.later, key)
	case urgent && !prev.urgent:
		w.urgent = append(w.urgent, key) // its entry in later is skipped when taken
	}
	w.pending[key] = &statusWrite{urgent: urgent || (prev != nil && prev.urgent), do: do}
	w.cond.Signal()
}

// next takes the next write: urgent first. It waits for one; ok is false once closed.
func (w *statusWriter) next() (do func(ctx context.Context), ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		if w.closed {
			return nil, false
		}
		for _, lane := range []*[]string{&w.urgent, &w.later} {
			for len(*lane) > 0 {
				key := (*lane)[0]
				*lane = (*lane)[1:]
				if s := w.pending[key]; s != nil {
					delete(w.pending, key)
					w.written++
					return s.do, true
				}
			}
		}
		w.cond.Wait()
	}
}

// run makes the writes with n workers until ctx ends.
func (w *statusWriter) run(ctx context.Context, n int) {
	for range n {
		go func() {
			for {
				do, ok := w.next()
				if !ok {
					return
				}
				do(ctx)
			}
		}()
	}
	go func() {
		<-ctx.Done()
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		w.cond.Broadcast()
	}()
}
