// Package statejson holds what the schedulers' SaveState and RestoreState methods
// (gpusched.Stateful) share: the header every saved state begins with, strict decoding whose
// errors wrap gpusched.ErrBadState, and a float type that also stores infinities and NaN.
//
// A saved state is one JSON object whose "kind" names what wrote it and whose "version" is the
// version of its encoding, followed by the writer's own fields:
//
//	{"kind": "tiresias", "version": 1, "jobs": [...]}
//
// Finite float64 values are written by encoding/json in the shortest form that reads back to
// the same bits, so they round-trip exactly. Fields that may hold an infinity or NaN use Float,
// which writes them as the strings "+Inf", "-Inf" and "NaN".
//
// States are written with encoding/json and read with FastUnmarshal, a strict one-pass
// decoder of the same forms (several times faster than encoding/json on the states of A-SRPT
// with its forest: benchmarks/host-31.md), which hands whatever it does not read, errors
// included, back to encoding/json: the values and errors are encoding/json's either way.
// CheckFast is its differential check for the packages' tests.
package statejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/gpusched/gpusched"
)

// Header begins every saved state: the kind of value that wrote it and the version of the
// encoding. Embed it in the saved struct.
type Header struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
}

// Encode writes v to w as compact JSON followed by a newline.
func Encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Decode reads all of r and decodes it into v, a pointer to a struct that embeds Header, after
// checking that the data is one JSON object of the given kind and version. Unknown fields and
// trailing data are errors. Every error wraps gpusched.ErrBadState and names the kind; v may be
// partly filled when Decode fails, so decode into a fresh value.
func Decode(r io.Reader, kind string, version int, v any) error {
	data, err := ReadAll(r)
	if err != nil {
		return fmt.Errorf("%w: %s: reading: %w", gpusched.ErrBadState, kind, err)
	}
	return Unmarshal(data, kind, version, v)
}

// Unmarshal is Decode from a byte slice.
func Unmarshal(data []byte, kind string, version int, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%w: %s: no data", gpusched.ErrBadState, kind)
	}
	// One strict pass into v: FastUnmarshal's, or, where it gives up, encoding/json's (which
	// scans the data twice in it); the header is checked after it, and read on its own only
	// to explain a failure.
	var err error
	if !FastUnmarshal(data, v) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
		if err == nil {
			if _, end := dec.Token(); !errors.Is(end, io.EOF) {
				err = errTrailing
			}
		}
	}
	var h Header
	if err != nil {
		var raw json.RawMessage
		if json.NewDecoder(bytes.NewReader(data)).Decode(&raw) != nil || json.Unmarshal(raw, &h) != nil {
			h = Header{Kind: kind, Version: version} // not even a header: report err
		}
	} else if hv, ok := v.(interface{ header() Header }); ok {
		h = hv.header()
	} else {
		if err := json.Unmarshal(data, &h); err != nil {
			return fmt.Errorf("%w: %s: %v", gpusched.ErrBadState, kind, err)
		}
	}
	switch {
	case h.Kind == "":
		return fmt.Errorf("%w: %s: no \"kind\" field: not a saved scheduler state", gpusched.ErrBadState, kind)
	case h.Kind != kind:
		return fmt.Errorf("%w: %s: the data is the state of %q", gpusched.ErrBadState, kind, h.Kind)
	case h.Version != version:
		return fmt.Errorf("%w: %s: version %d, this code reads version %d", gpusched.ErrBadState, kind, h.Version, version)
	case err != nil:
		return fmt.Errorf("%w: %s: %v", gpusched.ErrBadState, kind, err)
	}
	return nil
}

var errTrailing = errors.New("trailing data after the state")

// header returns the header itself: Unmarshal reads it from the decoded value.
func (h *Header) header() Header { return *h }

// Errorf returns an error wrapping gpusched.ErrBadState that names the kind: "<ErrBadState>:
// kind: message".
func Errorf(kind, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", gpusched.ErrBadState, kind, fmt.Sprintf(format, args...))
}

// Float is a float64 whose JSON form is a number when it is finite and the string "+Inf",
// "-Inf" or "NaN" otherwise.
type Float float64

// MarshalJSON writes f as a number, or as "+Inf", "-Inf" or "NaN".
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	switch {
	case math.IsInf(x, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(x, -1):
		return []byte(`"-Inf"`), nil
	case math.IsNaN(x):
		return []byte(`"NaN"`), nil
	}
	return json.Marshal(x)
}

// UnmarshalJSON reads a number or one of the strings "+Inf", "-Inf" and "NaN".
func (f *Float) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"+Inf"`:
		*f = Float(math.Inf(1))
		return nil
	case `"-Inf"`:
		*f = Float(math.Inf(-1))
		return nil
	case `"NaN"`:
		*f = Float(math.NaN())
		return nil
	}
	x, err := strconv.ParseFloat(string(b), 64)
	if err != nil || len(b) == 0 || !(b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) {
		return fmt.Errorf("statejson: %.40q is not a number, \"+Inf\", \"-Inf\" or \"NaN\"", b)
	}
	*f = Float(x)
	return nil
}
