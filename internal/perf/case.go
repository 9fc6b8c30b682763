package perf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/placestr"
	"github.com/gpusched/gpusched/topology"
)

// ErrUnknown reports a row naming a model or GPU type that cannot be found.
var ErrUnknown = errors.New("perf: unknown model or GPU type")

// Case is a measured row made ready to predict: its model as trained (precision and sequence
// length applied) and the job placed on servers of its GPU type, with everything of its
// iteration time that does not depend on the constants computed once (graph.Placed).
type Case struct {
	// Row is the measurement.
	Row Row
	// Model is the model as the row trained it; its Name keys per-model factors.
	Model *graph.Model
	// Placed is the compiled, placed job.
	Placed *graph.Placed
}

// Family returns the GPU family of the case's GPUs (see graph.GPUFamily).
func (c *Case) Family() string { return graph.GPUFamily(c.Placed.GPUModel()) }

// Predict returns the predicted iteration time of the case with the constants and factors the
// calibration gives (nil: the shipped constants alone).
func (c *Case) Predict(cal *graph.Calibration) (graph.Breakdown, error) {
	return c.Placed.TimeWith(graph.Options{Calibration: cal})
}

// Prepare resolves rows into cases: it builds each row's model (a zoo name, or a model JSON
// file relative to the row's file), applies its precision and sequence length, validates and
// compiles its plan, builds a cluster of servers of its GPU type (a topology preset) with as
// many servers as the longest placement, and places the plan's ranks on the placement's GPUs
// in the row's rank order. Errors name the row's file:line and the field, and wrap ErrBadRow,
// ErrUnknown or the graph package's errors.
func Prepare(rows []Row) ([]*Case, error) {
	type modelKey struct {
		ref, dir string
		dtype    float64
		seq      int
	}
	models := map[modelKey]*graph.Model{}
	servers := map[string]int{}
	for _, r := range rows {
		servers[r.GPU] = max(servers[r.GPU], len(r.Placement))
	}
	clusters := map[string]*topology.Cluster{}
	out := make([]*Case, 0, len(rows))
	for _, r := range rows {
		cl, ok := clusters[r.GPU]
		if !ok {
			spec, err := topology.Preset(r.GPU)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: gpu %q: %v", ErrUnknown, r.where(), truncate(r.GPU), err)
			}
			if cl, err = topology.Uniform(spec, max(servers[r.GPU], 1)); err != nil {
				return nil, fmt.Errorf("%s: gpu %q: %w", r.where(), r.GPU, err)
			}
			clusters[r.GPU] = cl
		}
		key := modelKey{ref: r.Model, dtype: r.DTypeBytes, seq: r.SeqLen}
		if isFile(r.Model) {
			key.dir = filepath.Dir(r.File)
		}
		m, ok := models[key]
		if !ok {
			var err error
			if m, err = loadModel(r, key.dir); err != nil {
				return nil, err
			}
			models[key] = m
		}
		c, err := graph.Compile(m, r.Plan)
		if err != nil {
			return nil, fmt.Errorf("%s: plan: %w", r.where(), err)
		}
		gpus, err := placestr.GPUs(cl, r.Placement, graph.ErrInvalidPlacement)
		if err != nil {
			return nil, fmt.Errorf("%s: placement: %w", r.where(), err)
		}
		if len(gpus) != r.Plan.Workers() {
			return nil, fmt.Errorf("%w: %s: plan %v has %d workers but placement %q has %d GPUs", ErrBadRow, r.where(), r.Plan, r.Plan.Workers(), r.Placement, len(gpus))
		}
		if err := fits(c, cl); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadRow, r.where(), err)
		}
		pl, err := c.Place(cl, order(r, gpus), nil)
		if err != nil {
			return nil, fmt.Errorf("%s: placement: %w", r.where(), err)
		}
		out = append(out, &Case{Row: r, Model: m, Placed: pl})
	}
	return out, nil
}

