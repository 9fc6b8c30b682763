package policy

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// GADGETOptions configure GADGET.
type GADGETOptions struct {
	// Order: Backfill (default: a job whose ring does not fit waits and later jobs may be
	// admitted) or Strict (it blocks the later ones).
	Order Order
	// Reserve returns the bandwidth in bytes per second that job j's ring reserves on the
	// network link of every server it spans, when it spans more than one. Default: Share x the
	// smallest server network capacity (NICs x NICBandwidth) of the cluster.
	Reserve func(j *gpusched.Job, c *topology.Cluster) float64
	// Share is the default reservation as a fraction of a server's network capacity, in (0, 1].
	// Default 0.25: at most four cross-server rings through a server.
	Share float64
	// Name, when set, replaces "gadget" in reports.
	Name string
}

// gadgetPolicy is a GADGET-style scheduler (after Yu, Tian, Ji, Wu, Rajan, Liu, "GADGET: Online
// Resource Optimization for Scheduling Ring-All-Reduce Learning Jobs", INFOCOM 2022, arXiv
// 2202.01158: "greedy ring-all-reduce distributed graph embedding technique"). Jobs are
// considered online, in arrival order; each job's ring-all-reduce workers are embedded greedily
// into the servers, and a job is admitted only when its ring fits:
//
//   - on one server if any has enough free GPUs (best fit: the fullest such server); such a
//     ring stays inside the server and reserves no network bandwidth;
//   - otherwise on the fewest servers whose network links still have the job's reservation
//     left (servers taken by most free GPUs, then most residual bandwidth, then index; the last
//     one best fit), reserving that bandwidth on each of them: a ring laid out server by server
//     enters and leaves each server it spans once, so one reservation per server link and
//     direction carries it;
//   - if neither is possible the job is refused for now and waits.
//
// Reservations last while the job runs. GADGET never preempts. The residual bandwidth of a
// link is its capacity minus the reservations of the running jobs that span servers, recomputed
// from the view at every call, so GADGET keeps no state and is safe for concurrent use if
// Reserve is.
//
// What the paper's text would have fixed and this implementation chose (only the abstract was
// available): the paper's online algorithm optimises a utility with resource prices over time
// slots and decides each job's worker count; here each job has its fixed GPU demand and a fixed
// per-job reservation (Reserve), admission is the feasibility of the greedy embedding, and the
// objective is the host's (completion times).
type gadgetPolicy struct {
	gate     gate
	name     string
	backfill bool
	reserve  func(j *gpusched.Job, c *topology.Cluster) float64
	share    float64
}

// newGADGET returns a GADGET scheduler.
func newGADGET(opt GADGETOptions) (*gadgetPolicy, error) {
	if opt.Order > Backfill {
		return nil, fmt.Errorf("%w: gadget: unknown Order %d", ErrInvalidOptions, opt.Order)
	}
	if opt.Share == 0 {
		opt.Share = 0.25
	}
	if !(opt.Share > 0 && opt.Share <= 1) {
		return nil, fmt.Errorf("%w: gadget: Share %v must be in (0, 1]", ErrInvalidOptions, opt.Share)
	}
	return &gadgetPolicy{name: name(opt.Name, "gadget"), backfill: opt.Order != Strict, reserve: opt.Reserve, share: opt.Share}, nil
}

// String returns "gadget" (or GADGETOptions.Name).
func (g *gadgetPolicy) String() string { return g.name }

// Reservation returns the bandwidth in bytes per second job j's ring reserves on every server
// link it crosses when it spans servers.
//
// Deprecated: not needed by embedders (a diagnostic); removed in v0.3.0.
func (g *gadgetPolicy) Reservation(j *gpusched.Job, c *topology.Cluster) float64 {
	if g.reserve != nil {
		return g.reserve(j, c)
	}
	return g.share * minCapacity(c)
}

// minCapacity returns the smallest server network capacity of a cluster.
func minCapacity(c *topology.Cluster) float64 {
	capMin := math.Inf(1)
	for s := 0; s < c.NumServers(); s++ {
		capMin = min(capMin, serverCapacity(c, s))
	}
	return capMin
}

// reserver returns Reservation for the jobs of one cluster, with the default's smallest
// capacity found once.
func (g *gadgetPolicy) reserver(c *topology.Cluster) func(j *gpusched.Job) (float64, error) {
	def := math.NaN()
	return func(j *gpusched.Job) (float64, error) {
		var r float64
		switch {
		case g.reserve != nil:
			r = g.reserve(j, c)
		default:
			if math.IsNaN(def) {
				def = g.share * minCapacity(c)
			}
			r = def
		}
		if !finiteNonNeg(r) {
			return 0, fmt.Errorf("%w: gadget: job %q reserves %v bytes/s", ErrInvalidOptions, j.ID, r)
		}
		return r, nil
	}
}

func serverCapacity(c *topology.Cluster, s int) float64 {
	sv := c.Server(s)
	return float64(sv.NICs) * sv.NICBandwidth
}

