package srpt

// entry is one released, unfinished job inside the offline simulation. pos is
// the job's position in (release, ID) order, so comparing (key, pos) is the
// documented tie-break: key, then release, then ID.
type entry struct {
	key float64 // remaining size, or remaining size / weight
	rem float64 // remaining size
	pos int32
}

func (a entry) less(b entry) bool {
	return a.key < b.key || (a.key == b.key && a.pos < b.pos)
}

// minHeap is a binary min-heap of entries; hand-written so that the hot loop
// has no interface calls and no allocations beyond the backing slice.
type minHeap []entry

func (h *minHeap) push(e entry) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !e.less(s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = e
}

// pop removes the minimum. The heap must not be empty.
func (h *minHeap) pop() {
	s := *h
	n := len(s) - 1
	last := s[n]
	*h = s[:n]
	if n == 0 {
		return
	}
	s = s[:n]
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && s[c+1].less(s[c]) {
			c++
		}
		if !s[c].less(last) {
			break
		}
		s[i] = s[c]
		i = c
	}
	s[i] = last
}
