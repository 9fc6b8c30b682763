package perf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/placestr"
)

// ErrBadRow reports a malformed measurement file or row; the message names the file, the line
// and the field.
var ErrBadRow = errors.New("perf: bad measurement")

// ErrTooFewRows reports a fit asked of fewer measurements than it has free coefficients.
var ErrTooFewRows = errors.New("perf: too few measurements")

// RankOrder says how a row's worker ranks map onto the GPUs of its placement string, whose
// GPUs are numbered server by server (see internal/placestr).
type RankOrder uint8

const (
	// RankTPPPDP is gpusched's canonical order (graph.Plan.Rank): tensor-parallel rank
	// innermost, then pipeline stage, then data-parallel replica, so that a replica's stages
	// sit side by side.
	RankTPPPDP RankOrder = iota
	// RankTPDPPP is Megatron-LM's order: tensor-parallel rank innermost, then data-parallel
	// replica, then pipeline stage outermost, so that a stage's replicas sit side by side.
	RankTPDPPP
)

var rankOrderNames = [...]string{RankTPPPDP: "tp-pp-dp", RankTPDPPP: "tp-dp-pp"}

// String returns "tp-pp-dp" or "tp-dp-pp".
func (o RankOrder) String() string {
	if int(o) < len(rankOrderNames) {
		return rankOrderNames[o]
	}
	return fmt.Sprintf("rank-order(%d)", uint8(o))
}

// Row is one measured configuration: a model trained with a plan on a placement of GPUs of one
// type, and its measured time per iteration.
type Row struct {
	// File is the file the row was read from; errors name it.
	File string `json:"file,omitempty"`
	// Line is the row's line in its file (1 is the first line).
	Line int `json:"line,omitempty"`
	// Model refers to the model: a zoo name (graph.ZooNames) or the path of a model JSON file
	// (graph.Model's JSON form; relative paths are from the measurement file's directory).
	Model string `json:"model"`
	// DTypeBytes is the training precision in bytes per value: 2 for fp16/bf16 mixed
	// precision (the default, 0), 4 for fp32.
	DTypeBytes float64 `json:"dtype_bytes,omitempty"`
	// SeqLen overrides a transformer's sequence length in tokens (0: the model's own).
	SeqLen int `json:"seq_len,omitempty"`
	// GPU is the GPU type: a topology preset name ("t4", "a800", "a100", "h100"), whose server
	// spec the placement's servers have.
	GPU string `json:"gpu"`
	// Placement has one digit per server: the GPUs the job uses there ("44": four on each of
	// two servers).
	Placement string `json:"placement"`
	// Plan is the parallel plan: degrees, micro-batches, global batch, ZeRO stage, offload and
	// CPU threads, checkpointing.
	Plan graph.Plan `json:"plan"`
	// Order says how the plan's ranks map onto the placement's GPUs.
	Order RankOrder `json:"rank_order,omitempty"`
	// StepTime is the measured time per iteration in seconds, > 0.
	StepTime float64 `json:"step_time"`
	// SyncTime is the measured time spent waiting for gradient synchronisation in seconds, or
	// NaN when not measured.
	SyncTime float64 `json:"sync_time"`
	// ComputeTime is the measured forward and backward time in seconds, or NaN when not
	// measured.
	ComputeTime float64 `json:"compute_time"`
	// Tag is a free-form label (the source's name for the plan, say).
	Tag string `json:"tag,omitempty"`
}

// GPUs returns the number of GPUs of the row's placement.
func (r Row) GPUs() int {
	n, _ := placestr.Check(r.Placement)
	return n
}

// Servers returns the number of servers the row's placement uses.
func (r Row) Servers() int {
	n := 0
	for _, c := range r.Placement {
		if c != '0' {
			n++
		}
	}
	return n
}

// where names the row for errors: "file:line".
func (r Row) where() string {
	if r.File == "" {
		return fmt.Sprintf("line %d", r.Line)
	}
	return fmt.Sprintf("%s:%d", r.File, r.Line)
}

// Columns of the measurement CSV, in the order Write uses.
var columns = []string{"model", "precision", "seq_len", "gpu", "placement", "dp", "tp", "pp", "micro_batches", "grad_accum",
	"micro_batch_size", "global_batch", "local_batch", "zero", "offload", "cpu_threads", "checkpointing", "uneven_heads", "rank_order", "step_time", "sync_time", "compute_time", "tag"}

// maxLineBytes bounds one line of a measurement file.
const maxLineBytes = 1 << 16

