package predict

import (
	randomforest "github.com/malaschitz/randomForest"
)

// malaschitzForest is the classifier backed by github.com/malaschitz/randomForest.
//
// That library draws its bootstraps and feature subsets from the global math/rand source
// inside goroutines (as many at once as its package variable NumWorkers, the CPU count), so
// its training is not reproducible run to run (since Go 1.24 rand.Seed no longer seeds the
// global source) and it starts goroutines; this package neither seeds nor changes its
// globals. Its split search sorts the node's rows for every feature tried at every node.
// A node where none of the features tried can split is split anyway on feature 0 at 0, which
// can leave an empty leaf whose vote is NaN: vote walks the trees itself and skips such
// leaves.
type malaschitzForest struct {
	f       *randomforest.Forest
	classes int
}

// trainMalaschitz trains the library's forest. minLeaf maps to its LeafSize (a node of at most
// that many rows is a leaf), mtry to MFeatures; maxDepth 0 means 64. split and seed are
// ignored: the library splits by Gini impurity and seeds itself.
func trainMalaschitz(X [][]float64, class []int, classes int, p forestParams) *malaschitzForest {
	depth := p.maxDepth
	if depth <= 0 {
		depth = 64
	}
	f := &randomforest.Forest{
		Data:      randomforest.ForestData{X: X, Class: class},
		MaxDepth:  depth + 1, // the library counts the root as depth 1
		LeafSize:  max(p.minLeaf, 1),
		MFeatures: min(max(p.mtry, 1), len(X[0])),
	}
	f.Train(p.trees)
	return &malaschitzForest{f: f, classes: classes}
}

func (m *malaschitzForest) vote(x, out []float64) []float64 {
	clear(out)
	n := 0
	for t := range m.f.Trees {
		b := &m.f.Trees[t].Root
		for !b.IsLeaf {
			if x[b.Attribute] > b.Value {
				b = b.Branch1
			} else {
				b = b.Branch0
			}
		}
		if b.Size == 0 {
			continue // an empty leaf: its values are NaN
		}
		for c, v := range b.LeafValue {
			if c < len(out) {
				out[c] += v
			}
		}
		n++
	}
	if n > 0 {
		inv := 1 / float64(n)
		for c := range out {
			out[c] *= inv
		}
	}
	return out
}
