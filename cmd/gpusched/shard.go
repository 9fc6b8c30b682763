package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpusched/gpusched/sim"
)

// shardSpec is sweep's -shard i/n: this process runs the cells k of the sweep (in the order
// of the unsharded sweep's table) with k mod n = i.
type shardSpec struct {
	index, count int
}

// maxShards bounds n in -shard i/n.
const maxShards = 100000

// shardEnvVars are the batch engines' variables that -shard env/n reads the index from, in
// order: a Slurm job array's task id, a Kubernetes Indexed Job's completion index.
var shardEnvVars = []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"}

// parseShard parses "i/n" or "env/n" (the index from the first of shardEnvVars that getenv
// returns set).
func parseShard(s string, getenv func(string) string) (shardSpec, error) {
	idx, cnt, ok := strings.Cut(s, "/")
	if !ok {
		return shardSpec{}, usagef("-shard %q: want i/n (e.g. 0/8) or env/n", s)
	}
	n, err := strconv.Atoi(cnt)
	if err != nil || n < 1 || n > maxShards {
		return shardSpec{}, usagef("-shard %q: shard count %q must be an integer from 1 to %d", s, cnt, maxShards)
	}
	from := ""
	if idx == "env" {
		for _, name := range shardEnvVars {
			if v := getenv(name); v != "" {
				idx, from = v, " (from $"+name+")"
				break
			}
		}
		if from == "" {
			return shardSpec{}, usagef("-shard %q: none of $%s is set", s, strings.Join(shardEnvVars, ", $"))
		}
	}
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || i >= n {
		return shardSpec{}, usagef("-shard %q: index %q%s must be an integer from 0 to %d", s, idx, from, n-1)
	}
	return shardSpec{index: i, count: n}, nil
}

// sweepConfig is the canonical form of a sweep's command line, the same in every shard of
// one sweep: the flags given, by name, without those that do not change the results
// (-shard, -out, -workers, -progress, -cpuprofile, -gc-percent).
func sweepConfig(fs *flag.FlagSet) string {
	var parts []string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "shard", "out", "workers", "progress", "cpuprofile", "gc-percent":
			return
		}
		parts = append(parts, "-"+f.Name+"="+f.Value.String())
	})
	slices.Sort(parts)
	return "sweep " + strings.Join(parts, " ")
}

// shardFormat names the version of the shard manifest.
const shardFormat = "gpusched-sweep-shard/1"

// shardManifest is the self-describing result file of one shard: what sweep it belongs to,
// which cells it ran and their results. Merge rebuilds the unsharded sweep's outputs from the
// manifests and the per-run files beside them.
type shardManifest struct {
	Format string `json:"format"`
	// Config is the sweep's canonical command line (sweepConfig); every shard of a sweep has
	// the same.
	Config string `json:"config"`
	Shard  int    `json:"shard"`
	Shards int    `json:"shards"`
	// Cells is the number of cells of the whole sweep.
	Cells int `json:"cells"`
	// Header is what the sweep prints above its table.
	Header string `json:"header"`
	// Workers and Seconds are this shard's workers and wall time.
	Workers int        `json:"workers"`
	Seconds float64    `json:"seconds"`
	Runs    []shardRun `json:"runs"`
	Outputs bool       `json:"outputs"` // per-run files were written beside the manifest
}

// shardRun is one cell's result.
type shardRun struct {
	Cell    int         `json:"cell"`
	Policy  string      `json:"policy"`
	Load    float64     `json:"load"`
	Seed    uint64      `json:"seed"`
	Fail    bool        `json:"failures,omitempty"`
	Stem    string      `json:"stem"`
	Bound   jsonFloat   `json:"jct_lower_bound"`
	Summary sim.Summary `json:"summary"`
	WallSec float64     `json:"wall_seconds"`
}

// manifestName is the file name of shard i of n.
func manifestName(i, n int) string { return fmt.Sprintf("shard-%05d-of-%05d.json", i, n) }

// selectShard returns the cells of jobs that shard sh runs, and their indices.
func selectShard(jobs []runJob, sh shardSpec) ([]runJob, []int) {
	var out []runJob
	var cells []int
	for k, j := range jobs {
		if k%sh.count == sh.index {
			out = append(out, j)
			cells = append(cells, k)
		}
	}
	return out, cells
}

