package trace_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/trace"
)

// TestPhillyFarTimestamps: one mistyped year must not shift every other arrival. Before
// the fix, a row dated 0217 (or 2317) made the others arrive at 9.223372036854776e9 s
// (time.Duration saturating at about 292 years), with no error.
func TestPhillyFarTimestamps(t *testing.T) {
	const head = "timestamp,duration,num_gpus\n2017-10-09 07:00:00,60,1\n2017-10-09 08:00:00,60,1\n"
	for _, far := range []string{"0217-10-09 07:00:00", "2317-10-09 07:00:00", "9999-12-31 23:59:59", "0001-01-01 00:00:00"} {
		in := head + far + ",60,1\n2017-10-10 07:00:00,60,1\n"
		_, err := trace.ReadPhilly(strings.NewReader(in), "p.csv", trace.ReadOptions{})
		var pe *trace.ParseError
		if !errors.As(err, &pe) || pe.Line != 4 || pe.Column != "timestamp" || !strings.Contains(err.Error(), "MaxArrival") {
			t.Errorf("%s: got %v, want p.csv:4 column timestamp naming MaxArrival", far, err)
		}
		tr, err := trace.ReadPhilly(strings.NewReader(in), "p.csv", trace.ReadOptions{Lenient: true})
		if err != nil || tr.Skipped != 1 || len(tr.Records) != 3 {
			t.Fatalf("%s lenient: %v %+v", far, err, tr)
		}
		var at []float64
		for _, r := range tr.Records {
			at = append(at, r.Job.Arrival)
		}
		if fmt.Sprint(at) != "[0 3600 86400]" {
			t.Errorf("%s lenient: arrivals %v, want [0 3600 86400]", far, at)
		}
	}
	// Within the bound, arrivals are exact however far apart: 80 years is past what a
	// time.Duration difference would survive in nanoseconds only barely, and exact here.
	in := "timestamp,duration,num_gpus\n1960-01-01 00:00:00,60,1\n2000-01-01 00:00:00,60,1\n2040-01-01 00:00:00,60,1\n"
	tr, err := trace.ReadPhilly(strings.NewReader(in), "p.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	days := (80*365 + 20) * 86400.0 // 20 leap days in 1960-2039
	if got := tr.Records[2].Job.Arrival; got != days {
		t.Errorf("last arrival %v s, want %v s", got, days)
	}
}

// TestReadersBoundTimes: durations beyond MaxDuration and arrivals beyond MaxArrival are
// malformed rows, named by file:line and column, in every reader and generator. Before the
// fix they were accepted and printed as 300-digit day counts.
func TestReadersBoundTimes(t *testing.T) {
	philly := "timestamp,duration,num_gpus,gpu_time\n2017-10-09 07:00:00,60,1,60\n"
	pollux := "name,time,application,num_replicas,batch_size,duration\na,0,bert,1,8,60\n"
	jsonl := `{"job":{"id":"a","gpus":1,"step_time":1},"iterations":10}` + "\n"
	cases := []struct {
		name string
		read func(string) (*trace.Trace, error)
		in   string
		msg  string
	}{
		{"philly duration 1e300", readPhilly, philly + "2017-10-09 07:00:00,1e300,1,1e300\n", "f:3: column duration: run time 1e+300 s is longer than"},
		{"philly duration 11 years", readPhilly, philly + "2017-10-09 07:00:00,347133600,1,347133600\n", "f:3: column duration: run time 3.471336e+08 s"},
		{"pollux time 1e300", readPollux, pollux + "b,1e300,bert,1,8,60\n", "f:3: column time: arrival 1e+300 s is later than"},
		{"pollux duration", readPollux, pollux + "b,1,bert,1,8,1e10\n", "f:3: column duration: run time 1e+10 s"},
		{"jsonl arrival", readJSONL, jsonl + `{"job":{"id":"b","arrival":1e15,"gpus":1,"step_time":0.1},"iterations":10}`, `f:2: gpusched: invalid job: job "b": arrival 1e+15 s is later than`},
		{"jsonl length", readJSONL, jsonl + `{"job":{"id":"b","gpus":1,"step_time":10},"iterations":1e308}`, `f:2: gpusched: invalid job: job "b": 1e+308 iterations of 10 s: run time +Inf s`},
		{"jsonl no step time", readJSONL, jsonl + `{"job":{"id":"b","gpus":1},"iterations":10}`, `f:2: gpusched: invalid job: no cost: job "b" has neither a model nor a step time`},
		{"jsonl long id", readJSONL, jsonl + `{"job":{"id":"` + strings.Repeat("x", 300) + `","gpus":1,"step_time":1},"iterations":10}`, `is longer than 256 bytes`},
		{"pollux long name", readPollux, pollux + strings.Repeat("y", 300) + ",1,bert,1,8,60\n", "f:3: column name: job name"},
		{"philly 1e309", readPhilly, philly + "2017-10-09 07:00:00,1e309,1,60\n", `f:3: column duration: "1e309" is out of the range of a float64`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.read(tc.in)
			if !errors.Is(err, trace.ErrMalformed) || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Errorf("got %v\nwant ErrMalformed with %q", err, tc.msg)
			}
		})
	}
	for _, rate := range []float64{1e-300, 5e-324, 1e-7} {
		if _, err := trace.GeneratePhilly(trace.PhillyConfig{Jobs: 2000, ArrivalRate: rate}); !errors.Is(err, trace.ErrInvalidPhillyConfig) || !strings.Contains(err.Error(), "MaxArrival") {
			t.Errorf("GeneratePhilly at rate %v: %v", rate, err)
		}
		if rate < 1e-9 {
			continue
		}
		if _, err := trace.GenerateRecurring(trace.RecurringConfig{Jobs: 2000, ArrivalRate: rate}); !errors.Is(err, trace.ErrInvalidRecurringConfig) || !strings.Contains(err.Error(), "MaxArrival") {
			t.Errorf("GenerateRecurring at rate %v: %v", rate, err)
		}
	}
}

