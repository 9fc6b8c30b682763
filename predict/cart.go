package predict

import (
	"math"
	"math/rand/v2"
	"slices"
)

// classifier is what the predictor needs of a forest: the distribution of its votes over the
// classes (bins) for one encoded job. Implementations are immutable after training, so votes
// may be taken concurrently.
type classifier interface {
	// vote writes the vote fractions of each class for x into out (length: the number of
	// classes) and returns them; they sum to 1, or are all 0 if no tree could vote.
	vote(x, out []float64) []float64
}

// forestParams are the training parameters shared by the classifier implementations.
type forestParams struct {
	trees    int
	maxDepth int // 0: unlimited
	minLeaf  int // a split leaves at least this many bootstrap rows on each side
	mtry     int // features tried per split
	split    SplitCriterion
	seed     uint64
}

// cartMaxBins is the number of value bins per feature of the CART forest (codes fit a byte).
const cartMaxBins = 256

// cartNode is a node of a CART tree, 16 bytes: an inner node (feat >= 0) sends x to node
// kid when x[feat] <= thr and to kid+1 otherwise; a leaf (feat < 0) holds the -feat class
// fractions leaves[kid : kid-feat].
type cartNode struct {
	thr  float64
	feat int32
	kid  int32
}

// cartLeafEntry is one class's fraction of a leaf's rows.
type cartLeafEntry struct {
	class uint16
	frac  float32
}

type cartTree struct {
	nodes  []cartNode
	leaves []cartLeafEntry
}

// cartForest is the project's own seeded random forest of classification trees: bootstrap
// samples, a random subset of features tried at each split, splits on pre-binned feature
// values (at most 256 quantile bins per feature), depth and leaf-size limits, leaves holding
// the class distribution of their rows. Split quality is the Gini impurity of the classes or,
// with SplitVariance, the squared error of the rows' log-iterations (the bins' order then
// counts, as in a regression tree, while the leaves keep class distributions). Tree t draws
// from a PCG seeded with (seed, t): training is deterministic and tree order does not matter.
type cartForest struct {
	classes int
	trees   []cartTree
}

func (f *cartForest) vote(x, out []float64) []float64 {
	clear(out)
	if len(f.trees) == 0 {
		return out
	}
	// Trees are walked voteLanes at a time, one level of each in turn: the walks are
	// independent, so the processor overlaps their memory loads (twice as fast as one tree
	// after the other on the benchmark). Leaves are added in tree order, so the sums are the
	// same as one tree after the other.
	t := 0
	for ; t+voteLanes <= len(f.trees); t += voteLanes {
		var n [voteLanes]*cartNode
		trs := f.trees[t : t+voteLanes : t+voteLanes]
		for k := range n {
			n[k] = &trs[k].nodes[0]
		}
		for moved := true; moved; {
			moved = false
			for k := range n {
				if nk := n[k]; nk.feat >= 0 {
					i := nk.kid
					if x[nk.feat] > nk.thr {
						i++
					}
					n[k] = &trs[k].nodes[i]
					moved = true
				}
			}
		}
		for k := range n {
			for _, e := range trs[k].leaves[n[k].kid : n[k].kid-n[k].feat] {
				out[e.class] += float64(e.frac)
			}
		}
	}
	for ; t < len(f.trees); t++ {
		tr := &f.trees[t]
		n := &tr.nodes[0]
		for n.feat >= 0 {
			i := n.kid
			if x[n.feat] > n.thr {
				i++
			}
			n = &tr.nodes[i]
		}
		for _, e := range tr.leaves[n.kid : n.kid-n.feat] {
			out[e.class] += float64(e.frac)
		}
	}
	inv := 1 / float64(len(f.trees))
	for c := range out {
		out[c] *= inv
	}
	return out
}

// voteLanes is the number of trees vote walks at once.
const voteLanes = 8

// binned is the training matrix binned column by column.
type binned struct {
	codes [][]uint8   // codes[f][row]
	cuts  [][]float64 // cuts[f][c]: x <= cuts[f][c] exactly when code <= c
}