// Read reads measurements in the CSV format documented in the package overview: a header line
// naming the columns (in any order; model, gpu, placement, step_time and one of global_batch
// or local_batch are required), then one row per measured configuration. A UTF-8 byte-order
// mark, CRLF line ends, blank lines and lines starting with '#' are accepted. name is used in
// errors, which wrap ErrBadRow and name "name:line" and the field. Fields are plain
// (unquoted): a measurement has no commas in it.
func Read(r io.Reader, name string) ([]Row, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLineBytes)
	line := 0
	col := map[string]int{}
	var rows []Row
	width := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if t := strings.TrimSpace(text); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		fields := strings.Split(text, ",")
		if width == 0 {
			if err := readHeader(fields, col, name, line); err != nil {
				return nil, err
			}
			width = len(fields)
			continue
		}
		if len(fields) != width {
			return nil, fmt.Errorf("%w: %s:%d: %d fields, the header has %d", ErrBadRow, name, line, len(fields), width)
		}
		row, err := parseRow(fields, col, name, line)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %v", ErrBadRow, name, line+1, err)
	}
	if width == 0 {
		return nil, fmt.Errorf("%w: %s: no header line", ErrBadRow, name)
	}
	return rows, nil
}

func readHeader(fields []string, col map[string]int, name string, line int) error {
	known := map[string]bool{}
	for _, c := range columns {
		known[c] = true
	}
	for i, f := range fields {
		f = strings.ToLower(strings.TrimSpace(f))
		if !known[f] {
			return fmt.Errorf("%w: %s:%d: unknown column %q (columns: %s)", ErrBadRow, name, line, truncate(f), strings.Join(columns, ", "))
		}
		if _, dup := col[f]; dup {
			return fmt.Errorf("%w: %s:%d: column %q appears twice", ErrBadRow, name, line, f)
		}
		col[f] = i
	}
	for _, need := range []string{"model", "gpu", "placement", "step_time"} {
		if _, ok := col[need]; !ok {
			return fmt.Errorf("%w: %s:%d: the header lacks column %q", ErrBadRow, name, line, need)
		}
	}
	_, g := col["global_batch"]
	_, l := col["local_batch"]
	if !g && !l {
		return fmt.Errorf("%w: %s:%d: the header needs a global_batch or a local_batch column", ErrBadRow, name, line)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// parseRow parses one data line.
func parseRow(fields []string, col map[string]int, name string, line int) (Row, error) {
	get := func(c string) (string, bool) {
		i, ok := col[c]
		if !ok {
			return "", false
		}
		v := strings.TrimSpace(fields[i])
		return v, v != ""
	}
	bad := func(c, v, want string) error {
		return fmt.Errorf("%w: %s:%d: %s %q: %s", ErrBadRow, name, line, c, truncate(v), want)
	}
	intField := func(c string, def, lo, hi int) (int, error) {
		v, ok := get(c)
		if !ok {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return 0, bad(c, v, fmt.Sprintf("want an integer in %d-%d", lo, hi))
		}
		return n, nil
	}
	boolField := func(c string) (bool, error) {
		v, ok := get(c)
		if !ok {
			return false, nil
		}
		switch strings.ToLower(v) {
		case "0", "false", "no":
			return false, nil
		case "1", "true", "yes":
			return true, nil
		}
		return false, bad(c, v, "want 0 or 1 (or true, false)")
	}
	timeField := func(c string, required bool) (float64, error) {
		v, ok := get(c)
		if !ok {
			if required {
				return 0, fmt.Errorf("%w: %s:%d: %s is empty: want a positive number of seconds", ErrBadRow, name, line, c)
			}
			return math.NaN(), nil
		}
		x, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange):
			return 0, bad(c, v, "out of range: want a finite number of seconds")
		case err != nil || math.IsNaN(x) || math.IsInf(x, 0):
			return 0, bad(c, v, "want a finite number of seconds")
		case required && !(x > 0):
			return 0, bad(c, v, "want a positive number of seconds")
		case x < 0:
			return 0, bad(c, v, "want a non-negative number of seconds")
		case x > maxSeconds:
			return 0, bad(c, v, fmt.Sprintf("longer than %g s per iteration", float64(maxSeconds)))
		}
		return x, nil
	}

	var r Row
	var err error
	r.File, r.Line = name, line
	var ok bool
	if r.Model, ok = get("model"); !ok {
		return Row{}, fmt.Errorf("%w: %s:%d: model is empty: want a zoo name or a model JSON file", ErrBadRow, name, line)
	}
	if p, ok := get("precision"); ok {
		if r.DTypeBytes, err = parsePrecision(p); err != nil {
			return Row{}, bad("precision", p, err.Error())
		}
		if r.DTypeBytes == 2 { // the default
			r.DTypeBytes = 0
		}
	}
	if r.SeqLen, err = intField("seq_len", 0, 1, 1<<24); err != nil {
		return Row{}, err
	}
	if r.GPU, ok = get("gpu"); !ok {
		return Row{}, fmt.Errorf("%w: %s:%d: gpu is empty: want a topology preset (t4, a800, a100, h100)", ErrBadRow, name, line)
	}
	r.GPU = strings.ToLower(r.GPU)
	r.Placement, _ = get("placement")
	gpus, perr := placestr.Check(r.Placement)
	if perr != nil {
		return Row{}, fmt.Errorf("%w: %s:%d: placement: %v", ErrBadRow, name, line, perr)
	}
	p := &r.Plan
	if p.TP, err = intField("tp", 1, 1, 1<<20); err != nil {
		return Row{}, err
	}
	if p.PP, err = intField("pp", 1, 1, 1<<20); err != nil {
		return Row{}, err
	}
	if p.DP, err = intField("dp", 0, 1, 1<<20); err != nil {
		return Row{}, err
	}
	if p.DP == 0 {
		p.DP = gpus / (p.TP * p.PP)
	}
	if p.DP*p.TP*p.PP != gpus {
		return Row{}, fmt.Errorf("%w: %s:%d: dp %d x tp %d x pp %d = %d workers but placement %q has %d GPUs",
			ErrBadRow, name, line, p.DP, p.TP, p.PP, p.DP*p.TP*p.PP, r.Placement, gpus)
	}
	if p.MicroBatches, err = intField("micro_batches", 0, 1, 1<<20); err != nil {
		return Row{}, err
	}
	accum, err := intField("grad_accum", 0, 1, 1<<20)
	if err != nil {
		return Row{}, err
	}
	mbs, err := intField("micro_batch_size", 0, 1, 1<<30)
	if err != nil {
		return Row{}, err
	}
	switch {
	case p.MicroBatches != 0 && accum != 0 && p.MicroBatches != accum:
		return Row{}, fmt.Errorf("%w: %s:%d: micro_batches %d and grad_accum %d differ: both count the micro-batches a replica runs per iteration", ErrBadRow, name, line, p.MicroBatches, accum)
	case p.MicroBatches == 0:
		p.MicroBatches = accum
	}
	global, err := intField("global_batch", 0, 1, 1<<30)
	if err != nil {
		return Row{}, err
	}
	local, err := intField("local_batch", 0, 1, 1<<30)
	if err != nil {
		return Row{}, err
	}
	switch {
	case global == 0 && local == 0:
		return Row{}, fmt.Errorf("%w: %s:%d: global_batch and local_batch are both empty: give one", ErrBadRow, name, line)
	case global != 0 && local != 0 && global != local*p.DP:
		return Row{}, fmt.Errorf("%w: %s:%d: global_batch %d is not local_batch %d x dp %d", ErrBadRow, name, line, global, local, p.DP)
	case global == 0:
		global = local * p.DP
	}
	p.GlobalBatch = global
	if mbs != 0 {
		local := global / p.DP
		if global%p.DP != 0 || local%mbs != 0 {
			return Row{}, fmt.Errorf("%w: %s:%d: micro_batch_size %d does not divide the %d samples of a replica (global_batch %d / dp %d)", ErrBadRow, name, line, mbs, local, global, p.DP)
		}
		if p.MicroBatches != 0 && p.MicroBatches != local/mbs {
			return Row{}, fmt.Errorf("%w: %s:%d: micro_batch_size %d gives %d micro-batches of the %d samples of a replica, not %d", ErrBadRow, name, line, mbs, local/mbs, local, p.MicroBatches)
		}
		p.MicroBatches = local / mbs
	}
	if p.MicroBatches == 0 {
		p.MicroBatches = 1
	}
	if global%(p.DP*p.MicroBatches) != 0 {
		return Row{}, fmt.Errorf("%w: %s:%d: global_batch %d is not a multiple of dp %d x micro_batches %d", ErrBadRow, name, line, global, p.DP, p.MicroBatches)
	}
	if p.ZeRO, err = intField("zero", 0, 0, 3); err != nil {
		return Row{}, err
	}
	if p.Offload, err = boolField("offload"); err != nil {
		return Row{}, err
	}
	if p.Offload && p.ZeRO == 0 {
		return Row{}, fmt.Errorf("%w: %s:%d: offload needs zero 1, 2 or 3 (ZeRO-Offload)", ErrBadRow, name, line)
	}
	if p.CPUThreads, err = intField("cpu_threads", 0, 1, 4096); err != nil {
		return Row{}, err
	}
	if p.Checkpointing, err = boolField("checkpointing"); err != nil {
		return Row{}, err
	}
	if p.UnevenHeads, err = boolField("uneven_heads"); err != nil {
		return Row{}, err
	}
	if o, ok := get("rank_order"); ok {
		found := false
		for i, n := range rankOrderNames {
			if strings.EqualFold(o, n) {
				r.Order, found = RankOrder(i), true
			}
		}
		if !found {
			return Row{}, bad("rank_order", o, "want tp-pp-dp (gpusched) or tp-dp-pp (Megatron-LM)")
		}
	}
	if r.StepTime, err = timeField("step_time", true); err != nil {
		return Row{}, err
	}
	if r.SyncTime, err = timeField("sync_time", false); err != nil {
		return Row{}, err
	}
	if r.ComputeTime, err = timeField("compute_time", false); err != nil {
		return Row{}, err
	}
	// A part of a step cannot outlast the step.
	for _, part := range []struct {
		name string
		v    float64
	}{{"sync_time", r.SyncTime}, {"compute_time", r.ComputeTime}} {
		if part.v > r.StepTime {
			return Row{}, fmt.Errorf("%w: %s:%d: %s %g s is longer than the step_time %g s it is part of", ErrBadRow, name, line, part.name, part.v, r.StepTime)
		}
	}
	r.Tag, _ = get("tag")
	return r, nil
}

