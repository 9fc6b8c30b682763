package predict

import (
	"math/rand/v2"
	"testing"
)

// TestScanGiniHistMatchesSort: the histogram scan of large nodes finds the same split, with
// the same score to the bit, as the sorting scan, on random nodes with few or many codes and
// classes, and leaves its histogram clean for the next call.
func TestScanGiniHistMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 100 + rng.IntN(6000)
		classes := 1 + rng.IntN(40)
		ncodes := 1 + rng.IntN(cartMaxBins)
		codes := make([]uint8, n)
		class := make([]int, n)
		for i := range n {
			codes[i] = uint8(rng.IntN(ncodes))
			class[i] = rng.IntN(classes)
			if trial%3 == 0 { // codes and classes related, as in real data
				class[i] = min(int(codes[i])*classes/ncodes, classes-1)
			}
		}
		b := &binned{codes: [][]uint8{codes}, cuts: [][]float64{make([]float64, cartMaxBins)}}
		bld := newCartBuilder(b, class, nil, classes, forestParams{minLeaf: 1 + rng.IntN(200), mtry: 1})
		rows := make([]int32, 0, n)
		for i := range n {
			if rng.IntN(4) > 0 {
				rows = append(rows, int32(i))
			}
		}
		clear(bld.counts)
		for _, r := range rows {
			bld.counts[class[r]]++
		}
		bld.nodeSq = 0
		for _, c := range bld.counts {
			bld.nodeSq += c * c
		}
		for range 2 { // twice: the first call must leave the histogram clean
			wb, wc, wok := bld.scanGiniSort(rows, codes)
			gb, gc, gok := bld.scanGiniHist(rows, codes)
			if wb != gb || wc != gc || wok != gok {
				t.Fatalf("trial %d (%d rows, %d classes, %d codes, minLeaf %d): hist %v %d %v, sort %v %d %v",
					trial, len(rows), classes, ncodes, bld.p.minLeaf, gb, gc, gok, wb, wc, wok)
			}
		}
	}
}