// binFeatures bins every column of X into at most cartMaxBins codes: when a column has few
// distinct values each gets its own code (cut at midpoints); otherwise the cuts are quantiles.
func binFeatures(X [][]float64) binned {
	n, nf := len(X), len(X[0])
	b := binned{codes: make([][]uint8, nf), cuts: make([][]float64, nf)}
	col := make([]float64, n)
	for f := 0; f < nf; f++ {
		for i := range X {
			col[i] = X[i][f]
		}
		slices.Sort(col)
		uniq := slices.Compact(slices.Clone(col))
		var cuts []float64
		if len(uniq) <= cartMaxBins {
			for i := 0; i+1 < len(uniq); i++ {
				cuts = append(cuts, uniq[i]+(uniq[i+1]-uniq[i])/2)
			}
		} else {
			for k := 1; k < cartMaxBins; k++ {
				v := col[k*n/cartMaxBins]
				if v < col[n-1] && (len(cuts) == 0 || v > cuts[len(cuts)-1]) {
					cuts = append(cuts, v)
				}
			}
		}
		codes := make([]uint8, n)
		for i := range X {
			codes[i] = uint8(codeOf(cuts, X[i][f]))
		}
		b.codes[f], b.cuts[f] = codes, cuts
	}
	return b
}

// codeOf returns the number of cuts strictly below x.
func codeOf(cuts []float64, x float64) int {
	lo, hi := 0, len(cuts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cuts[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// trainCART trains the CART forest on X (rows of equal length, finite values), class[i] in
// [0, classes) with classes <= 256, and y[i] the log-iterations of row i (used by
// SplitVariance).
func trainCART(X [][]float64, class []int, y []float64, classes int, p forestParams) *cartForest {
	if classes > 256 {
		panic("predict: CART forest with more than 256 classes")
	}
	b := binFeatures(X)
	f := &cartForest{classes: classes, trees: make([]cartTree, p.trees)}
	bld := newCartBuilder(&b, class, y, classes, p)
	for t := range f.trees {
		rng := rand.New(rand.NewPCG(p.seed, uint64(t)+1))
		f.trees[t] = bld.build(rng)
	}
	return f
}

// cartBuilder holds the scratch space for growing trees.
type cartBuilder struct {
	b       *binned
	class   []int
	y       []float64
	classes int
	p       forestParams
	nf      int

	idx     []int32 // bootstrap rows, partitioned node by node
	order   []int32 // rows of the current node sorted by code
	feats   []int
	keys    []uint16
	counts  []int // class counts of the current node (zero outside bestSplit)
	nodeSq  int   // sum of the squared class counts of the current node
	left    []int // class counts left of a candidate split
	right   []int // class counts right of a candidate split
	bucket  [cartMaxBins + 1]int32
	hcnt    [cartMaxBins]int32
	hsum    [cartMaxBins]float64
	ghist   []int32  // class counts per code (code*classes + class) for scanGini's large nodes
	cls     []uint8  // class of each row in a byte (classes <= 256): an eighth of the cache lines
	wt      []int32  // wt[r]: how many times row r is in the current tree's bootstrap sample
	kw      []int32  // scratch: the weights of scanGiniSort's sorted keys
	pkeys   []uint32 // scratch: scanGiniPacked's keys
	stack   []cartTask
	leafBuf []int
}

type cartTask struct {
	lo, hi, depth int
	node          int32
}

func newCartBuilder(b *binned, class []int, y []float64, classes int, p forestParams) *cartBuilder {
	n := len(class)
	nf := len(b.codes)
	bld := &cartBuilder{
		b: b, class: class, y: y, classes: classes, p: p, nf: nf,
		idx:    make([]int32, n),
		order:  make([]int32, n),
		feats:  make([]int, nf),
		counts: make([]int, classes),
		left:   make([]int, classes),
		right:  make([]int, classes),
		keys:   make([]uint16, n),
		ghist:  make([]int32, cartMaxBins*classes),
		cls:    make([]uint8, n),
		wt:     make([]int32, n),
		kw:     make([]int32, n),
		pkeys:  make([]uint32, n),
	}
	for i, c := range class {
		bld.cls[i] = uint8(c)
	}
	if bld.p.maxDepth <= 0 {
		bld.p.maxDepth = math.MaxInt
	}
	bld.p.minLeaf = max(bld.p.minLeaf, 1)
	bld.p.mtry = min(max(bld.p.mtry, 1), nf)
	return bld
}

// build grows one tree on a bootstrap sample drawn with rng.
func (bld *cartBuilder) build(rng *rand.Rand) cartTree {
	// Bootstrap: n draws with replacement, kept in row order so that the column scans of every
	// node read the code arrays in increasing address order.
	n := len(bld.class)
	cnt := bld.order[:n]
	clear(cnt)
	for i := 0; i < n; i++ {
		cnt[rng.IntN(n)]++
	}
	// With the Gini criterion a row drawn c times is held once with weight c: every count is
	// a sum of weights, which is the same integer as counting the copies, so the tree is the
	// same while the scans look at about 37% fewer rows. The variance criterion sums floats,
	// whose rounding depends on how the copies are added, so it keeps one entry per draw.
	k := 0
	if bld.p.split == SplitVariance {
		for r, c := range cnt {
			for ; c > 0; c-- {
				bld.idx[k] = int32(r)
				bld.wt[r] = 1
				k++
			}
		}
	} else {
		for r, c := range cnt {
			if c > 0 {
				bld.idx[k] = int32(r)
				bld.wt[r] = c
				k++
			}
		}
	}
	var t cartTree
	t.nodes = append(t.nodes, cartNode{})
	bld.stack = append(bld.stack[:0], cartTask{lo: 0, hi: k, depth: 0, node: 0})
	for len(bld.stack) > 0 {
		task := bld.stack[len(bld.stack)-1]
		bld.stack = bld.stack[:len(bld.stack)-1]
		feat, code, ok := bld.bestSplit(task, rng)
		if !ok {
			bld.makeLeaf(&t, task)
			continue
		}
		// Partition the node's rows, stably: code <= split code to the left.
		codes := bld.b.codes[feat]
		rows := bld.idx[task.lo:task.hi]
		right := bld.order[:0]
		i := 0
		for _, r := range rows {
			if int(codes[r]) <= code {
				rows[i] = r
				i++
			} else {
				right = append(right, r)
			}
		}
		copy(rows[i:], right)
		mid := task.lo + i
		l := int32(len(t.nodes))
		t.nodes = append(t.nodes, cartNode{}, cartNode{})
		t.nodes[task.node] = cartNode{feat: int32(feat), kid: l, thr: bld.b.cuts[feat][code]}
		bld.stack = append(bld.stack,
			cartTask{lo: mid, hi: task.hi, depth: task.depth + 1, node: l + 1},
			cartTask{lo: task.lo, hi: mid, depth: task.depth + 1, node: l})
	}
	t.nodes = slices.Clip(t.nodes)
	return t
}

// makeLeaf turns task's node into a leaf holding its rows' class distribution.
func (bld *cartBuilder) makeLeaf(t *cartTree, task cartTask) {
	rows := bld.idx[task.lo:task.hi]
	bld.leafBuf = bld.leafBuf[:0]
	total := 0 // rows with their weights
	for _, r := range rows {
		c := bld.class[r]
		if bld.counts[c] == 0 {
			bld.leafBuf = append(bld.leafBuf, c)
		}
		w := int(bld.wt[r])
		bld.counts[c] += w
		total += w
	}
	slices.Sort(bld.leafBuf)
	start := int32(len(t.leaves))
	for _, c := range bld.leafBuf {
		t.leaves = append(t.leaves, cartLeafEntry{class: uint16(c), frac: float32(float64(bld.counts[c]) / float64(total))})
		bld.counts[c] = 0
	}
	t.nodes[task.node] = cartNode{feat: -int32(len(bld.leafBuf)), kid: start}
}

// bestSplit finds the best split of task's rows over a random subset of mtry features (more
// if none of those can split). It returns ok == false when the node must be a leaf.
func (bld *cartBuilder) bestSplit(task cartTask, rng *rand.Rand) (feat, code int, ok bool) {
	rows := bld.idx[task.lo:task.hi]
	variance := bld.p.split == SplitVariance
	minLeaf := bld.p.minLeaf
	if task.depth >= bld.p.maxDepth {
		return 0, 0, false
	}
	m := len(rows) // rows with their weights (all 1 with the variance criterion)
	if !variance {
		// The node's class counts and weight in one pass (kept for the scans below).
		clear(bld.counts)
		m = 0
		for _, r := range rows {
			w := int(bld.wt[r])
			bld.counts[bld.cls[r]] += w
			m += w
		}
	}
	if m < 2*minLeaf {
		clear(bld.counts)
		return 0, 0, false
	}
	// Node impurity; a pure node is a leaf.
	var parent float64
	var sumY float64
	if variance {
		var sq float64
		for _, r := range rows {
			v := bld.y[r]
			sumY += v
			sq += v * v
		}
		parent = sq - sumY*sumY/float64(m)
		if parent <= 1e-12*math.Max(1, sq) {
			return 0, 0, false
		}
	} else {
		var sq int
		for _, c := range bld.counts {
			sq += c * c
		}
		bld.nodeSq = sq
		if sq == m*m {
			clear(bld.counts)
			return 0, 0, false
		}
		parent = float64(m) - float64(sq)/float64(m)
		defer clear(bld.counts)
	}

	bestScore := parent * (1 - 1e-12) // a split must lower the impurity
	found := false
	for i := range bld.feats {
		bld.feats[i] = i
	}
	for k := 0; k < bld.nf; k++ {
		if k >= bld.p.mtry && found {
			break
		}
		j := k + rng.IntN(bld.nf-k)
		bld.feats[k], bld.feats[j] = bld.feats[j], bld.feats[k]
		f := bld.feats[k]
		var score float64
		var c int
		var okf bool
		if variance {
			score, c, okf = bld.scanVariance(rows, bld.b.codes[f], sumY, parent)
		} else {
			score, c, okf = bld.scanGini(rows, m, bld.b.codes[f])
		}
		if okf && score < bestScore {
			bestScore, feat, code, found = score, f, c, true
		}
	}
	return feat, code, found
}

// sortByCode returns the rows of a small node ordered by their code in one column (insertion
// sort).
func (bld *cartBuilder) sortByCode(rows []int32, codes []uint8) []int32 {
	m := len(rows)
	order := bld.order[:m]
	copy(order, rows)
	for i := 1; i < m; i++ {
		r := order[i]
		c := codes[r]
		j := i
		for ; j > 0 && codes[order[j-1]] > c; j-- {
			order[j] = order[j-1]
		}
		order[j] = r
	}
	return order
}

// scanGini returns the smallest weighted Gini impurity m_L G_L + m_R G_R (up to the
// constant) over the splits between distinct codes of one column, with its code. It sorts
// the rows' (code, class) pairs packed in 16 bits: by insertion for small nodes, by counting
// otherwise.
func (bld *cartBuilder) scanGini(rows []int32, m int, codes []uint8) (best float64, code int, ok bool) {
	switch {
	case len(rows) >= giniHistMin:
		return bld.scanGiniHist(rows, m, codes)
	case len(bld.class) <= math.MaxUint16:
		return bld.scanGiniPacked(rows, m, codes)
	}
	return bld.scanGiniSort(rows, m, codes)
}

// scanGiniPacked is scanGiniSort with each row's code, class and weight packed in one 32-bit
// key (code in the top byte, class in the next, weight in the low 16 bits: a row is drawn at
// most as many times as there are rows, here at most 65,535): one array to sort and scan
// instead of two.
func (bld *cartBuilder) scanGiniPacked(rows []int32, m int, codes []uint8) (best float64, code int, ok bool) {
	md := len(rows)
	minLeaf := bld.p.minLeaf
	keys := bld.pkeys[:md]
	if md <= 64 {
		for i, r := range rows {
			k := uint32(codes[r])<<24 | uint32(bld.cls[r])<<16 | uint32(bld.wt[r])
			j := i
			for ; j > 0 && keys[j-1] > k; j-- {
				keys[j] = keys[j-1]
			}
			keys[j] = k
		}
	} else {
		bk := &bld.bucket
		lo, hi := cartMaxBins, 0
		for _, r := range rows {
			c := int(codes[r])
			bk[c+1]++
			lo = min(lo, c)
			hi = max(hi, c)
		}
		if lo == hi { // one code: no split between distinct codes
			clear(bk[lo : hi+2])
			return math.Inf(1), 0, false
		}
		for c := lo + 1; c <= hi; c++ {
			bk[c] += bk[c-1]
		}
		for _, r := range rows {
			c := codes[r]
			keys[bk[c]] = uint32(c)<<24 | uint32(bld.cls[r])<<16 | uint32(bld.wt[r])
			bk[c]++
		}
		clear(bk[lo : hi+2])
	}
	left, right := bld.left, bld.right
	clear(left)
	copy(right, bld.counts)
	var sqL int
	sqR := bld.nodeSq
	best = math.Inf(1)
	nl := 0
	for i := 0; i < md-1; i++ {
		k := keys[i]
		c := int(k >> 16 & 0xff)
		w := int(k & 0xffff)
		sqL += (2*left[c] + w) * w
		left[c] += w
		sqR -= (2*right[c] - w) * w
		right[c] -= w
		nl += w
		if nl < minLeaf {
			continue
		}
		if m-nl < minLeaf {
			break
		}
		if keys[i+1]>>24 == k>>24 {
			continue
		}
		nr := m - nl
		g := float64(nl) - float64(sqL)/float64(nl) + float64(nr) - float64(sqR)/float64(nr)
		if g < best {
			best, code, ok = g, int(k>>24), true
		}
	}
	return best, code, ok
}

// scanGiniSort is scanGini by sorting the rows' (code, class) pairs.
func (bld *cartBuilder) scanGiniSort(rows []int32, m int, codes []uint8) (best float64, code int, ok bool) {
	md := len(rows) // distinct rows; m counts them with their weights
	minLeaf := bld.p.minLeaf
	keys, kw := bld.keys[:md], bld.kw[:md]
	if md <= 64 {
		for i, r := range rows {
			k := uint16(codes[r])<<8 | uint16(bld.cls[r])
			w := bld.wt[r]
			j := i
			for ; j > 0 && keys[j-1] > k; j-- {
				keys[j], kw[j] = keys[j-1], kw[j-1]
			}
			keys[j], kw[j] = k, w
		}
	} else {
		// Counting sort over the codes the node uses, [lo, hi]: the buckets are zero between
		// calls, and only that range is summed and cleared.
		bk := &bld.bucket
		lo, hi := cartMaxBins, 0
		for _, r := range rows {
			c := int(codes[r])
			bk[c+1]++
			lo = min(lo, c)
			hi = max(hi, c)
		}
		if lo == hi { // one code: no split between distinct codes
			clear(bk[lo : hi+2])
			return math.Inf(1), 0, false
		}
		for c := lo + 1; c <= hi; c++ {
			bk[c] += bk[c-1]
		}
		for _, r := range rows {
			c := codes[r]
			keys[bk[c]], kw[bk[c]] = uint16(c)<<8|uint16(bld.cls[r]), bld.wt[r]
			bk[c]++
		}
		clear(bk[lo : hi+2])
	}
	left, right := bld.left, bld.right
	clear(left)
	copy(right, bld.counts)
	var sqL int
	sqR := bld.nodeSq
	best = math.Inf(1)
	nl := 0
	// Splits are only taken between distinct codes, where the counts are those of every row
	// of the lower codes, however the rows of one code are ordered or weighted.
	for i := 0; i < md-1; i++ {
		k := keys[i]
		c := int(k & 0xff)
		w := int(kw[i])
		sqL += (2*left[c] + w) * w
		left[c] += w
		sqR -= (2*right[c] - w) * w
		right[c] -= w
		nl += w
		if nl < minLeaf {
			continue
		}
		if m-nl < minLeaf {
			break
		}
		if keys[i+1]>>8 == k>>8 {
			continue
		}
		nr := m - nl
		g := float64(nl) - float64(sqL)/float64(nl) + float64(nr) - float64(sqR)/float64(nr)
		if g < best {
			best, code, ok = g, int(k>>8), true
		}
	}
	return best, code, ok
}

// giniHistMin is the node size from which scanGini counts classes per code in a histogram
// rather than sorting the rows: one pass over the rows and one over the codes' classes instead
// of three passes over the rows.
const giniHistMin = 1024

// scanGiniHist is scanGini for large nodes: it counts the rows per (code, class) and walks the
// codes in increasing order, moving each code's class counts from right to left at once. The
// sums of squared counts are integers updated exactly as scanGiniSort's, and the candidate
// splits are the same (between distinct codes, minLeaf rows on each side), so the result is
// scanGiniSort's to the bit.
func (bld *cartBuilder) scanGiniHist(rows []int32, m int, codes []uint8) (best float64, code int, ok bool) {
	minLeaf := bld.p.minLeaf
	k := bld.classes
	h := bld.ghist
	cnt := &bld.hcnt
	lo, hi := cartMaxBins, -1
	for _, r := range rows {
		c := int(codes[r])
		w := bld.wt[r]
		h[c*k+int(bld.cls[r])] += w
		cnt[c] += w
		lo = min(lo, c)
		hi = max(hi, c)
	}
	if lo == hi { // one code: no split between distinct codes
		clear(h[lo*k : (lo+1)*k])
		cnt[lo] = 0
		return math.Inf(1), 0, false
	}
	left, right := bld.left, bld.right
	clear(left)
	copy(right, bld.counts)
	var sqL int
	sqR := bld.nodeSq
	best = math.Inf(1)
	nl := 0
	c := lo
	for ; c <= hi; c++ {
		n := int(cnt[c])
		if n == 0 {
			continue
		}
		row := h[c*k : (c+1)*k]
		for j, x := range row {
			if x != 0 {
				x := int(x)
				sqL += (2*left[j] + x) * x
				left[j] += x
				sqR -= (2*right[j] - x) * x
				right[j] -= x
				row[j] = 0
			}
		}
		cnt[c] = 0
		nl += n
		if nl < minLeaf {
			continue
		}
		if m-nl < minLeaf {
			break
		}
		nr := m - nl
		g := float64(nl) - float64(sqL)/float64(nl) + float64(nr) - float64(sqR)/float64(nr)
		if g < best {
			best, code, ok = g, c, true
		}
	}
	if c <= hi { // stopped early: clear the codes not walked
		clear(h[c*k : (hi+1)*k])
		clear(cnt[c : hi+1])
	}
	return best, code, ok
}

// scanVariance returns the smallest sum of squared errors of log-iterations of the two sides
// over the splits between distinct codes of one column, given the node's sum of
// log-iterations and SSE. It accumulates a histogram of counts and sums per code, so it
// needs no sorting.
func (bld *cartBuilder) scanVariance(rows []int32, codes []uint8, sumY, parent float64) (best float64, code int, ok bool) {
	m := len(rows)
	minLeaf := bld.p.minLeaf
	best = math.Inf(1)
	base := sumY * sumY / float64(m)
	if m <= 48 {
		// Small node: sort the rows by code rather than scan 256 bins.
		order := bld.sortByCode(rows, codes)
		var sl float64
		for i := 0; i < m-1; i++ {
			r := order[i]
			sl += bld.y[r]
			nl := i + 1
			if nl < minLeaf {
				continue
			}
			if m-nl < minLeaf {
				break
			}
			cur := codes[r]
			if codes[order[i+1]] == cur {
				continue
			}
			nr := m - nl
			sr := sumY - sl
			s := parent + base - sl*sl/float64(nl) - sr*sr/float64(nr)
			if s < best {
				best, code, ok = s, int(cur), true
			}
		}
		return best, code, ok
	}
	cnt := &bld.hcnt
	sum := &bld.hsum
	lo, hi := cartMaxBins, -1
	for _, r := range rows {
		c := int(codes[r])
		cnt[c]++
		sum[c] += bld.y[r]
		lo = min(lo, c)
		hi = max(hi, c)
	}
	nl := 0
	var sl float64
	for c := lo; c < hi; c++ {
		if cnt[c] == 0 {
			continue
		}
		nl += int(cnt[c])
		sl += sum[c]
		if nl < minLeaf {
			continue
		}
		if m-nl < minLeaf {
			break
		}
		nr := m - nl
		sr := sumY - sl
		s := parent + base - sl*sl/float64(nl) - sr*sr/float64(nr)
		if s < best {
			best, code, ok = s, c, true
		}
	}
	clear(cnt[lo : hi+1])
	clear(sum[lo : hi+1])
	return best, code, ok
}
