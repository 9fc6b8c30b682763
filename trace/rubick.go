package trace

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/graph"
	"github.com/gpusched/gpusched/internal/perf"
	"github.com/gpusched/gpusched/topology"
)

// rubick3D lists, per application of the Rubick artifact that it runs under 3D parallelism,
// the three-digit plans (pipeline, tensor, data degrees: perf.RubickPlan) its sched/models
// declare usable (avail_placement's keys).
var rubick3D = map[string][]string{
	"gpt2":    {"151", "251", "351", "411", "451", "611", "651", "811", "851"},
	"t5":      {"141", "181", "221", "241", "281", "321", "341", "381", "411", "421", "441", "481", "611", "621", "641", "681", "811", "821", "841", "881"},
	"llama7":  {"248", "284", "428", "444", "188", "184", "228", "482", "148", "282", "182", "144", "244", "818", "424", "418", "824", "224", "242", "442", "842", "281", "481", "881", "814", "414", "422", "822", "441", "841", "812", "821"},
	"llama30": {"444", "344", "624", "524", "542", "642", "442", "641"},
}

// rubickOffloadThreadChoices are the CPU threads per worker among which a reconfigurable Rubick
// job's ZeRO-Offload plans may choose (one plan option each): the CPU dimension of Rubick's
// resource-sensitivity curves.
var rubickOffloadThreadChoices = []int{2, 4, 8, 12}

// rubickDPGPUs are the GPU counts of the data-parallel plan options (ga, gc, zero-dp,
// zero-offload) of a reconfigurable Rubick job: within one server, as the artifact's
// resource matrices are.
var rubickDPGPUs = []int{1, 2, 4, 8}

// rubickKinds are the artifact's data-parallel plan kinds.
var rubickKinds = []string{"ga", "gc", "zero-dp", "zero-offload"}

