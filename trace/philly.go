package trace

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	gpusched "github.com/gpusched/gpusched"
)

// phillyTimeLayout is the layout of the Philly trace's timestamp column (UTC).
const phillyTimeLayout = "2006-01-02 15:04:05"

// ReadPhilly reads the Philly-derived job CSV published with the Pollux (OSDI'21) artifact:
// a header row naming the columns timestamp, duration, num_gpus, gpu_time and cluster (in
// any order; gpu_time and cluster may be absent, other columns are ignored), then one job
// per row:
//
//	timestamp  submission time, "2006-01-02 15:04:05" UTC (or RFC 3339), within 50 years
//	           of the file's median timestamp (so the trace spans at most MaxArrival)
//	duration   run time in seconds, > 0 and at most MaxDuration (10 years)
//	num_gpus   GPU demand, an integer >= 1
//	gpu_time   duration x num_gpus (checked to within 1e-6 relative, when present)
//	cluster    virtual-cluster id, kept as Features.User
//
// Arrival times are seconds after the earliest timestamp of the file (rows need not be
// sorted), computed exactly at any distance. Each row becomes a job "<name>#<line>" mapped
// (key: the line number) to a model and its true iterations, so that it runs for its duration when consolidated: with
// opts.Cluster, a zoo model and a parallel plan timed by package graph (MapModelJob);
// without, a step time only (MapJob). Features.SubmitHour is the hour of day of the timestamp. Records come in
// arrival order, ties in file order.
//
// A malformed row is an error naming name:line and the column (a *ParseError wrapping
// ErrMalformed); with opts.Lenient it is skipped and counted in Trace.Skipped.
func ReadPhilly(r io.Reader, name string, opts ReadOptions) (*Trace, error) {
	cr, cols, err := openCSV(r, name, []string{"timestamp", "duration", "num_gpus"}, []string{"gpu_time", "cluster"})
	if err != nil {
		return nil, err
	}
	tr := &Trace{Name: name}
	sink := rowSink{t: tr, lenient: opts.Lenient}
	mapJob, err := jobMapper(opts.Cluster, opts.ReferenceGPU)
	if err != nil {
		return nil, fmt.Errorf("trace: %s: %w", name, err)
	}
	type row struct {
		at   time.Time
		line int
		rec  Record
	}
	var rows []row
	for {
		fields, line, err := nextRow(cr, name)
		if err == io.EOF {
			break
		}
		if err == nil {
			bad := func(col string, e error) error { return &ParseError{File: name, Line: line, Column: col, Err: e} }
			var x row
			x.line = line
			x.at, err = parsePhillyTime(fields[cols["timestamp"]])
			if err != nil {
				err = bad("timestamp", err)
			}
			var dur, gpuTime float64
			var gpus int
			if err == nil {
				dur, err = parseDuration(fields[cols["duration"]])
				if err != nil {
					err = bad("duration", err)
				}
			}
			if err == nil {
				gpus, err = parseCount(fields[cols["num_gpus"]])
				if err != nil {
					err = bad("num_gpus", err)
				}
			}
			if c, ok := cols["gpu_time"]; ok && err == nil {
				gpuTime, err = parseFloat(fields[c])
				switch {
				case err != nil:
					err = bad("gpu_time", err)
				case !(math.Abs(gpuTime-dur*float64(gpus)) <= 1e-6*math.Abs(dur*float64(gpus))):
					err = bad("gpu_time", fmt.Errorf("%v is not duration x num_gpus = %v", gpuTime, dur*float64(gpus)))
				}
			}
			if err == nil {
				x.rec.Job = gpusched.Job{ID: gpusched.JobID(fmt.Sprintf("%s#%d", baseName(name), line)), GPUs: gpus}
				if c, ok := cols["cluster"]; ok {
					x.rec.Job.Features.User = strings.TrimSpace(fields[c])
				}
				h, m, s := x.at.Clock()
				x.rec.Job.Features.SubmitHour = float64(h) + float64(m)/60 + float64(s)/3600
				x.rec.Iterations, err = mapJob(&x.rec.Job, dur, opts.Seed, uint64(line))
				if err != nil {
					err = bad("", err)
				}
			}
			if err == nil {
				rows = append(rows, x)
				continue
			}
		}
		if fatal(err) {
			return nil, err
		}
		if err := sink.fail(err); err != nil {
			return nil, err
		}
	}
	if len(rows) == 0 {
		return tr, nil
	}
	// Timestamps far from the median are malformed: they would shift every other arrival
	// (or be shifted by a century). What remains spans at most MaxArrival.
	rows = sortedBy(rows, func(a, b *row) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.line, b.line) // the file's order among equal times: a stable sort
	})
	median := rows[len(rows)/2].at
	isFar := func(x row) bool { return !(math.Abs(seconds(x.at, median)) <= MaxArrival/2) }
	var far []row
	for _, x := range rows {
		if isFar(x) {
			far = append(far, x)
		}
	}
	slices.SortFunc(far, func(a, b row) int { return cmp.Compare(a.line, b.line) })
	for _, x := range far {
		err := &ParseError{File: name, Line: x.line, Column: "timestamp", Err: fmt.Errorf(
			"%s is more than 50 years from the file's median timestamp %s: a trace spans at most 100 years (trace.MaxArrival)",
			x.at.Format(phillyTimeLayout), median.Format(phillyTimeLayout))}
		if err := sink.fail(err); err != nil {
			return nil, err
		}
	}
	rows = slices.DeleteFunc(rows, isFar)
	first := rows[0].at
	tr.Records = make([]Record, len(rows))
	for i := range rows {
		rows[i].rec.Job.Arrival = seconds(rows[i].at, first)
		tr.Records[i] = rows[i].rec
	}
	return tr, nil
}