func readPhilly(s string) (*trace.Trace, error) {
	return trace.ReadPhilly(strings.NewReader(s), "f", trace.ReadOptions{Seed: 1})
}

func readPollux(s string) (*trace.Trace, error) {
	return trace.ReadPollux(strings.NewReader(s), "f", trace.ReadOptions{})
}

func readJSONL(s string) (*trace.Trace, error) {
	return trace.ReadJSONL(strings.NewReader(s), "f", trace.ReadOptions{})
}

// TestHugeFieldShortError: an error quotes at most a few dozen bytes of the offending field.
// Before the fix, one 150 MB numeric field gave a 157 MB message.
func TestHugeFieldShortError(t *testing.T) {
	huge := strings.Repeat("9", 1<<20)
	cases := map[string]func() error{
		"philly duration": func() error {
			_, err := readPhilly("timestamp,duration,num_gpus\n2017-10-09 07:00:00," + huge + ",1\n")
			return err
		},
		"philly gpus": func() error {
			_, err := readPhilly("timestamp,duration,num_gpus\n2017-10-09 07:00:00,1," + huge + "\n")
			return err
		},
		"philly timestamp": func() error {
			_, err := readPhilly("timestamp,duration,num_gpus\n" + huge + ",1,1\n")
			return err
		},
		"pollux application": func() error {
			_, err := readPollux("name,time,application,num_replicas,batch_size\na,0," + huge + ",1,8\n")
			return err
		},
		"pollux time": func() error {
			_, err := readPollux("name,time,application,num_replicas,batch_size\na,x" + huge + ",bert,1,8\n")
			return err
		},
		"jsonl number": func() error {
			_, err := readJSONL(`{"job":{"id":"a","gpus":1,"step_time":1},"iterations":1` + huge + `}`)
			return err
		},
		"jsonl string": func() error {
			_, err := readJSONL(`{"job":{"id":"a","gpus":1,"family":"` + huge + `"}}`)
			return err
		},
	}
	for name, f := range cases {
		err := f()
		if !errors.Is(err, trace.ErrMalformed) || len(err.Error()) > 400 {
			msg := fmt.Sprint(err)
			t.Errorf("%s: error of %d bytes: %.200s", name, len(msg), msg)
		}
	}
}

// TestLongLine: a line longer than 16 MB fails every reader, strict or lenient, with a
// short error naming its line, before the reader buffers it whole.
func TestLongLine(t *testing.T) {
	long := strings.Repeat("8", 17<<20)
	for name, in := range map[string]string{
		"philly": "timestamp,duration,num_gpus\n2017-10-09 07:00:00,60,1\n2017-10-09 07:00:00," + long + ",1\n",
		"pollux": "name,time,application,num_replicas,batch_size\na,0,bert,1,8\r\nb,0,bert,1," + long + "\r\n",
		"jsonl":  `{"job":{"id":"a","gpus":1,"step_time":1},"iterations":10}` + "\n\r" + `{"job":{"id":"` + long + `"}}`,
	} {
		read := map[string]func(io.Reader, string, trace.ReadOptions) (*trace.Trace, error){
			"philly": trace.ReadPhilly, "pollux": trace.ReadPollux, "jsonl": trace.ReadJSONL}[name]
		for _, lenient := range []bool{false, true} {
			_, err := read(strings.NewReader(in), "f", trace.ReadOptions{Lenient: lenient})
			var pe *trace.ParseError
			if !errors.As(err, &pe) || pe.Line != 3 || !strings.Contains(err.Error(), "line longer than 16777216 bytes") || len(err.Error()) > 100 {
				t.Errorf("%s (lenient %v): %.200v", name, lenient, err)
			}
		}
	}
}

