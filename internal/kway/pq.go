package kway

import "math/rand/v2"

// heapArity is the number of children of a heap node: four 16-byte items
// fill one cache line, and the tree is half as deep as a binary one.
const heapArity = 4

// gainHeap is an indexed 4-ary max-heap of vertices keyed by int64 gains.
// Ties are broken by the smaller sequence number, i.e. by insertion order,
// so behaviour is deterministic. pos[v] is v's index in the heap or -1.
type gainHeap struct {
	items []heapItem
	pos   []int32
	seq   uint32
}

type heapItem struct {
	key int64
	seq uint32
	v   int32
}

// ensure empties the heap and makes room for vertices 0..n-1, keeping the
// invariant that pos is -1 everywhere outside the heap.
func (h *gainHeap) ensure(n int) {
	h.reset()
	if cap(h.pos) < n {
		h.pos = make([]int32, n)
		for i := range h.pos {
			h.pos[i] = -1
		}
	}
	h.pos = h.pos[:n]
}

// grow returns s resized to n, reusing its storage when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// reset empties the heap in time proportional to its size.
func (h *gainHeap) reset() {
	for _, it := range h.items {
		h.pos[it.v] = -1
	}
	h.items = h.items[:0]
	h.seq = 0
}

func (h *gainHeap) len() int { return len(h.items) }

func (h *gainHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i].v] = int32(i)
	h.pos[h.items[j].v] = int32(j)
}

func (h *gainHeap) up(i int) {
	it := h.items[i]
	for i > 0 {
		p := (i - 1) / heapArity
		q := &h.items[p]
		if !(it.key > q.key || (it.key == q.key && it.seq < q.seq)) {
			break
		}
		h.items[i] = *q
		h.pos[q.v] = int32(i)
		i = p
	}
	h.items[i] = it
	h.pos[it.v] = int32(i)
}

func (h *gainHeap) down(i int) {
	items := h.items
	n := len(items)
	it := items[i]
	for {
		first := heapArity*i + 1
		if first >= n {
			break
		}
		// the best of up to heapArity children (four items of 16 bytes:
		// one cache line)
		c := first
		ck, cs := items[c].key, items[c].seq
		for j := first + 1; j < min(first+heapArity, n); j++ {
			if k := items[j].key; k > ck || (k == ck && items[j].seq < cs) {
				c, ck, cs = j, k, items[j].seq
			}
		}
		if !(ck > it.key || (ck == it.key && cs < it.seq)) {
			break
		}
		items[i] = items[c]
		h.pos[items[c].v] = int32(i)
		i = c
	}
	items[i] = it
	h.pos[it.v] = int32(i)
}

// push inserts v with key, or updates its key if present.
func (h *gainHeap) push(v int32, key int64) {
	if i := h.pos[v]; i >= 0 {
		old := h.items[i].key
		h.items[i].key = key
		if key > old {
			h.up(int(i))
		} else if key < old {
			h.down(int(i))
		}
		return
	}
	h.seq++
	h.items = append(h.items, heapItem{key: key, seq: h.seq, v: v})
	i := len(h.items) - 1
	h.pos[v] = int32(i)
	h.up(i)
}

// add appends v (not in the heap) with key without restoring the heap
// order; call heapify after a batch of adds.
func (h *gainHeap) add(v int32, key int64) {
	h.seq++
	h.items = append(h.items, heapItem{key: key, seq: h.seq, v: v})
	h.pos[v] = int32(len(h.items) - 1)
}

// heapify restores the heap order in linear time.
func (h *gainHeap) heapify() {
	if len(h.items) < 2 {
		return
	}
	for i := (len(h.items) - 2) / heapArity; i >= 0; i-- {
		h.down(i)
	}
}

// pop removes and returns the vertex with the largest key.
func (h *gainHeap) pop() (int32, int64) {
	top := h.items[0]
	last := len(h.items) - 1
	h.swap(0, last)
	h.items = h.items[:last]
	h.pos[top.v] = -1
	if last > 0 {
		h.down(0)
	}
	return top.v, top.key
}

// remove deletes v if present.
func (h *gainHeap) remove(v int32) {
	i := int(h.pos[v])
	if i < 0 {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items = h.items[:last]
	h.pos[v] = -1
	if i < last {
		h.down(i)
		h.up(i)
	}
}

// shuffle permutes s uniformly at random (Fisher-Yates) from rng. It
// draws two 32-bit numbers from each 64-bit output and maps them to an
// index by multiplication (Lemire's method without the rejection step, a
// bias of at most len(s)/2^32): several times faster than rand.Shuffle,
// which matters because coarsening and refinement shuffle every level.
func shuffle(rng *rand.Rand, s []int32) {
	var bits uint64
	have := 0
	for i := len(s) - 1; i > 0; i-- {
		if have == 0 {
			bits, have = rng.Uint64(), 2
		}
		x := uint32(bits)
		bits >>= 32
		have--
		j := int(uint64(x) * uint64(i+1) >> 32)
		s[i], s[j] = s[j], s[i]
	}
}
