package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/sim"
	"github.com/gpusched/gpusched/topology"
)

// Bounds on -failures and -checkpoint (judgement calls, also in the flags' help).
const (
	minMTBF       = time.Minute
	maxMTBF       = 100 * 365 * 24 * time.Hour
	minMTTR       = time.Second
	maxMTTR       = 365 * 24 * time.Hour
	maxCheckpoint = 30 * 24 * time.Hour
)

// failureSpec is what -failures describes: a random process (mtbf, mttr, and a seed, by
// default each run's -seed) or a failure trace file.
type failureSpec struct {
	mtbf, mttr time.Duration
	seed       uint64
	seedSet    bool
	file       string
	outages    []sim.Outage // read from file
}

// failuresHelp is the help of -failures.
const failuresHelp = "server failures: mtbf=DURATION,mttr=DURATION[,seed=N] (each server fails after an exponential time of mean mtbf and is repaired after one of mean mttr; seed defaults to -seed; mtbf 1m to 100 years, mttr 1s to 1 year), or file=PATH (a failure trace: CSV with columns server,down,up in seconds; see sim.ReadOutages). Default: none"

// parseFailures parses -failures. Errors are usage errors naming the flag.
func parseFailures(s string) (failureSpec, error) {
	var f failureSpec
	if s == "" {
		return f, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || v == "" {
			return f, usagef("-failures %q: %q is not key=value (want mtbf=720h,mttr=4h[,seed=N] or file=PATH)", s, part)
		}
		if seen[k] {
			return f, usagef("-failures %q: %s given twice", s, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "mtbf", "mttr":
			d, perr := time.ParseDuration(v)
			lo, hi := minMTBF, maxMTBF
			if k == "mttr" {
				lo, hi = minMTTR, maxMTTR
			}
			if perr != nil || d < lo || d > hi {
				return f, usagef("-failures %q: %s %q must be a duration from %v to %v", s, k, v, lo, hi)
			}
			if k == "mtbf" {
				f.mtbf = d
			} else {
				f.mttr = d
			}
		case "seed":
			if f.seed, err = strconv.ParseUint(v, 10, 64); err != nil {
				return f, usagef("-failures %q: seed %q is not an unsigned integer", s, v)
			}
			f.seedSet = true
		case "file":
			f.file = v
		default:
			return f, usagef("-failures %q: unknown key %q (want mtbf, mttr, seed or file)", s, k)
		}
	}
	switch {
	case f.file != "" && (seen["mtbf"] || seen["mttr"] || seen["seed"]):
		return f, usagef("-failures %q: file= does not go with mtbf, mttr or seed", s)
	case f.file == "" && (f.mtbf == 0 || f.mttr == 0):
		return f, usagef("-failures %q: give both mtbf and mttr (or file=PATH)", s)
	}
	return f, nil
}

// load reads the failure trace, if any, and checks that its servers are in cluster c.
func (f *failureSpec) load(c *topology.Cluster) error {
	if f.file == "" {
		return nil
	}
	r, err := os.Open(f.file)
	if err != nil {
		return fmt.Errorf("-failures: %w", err)
	}
	defer r.Close()
	if f.outages, err = sim.ReadOutages(r, filepath.Base(f.file)); err != nil {
		return err
	}
	for i, o := range f.outages {
		if _, ok := c.ServerIndex(o.Server); !ok {
			return fmt.Errorf("%s: outage %d: cluster %q has no server %q (its servers are %s, ...)",
				filepath.Base(f.file), i+1, c.Name(), o.Server, c.Server(0).ID)
		}
	}
	return nil
}

// config returns the failures of a run with the given seed.
func (f *failureSpec) config(seed uint64) sim.Failures {
	if f.file != "" {
		return sim.Failures{Outages: f.outages}
	}
	if f.mtbf == 0 {
		return sim.Failures{}
	}
	if f.seedSet {
		seed = f.seed
	}
	return sim.Failures{MTBF: f.mtbf.Seconds(), MTTR: f.mttr.Seconds(), Seed: seed}
}

// describe says in a few words what failures the runs see, for the cluster line.
func (f *failureSpec) describe(seed uint64) string {
	switch {
	case f.file != "":
		return fmt.Sprintf("failures from %s (%d outages)", filepath.Base(f.file), len(f.outages))
	case f.mtbf == 0:
		return "no failures"
	}
	s := fmt.Sprintf("failures: MTBF %v, MTTR %v per server", f.mtbf, f.mttr)
	if f.seedSet {
		s += fmt.Sprintf(", seed %d", f.seed)
	} else {
		s += fmt.Sprintf(", seed %d (-seed)", seed)
	}
	return s
}

// fmtGPUTime formats GPU-seconds in GPU-hours.
func fmtGPUTime(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return fmt.Sprintf("%.0f", s/3600)
}
