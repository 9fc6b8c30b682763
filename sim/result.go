package sim

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/host"
)

// Result is what a simulation measured.
type Result struct {
	// Scheduler is the scheduler's name (see SchedulerName).
	Scheduler string `json:"scheduler"`
	// Cluster is the cluster's name; GPUs its size.
	Cluster string `json:"cluster"`
	GPUs    int    `json:"gpus"`
	// RestoreTime is the checkpoint/restore cost in seconds that was charged.
	RestoreTime float64 `json:"restore_time"`
	// Summary holds the aggregate metrics.
	Summary Summary `json:"summary"`
	// Jobs holds one record per job, in arrival order.
	Jobs []JobRecord `json:"jobs"`
	// Timeline samples the cluster after every event whose state differs from the previous
	// sample: the state holds from Time until the next sample's Time. The last sample is at
	// the last completion.
	Timeline []Sample `json:"timeline"`
	// Segments lists every interval during which a job held a placement, in the order they
	// ended; only when Config.RecordSegments is set.
	Segments []host.Segment `json:"segments,omitempty"`
	// Outages lists the server failures that happened (Config.Failures), in the order they
	// began; a server still down when the last job finished is listed up to that time.
	Outages []Outage `json:"outages,omitempty"`
}

// JobRecord is what happened to one job. Times are seconds on the trace's clock.
type JobRecord struct {
	// ID is the job's id.
	ID gpusched.JobID `json:"id"`
	// Arrival is when the job arrived; Start when it first started; Finish when it finished.
	Arrival float64 `json:"arrival"`
	Start   float64 `json:"start"`
	Finish  float64 `json:"finish"`
	// JCT is the job completion time: Finish - Arrival.
	JCT float64 `json:"jct"`
	// QueueDelay is the time from arrival to first start: Start - Arrival.
	QueueDelay float64 `json:"queue_delay"`
	// Wait is the total time the job spent waiting, first start and after preemptions:
	// JCT - RunTime.
	Wait float64 `json:"wait"`
	// GPUs is the job's GPU demand.
	GPUs int `json:"gpus"`
	// ServersSpanned is the largest number of servers any of the job's placements spanned.
	ServersSpanned int `json:"servers_spanned"`
	// Preemptions and Migrations count how often the job was stopped and moved.
	Preemptions int `json:"preemptions"`
	Migrations  int `json:"migrations"`
	// Iterations is the number of iterations the job did: its true length.
	Iterations float64 `json:"iterations"`
	// RunTime is the time the job held GPUs, restore periods included.
	RunTime float64 `json:"run_time"`
	// Productive is the time the job held GPUs and made progress (RunTime minus restores).
	Productive float64 `json:"productive"`
	// GPUTime is the GPU-seconds the job held: the sum over its placements of GPUs x time.
	GPUTime float64 `json:"gpu_time"`
	// CrossServerBytes is the bytes the job sent between servers: its iterations on each
	// placement times that placement's StepCost.CrossServerBytes.
	CrossServerBytes float64 `json:"cross_server_bytes"`
	// MigrationBytes is the training state the job's migrations moved: its migrations times
	// CheckpointBytes of the job (0 for a job without a model, whose state is unknown).
	MigrationBytes float64 `json:"migration_bytes,omitempty"`
	// Killed is copied from the trace record: the job was cancelled rather than finished.
	Killed bool `json:"killed,omitempty"`
	// Restarts counts how often a server failure stopped the job (it restarted from its last
	// checkpoint).
	Restarts int `json:"restarts,omitempty"`
	// LostGPUTime is the GPU-seconds of progress the job threw away when failures stopped it:
	// its GPUs times the productive time between its last checkpoint and each failure.
	LostGPUTime float64 `json:"lost_gpu_time,omitempty"`
	// Rejected, when not empty, is why the scheduler rejected the job (Decision.Rejected):
	// it left unfinished at Finish, after Iterations iterations, and is left out of the
	// summary's completion-time statistics.
	Rejected string `json:"rejected,omitempty"`
	// Guaranteed is copied from the job (gpusched.Job.Guaranteed): it was promised a speed.
	Guaranteed bool `json:"guaranteed,omitempty"`
	// GuaranteeRatio, for a guaranteed job that was not rejected, is the speed it trained at
	// while it held GPUs (Iterations / RunTime, restores included) over its target: the speed
	// of its own plan on its own GPU count at a consolidated placement of the idle cluster
	// (the Rubick artifact's sla_perf). At least 1 - GuaranteeTolerance: the guarantee was met.
	GuaranteeRatio float64 `json:"guarantee_ratio,omitempty"`
}