// writeShard writes the shard's manifest into dir, where the runs of outs wrote their own
// files as they ended (reduce).
func writeShard(dir string, m *shardManifest, outs []outcome, cells []int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for k, oc := range outs {
		m.Runs = append(m.Runs, shardRun{Cell: cells[k], Policy: oc.policy.Name, Load: oc.load, Seed: oc.seed, Fail: oc.fail,
			Stem: oc.stem(), Bound: jsonFloat(oc.bound), Summary: oc.sum, WallSec: oc.wall.Seconds()})
	}
	m.Outputs = true
	return writeFile(filepath.Join(dir, manifestName(m.Shard, m.Shards)), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}

// cmdMerge is "gpusched merge [-out DIR] DIR...": it reads the shard manifests in the
// directories, checks that they are the shards of one sweep and that every cell is there once,
// and prints (and with -out writes) what the unsharded sweep would have.
func cmdMerge(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for the merged CSV, JSON and plots (as an unsharded sweep's -out)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gpusched merge [-out DIR] SHARD-DIR...\n\nMerges the results of \"gpusched sweep -shard i/n -out SHARD-DIR\" runs.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() == 0 {
		return usagef("merge: no shard directories")
	}
	var ms []*shardManifest
	var dirs []string
	for _, dir := range fs.Args() {
		names, err := filepath.Glob(filepath.Join(dir, "shard-*-of-*.json"))
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return fmt.Errorf("merge: %s: no shard manifest (shard-*-of-*.json)", dir)
		}
		for _, name := range names {
			m, err := readManifest(name)
			if err != nil {
				return err
			}
			ms = append(ms, m)
			dirs = append(dirs, filepath.Dir(name))
		}
	}
	outs, runDir, secs, workers, err := mergeManifests(ms, dirs)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
	}
	fmt.Fprint(stdout, ms[0].Header)
	fmt.Fprintln(stdout)
	if err := resultTable(stdout, outs, true); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n%d simulations in %.1fs on %d workers (%d shards)\n", len(outs), secs, workers, ms[0].Shards)
	if *out != "" {
		for k, oc := range outs {
			if err := copyRunFiles(runDir[k], *out, oc.stem()); err != nil {
				return err
			}
		}
		if err := writeSummaries(*out, outs, true); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote CSV, JSON and plots to %s\n", *out)
	}
	return nil
}

// maxManifestBytes bounds the size of a shard manifest that merge reads (a manifest holds
// about 2 kB per cell).
const maxManifestBytes = 1 << 30

// maxManifestHeader bounds the header a manifest carries (merge prints it; a sweep's is a
// few lines).
const maxManifestHeader = 1 << 16

// maxMissingListed is how many missing shards merge names in its error before it counts the
// rest.
const maxMissingListed = 10

// readManifest reads one shard manifest, naming the file in errors. It reads only regular
// files of at most maxManifestBytes, and checks the manifest's shape before merge allocates
// anything from it: a shard count from 1 to maxShards, its index below it, and as many runs as
// the shard has cells (cellsOf).
func readManifest(name string) (*shardManifest, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("merge: %s: not a regular file (%v)", name, fi.Mode().Type())
	}
	if fi.Size() > maxManifestBytes {
		return nil, fmt.Errorf("merge: %s: %d bytes, more than a manifest's %d", name, fi.Size(), maxManifestBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("merge: %s: %w", name, err)
	}
	if len(b) > maxManifestBytes {
		return nil, fmt.Errorf("merge: %s: more than a manifest's %d bytes", name, maxManifestBytes)
	}
	var m shardManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("merge: %s: %w", name, err)
	}
	if m.Format != shardFormat {
		return nil, fmt.Errorf("merge: %s: format %q, want %q", name, m.Format, shardFormat)
	}
	if m.Shards < 1 || m.Shards > maxShards || m.Shard < 0 || m.Shard >= m.Shards || m.Cells < 0 {
		return nil, fmt.Errorf("merge: %s: shard %d of %d, %d cells: not a shard (want 1 to %d shards)", name, m.Shard, m.Shards, m.Cells, maxShards)
	}
	if len(m.Header) > maxManifestHeader {
		return nil, fmt.Errorf("merge: %s: a header of %d bytes, more than %d", name, len(m.Header), maxManifestHeader)
	}
	if want := cellsOf(m.Cells, m.Shard, m.Shards); len(m.Runs) != want {
		return nil, fmt.Errorf("merge: %s: shard %d of %d of a sweep of %d cells has %d runs, want %d", name, m.Shard, m.Shards, m.Cells, len(m.Runs), want)
	}
	return &m, nil
}

