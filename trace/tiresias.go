package trace

import (
	"fmt"
	"io"
	"strings"

	gpusched "github.com/gpusched/gpusched"
)

// TiresiasModelFeature is the Features.Categorical key under which ReadTiresias keeps a row's
// model_name.
const TiresiasModelFeature = "tiresias_model"

// maxJobIDLen bounds the job ids a trace may give.
const maxJobIDLen = 256

// ReadTiresias reads the job CSV of the Tiresias simulator (NSDI'19,
// github.com/SymbioticLab/Tiresias, simulator/*.csv, read by its run_sim.py): a header row
// naming the columns job_id, num_gpu, submit_time and duration (in any order), optionally
// iterations, model_name and interval (other columns are ignored), then one job per row:
//
//	job_id       the job's id, unique in the file, at most 256 bytes
//	num_gpu      GPU demand, an integer >= 1
//	submit_time  submission in seconds from the start of the trace, >= 0 and at most MaxArrival
//	duration     run time in seconds, > 0 and at most MaxDuration
//	iterations   the simulator's nominal iteration count: checked (a whole number >= 1) when
//	             present, otherwise unused (the simulator runs a job for its duration)
//	model_name   kept as Features.Categorical[TiresiasModelFeature]
//	interval     the gap to the previous submission: ignored (submit_time is authoritative)
//
// Arrival times are submit_time as given (the simulator's files start at 0). The simulator
// truncates durations to whole seconds (int(float(duration))); here a fractional duration is
// kept. Each row is mapped (key: the line number) to a model and its true iterations as
// ReadPhilly's rows are, so that it runs for its duration when consolidated: with
// opts.Cluster, a zoo model and a parallel plan timed by package graph (MapModelJob); without,
// a step time only (MapJob). Records come in order of submission, ties in file order (the
// simulator's stable sort by submit_time).
//
// A malformed row is an error naming name:line and the column (a *ParseError wrapping
// ErrMalformed); with opts.Lenient it is skipped and counted in Trace.Skipped.
func ReadTiresias(r io.Reader, name string, opts ReadOptions) (*Trace, error) {
	cr, cols, err := openCSV(r, name, []string{"job_id", "num_gpu", "submit_time", "duration"},
		[]string{"iterations", "model_name", "interval"})
	if err != nil {
		return nil, err
	}
	tr := &Trace{Name: name}
	sink := rowSink{t: tr, lenient: opts.Lenient}
	mapJob, err := jobMapper(opts.Cluster, opts.ReferenceGPU)
	if err != nil {
		return nil, fmt.Errorf("trace: %s: %w", name, err)
	}
	seen := map[gpusched.JobID]int{} // id -> line
	for {
		fields, line, err := nextRow(cr, name)
		if err == io.EOF {
			break
		}
		if err == nil {
			var rec Record
			rec, err = tiresiasRow(fields, cols, name, line, seen, mapJob, opts.Seed)
			if err == nil {
				seen[rec.Job.ID] = line
				tr.Records = append(tr.Records, rec)
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
	sortByArrival(tr.Records)
	return tr, nil
}

// tiresiasRow parses one data row of ReadTiresias.
func tiresiasRow(fields []string, cols map[string]int, name string, line int, seen map[gpusched.JobID]int,
	mapJob func(j *gpusched.Job, duration float64, seed, key uint64) (float64, error), seed uint64) (Record, error) {
	bad := func(col string, e error) error { return &ParseError{File: name, Line: line, Column: col, Err: e} }
	id := strings.TrimSpace(fields[cols["job_id"]])
	switch {
	case id == "":
		return Record{}, bad("job_id", fmt.Errorf("empty job id"))
	case len(id) > maxJobIDLen:
		return Record{}, bad("job_id", fmt.Errorf("job id %s is longer than %d bytes", quote(id), maxJobIDLen))
	}
	if prev, dup := seen[gpusched.JobID(id)]; dup {
		return Record{}, bad("job_id", fmt.Errorf("job id %s already used on line %d", quote(id), prev))
	}
	gpus, err := parseCount(fields[cols["num_gpu"]])
	if err != nil {
		return Record{}, bad("num_gpu", err)
	}
	at, err := parseArrival(fields[cols["submit_time"]])
	if err != nil {
		return Record{}, bad("submit_time", err)
	}
	dur, err := parseDuration(fields[cols["duration"]])
	if err != nil {
		return Record{}, bad("duration", err)
	}
	if c, ok := cols["iterations"]; ok {
		if _, err := parseCount(fields[c]); err != nil {
			return Record{}, bad("iterations", err)
		}
	}
	rec := Record{Job: gpusched.Job{ID: gpusched.JobID(id), GPUs: gpus, Arrival: at}}
	rec.Job.Features.SubmitHour = -1
	if c, ok := cols["model_name"]; ok {
		m := strings.TrimSpace(fields[c])
		if len(m) > maxJobIDLen {
			return Record{}, bad("model_name", fmt.Errorf("model name %s is longer than %d bytes", quote(m), maxJobIDLen))
		}
		if m != "" {
			rec.Job.Features.Categorical = map[string]string{TiresiasModelFeature: m}
		}
	}
	rec.Iterations, err = mapJob(&rec.Job, dur, seed, uint64(line))
	if err != nil {
		return Record{}, bad("", err)
	}
	return rec, nil
}