// maxSeconds bounds a measured time per iteration: a day.
const maxSeconds = 86400

// parsePrecision reads "fp16", "bf16", "fp32" (or "fp8", "tf32") into bytes per value.
func parsePrecision(s string) (float64, error) {
	switch strings.ToLower(s) {
	case "fp16", "bf16", "16", "mixed":
		return 2, nil
	case "fp32", "tf32", "32":
		return 4, nil
	case "fp8", "8":
		return 1, nil
	}
	return 0, errors.New("want fp16, bf16, fp32 or fp8")
}

// precisionName is the inverse of parsePrecision ("" for the default).
func precisionName(d float64) string {
	switch d {
	case 0, 2:
		return ""
	case 4:
		return "fp32"
	case 1:
		return "fp8"
	}
	return strconv.FormatFloat(d*8, 'g', -1, 64)
}

// ReadFile reads a measurement file (see Read).
func ReadFile(path string) ([]Row, error) {
	f, err := openMeasurements(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Write writes rows in the CSV format Read reads (every column, a header first).
func Write(w io.Writer, rows []Row) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(columns, ",") + "\n")
	opt := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	b01 := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	for _, r := range rows {
		p := r.Plan
		seq := ""
		if r.SeqLen != 0 {
			seq = strconv.Itoa(r.SeqLen)
		}
		threads := ""
		if p.CPUThreads != 0 {
			threads = strconv.Itoa(p.CPUThreads)
		}
		mbs := ""
		if d := p.DP * p.MicroBatches; d > 0 && p.GlobalBatch%d == 0 {
			mbs = strconv.Itoa(p.GlobalBatch / d)
		}
		rec := []string{r.Model, precisionName(r.DTypeBytes), seq, r.GPU, r.Placement, strconv.Itoa(p.DP), strconv.Itoa(p.TP), strconv.Itoa(p.PP),
			strconv.Itoa(p.MicroBatches), strconv.Itoa(p.MicroBatches), mbs, strconv.Itoa(p.GlobalBatch), "", strconv.Itoa(p.ZeRO), b01(p.Offload), threads, b01(p.Checkpointing),
			b01(p.UnevenHeads), r.Order.String(), opt(r.StepTime), opt(r.SyncTime), opt(r.ComputeTime), r.Tag}
		for _, f := range rec {
			if strings.ContainsAny(f, ",\n\r") {
				return fmt.Errorf("%w: %s: field %q has a comma or a line break", ErrBadRow, r.where(), truncate(f))
			}
		}
		bw.WriteString(strings.Join(rec, ",") + "\n")
	}
	return bw.Flush()
}
