package consolidate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/internal/statejson"
)

// wrapState is the wrapper's saved state (kind "consolidate", version 1):
//
//	{"kind": "consolidate", "version": 1, "moves": 12, "inner": {"kind": "tiresias", ...}}
type wrapState struct {
	statejson.Header
	Moves int             `json:"moves"`
	Inner json.RawMessage `json:"inner,omitempty"`
}

// Scheduler implements gpusched.Stateful.
var _ gpusched.Stateful = (*Scheduler)(nil)

// SaveState writes the wrapper's state (gpusched.Stateful): its migration count and, when the
// wrapped scheduler implements gpusched.Stateful, the wrapped scheduler's state nested under
// "inner". The consolidation rule itself keeps nothing between calls (Apply decides from the
// view and the decision alone), so a wrapped scheduler survives a restart when its own state
// does.
func (s *Scheduler) SaveState(w io.Writer) error {
	if err := s.check(); err != nil {
		return err
	}
	out := wrapState{Header: statejson.Header{Kind: "consolidate", Version: 1}, Moves: s.moves}
	if in, ok := s.inner.(gpusched.Stateful); ok {
		var b bytes.Buffer
		if err := in.SaveState(&b); err != nil {
			return err
		}
		out.Inner = bytes.TrimSpace(b.Bytes())
	}
	return statejson.Encode(w, &out)
}

// RestoreState replaces the wrapper's state, and the wrapped scheduler's, by what SaveState
// wrote. Wrap the same kind of scheduler, built with the same options, and call it before the
// first Schedule call. Bad, foreign or other-version data, or data whose "inner" state does
// not match the wrapped scheduler (present for one that keeps none, or the converse), is
// refused with an error wrapping gpusched.ErrBadState, and nothing changes.
func (s *Scheduler) RestoreState(r io.Reader) error {
	if err := s.check(); err != nil {
		return err
	}
	var in wrapState
	if err := statejson.Decode(r, "consolidate", 1, &in); err != nil {
		return err
	}
	if in.Moves < 0 {
		return statejson.Errorf("consolidate", "%d moves", in.Moves)
	}
	inner, stateful := s.inner.(gpusched.Stateful)
	switch {
	case len(in.Inner) > 0 && !stateful:
		return statejson.Errorf("consolidate", "the state holds the wrapped scheduler's state, but %v keeps none", s.inner)
	case len(in.Inner) == 0 && stateful:
		return statejson.Errorf("consolidate", "the state holds no state of the wrapped scheduler, but %v keeps state", s.inner)
	case stateful:
		if err := inner.RestoreState(bytes.NewReader(in.Inner)); err != nil {
			if errors.Is(err, gpusched.ErrBadState) {
				return err
			}
			return statejson.Errorf("consolidate", "wrapped scheduler: %v", err)
		}
	}
	s.moves = in.Moves
	return nil
}