// cellsOf returns the number of cells that shard i of n runs in a sweep of cells cells: the k
// in [0, cells) with k mod n = i.
func cellsOf(cells, i, n int) int {
	if i >= cells {
		return 0
	}
	return (cells-i-1)/n + 1
}

// mergeManifests checks the manifests and returns the outcomes in cell order, the directory
// of each, and the shards' total wall time and largest worker count. It allocates for the
// cells only once every shard is there, each with its share of the cells (readManifest), so
// that the cells it allocates are the runs it has read.
func mergeManifests(ms []*shardManifest, dirs []string) ([]outcome, []string, float64, int, error) {
	first := ms[0]
	seen := make([]bool, first.Shards) // readManifest bounded Shards
	secs, workers := 0.0, 0
	for k, m := range ms {
		if m.Config != first.Config || m.Shards != first.Shards || m.Cells != first.Cells || m.Header != first.Header {
			return nil, nil, 0, 0, fmt.Errorf("merge: %s is a shard of another sweep (%q, %d shards) than %s (%q, %d shards)",
				filepath.Join(dirs[k], manifestName(m.Shard, m.Shards)), m.Config, m.Shards,
				filepath.Join(dirs[0], manifestName(first.Shard, first.Shards)), first.Config, first.Shards)
		}
		if seen[m.Shard] {
			return nil, nil, 0, 0, fmt.Errorf("merge: shard %d of %d given twice (%s)", m.Shard, m.Shards, dirs[k])
		}
		seen[m.Shard] = true
		secs += m.Seconds
		workers = max(workers, m.Workers)
	}
	if len(ms) < first.Shards {
		var missing []string
		for i, ok := range seen {
			if !ok && len(missing) < maxMissingListed {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		more := ""
		if n := first.Shards - len(ms); n > len(missing) {
			more = fmt.Sprintf(" and %d more", n-len(missing))
		}
		return nil, nil, 0, 0, fmt.Errorf("merge: shards %s%s of %d are missing", strings.Join(missing, ", "), more, first.Shards)
	}
	known := map[string]bool{}
	for _, name := range policyNames() {
		known[name] = true
	}
	outs := make([]outcome, first.Cells)
	runDir := make([]string, first.Cells)
	have := make([]bool, first.Cells)
	for k, m := range ms {
		for _, r := range m.Runs {
			if r.Cell < 0 || r.Cell >= m.Cells || r.Cell%m.Shards != m.Shard || have[r.Cell] {
				return nil, nil, 0, 0, fmt.Errorf("merge: %s: cell %d does not belong to shard %d of %d, or appears twice", dirs[k], r.Cell, m.Shard, m.Shards)
			}
			if !known[r.Policy] { // the policy names the run's files: no path may hide in it
				return nil, nil, 0, 0, fmt.Errorf("merge: %s: cell %d: unknown policy %.40q", dirs[k], r.Cell, r.Policy)
			}
			have[r.Cell] = true
			outs[r.Cell] = outcome{runJob: runJob{policy: policySpec{Name: r.Policy}, seed: r.Seed, load: r.Load, sweep: true, fail: r.Fail,
				bound: float64(r.Bound)}, sum: r.Summary, wall: time.Duration(r.WallSec * float64(time.Second))}
			runDir[r.Cell] = dirs[k]
		}
	}
	for c, ok := range have {
		if !ok {
			return nil, nil, 0, 0, fmt.Errorf("merge: cell %d (shard %d) has no result", c, c%first.Shards)
		}
	}
	return outs, runDir, secs, workers, nil
}

// copyRunFiles copies a run's files from a shard directory to dir.
func copyRunFiles(from, dir, stem string) error {
	for _, ext := range runFileExts {
		if err := copyFile(filepath.Join(from, stem+ext), filepath.Join(dir, stem+ext)); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
	}
	return nil
}

// copyFile copies the regular file src to dst, streaming; nothing when they are the same
// file (merge -out into a shard's own directory).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file (%v)", src, fi.Mode().Type())
	}
	if di, err := os.Stat(dst); err == nil && os.SameFile(fi, di) {
		return nil
	}
	return writeFile(dst, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}