// seconds returns a - b in seconds, exactly up to float64 rounding at any distance
// (time.Time.Sub saturates at about 292 years).
func seconds(a, b time.Time) float64 {
	return float64(a.Unix()-b.Unix()) + float64(a.Nanosecond()-b.Nanosecond())/1e9
}

func parsePhillyTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if len(s) > 64 {
		return time.Time{}, fmt.Errorf("%s is not a time like %q", quote(s), phillyTimeLayout)
	}
	t, err := time.Parse(phillyTimeLayout, s)
	if err != nil {
		if t2, err2 := time.Parse(time.RFC3339, s); err2 == nil {
			return t2, nil
		}
		return time.Time{}, fmt.Errorf("%s is not a time like %q", quote(s), phillyTimeLayout)
	}
	return t, nil
}

// baseName returns the last element of a slash- or backslash-separated path.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// parsePositive parses a finite float > 0.
func parsePositive(s string) (float64, error) {
	v, err := parseFloat(s)
	if err != nil {
		return 0, err
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%v must be finite and > 0", v)
	}
	return v, nil
}

// parseDuration parses a run time in seconds: finite, > 0 and at most MaxDuration.
func parseDuration(s string) (float64, error) {
	v, err := parsePositive(s)
	if err == nil {
		err = checkDuration(v)
	}
	return v, err
}

// parseArrival parses an arrival in seconds after the workload's start: finite, >= 0 and at
// most MaxArrival.
func parseArrival(s string) (float64, error) {
	v, err := parseFloat(s)
	if err != nil {
		return 0, err
	}
	if !(v >= 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%v must be finite and >= 0", v)
	}
	return v, checkArrival(v)
}

// maxCount bounds GPU counts and batch sizes read from traces.
const maxCount = 1 << 24

// parseCount parses an integer in [1, maxCount]; "8.0" is accepted as 8.
func parseCount(s string) (int, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxNumberLen {
		return 0, fmt.Errorf("%s is not a whole number in [1, %d]", quote(s), maxCount)
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > maxCount {
			return 0, fmt.Errorf("%s is not a whole number in [1, %d]", quote(s), maxCount)
		}
		v = int(f)
	}
	if v < 1 || v > maxCount {
		return 0, fmt.Errorf("%d must be between 1 and %d", v, maxCount)
	}
	return v, nil
}

// openCSV reads the header of a CSV file and maps the column names (trimmed, lower-case) to
// their indices. Every required column must be present. A leading byte-order mark is
// skipped, and lone carriage returns end lines as line feeds do (newTextReader).
func openCSV(r io.Reader, name string, required, optional []string) (*csv.Reader, map[string]int, error) {
	cr := csv.NewReader(newTextReader(r))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil, &ParseError{File: name, Line: 1, Err: errors.New("empty file: no header row")}
	}
	if err != nil {
		return nil, nil, csvError(name, err)
	}
	cols := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if _, dup := cols[h]; dup && (slices.Contains(required, h) || slices.Contains(optional, h)) {
			return nil, nil, &ParseError{File: name, Line: 1, Column: h, Err: errors.New("column appears twice in the header")}
		}
		if _, dup := cols[h]; !dup {
			cols[h] = i
		}
	}
	for _, c := range required {
		if _, ok := cols[c]; !ok {
			return nil, nil, &ParseError{File: name, Line: 1, Column: c,
				Err: fmt.Errorf("missing from the header (want %s)", strings.Join(append(slices.Clone(required), optional...), ","))}
		}
	}
	cr.FieldsPerRecord = len(header)
	return cr, cols, nil
}

// nextRow returns the next data row and its line number. Row-level problems (a wrong field
// count, a bad quote) come back as *ParseError; the caller may skip them and go on.
func nextRow(cr *csv.Reader, name string) ([]string, int, error) {
	fields, err := cr.Read()
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, 0, csvError(name, err)
	}
	line, _ := cr.FieldPos(0)
	return fields, line, nil
}

// fatal reports whether err, returned by nextRow, cannot be skipped (an I/O error, a line
// longer than maxLine).
func fatal(err error) bool {
	var pe *ParseError
	var long *lineTooLong
	return !errors.As(err, &pe) || errors.As(err, &long)
}

func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &ParseError{File: name, Line: pe.StartLine, Err: pe.Err}
	}
	var long *lineTooLong
	if errors.As(err, &long) {
		return &ParseError{File: name, Line: long.Line, Err: long}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// sortByArrival sorts records by arrival time, ties in their current order.
func sortByArrival(recs []Record) {
	if slices.IsSortedFunc(recs, func(a, b Record) int { return cmp.Compare(a.Job.Arrival, b.Job.Arrival) }) {
		return
	}
	copy(recs, sortedBy(recs, func(a, b *Record) int { return cmp.Compare(a.Job.Arrival, b.Job.Arrival) }))
}

// sortedBy returns xs sorted stably by cmp in a new slice. It sorts positions, not the
// (large) elements, which are copied once: a stable sort of the elements themselves moved
// each one many times and took most of a large trace's reading time.
func sortedBy[T any](xs []T, cmp func(a, b *T) int) []T {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp(&xs[a], &xs[b]) })
	out := make([]T, len(xs))
	for i, k := range idx {
		out[i] = xs[k]
	}
	return out
}