// fits refuses a plan whose GPUs cannot even hold their share of the model's parameters: a
// model that no GPU of the type could train with that plan. (Memory beyond the parameters,
// which the graph package estimates, is not checked: measured runs exceed the estimate.)
func fits(c *graph.Compiled, cl *topology.Cluster) error {
	gpu := cl.GPU(0)
	if m := c.Memory(); !(m.Params <= gpu.MemoryBytes) {
		return fmt.Errorf("model %q with plan %v holds %.3g GB of parameters per GPU, more than the %.3g GB of one %s: it cannot run",
			c.Model().Name(), c.Plan(), m.Params/1e9, gpu.MemoryBytes/1e9, gpu.Model)
	}
	return nil
}

// readLimited reads a regular file of at most limit bytes: devices, pipes and directories
// are refused, and a file that grows past the limit while read is cut off and refused.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}

// openRegular opens a regular file for reading, and refuses anything else (a device such as
// /dev/zero, a pipe, a directory), which could be read forever.
func openRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %w (%v)", path, errNotRegular, st.Mode().Type())
	}
	return f, nil
}

// maxMeasurementFile bounds a measurement file.
const maxMeasurementFile = 1 << 28

// openMeasurements opens a measurement file: a regular file of at most maxMeasurementFile
// bytes (errors wrap ErrBadRow).
func openMeasurements(path string) (*os.File, error) {
	f, err := openRegular(path)
	if err != nil {
		if errors.Is(err, errNotRegular) {
			return nil, fmt.Errorf("%w: %v", ErrBadRow, err)
		}
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.Size() > maxMeasurementFile {
		f.Close()
		return nil, fmt.Errorf("%w: %s has %d bytes, more than %d", ErrBadRow, path, st.Size(), maxMeasurementFile)
	}
	return f, nil
}

// errNotRegular reports a path that is not a regular file.
var errNotRegular = errors.New("not a regular file")

// isFile tells a model reference that names a JSON file from a zoo name.
func isFile(ref string) bool {
	return strings.HasSuffix(strings.ToLower(ref), ".json") || strings.ContainsAny(ref, `/\`)
}

// maxModelFile bounds a model JSON file.
const maxModelFile = 64 << 20

// loadModel builds a row's model.
func loadModel(r Row, dir string) (*graph.Model, error) {
	var m *graph.Model
	if isFile(r.Model) {
		path := r.Model
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		data, err := readLimited(path, maxModelFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: model %q: %v", ErrUnknown, r.where(), truncate(r.Model), err)
		}
		m = new(graph.Model)
		if err := json.Unmarshal(data, m); err != nil {
			return nil, fmt.Errorf("%s: model %q: %w", r.where(), truncate(r.Model), err)
		}
	} else {
		var err error
		if m, err = graph.ZooModel(r.Model); err != nil {
			return nil, fmt.Errorf("%s: model: %w", r.where(), err)
		}
	}
	var err error
	if r.SeqLen != 0 {
		if m, err = m.WithSeqLen(r.SeqLen); err != nil {
			return nil, fmt.Errorf("%s: seq_len: %w", r.where(), err)
		}
	}
	if r.DTypeBytes != 0 {
		if m, err = m.WithDTypeBytes(r.DTypeBytes); err != nil {
			return nil, fmt.Errorf("%s: precision: %w", r.where(), err)
		}
	}
	return m, nil
}

// order returns the GPU of each canonical rank: gpus lists the placement's GPUs server by
// server, and the row's rank order says which rank each one holds.
func order(r Row, gpus []topology.GPUID) []topology.GPUID {
	if r.Order != RankTPDPPP {
		return gpus
	}
	p := r.Plan
	out := make([]topology.GPUID, len(gpus))
	for rank := range out {
		d, s, t := p.Coords(rank)
		out[rank] = gpus[(s*p.DP+d)*p.TP+t]
	}
	return out
}