// GuaranteeTolerance is how far below its target a guaranteed job's speed may fall and still
// count as met (JobRecord.GuaranteeRatio >= 1 - GuaranteeTolerance): it absorbs rounding and
// the small slow-downs of links shared with other jobs.
const GuaranteeTolerance = 0.01

// Summary holds a simulation's aggregate metrics. Percentiles interpolate linearly between
// order statistics (numpy's default), so MedianJCT is the usual median.
type Summary struct {
	// Jobs is the number of jobs simulated: those that finished and those rejected.
	Jobs int `json:"jobs"`
	// Rejected is the number of jobs the scheduler rejected (JobRecord.Rejected); the
	// completion-time, queueing and wait statistics are over the others, which finished.
	Rejected int `json:"rejected,omitempty"`
	// AvgJCT, MedianJCT, P95JCT and P99JCT describe the job completion times, in seconds.
	AvgJCT    float64 `json:"avg_jct"`
	MedianJCT float64 `json:"median_jct"`
	P95JCT    float64 `json:"p95_jct"`
	P99JCT    float64 `json:"p99_jct"`
	// Makespan is the time from the first arrival to the last completion, in seconds.
	Makespan float64 `json:"makespan"`
	// AvgQueueDelay is the mean time from arrival to first start, in seconds.
	AvgQueueDelay float64 `json:"avg_queue_delay"`
	// AvgWait is the mean time a job spent in the system without GPUs (JCT - run time): the
	// queueing delay of preemptive policies, which start jobs early and stop them later.
	AvgWait float64 `json:"avg_wait"`
	// BusyGPUSeconds is the GPU-seconds held by jobs (the integral of busy GPUs over time,
	// restore periods included): the sum of the jobs' GPUTime.
	BusyGPUSeconds float64 `json:"busy_gpu_seconds"`
	// Utilisation is BusyGPUSeconds / (GPUs x Makespan), in [0, 1].
	Utilisation float64 `json:"utilisation"`
	// PreemptionsPerJob and MigrationsPerJob are the totals divided by the number of jobs.
	PreemptionsPerJob float64 `json:"preemptions_per_job"`
	MigrationsPerJob  float64 `json:"migrations_per_job"`
	// CrossServerBytes is the total bytes sent between servers.
	CrossServerBytes float64 `json:"cross_server_bytes"`
	// MigrationBytes is the total training state moved by migrations (JobRecord.MigrationBytes).
	MigrationBytes float64 `json:"migration_bytes"`
	// Events is the number of Schedule calls.
	Events int `json:"events"`
	// ServerFailures is the number of server failures during the run (Config.Failures).
	ServerFailures int `json:"server_failures,omitempty"`
	// RestartsPerJob is the jobs' restarts after failures divided by the number of jobs.
	RestartsPerJob float64 `json:"restarts_per_job,omitempty"`
	// LostGPUTime is the GPU-seconds of progress thrown away by failures: the sum of the
	// jobs' LostGPUTime.
	LostGPUTime float64 `json:"lost_gpu_time,omitempty"`
	// IdleWhileWaiting is the GPU-seconds left idle while a job waited that asked for no more
	// GPUs than were idle: the integral over time of the GPUs neither held by a job nor
	// unavailable, counted only while some waiting job's GPU count was at most that number.
	// It is capacity a scheduler chose not to use (strict priority order, reservations,
	// fragmentation across servers or GPU types); it ignores memory and GPU-type constraints.
	// Set by the simulator, not by Summarize.
	IdleWhileWaiting float64 `json:"idle_while_waiting"`
	// Guaranteed is the number of guaranteed jobs (JobRecord.Guaranteed) that were not
	// rejected; GuaranteeAttainment the fraction of them whose guarantee was met
	// (JobRecord.GuaranteeRatio >= 1 - GuaranteeTolerance) and AvgGuaranteeRatio their mean
	// GuaranteeRatio. Zero without guaranteed jobs.
	Guaranteed          int     `json:"guaranteed,omitempty"`
	GuaranteeAttainment float64 `json:"guarantee_attainment,omitempty"`
	AvgGuaranteeRatio   float64 `json:"avg_guarantee_ratio,omitempty"`
}

