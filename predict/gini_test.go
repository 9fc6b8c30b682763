package predict

import (
	"math/rand/v2"
	"testing"
)

// TestScanGiniWeightsAndHist: on random nodes with few or many codes and classes, a node
// whose rows carry weights (a bootstrap's repeated draws held once) gets, from the sorting,
// the packed and the histogram scan, the same split with the same score to the bit as the node
// holding every copy with weight 1; and each scan leaves its scratch clean for the next call.
func TestScanGiniWeightsAndHist(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 40 + rng.IntN(3000)
		classes := 1 + rng.IntN(40)
		ncodes := 1 + rng.IntN(cartMaxBins)
		var codes []uint8
		var class []int
		var weight []int32
		for i := range n {
			c := rng.IntN(ncodes)
			k := rng.IntN(classes)
			if trial%3 == 0 { // codes and classes related, as in real data
				k = min(c*classes/ncodes, classes-1)
			}
			codes, class = append(codes, uint8(c)), append(class, k)
			weight = append(weight, int32(1+rng.IntN(4)*(i%2)))
		}
		// The expanded node: row i's copies follow it, as a bootstrap's draws do.
		var ecodes []uint8
		var eclass []int
		for i := range n {
			for range weight[i] {
				ecodes, eclass = append(ecodes, codes[i]), append(eclass, class[i])
			}
		}
		minLeaf := 1 + rng.IntN(100)
		node := func(codes []uint8, class []int, weight []int32) (*cartBuilder, []int32, int) {
			b := &binned{codes: [][]uint8{codes}, cuts: [][]float64{make([]float64, cartMaxBins)}}
			bld := newCartBuilder(b, class, nil, classes, forestParams{minLeaf: minLeaf, mtry: 1})
			rows := make([]int32, len(class))
			m := 0
			for i := range rows {
				rows[i] = int32(i)
				bld.wt[i] = 1
				if weight != nil {
					bld.wt[i] = weight[i]
				}
				bld.counts[class[i]] += int(bld.wt[i])
				m += int(bld.wt[i])
			}
			for _, c := range bld.counts {
				bld.nodeSq += c * c
			}
			return bld, rows, m
		}
		we, erows, em := node(ecodes, eclass, nil)
		wb, wc, wok := we.scanGiniSort(erows, em, ecodes)
		bld, rows, m := node(codes, class, weight)
		if m != em {
			t.Fatalf("trial %d: weights sum to %d, %d copies", trial, m, em)
		}
		for range 2 { // twice: the first calls must leave their scratch clean
			sb, sc, sok := bld.scanGiniSort(rows, m, codes)
			hb, hc, hok := bld.scanGiniHist(rows, m, codes)
			pb, pc, pok := bld.scanGiniPacked(rows, m, codes)
			if sb != wb || sc != wc || sok != wok || hb != wb || hc != wc || hok != wok || pb != wb || pc != wc || pok != wok {
				t.Fatalf("trial %d (%d rows, %d copies, %d classes, %d codes, minLeaf %d): weighted sort %v %d %v, weighted hist %v %d %v, packed %v %d %v, copies %v %d %v",
					trial, len(rows), em, classes, ncodes, minLeaf, sb, sc, sok, hb, hc, hok, pb, pc, pok, wb, wc, wok)
			}
		}
	}
}
