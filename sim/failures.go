package sim

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/host"
	"github.com/gpusched/gpusched/topology"
)

// Failures makes servers fail and be repaired during a simulation. A failed server's GPUs are
// unavailable (gpusched.View.Unavailable) until it is repaired, and every job running on one
// of them is stopped at once by the host: it waits again, loses the progress made since its
// last checkpoint (Config.Checkpoint) and pays the restore time when it starts again. The zero
// value means no failures.
//
// Failures come from a random process, from a list (a failure trace, see ReadOutages), or
// both: a server is down while any of them says so.
type Failures struct {
	// MTBF, when positive, is each server's mean time between failures in seconds: the time
	// from a server's start or repair to its next failure is exponential with this mean,
	// independently per server, from the first arrival on.
	MTBF float64
	// MTTR is the mean time to repair a failed server in seconds (exponential). It must be
	// positive when MTBF is.
	MTTR float64
	// Seed seeds the random process: server i draws from its own stream
	// (rand.NewPCG(Seed, i)), so a server's failures do not depend on the others'.
	Seed uint64
	// Outages lists failures explicitly (a failure trace).
	Outages []Outage
}

// Outage is one failure of one server: down from Down to Up (seconds on the workload's
// clock). Up is +Inf for a server that is never repaired.
type Outage struct {
	// Server is the server's id (topology.Server.ID).
	Server string  `json:"server"`
	Down   float64 `json:"down"`
	Up     float64 `json:"up"`
}

// enabled tells whether f describes any failure.
func (f *Failures) enabled() bool { return f.MTBF > 0 || len(f.Outages) > 0 }

// check validates f against the cluster.
func (f *Failures) check(c *topology.Cluster) error {
	switch {
	case !(f.MTBF >= 0) || math.IsInf(f.MTBF, 0):
		return fmt.Errorf("%w: failures: MTBF %v s must be finite and >= 0", ErrInvalidConfig, f.MTBF)
	case !(f.MTTR >= 0) || math.IsInf(f.MTTR, 0):
		return fmt.Errorf("%w: failures: MTTR %v s must be finite and >= 0", ErrInvalidConfig, f.MTTR)
	case f.MTBF > 0 && f.MTTR == 0:
		return fmt.Errorf("%w: failures: MTBF %v s needs a positive MTTR", ErrInvalidConfig, f.MTBF)
	case f.MTBF == 0 && f.MTTR > 0:
		return fmt.Errorf("%w: failures: MTTR %v s without an MTBF", ErrInvalidConfig, f.MTTR)
	}
	for i, o := range f.Outages {
		if _, ok := c.ServerIndex(o.Server); !ok {
			return fmt.Errorf("%w: failures: outage %d: cluster %q has no server %q", ErrInvalidConfig, i, c.Name(), o.Server)
		}
		if err := o.check(); err != nil {
			return fmt.Errorf("%w: failures: outage %d: %w", ErrInvalidConfig, i, err)
		}
	}
	return nil
}

func (o Outage) check() error {
	switch {
	case !(o.Down >= 0) || o.Down > Horizon:
		return fmt.Errorf("server %q: down at %v s, want a time from 0 to %v s", o.Server, o.Down, float64(Horizon))
	case !(o.Up > o.Down):
		return fmt.Errorf("server %q: up at %v s, not after down at %v s", o.Server, o.Up, o.Down)
	}
	return nil
}

// ErrBadOutages reports a failure trace that ReadOutages cannot read.
var ErrBadOutages = errors.New("sim: bad failure trace")

// maxOutageLine bounds a line of a failure trace.
const maxOutageLine = 1 << 16