// Sample is the state of the cluster from Time on.
type Sample struct {
	Time     float64 `json:"time"`
	BusyGPUs int     `json:"busy_gpus"`
	Queued   int     `json:"queued"`
	Running  int     `json:"running"`
}

// Segment is one interval during which a job held a placement: from Start to End on GPUs,
// restoring (no progress) from Start to RestoreEnd; Interrupted when a failure ended it.
//
// Deprecated: use host.Segment (the same type); removed in v0.3.0.
type Segment = host.Segment

// record is the record of job idx, which has just left the runtime.
func (e *engine) record(idx int32) JobRecord {
	j := &e.jobs[idx]
	st := j.en.Stats()
	jct := st.Ended - j.job.Arrival
	r := JobRecord{
		ID: j.job.ID, Arrival: j.job.Arrival, Start: st.FirstStart, Finish: st.Ended,
		JCT: jct, QueueDelay: st.FirstStart - j.job.Arrival, Wait: jct - st.Executed,
		GPUs: j.job.GPUs, ServersSpanned: st.ServersSpanned,
		Preemptions: st.Preemptions, Migrations: st.Migrations,
		Iterations: st.Iterations, RunTime: st.Executed, Productive: st.Productive, GPUTime: st.Attained,
		CrossServerBytes: st.CrossServerBytes, Killed: j.killed,
		MigrationBytes: float64(st.Migrations) * CheckpointBytes(j.job),
		Restarts:       st.Interruptions, LostGPUTime: st.LostGPUTime,
		Guaranteed: j.job.Guaranteed,
	}
	if je := j.en.Rejection(); je != nil {
		r.Rejected = je.Error()
		if !st.Started {
			r.Start, r.QueueDelay = st.Ended, st.Ended-j.job.Arrival
		}
	}
	if r.Guaranteed && r.Rejected == "" {
		r.GuaranteeRatio = e.guaranteeRatio(j.job, r.Iterations, r.RunTime)
	}
	return r
}

// guaranteeRatio returns the speed a guaranteed job trained at, iters in runTime seconds
// holding GPUs, over the speed of its own plan on its own GPU count at a consolidated
// placement of the idle cluster (0 when that cannot be timed or the job never ran). The job
// is timed under another id, which the cost model then forgets, so that the cost model's
// entry for the job itself is left alone.
func (e *engine) guaranteeRatio(j *gpusched.Job, iters, runTime float64) float64 {
	if !(runTime > 0) {
		return 0
	}
	gpus, ok := e.c.Pack(j.EligibleIn(e.c, e.c.AllGPUs()), j.GPUs)
	if !ok {
		return 0
	}
	probe := *j
	probe.ID = j.ID + "\x00guarantee"
	sc, err := e.cost.StepCost(&probe, e.c, gpus, nil)
	if f, ok := e.cost.(interface{ Forget(*gpusched.Job) }); ok {
		f.Forget(&probe)
	}
	if err != nil || !(sc.Time > 0) || math.IsInf(sc.Time, 0) {
		return 0
	}
	return iters * sc.Time / runTime
}

