package statejson

import "io"

// CountWriter counts the bytes written through it to W.
type CountWriter struct {
	W io.Writer
	N int64
}

// Write writes p to W and adds what W took to N.
func (c *CountWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// Holdback writes on to W all but the last two bytes written to it, which it keeps in Tail (an
// encoded object's "}\n", so that more fields can follow). N counts the bytes written to it.
type Holdback struct {
	W    io.Writer
	Tail []byte
	N    int
}

// Write passes p on to W but for the last two bytes written so far, which stay in Tail.
func (h *Holdback) Write(p []byte) (int, error) {
	h.N += len(p)
	if len(h.Tail)+len(p) <= 2 {
		h.Tail = append(h.Tail, p...)
		return len(p), nil
	}
	out := len(h.Tail) + len(p) - 2 // bytes that go out now
	if out <= len(h.Tail) {
		if _, err := h.W.Write(h.Tail[:out]); err != nil {
			return 0, err
		}
		h.Tail = append(h.Tail[out:], p...)
		return len(p), nil
	}
	if _, err := h.W.Write(h.Tail); err != nil {
		return 0, err
	}
	if _, err := h.W.Write(p[:len(p)-2]); err != nil {
		return 0, err
	}
	h.Tail = append(h.Tail[:0], p[len(p)-2:]...)
	return len(p), nil
}