// ReadOutages reads a failure trace: CSV with a header row naming the columns server, down
// and up (in any order; other columns are ignored), then one outage per row: the server's id
// (topology.Server.ID, e.g. "a100-3"), the time it fails and the time it is repaired, in
// seconds on the workload's clock (decimal numbers; up empty or "inf" for never). A UTF-8
// byte-order mark, CR or CRLF line endings, blank lines and lines starting with '#' are
// accepted. Errors wrap ErrBadOutages and name the line (name:line). Whether the servers
// exist is checked by Run, against its cluster.
func ReadOutages(r io.Reader, name string) ([]Outage, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte("\ufeff")) {
		_, _ = br.Discard(3)
	}
	var (
		out    []Outage
		col    = map[string]int{"server": -1, "down": -1, "up": -1}
		header bool
		line   int
	)
	for {
		text, err := readLine(br)
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrBadOutages, name, line, err)
		}
		if t := strings.TrimSpace(text); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		rec, err := csv.NewReader(strings.NewReader(text)).Read()
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrBadOutages, name, line, err)
		}
		if !header {
			for i, f := range rec {
				k := strings.ToLower(strings.TrimSpace(f))
				if c, ok := col[k]; ok {
					if c >= 0 {
						return nil, fmt.Errorf("%w: %s:%d: column %q appears twice", ErrBadOutages, name, line, k)
					}
					col[k] = i
				}
			}
			for _, k := range []string{"server", "down", "up"} {
				if col[k] < 0 {
					return nil, fmt.Errorf("%w: %s:%d: header lacks column %q (want server,down,up)", ErrBadOutages, name, line, k)
				}
			}
			header = true
			continue
		}
		field := func(k string) (string, error) {
			i := col[k]
			if i >= len(rec) {
				return "", fmt.Errorf("%w: %s:%d: %d fields, no %s", ErrBadOutages, name, line, len(rec), k)
			}
			return strings.TrimSpace(rec[i]), nil
		}
		var o Outage
		if o.Server, err = field("server"); err != nil {
			return nil, err
		}
		if o.Server == "" {
			return nil, fmt.Errorf("%w: %s:%d: empty server", ErrBadOutages, name, line)
		}
		down, err := field("down")
		if err != nil {
			return nil, err
		}
		if o.Down, err = strconv.ParseFloat(down, 64); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: down %q is not a number", ErrBadOutages, name, line, quote(down))
		}
		up, err := field("up")
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(up) {
		case "", "inf", "+inf":
			o.Up = math.Inf(1)
		default:
			if o.Up, err = strconv.ParseFloat(up, 64); err != nil || math.IsNaN(o.Up) {
				return nil, fmt.Errorf("%w: %s:%d: up %q is not a number", ErrBadOutages, name, line, quote(up))
			}
		}
		if err := o.check(); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrBadOutages, name, line, err)
		}
		out = append(out, o)
	}
	if !header {
		return nil, fmt.Errorf("%w: %s: no header (want server,down,up)", ErrBadOutages, name)
	}
	return out, nil
}

// readLine returns the next line without its ending (LF, CRLF or a lone CR), failing on a line
// longer than maxOutageLine before buffering it.
func readLine(br *bufio.Reader) (string, error) {
	var sb strings.Builder
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			if sb.Len() == 0 {
				return "", io.EOF
			}
			return sb.String(), nil
		}
		if err != nil {
			return "", err
		}
		switch b {
		case '\n':
			return sb.String(), nil
		case '\r':
			if nb, err := br.Peek(1); err == nil && nb[0] == '\n' {
				_, _ = br.Discard(1)
			}
			return sb.String(), nil
		}
		if sb.Len() >= maxOutageLine {
			return "", fmt.Errorf("line longer than %d bytes", maxOutageLine)
		}
		sb.WriteByte(b)
	}
}

// quote shortens a field for an error message.
func quote(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// outages returns the outages that happened up to time end, in the order they began; those
// still open end at end.
func (f *failures) outages(end float64) []Outage {
	out := slices.Clone(f.log)
	for i := range out {
		out[i].Up = min(out[i].Up, end)
	}
	return out
}

// failEvent is a server going down (or up) at time t.
type failEvent struct {
	t      float64
	server int
	down   bool
	random bool // drawn by the random process (which draws the next one when it happens)
	seq    int  // tie-break: order of creation
}

func (a failEvent) less(b failEvent) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return a.seq < b.seq
}