func (e *engine) result() *Result {
	r := &Result{
		Scheduler: e.name, Cluster: e.c.Name(), GPUs: e.c.NumGPUs(), RestoreTime: e.restore,
		Jobs: make([]JobRecord, len(e.jobs)), Timeline: e.timeline, Segments: e.segments,
	}
	for i := range e.jobs {
		r.Jobs[i] = e.jobs[i].rec
	}
	r.Summary = Summarize(r.Jobs, r.GPUs)
	r.Summary.Events = e.events
	r.Summary.IdleWhileWaiting = e.idleWait
	if e.fail != nil {
		r.Summary.ServerFailures = e.fail.events
		r.Outages = e.fail.outages(e.lastEvent)
	}
	return r
}

// Summarize computes the summary metrics of a set of job records on a cluster of the given
// number of GPUs (Events, ServerFailures and IdleWhileWaiting are left zero). Completion-time, queueing and wait
// statistics are over the jobs that finished (not Rejected); the others count every job.
func Summarize(jobs []JobRecord, gpus int) Summary {
	s := Summary{Jobs: len(jobs)}
	if len(jobs) == 0 {
		return s
	}
	jct := make([]float64, 0, len(jobs))
	first, last := math.Inf(1), math.Inf(-1)
	var sumJCT, sumQ, sumW, pre, mig, restarts, met, sumRatio float64
	for _, j := range jobs {
		s.BusyGPUSeconds += j.GPUTime
		s.CrossServerBytes += j.CrossServerBytes
		s.MigrationBytes += j.MigrationBytes
		s.LostGPUTime += j.LostGPUTime
		pre += float64(j.Preemptions)
		mig += float64(j.Migrations)
		restarts += float64(j.Restarts)
		first = min(first, j.Arrival)
		last = max(last, j.Finish)
		if j.Rejected != "" {
			s.Rejected++
			continue
		}
		if j.Guaranteed {
			s.Guaranteed++
			sumRatio += j.GuaranteeRatio
			if j.GuaranteeRatio >= 1-GuaranteeTolerance {
				met++
			}
		}
		jct = append(jct, j.JCT)
		sumJCT += j.JCT
		sumQ += j.QueueDelay
		sumW += j.Wait
	}
	slices.Sort(jct)
	n := float64(len(jobs))
	if f := float64(len(jct)); f > 0 {
		s.AvgJCT = sumJCT / f
		s.AvgQueueDelay = sumQ / f
		s.AvgWait = sumW / f
	}
	s.MedianJCT = percentile(jct, 0.5)
	s.P95JCT = percentile(jct, 0.95)
	s.P99JCT = percentile(jct, 0.99)
	s.Makespan = last - first
	if s.Makespan > 0 && gpus > 0 {
		s.Utilisation = s.BusyGPUSeconds / (float64(gpus) * s.Makespan)
	}
	s.PreemptionsPerJob = pre / n
	s.MigrationsPerJob = mig / n
	s.RestartsPerJob = restarts / n
	if s.Guaranteed > 0 {
		s.GuaranteeAttainment = met / float64(s.Guaranteed)
		s.AvgGuaranteeRatio = sumRatio / float64(s.Guaranteed)
	}
	return s
}

// percentile returns the p-quantile (p in [0, 1]) of the ascending values, interpolating
// linearly between order statistics: the value at position p x (n-1). It returns 0 for no
// values.
func percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	pos := p * float64(n-1)
	lo := int(math.Floor(pos))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	f := pos - float64(lo)
	return sorted[lo] + f*(sorted[lo+1]-sorted[lo])
}

