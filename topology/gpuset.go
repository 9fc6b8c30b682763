package topology

import (
	"math/bits"
	"strconv"
	"strings"
)

// GPUSet is a set of GPU ids stored as a bitset: membership, insertion and removal are O(1),
// counting and iteration are O(n/64). The zero value is an empty set that grows on Add. A GPUSet
// must be copied with Clone: plain assignment shares the storage.
type GPUSet struct {
	words []uint64
}

// NewGPUSet returns an empty set with room for GPUs 0..n-1 (it grows beyond if needed).
func NewGPUSet(n int) GPUSet {
	if n < 0 {
		n = 0
	}
	return GPUSet{words: make([]uint64, (n+63)/64)}
}

// SetOf returns a set holding the given GPUs. Negative ids are ignored.
func SetOf(gpus ...GPUID) GPUSet {
	var s GPUSet
	for _, g := range gpus {
		s.Add(g)
	}
	return s
}

// Add inserts g. Negative ids are ignored.
func (s *GPUSet) Add(g GPUID) {
	if g < 0 {
		return
	}
	w := int(g) >> 6
	for w >= len(s.words) {
		s.words = append(s.words, 0)
	}
	s.words[w] |= 1 << (uint(g) & 63)
}

// Remove deletes g if present.
func (s *GPUSet) Remove(g GPUID) {
	w := int(g) >> 6
	if g < 0 || w >= len(s.words) {
		return
	}
	s.words[w] &^= 1 << (uint(g) & 63)
}

// Contains reports whether g is in the set.
func (s GPUSet) Contains(g GPUID) bool {
	w := int(g) >> 6
	return g >= 0 && w < len(s.words) && s.words[w]&(1<<(uint(g)&63)) != 0
}

// Len returns the number of GPUs in the set.
func (s GPUSet) Len() int {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// Clone returns an independent copy of s.
func (s GPUSet) Clone() GPUSet {
	return GPUSet{words: append([]uint64(nil), s.words...)}
}

// AddAll inserts every GPU of t into s.
func (s *GPUSet) AddAll(t GPUSet) {
	for len(s.words) < len(t.words) {
		s.words = append(s.words, 0)
	}
	for i, w := range t.words {
		s.words[i] |= w
	}
}

// RemoveAll deletes every GPU of t from s.
func (s *GPUSet) RemoveAll(t GPUSet) {
	for i := range s.words {
		if i < len(t.words) {
			s.words[i] &^= t.words[i]
		}
	}
}

// intersects reports whether s and t share a GPU.
func (s GPUSet) intersects(t GPUSet) bool {
	n := min(len(s.words), len(t.words))
	for i := 0; i < n; i++ {
		if s.words[i]&t.words[i] != 0 {
			return true
		}
	}
	return false
}

// Range calls f for each GPU in increasing order until f returns false.
func (s GPUSet) Range(f func(g GPUID) bool) {
	for i, w := range s.words {
		for w != 0 {
			b := bits.TrailingZeros64(w)
			if !f(GPUID(i<<6 + b)) {
				return
			}
			w &= w - 1
		}
	}
}

// Slice returns the GPUs of the set in increasing order.
func (s GPUSet) Slice() []GPUID {
	out := make([]GPUID, 0, s.Len())
	s.Range(func(g GPUID) bool { out = append(out, g); return true })
	return out
}

// CountRange returns how many GPUs of the set lie in [first, first+n): the free GPUs of one
// server, when first and n come from Cluster.GPUsOf.
func (s GPUSet) CountRange(first GPUID, n int) int {
	if n <= 0 {
		return 0
	}
	lo, hi := int(first), int(first)+n // [lo, hi)
	if lo < 0 {
		lo = 0
	}
	c := 0
	for w := lo >> 6; w < len(s.words) && w<<6 < hi; w++ {
		word := s.words[w]
		base := w << 6
		if lo > base {
			word &^= (1 << uint(lo-base)) - 1
		}
		if hi < base+64 {
			word &= (1 << uint(hi-base)) - 1
		}
		c += bits.OnesCount64(word)
	}
	return c
}

// String formats the set as "{0-3,8,10-11}".
func (s GPUSet) String() string {
	var b strings.Builder
	b.WriteByte('{')
	start, prev := -2, -2
	flush := func() {
		if start < 0 {
			return
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(start))
		if prev > start {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(prev))
		}
	}
	s.Range(func(g GPUID) bool {
		if int(g) != prev+1 {
			flush()
			start = int(g)
		}
		prev = int(g)
		return true
	})
	flush()
	b.WriteByte('}')
	return b.String()
}

// Equal reports whether s and t hold the same GPUs.
func (s GPUSet) Equal(t GPUSet) bool {
	a, b := s.words, t.words
	if len(a) < len(b) {
		a, b = b, a
	}
	for i, w := range b {
		if a[i] != w {
			return false
		}
	}
	for _, w := range a[len(b):] {
		if w != 0 {
			return false
		}
	}
	return true
}

// SetTo makes s hold exactly the GPUs of t, reusing s's storage.
func (s *GPUSet) SetTo(t GPUSet) {
	s.words = append(s.words[:0], t.words...)
}
