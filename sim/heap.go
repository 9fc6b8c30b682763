package sim

// heapItem is an element of a binary min-heap: less orders the elements, and the least is at
// the root.
type heapItem[T any] interface{ less(T) bool }

// heapPush adds e to the binary min-heap h.
func heapPush[T heapItem[T]](h *[]T, e T) {
	*h = append(*h, e)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

// heapPop removes the least element of the binary min-heap h, which must not be empty, and
// returns it.
func heapPop[T heapItem[T]](h *[]T) T {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && s[r].less(s[l]) {
			m = r
		}
		if !s[m].less(s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