// TestLineEndingsAndBOM: lone carriage returns end lines and a leading byte-order mark is
// skipped, in every reader, with line numbers as a text editor counts them. Before the fix,
// CR-only files failed with "column num_gpus: missing" and JSON lines with a mark failed.
func TestLineEndingsAndBOM(t *testing.T) {
	files := map[string]struct {
		read func(string) (*trace.Trace, error)
		in   string
		next int // the line after the file's last
	}{
		"philly": {readPhilly, "timestamp,duration,num_gpus\n2017-10-09 07:00:00,60,1\n2017-10-09 08:00:00,30,2\n", 4},
		"pollux": {readPollux, "name,time,application,num_replicas,batch_size\na,0,bert,1,8\nb,5,ncf,2,64\n", 4},
		"jsonl":  {readJSONL, `{"job":{"id":"a","gpus":1,"step_time":1},"iterations":10}` + "\n" + `{"job":{"id":"b","arrival":3,"gpus":2,"step_time":1},"iterations":5}` + "\n", 3},
	}
	for name, f := range files {
		want, err := f.read(f.in)
		if err != nil || len(want.Records) != 2 {
			t.Fatalf("%s: %v", name, err)
		}
		for variant, in := range map[string]string{
			"CR":     strings.ReplaceAll(f.in, "\n", "\r"),
			"CRLF":   strings.ReplaceAll(f.in, "\n", "\r\n"),
			"BOM":    "\ufeff" + f.in,
			"BOM+CR": "\ufeff" + strings.ReplaceAll(f.in, "\n", "\r"),
		} {
			got, err := f.read(in)
			if err != nil || fmt.Sprint(got.Records) != fmt.Sprint(want.Records) {
				t.Errorf("%s %s: %v\n got %+v\nwant %+v", name, variant, err, got, want)
			}
		}
		// A bad last row is reported on its line whatever the line endings.
		bad := f.in + "garbage\n"
		for _, in := range []string{bad, strings.ReplaceAll(bad, "\n", "\r"), strings.ReplaceAll(bad, "\n", "\r\n")} {
			_, err := f.read(in)
			var pe *trace.ParseError
			if !errors.As(err, &pe) || pe.Line != f.next {
				t.Errorf("%s %q: %v, want an error on line %d", name, in[len(in)-9:], err, f.next)
			}
		}
	}
}

// TestTextReaderChunks: the CR translation is the same whatever the read sizes, including a
// CR at the end of one read and its LF at the start of the next.
func TestTextReaderChunks(t *testing.T) {
	in := "\ufeffa\rb\r\nc\r\r\nd\r"
	want := "a\nb\r\nc\n\r\nd\n"
	tr, err := trace.ReadJSONL(iotest.OneByteReader(strings.NewReader(strings.ReplaceAll(
		`{"job":{"id":"a","gpus":1,"step_time":1},"iterations":1}R{"job":{"id":"b","gpus":1,"step_time":1},"iterations":1}R`, "R", "\r"))),
		"f", trace.ReadOptions{})
	if err != nil || len(tr.Records) != 2 {
		t.Errorf("one byte at a time: %v", err)
	}
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in)), iotest.HalfReader(strings.NewReader(in))} {
		got, err := io.ReadAll(trace.NewTextReaderForTest(r))
		if err != nil || string(got) != want {
			t.Errorf("got %q, %v; want %q", got, err, want)
		}
	}
}

// TestWriteJSONLBounds: what ReadJSONL rejects, WriteJSONL refuses to write.
func TestWriteJSONLBounds(t *testing.T) {
	for _, r := range []trace.Record{
		{Job: gpusched.Job{ID: "a", GPUs: 1}, Iterations: 1},
		{Job: gpusched.Job{ID: "a", GPUs: 1, StepTime: 1, Arrival: 2 * trace.MaxArrival}, Iterations: 1},
		{Job: gpusched.Job{ID: "a", GPUs: 1, StepTime: 10}, Iterations: math.MaxFloat64},
	} {
		var buf bytes.Buffer
		if err := trace.WriteJSONL(&buf, []trace.Record{r}); !errors.Is(err, gpusched.ErrInvalidJob) {
			t.Errorf("%+v: %v", r, err)
		}
	}
}