// rubickAppNames returns the application names ReadRubick accepts, sorted.
func rubickAppNames() []string {
	var names []string
	for n := range perf.RubickApps() {
		if n != "llama7b" { // the profile directory's name, not a workload's
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// ReadRubick reads a workload CSV of the Rubick artifact (MLSys'25; ../shared/data/rubick/
// workloads): a header naming the columns name, submission_time, duration, application,
// num_gpus, num_cpus, bandwidth, exec_plan, steps and is_sla (any order; others ignored), then
// one job per row:
//
//	name             job id, unique in the file, at most 256 bytes
//	submission_time  arrival in seconds from the start of the workload, >= 0
//	duration         the job's run time in seconds under its plan (checked, not used: steps is)
//	application      bert, gpt2, llama30, llama7, roberta, t5 or vit (perf.RubickApps: the zoo
//	                 model and the global batch, fixed whatever the plan)
//	num_gpus         the GPUs of the user's plan, an integer >= 1
//	num_cpus         the CPU cores the user asks for, in all (>= 0): Job.CPUs is the share
//	                 of one worker, rounded up
//	bandwidth        the network bandwidth the artifact reserves (ignored: the cost model
//	                 times the links of the actual placement)
//	exec_plan        the user's plan: ga, gc, zero-dp, zero-offload, or a three-digit code of
//	                 pipeline, tensor and data degrees (perf.RubickPlan)
//	steps            the iterations the job trains (its true length), an integer >= 1
//	is_sla           1 for a guaranteed job (Job.Guaranteed), 0 otherwise
//
// Every job is reconfigurable (Job.Plans), as in Rubick: besides the user's plan it allows
// each data-parallel kind (ga, gc, zero-dp; zero-offload with each of
// RubickOffloadThreadChoices CPU threads per worker) on 1, 2, 4 and 8 GPUs, and the
// three-digit plans the artifact declares for its model, that divide its batch and fit an
// A800's memory by package graph's model. An option's CPUs per worker are its offload threads
// (1 without offload) and its HostMemory the optimizer state offloaded to the host
// (graph.Memory.Host). Policies that do not reconfigure run the user's plan.
//
// A malformed row (an unknown application or plan, a plan the job's model cannot run on its
// GPU count or that does not fit an A800's memory, a repeated name) is an error naming
// name:line and the column (a *ParseError wrapping ErrMalformed); with opts.Lenient it is
// skipped and counted. opts.Cluster and opts.Seed are not used: the artifact's testbed
// (topology.RubickTestbed) is the reference.
func ReadRubick(r io.Reader, name string, opts ReadOptions) (*Trace, error) {
	cr, cols, err := openCSV(r, name, []string{"name", "submission_time", "duration", "application", "num_gpus",
		"num_cpus", "bandwidth", "exec_plan", "steps", "is_sla"}, nil)
	if err != nil {
		return nil, err
	}
	tr := &Trace{Name: name}
	sink := rowSink{t: tr, lenient: opts.Lenient}
	seen := map[gpusched.JobID]int{}
	rm := &rubickMapper{gpu: topology.A800().GPU, models: map[string]*graph.Model{}, options: map[string][]gpusched.PlanOption{}}
	for {
		fields, line, err := nextRow(cr, name)
		if err == io.EOF {
			break
		}
		if err == nil {
			var rec Record
			rec, err = rm.row(fields, cols, name, line, seen)
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

// rubickMapper turns rows into jobs, keeping each application's model and plan options (the
// jobs of one application share them: schedulers must not modify a job's Plans).
type rubickMapper struct {
	gpu     topology.GPUSpec
	models  map[string]*graph.Model
	options map[string][]gpusched.PlanOption
}

func (m *rubickMapper) row(fields []string, cols map[string]int, name string, line int, seen map[gpusched.JobID]int) (Record, error) {
	bad := func(col string, e error) error { return &ParseError{File: name, Line: line, Column: col, Err: e} }
	id := gpusched.JobID(strings.Clone(strings.TrimSpace(fields[cols["name"]])))
	switch {
	case id == "":
		return Record{}, bad("name", errors.New("empty job name"))
	case len(id) > maxIDLen:
		return Record{}, bad("name", fmt.Errorf("job name %s is longer than %d bytes", quote(string(id)), maxIDLen))
	}
	if prev, dup := seen[id]; dup {
		return Record{}, bad("name", fmt.Errorf("job %q already defined on line %d", id, prev))
	}
	at, err := parseArrival(fields[cols["submission_time"]])
	if err != nil {
		return Record{}, bad("submission_time", err)
	}
	if _, err := parseDuration(fields[cols["duration"]]); err != nil {
		return Record{}, bad("duration", err)
	}
	appName := strings.ToLower(strings.TrimSpace(fields[cols["application"]]))
	app, ok := perf.RubickApps()[appName]
	if !ok || appName == "llama7b" {
		return Record{}, bad("application", fmt.Errorf("unknown application %s (known: %s)", quote(appName), strings.Join(rubickAppNames(), ", ")))
	}
	gpus, err := parseCount(fields[cols["num_gpus"]])
	if err != nil {
		return Record{}, bad("num_gpus", err)
	}
	if gpus > 1<<10 {
		return Record{}, bad("num_gpus", fmt.Errorf("%d GPUs: more than a Rubick job can use (1024)", gpus))
	}
	cpus, err := parseCPUs(fields[cols["num_cpus"]])
	if err != nil {
		return Record{}, bad("num_cpus", err)
	}
	if _, err := parseNonNegative(fields[cols["bandwidth"]]); err != nil {
		return Record{}, bad("bandwidth", err)
	}
	steps, err := parseCount(fields[cols["steps"]])
	if err != nil {
		return Record{}, bad("steps", err)
	}
	var sla bool
	switch v := strings.TrimSpace(fields[cols["is_sla"]]); v {
	case "0", "0.0", "false", "False":
	case "1", "1.0", "true", "True":
		sla = true
	default:
		return Record{}, bad("is_sla", fmt.Errorf("%s: want 0 or 1", quote(v)))
	}
	model, err := m.model(app.Model)
	if err != nil {
		return Record{}, bad("application", err)
	}
	code := strings.TrimSpace(fields[cols["exec_plan"]])
	plan, _, err := perf.RubickPlan(code, gpus, app, model, m.gpu)
	if err != nil {
		return Record{}, bad("exec_plan", err)
	}
	comp, err := graph.Compile(model, plan)
	if err == nil {
		err = comp.CheckMemory(m.gpu)
	}
	if err != nil {
		return Record{}, bad("exec_plan", fmt.Errorf("job %q: plan %s on %d GPUs: %w", id, quote(code), gpus, err))
	}
	opts, err := m.planOptions(appName, app, model)
	if err != nil {
		return Record{}, bad("application", err)
	}
	j := gpusched.Job{
		ID: id, Arrival: at, GPUs: gpus, Model: model, Plan: plan,
		CPUs: (cpus + gpus - 1) / gpus, HostMemory: comp.Memory().Host,
		Plans: opts, Guaranteed: sla,
		Features: gpusched.Features{Family: app.Model, BatchSize: app.GlobalBatch, Group: appName, SubmitHour: -1,
			Categorical: map[string]string{"exec_plan": code}},
	}
	return Record{Job: j, Iterations: float64(steps)}, nil
}

func (m *rubickMapper) model(zoo string) (*graph.Model, error) {
	if md, ok := m.models[zoo]; ok {
		return md, nil
	}
	md, err := graph.ZooModel(zoo)
	if err != nil {
		return nil, err
	}
	m.models[zoo] = md
	return md, nil
}

// planOptions returns the plan options of the application's jobs (see ReadRubick), built once.
func (m *rubickMapper) planOptions(appName string, app perf.RubickApp, model *graph.Model) ([]gpusched.PlanOption, error) {
	if o, ok := m.options[appName]; ok {
		return o, nil
	}
	var out []gpusched.PlanOption
	seen := map[string]bool{}
	add := func(code string, gpus, threads int) {
		p, _, err := perf.RubickPlan(code, gpus, app, model, m.gpu)
		if err != nil {
			return // a batch the GPU count does not divide, a degree the model does not take
		}
		if p.Offload {
			p.CPUThreads = threads
		}
		c, err := graph.Compile(model, p)
		if err != nil || c.CheckMemory(m.gpu) != nil {
			return
		}
		key := fmt.Sprint(p)
		if seen[key] {
			return
		}
		seen[key] = true
		cpus := 1
		if p.Offload {
			cpus = threads
		}
		out = append(out, gpusched.PlanOption{Plan: p, CPUs: cpus, HostMemory: c.Memory().Host})
	}
	for _, n := range rubickDPGPUs {
		for _, k := range rubickKinds {
			if k == "zero-offload" {
				for _, t := range rubickOffloadThreadChoices {
					add(k, n, t)
				}
				continue
			}
			add(k, n, 0)
		}
	}
	for _, code := range rubick3D[appName] {
		add(code, int(code[0]-'0')*int(code[1]-'0')*int(code[2]-'0'), 0)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("application %q: no plan of %s fits an A800", appName, app.Model)
	}
	slices.SortStableFunc(out, func(a, b gpusched.PlanOption) int { return a.GPUs() - b.GPUs() })
	m.options[appName] = out
	return out, nil
}

// parseCPUs parses a CPU count: a whole number in [0, maxCount] ("16.0" is 16).
func parseCPUs(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "0" || s == "0.0" {
		return 0, nil
	}
	return parseCount(s)
}

// parseNonNegative parses a finite float >= 0.
func parseNonNegative(s string) (float64, error) {
	v, err := parseFloat(s)
	if err != nil {
		return 0, err
	}
	if !(v >= 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%v must be finite and >= 0", v)
	}
	return v, nil
}
