package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	gpusched "github.com/gpusched/gpusched"
)

// maxJSONLLine is the longest line ReadJSONL accepts, in bytes: maxLine, as every reader.
const maxJSONLLine = maxLine

// WriteJSONL writes records in the library's native format: JSON lines, one Record per line
// ({"job": {...}, "iterations": n, "killed": true}), in the order given. Every field of the
// job (id, arrival, GPU demand, step time, weight, features) and its true length are kept, so
// ReadJSONL gives the records back exactly. It fails on a record ReadJSONL would reject
// (see there), naming it.
func WriteJSONL(w io.Writer, recs []Record) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := checkRecord(&recs[i]); err != nil {
			return fmt.Errorf("trace: record %d: %w", i, err)
		}
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("trace: record %d (job %q): %w", i, recs[i].Job.ID, err)
		}
	}
	return bw.Flush()
}

// checkRecord is the validity rule of the native format: a valid job (gpusched.Job.Validate
// without a cluster: among others, a model or a step time) with an id of at most 256 bytes,
// arriving at most MaxArrival (100 years) after the start; a finite iteration count > 0;
// and, with a step time, a length iterations x step time of at most MaxDuration (10 years).
func checkRecord(r *Record) error {
	if len(r.Job.ID) > maxIDLen {
		return fmt.Errorf("%w: job id %s is longer than %d bytes", gpusched.ErrInvalidJob, quote(string(r.Job.ID)), maxIDLen)
	}
	if err := r.Job.Validate(nil); err != nil {
		return err
	}
	if err := checkArrival(r.Job.Arrival); err != nil {
		return fmt.Errorf("%w: job %q: %w", gpusched.ErrInvalidJob, r.Job.ID, err)
	}
	if !(r.Iterations > 0) || math.IsInf(r.Iterations, 0) {
		return fmt.Errorf("%w: job %q: iterations %v must be finite and > 0", gpusched.ErrInvalidJob, r.Job.ID, r.Iterations)
	}
	if r.Job.StepTime > 0 {
		if err := checkDuration(r.Iterations * r.Job.StepTime); err != nil {
			return fmt.Errorf("%w: job %q: %v iterations of %v s: %w", gpusched.ErrInvalidJob, r.Job.ID, r.Iterations, r.Job.StepTime, err)
		}
	}
	return nil
}

// ReadJSONL reads records in the library's native format (see WriteJSONL): one JSON object
// per line, blank lines ignored; a leading byte-order mark is skipped and lone carriage
// returns end lines. Unknown fields are errors (they are usually typos), as are a job that
// fails gpusched.Job.Validate or whose id is longer than 256 bytes, an arrival later than
// MaxArrival, an iteration count that is not finite and > 0, a job without a model whose
// step time is 0, a length iterations x step time longer than MaxDuration, and a job id seen
// before. Error messages quote at most a few dozen bytes of the line. Records come in arrival order, ties in file order. opts.Seed is not
// used: the format is complete.
//
// A malformed line is an error naming name:line (a *ParseError wrapping ErrMalformed); with
// opts.Lenient it is skipped and counted in Trace.Skipped.
func ReadJSONL(r io.Reader, name string, opts ReadOptions) (*Trace, error) {
	tr := &Trace{Name: name}
	sink := rowSink{t: tr, lenient: opts.Lenient}
	sc := bufio.NewScanner(newTextReader(r))
	sc.Buffer(make([]byte, 0, 64<<10), maxJSONLLine)
	seen := map[gpusched.JobID]int{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec, err := jsonlRow(b, seen)
		if err == nil {
			seen[rec.Job.ID] = line
			tr.Records = append(tr.Records, rec)
			continue
		}
		if err := sink.fail(&ParseError{File: name, Line: line, Err: clip(err)}); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		var long *lineTooLong
		if errors.As(err, &long) {
			return nil, &ParseError{File: name, Line: long.Line, Err: long}
		}
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ParseError{File: name, Line: line + 1, Err: fmt.Errorf("line longer than %d bytes", maxJSONLLine)}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sortByArrival(tr.Records)
	return tr, nil
}

func jsonlRow(b []byte, seen map[gpusched.JobID]int) (Record, error) {
	var rec Record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return Record{}, err
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return Record{}, fmt.Errorf("unexpected %q after the record", string(rest[:min(len(rest), 20)]))
	}
	if err := checkRecord(&rec); err != nil {
		return Record{}, err
	}
	// Empty maps are written as nothing; read them as nothing, so that round trips are exact.
	if len(rec.Job.Features.Numeric) == 0 {
		rec.Job.Features.Numeric = nil
	}
	if len(rec.Job.Features.Categorical) == 0 {
		rec.Job.Features.Categorical = nil
	}
	if len(rec.Job.Plans) == 0 {
		rec.Job.Plans = nil // "plans": [] is no plans, as an absent list
	}
	if prev, dup := seen[rec.Job.ID]; dup {
		return Record{}, fmt.Errorf("job %q already defined on line %d", rec.Job.ID, prev)
	}
	return rec, nil
}
