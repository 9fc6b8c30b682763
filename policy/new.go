package policy

import (
	"fmt"

	"github.com/gpusched/gpusched"
)

// Config holds the options of every policy New builds; New reads the field of the policy it
// builds and ignores the others. The zero Config builds every policy with its defaults but
// srpt-oracle, which needs the true iterations (Oracle.Iterations).
type Config struct {
	// Options are those of fifo, first-fit and list-scheduling.
	Options Options
	// SJF, Oracle, Tiresias, SJFBCO, GADGET, Random, Rubick, SMD and PSLocality are the
	// options of sjf, srpt-oracle, tiresias, sjf-bco, gadget, random, rubick, smd and
	// ps-locality.
	SJF        SJFOptions
	Oracle     OracleOptions
	Tiresias   TiresiasOptions
	SJFBCO     SJFBCOOptions
	GADGET     GADGETOptions
	Random     RandomOptions
	Rubick     RubickOptions
	SMD        SMDOptions
	PSLocality PSLocalityOptions
}

// New returns the policy of the given name (the names of the table in the package doc:
// "fifo", "sjf", "srpt-oracle", "tiresias", "sjf-bco", "gadget", "first-fit",
// "list-scheduling", "random", "rubick", "ps-locality", "smd") built with its options from
// c. An unknown name or invalid options return an error wrapping ErrInvalidOptions (or the
// policy's own error). A policy that keeps state between calls implements
// gpusched.Stateful, and one that learns from completions gpusched.CompletionObserver: reach
// them by type assertion on the returned Scheduler.
func New(name string, c Config) (gpusched.Scheduler, error) {
	switch name {
	case "fifo":
		return built(newFIFO(c.Options))
	case "sjf":
		return built(newSJF(c.SJF))
	case "srpt-oracle":
		return built(newSRPTOracle(c.Oracle))
	case "tiresias":
		return built(newTiresias(c.Tiresias))
	case "sjf-bco":
		return built(newSJFBCO(c.SJFBCO))
	case "gadget":
		return built(newGADGET(c.GADGET))
	case "first-fit":
		return built(newFirstFit(c.Options))
	case "list-scheduling":
		return built(newListScheduling(c.Options))
	case "random":
		return built(newRandom(c.Random))
	case "rubick":
		return built(newRubick(c.Rubick))
	case "ps-locality":
		return built(newPSLocality(c.PSLocality))
	case "smd":
		return built(newSMD(c.SMD))
	}
	return nil, fmt.Errorf("%w: unknown policy %q", ErrInvalidOptions, name)
}

// built returns a constructor's policy as a gpusched.Scheduler, or its error: a failed
// constructor's typed nil pointer never becomes a non-nil Scheduler.
func built[P gpusched.Scheduler](p P, err error) (gpusched.Scheduler, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Diagnostics is a policy's account of its own decisions, for tests, examples and
// comparisons. DiagnosticsOf fills the fields of the policy it is given and leaves the others
// zero; Queues and Load are copies, not the policy's own state.
type Diagnostics struct {
	// PS is the account of ps-locality and smd of their decisions and lower bounds.
	PS *PSStats
	// Plan is the plan sjf-bco made last (nil before any).
	Plan *BCOPlan
	// Queues maps each job tiresias knows to the queue it last put the job in (0 = highest
	// priority).
	Queues map[gpusched.JobID]int
	// Load is, indexed by GPU ID, the busy time in seconds that list-scheduling has
	// accumulated on each GPU by its last call.
	Load []float64
}

// DiagnosticsOf returns the diagnostics of a scheduler New built (the zero Diagnostics for
// one that keeps none, or for a scheduler of another package).
func DiagnosticsOf(s gpusched.Scheduler) Diagnostics {
	var d Diagnostics
	switch p := s.(type) {
	case *psLocalityPolicy:
		st := p.Stats()
		d.PS = &st
	case *smdPolicy:
		st := p.Stats()
		d.PS = &st
	case *sjfbcoPolicy:
		d.Plan = p.LastPlan()
	case *tiresiasPolicy:
		d.Queues = make(map[gpusched.JobID]int, len(p.jobs))
		for id, j := range p.jobs {
			d.Queues[id] = j.queue
		}
	case *listPolicy:
		d.Load = append([]float64(nil), p.load...)
	}
	return d
}