// busyIntegral returns the integral of busy GPUs over the timeline, in GPU-seconds. It equals
// Summary.BusyGPUSeconds up to rounding.
func (r *Result) busyIntegral() float64 {
	s := 0.0
	for i := 0; i+1 < len(r.Timeline); i++ {
		s += float64(r.Timeline[i].BusyGPUs) * (r.Timeline[i+1].Time - r.Timeline[i].Time)
	}
	return s
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// jobsHeader is the header of WriteCSV.
var jobsHeader = []string{"id", "arrival", "start", "finish", "jct", "queue_delay", "wait", "gpus",
	"servers_spanned", "preemptions", "migrations", "iterations", "run_time", "productive",
	"gpu_time", "cross_server_bytes", "killed", "restarts", "lost_gpu_time", "rejected",
	"guaranteed", "guarantee_ratio"}

// WriteCSV writes the per-job records as CSV with a header row: id, arrival, start, finish,
// jct, queue_delay, wait, gpus, servers_spanned, preemptions, migrations, iterations,
// run_time, productive, gpu_time, cross_server_bytes, killed, restarts, lost_gpu_time,
// rejected, guaranteed, guarantee_ratio (seconds, GPU-seconds, bytes; rejected is the reason,
// empty for a job that finished).
func (r *Result) WriteCSV(w io.Writer) error {
	row := make([]string, len(jobsHeader))
	return writeCSV(w, jobsHeader, len(r.Jobs), func(i int) []string {
		j := &r.Jobs[i]
		return append(row[:0], string(j.ID), ftoa(j.Arrival), ftoa(j.Start), ftoa(j.Finish), ftoa(j.JCT),
			ftoa(j.QueueDelay), ftoa(j.Wait), strconv.Itoa(j.GPUs), strconv.Itoa(j.ServersSpanned),
			strconv.Itoa(j.Preemptions), strconv.Itoa(j.Migrations), ftoa(j.Iterations), ftoa(j.RunTime),
			ftoa(j.Productive), ftoa(j.GPUTime), ftoa(j.CrossServerBytes), strconv.FormatBool(j.Killed),
			strconv.Itoa(j.Restarts), ftoa(j.LostGPUTime), j.Rejected,
			strconv.FormatBool(j.Guaranteed), ftoa(j.GuaranteeRatio))
	})
}

// WriteTimelineCSV writes the timeline as CSV with a header row: time, busy_gpus, queued,
// running, utilisation (busy GPUs over the cluster's GPUs).
func (r *Result) WriteTimelineCSV(w io.Writer) error {
	return writeCSV(w, []string{"time", "busy_gpus", "queued", "running", "utilisation"}, len(r.Timeline), func(i int) []string {
		s := r.Timeline[i]
		u := 0.0
		if r.GPUs > 0 {
			u = float64(s.BusyGPUs) / float64(r.GPUs)
		}
		return []string{ftoa(s.Time), strconv.Itoa(s.BusyGPUs), strconv.Itoa(s.Queued), strconv.Itoa(s.Running), ftoa(u)}
	})
}

// writeCSV writes the header and rows 0 to n-1 (row returns each; it may reuse its slice) to
// w as CSV, buffered.
func writeCSV(w io.Writer, header []string, n int, row func(i int) []string) error {
	bw := bufio.NewWriter(w)
	cw := csv.NewWriter(bw)
	if err := cw.Write(header); err != nil {
		return err
	}
	for i := range n {
		if err := cw.Write(row(i)); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return bw.Flush()
}

// WriteJSON writes the whole result (summary, jobs, timeline, segments) as one JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := json.NewEncoder(bw).Encode(r); err != nil {
		return err
	}
	return bw.Flush()
}

// CheckpointBytes is the training state a migration of job j moves, in bytes: 16 bytes per
// parameter of its model (half-precision weights and gradients, a single-precision master
// copy and Adam's two moments: the mixed-precision accounting of Rajbhandari et al., "ZeRO",
// SC'20), and 0 for a job without a model.
func CheckpointBytes(j *gpusched.Job) float64 {
	if j == nil || j.Model == nil {
		return 0
	}
	return 16 * j.Model.Params()
}
