package srpt

import (
	"math"
	"slices"
)

// sortKey is what prepare sorts when the input is not already in (release,
// ID) order: small and contiguous, so that sorting does not chase the
// caller's slice.
type sortKey struct {
	rel uint64 // order-preserving bits of the (finite, >= 0) release time
	id  int
	idx int32
}

// relBits maps a finite release time >= 0 to bits whose unsigned order is
// the numeric order (-0 is mapped to +0).
func relBits(r float64) uint64 {
	if r == 0 {
		return 0
	}
	return math.Float64bits(r)
}

// idBits maps an int to bits whose unsigned order is the signed order.
func idBits(id int) uint64 { return uint64(id) ^ (1 << 63) }

const radixBits = 11
const radixPasses = (64 + radixBits - 1) / radixBits

// radixSort sorts keys stably by ID (byID) or by release bits, with a
// least-significant-digit radix sort using buf (same length) as scratch. It
// skips digits on which all keys agree. The result is in keys.
func radixSort(keys, buf []sortKey, byID bool) {
	n := len(keys)
	var count [radixPasses][1 << radixBits]int
	key := func(k *sortKey) uint64 {
		if byID {
			return idBits(k.id)
		}
		return k.rel
	}
	for i := range keys {
		v := key(&keys[i])
		for p := range radixPasses {
			count[p][(v>>(p*radixBits))&(1<<radixBits-1)]++
		}
	}
	src, dst := keys, buf
	for p := range radixPasses {
		c := &count[p]
		skip := false
		sum := 0
		for d := range c {
			if c[d] == n {
				skip = true
				break
			}
			c[d], sum = sum, sum+c[d]
		}
		if skip {
			continue
		}
		shift := p * radixBits
		for i := range src {
			d := (key(&src[i]) >> shift) & (1<<radixBits - 1)
			dst[c[d]] = src[i]
			c[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}

// sortByReleaseID reports a duplicate ID, if any (dup is then true and id
// names it), and otherwise sorts keys by (release, ID). idsSorted says the
// keys are already in increasing ID order, which skips the duplicate check
// and the ID pass; relSorted says they are already in (release, ID) order,
// in which case only the duplicate check runs and the order of keys
// afterwards is unspecified.
func sortByReleaseID(keys []sortKey, idsSorted, relSorted bool) (id int, dup bool) {
	if len(keys) < 256 {
		slices.SortFunc(keys, func(a, b sortKey) int {
			switch {
			case a.id < b.id:
				return -1
			case a.id > b.id:
				return 1
			}
			return 0
		})
		for i := 1; i < len(keys); i++ {
			if keys[i].id == keys[i-1].id {
				return keys[i].id, true
			}
		}
		if relSorted {
			return 0, false
		}
		slices.SortStableFunc(keys, func(a, b sortKey) int {
			switch {
			case a.rel < b.rel:
				return -1
			case a.rel > b.rel:
				return 1
			}
			return 0
		})
		return 0, false
	}
	buf := make([]sortKey, len(keys))
	if !idsSorted {
		radixSort(keys, buf, true)
		for i := 1; i < len(keys); i++ {
			if keys[i].id == keys[i-1].id {
				return keys[i].id, true
			}
		}
	}
	if !relSorted {
		radixSort(keys, buf, false) // stable: ties stay in ID order
	}
	return 0, false
}
