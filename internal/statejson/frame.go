package statejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gpusched/gpusched"
)

// A framed state is a header and opaque parts, for states that nest large states of their own
// (a base of saves by changes): decoding a JSON value that holds another as a field scans the
// inner one again at every level, while a framed state's parts are sliced out unread. Its form:
// the header as one line of JSON (an object of the given kind and version), the parts' lengths
// as one line (a JSON array of byte counts), then the parts one after the other.

// EncodeFramed writes header (a struct that embeds Header) and the parts as a framed state.
func EncodeFramed(w io.Writer, header any, parts ...[]byte) error {
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	lens := make([]int, len(parts))
	for i, p := range parts {
		lens[i] = len(p)
	}
	l, _ := json.Marshal(lens)
	b := make([]byte, 0, len(h)+len(l)+2)
	b = append(append(append(append(b, h...), '\n'), l...), '\n')
	if _, err := w.Write(b); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// IsFramed tells whether data begins as a framed state of the given kind does (its header's
// "kind" written first, as EncodeFramed writes it for a struct that embeds Header first).
func IsFramed(data []byte, kind string) bool {
	return bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte(`{"kind":"`+kind+`"`))
}

// DecodeFramed reads a framed state of the given kind and version: its header into header (as
// Unmarshal does) and its n parts, which it returns as slices of data (not copied). Every error
// wraps gpusched.ErrBadState and names the kind.
func DecodeFramed(data []byte, kind string, version int, header any, n int) ([][]byte, error) {
	data = bytes.TrimLeft(data, " \t\r\n")
	h, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil, fmt.Errorf("%w: %s: no line after the header", gpusched.ErrBadState, kind)
	}
	if err := Unmarshal(h, kind, version, header); err != nil {
		return nil, err
	}
	l, rest, ok := bytes.Cut(rest, []byte("\n"))
	var lens []int
	if !ok || json.Unmarshal(l, &lens) != nil || len(lens) != n {
		return nil, fmt.Errorf("%w: %s: not a line of %d part lengths after the header", gpusched.ErrBadState, kind, n)
	}
	parts := make([][]byte, n)
	for i, k := range lens {
		if k < 0 || k > len(rest) {
			return nil, fmt.Errorf("%w: %s: part %d of %d bytes, %d left", gpusched.ErrBadState, kind, i, k, len(rest))
		}
		parts[i], rest = rest[:k:k], rest[k:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %s: %d bytes after the parts", gpusched.ErrBadState, kind, len(rest))
	}
	return parts, nil
}

// ReadAll returns what r holds: a reader's own bytes when it has them (a *bytes.Buffer: not
// copied), else all it reads, in a buffer sized once when r tells its length (a *bytes.Reader),
// so that nested states handed from one Restore to the next are not copied at every level.
func ReadAll(r io.Reader) ([]byte, error) {
	if b, ok := r.(interface{ Bytes() []byte }); ok {
		return b.Bytes(), nil
	}
	if l, ok := r.(interface{ Len() int }); ok {
		buf := bytes.NewBuffer(make([]byte, 0, l.Len()+bytes.MinRead))
		_, err := buf.ReadFrom(r)
		return buf.Bytes(), err
	}
	return io.ReadAll(r)
}