// failures is the failure process of one run.
type failures struct {
	c      *topology.Cluster
	mtbf   float64
	mttr   float64
	rngs   []*rand.Rand
	heap   []failEvent
	seq    int
	count  []int // per server: how many outages hold it down
	down   int   // servers down
	events int   // failures that happened
	open   []int // per server: index in log of its open outage
	log    []Outage
	broken brokenKind
}

// newFailures returns the failure process of f on c, starting at start, or nil for none.
func newFailures(f Failures, c *topology.Cluster, start float64, broken brokenKind) (*failures, error) {
	if !f.enabled() {
		return nil, nil
	}
	fl := &failures{c: c, mtbf: f.MTBF, mttr: f.MTTR, count: make([]int, c.NumServers()), open: make([]int, c.NumServers()), broken: broken}
	if f.MTBF > 0 {
		fl.rngs = make([]*rand.Rand, c.NumServers())
		for s := range fl.rngs {
			fl.rngs[s] = rand.New(rand.NewPCG(f.Seed, uint64(s)))
			fl.push(failEvent{t: start + fl.rngs[s].ExpFloat64()*f.MTBF, server: s, down: true, random: true})
		}
	}
	for _, o := range f.Outages {
		s, _ := c.ServerIndex(o.Server)
		fl.push(failEvent{t: o.Down, server: s, down: true})
		if !math.IsInf(o.Up, 1) {
			fl.push(failEvent{t: o.Up, server: s})
		}
	}
	return fl, nil
}

func (f *failures) push(ev failEvent) {
	f.seq++
	ev.seq = f.seq
	heapPush(&f.heap, ev)
}

func (f *failures) pop() failEvent { return heapPop(&f.heap) }

// next returns the time of the next failure or repair (+Inf: none).
func (f *failures) next() float64 {
	if len(f.heap) == 0 {
		return math.Inf(1)
	}
	return f.heap[0].t
}

// apply carries out the failures and repairs due at time t: a server that fails has its
// GPUs failed in the runtime (the jobs on them are interrupted, and stopped is told of them);
// a repaired one returns them.
func (f *failures) apply(t float64, rt *host.Runtime, stopped func([]host.Action) error) error {
	for len(f.heap) > 0 && f.heap[0].t <= t {
		ev := f.pop()
		s := ev.server
		first, n := f.c.GPUsOf(s)
		gpus := make([]topology.GPUID, n)
		for i := range gpus {
			gpus[i] = first + topology.GPUID(i)
		}
		if ev.down {
			f.count[s]++
			if f.count[s] == 1 {
				f.down++
				f.events++
				f.open[s] = len(f.log)
				f.log = append(f.log, Outage{Server: f.c.Server(s).ID, Down: t, Up: math.Inf(1)})
				if f.broken == brokenNoRollback {
					for _, e := range rt.Running() {
						_ = rt.Checkpoint(e.ID(), t)
					}
				}
				stops, err := rt.Fail(t, gpus...)
				if err != nil {
					return fmt.Errorf("sim: internal error: %w", err)
				}
				if err := stopped(stops); err != nil {
					return err
				}
				if f.broken == brokenEarlyRepair {
					_ = rt.Return(gpus...)
				}
			}
			if ev.random {
				f.push(failEvent{t: t + f.rngs[s].ExpFloat64()*f.mttr, server: s, random: true})
			}
			continue
		}
		f.count[s]--
		if f.count[s] == 0 {
			f.down--
			f.log[f.open[s]].Up = t
			if err := rt.Return(gpus...); err != nil {
				return fmt.Errorf("sim: internal error: %w", err)
			}
		}
		if ev.random {
			f.push(failEvent{t: t + f.rngs[s].ExpFloat64()*f.mtbf, server: s, down: true, random: true})
		}
	}
	return nil
}