// Residual returns the bandwidth in bytes per second left on each server's network link once
// the running jobs' reservations are taken.
//
// Deprecated: not needed by embedders (a diagnostic); removed in v0.3.0.
func (g *gadgetPolicy) Residual(v *gpusched.View) ([]float64, error) {
	return g.residual(v, g.reserver(v.Cluster))
}

func (g *gadgetPolicy) residual(v *gpusched.View, reservation func(j *gpusched.Job) (float64, error)) ([]float64, error) {
	c := v.Cluster
	res := make([]float64, c.NumServers())
	for s := range res {
		res[s] = serverCapacity(c, s)
	}
	var servers []int
	for i := range v.Running {
		st := &v.Running[i]
		if !multiServer(c, st.GPUs) {
			continue
		}
		servers = spannedInto(servers[:0], c, st.GPUs)
		if len(servers) < 2 {
			continue
		}
		r, err := reservation(st.Job)
		if err != nil {
			return nil, err
		}
		for _, s := range servers {
			res[s] -= r
		}
	}
	return res, nil
}

// multiServer reports whether a placement's GPUs (those in the cluster) lie on more than one
// server.
func multiServer(c *topology.Cluster, gpus []topology.GPUID) bool {
	first := -1
	for _, g := range gpus {
		if int(g) < 0 || int(g) >= c.NumGPUs() {
			continue
		}
		switch s := c.ServerOf(g); {
		case first < 0:
			first = s
		case s != first:
			return true
		}
	}
	return false
}

// spannedInto appends the servers a placement uses to out, in increasing order.
func spannedInto(out []int, c *topology.Cluster, gpus []topology.GPUID) []int {
	for _, g := range gpus {
		if int(g) < 0 || int(g) >= c.NumGPUs() {
			continue
		}
		s := c.ServerOf(g)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// Schedule keeps every running job and admits waiting jobs, in arrival order, whose rings fit.
func (g *gadgetPolicy) Schedule(v gpusched.View) (gpusched.Decision, error) {
	if err := g.ready(); err != nil {
		return gpusched.Decision{}, err
	}
	return g.gate.decide(v, g.schedule)
}

func (g *gadgetPolicy) schedule(vp *gpusched.View) (gpusched.Decision, error) {
	v := *vp
	c := v.Cluster
	reservation := g.reserver(c)
	res, err := g.residual(&v, reservation)
	if err != nil {
		return gpusched.Decision{}, err
	}
	var embedErr error
	d, err := dispatch(&v, arrivalOrder(&v), g.backfill, func(free topology.GPUSet, st *gpusched.JobStatus) ([]topology.GPUID, bool) {
		r, err := reservation(st.Job)
		if err != nil {
			embedErr = err
			return nil, false
		}
		gpus, servers := embed(c, free, st.Job.GPUs, res, r)
		if gpus == nil {
			return nil, false
		}
		if len(servers) > 1 {
			for _, s := range servers {
				res[s] -= r
			}
		}
		return gpus, true
	})
	if embedErr != nil {
		return gpusched.Decision{}, embedErr
	}
	return d, err
}

// embed finds the greedy ring embedding of n workers, or nil.
func embed(c *topology.Cluster, free topology.GPUSet, n int, res []float64, r float64) ([]topology.GPUID, []int) {
	ns := c.NumServers()
	counts := make([]int, ns)
	best := -1
	for s := range counts {
		first, k := c.GPUsOf(s)
		counts[s] = free.CountRange(first, k)
		if counts[s] >= n && (best < 0 || counts[s] < counts[best]) {
			best = s
		}
	}
	if best >= 0 {
		return takeGPUs(c, free, []int{best}, []int{n}), []int{best}
	}
	var cand []int
	for s := range counts {
		if counts[s] > 0 && res[s] >= r {
			cand = append(cand, s)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int {
		if d := cmp.Compare(counts[b], counts[a]); d != 0 {
			return d
		}
		return cmp.Compare(res[b], res[a])
	})
	var servers, takes []int
	need := n
	for i, s := range cand {
		if counts[s] >= need {
			// Last server: best fit among the remaining candidates that close the gap.
			pick := s
			for _, t := range cand[i:] {
				if counts[t] >= need && counts[t] < counts[pick] {
					pick = t
				}
			}
			servers, takes = append(servers, pick), append(takes, need)
			need = 0
			break
		}
		servers, takes = append(servers, s), append(takes, counts[s])
		need -= counts[s]
	}
	if need > 0 {
		return nil, nil
	}
	return takeGPUs(c, free, servers, takes), servers
}

// takeGPUs takes the lowest free GPUs of each server, servers in increasing order.
func takeGPUs(c *topology.Cluster, free topology.GPUSet, servers, takes []int) []topology.GPUID {
	idx := make([]int, len(servers))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(servers[a], servers[b]) })
	var out []topology.GPUID
	for _, i := range idx {
		first, k := c.GPUsOf(servers[i])
		need := takes[i]
		for g := first; g < first+topology.GPUID(k) && need > 0; g++ {
			if free.Contains(g) {
				out = append(out, g)
				need--
			}
		}
	}
	return out
}
