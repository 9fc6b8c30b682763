package policy

// This file holds exported API kept for one release as deprecated aliases and wrappers
// (CONTRIBUTING.md, "API compatibility"): each is removed in v0.3.0 by deleting it here. The
// concrete policy types are unexported; New returns each as a gpusched.Scheduler, and its
// gpusched.Stateful and gpusched.CompletionObserver methods are reached by type assertion.

// FIFO is the fifo policy.
//
// Deprecated: use New("fifo", Config{Options: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type FIFO = fifoPolicy

// NewFIFO returns the fifo policy.
//
// Deprecated: use New("fifo", Config{Options: opt}); removed in v0.4.0.
func NewFIFO(opt Options) (*FIFO, error) { return newFIFO(opt) }

// SJF is the sjf policy.
//
// Deprecated: use New("sjf", Config{SJF: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type SJF = sjfPolicy

// NewSJF returns the sjf policy.
//
// Deprecated: use New("sjf", Config{SJF: opt}); removed in v0.4.0.
func NewSJF(opt SJFOptions) (*SJF, error) { return newSJF(opt) }

// SRPTOracle is the srpt-oracle policy.
//
// Deprecated: use New("srpt-oracle", Config{Oracle: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type SRPTOracle = oraclePolicy

// NewSRPTOracle returns the srpt-oracle policy.
//
// Deprecated: use New("srpt-oracle", Config{Oracle: opt}); removed in v0.4.0.
func NewSRPTOracle(opt OracleOptions) (*SRPTOracle, error) { return newSRPTOracle(opt) }

// Tiresias is the tiresias policy.
//
// Deprecated: use New("tiresias", Config{Tiresias: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type Tiresias = tiresiasPolicy

// NewTiresias returns the tiresias policy.
//
// Deprecated: use New("tiresias", Config{Tiresias: opt}); removed in v0.4.0.
func NewTiresias(opt TiresiasOptions) (*Tiresias, error) { return newTiresias(opt) }

// SJFBCO is the sjf-bco policy.
//
// Deprecated: use New("sjf-bco", Config{SJFBCO: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type SJFBCO = sjfbcoPolicy

// NewSJFBCO returns the sjf-bco policy.
//
// Deprecated: use New("sjf-bco", Config{SJFBCO: opt}); removed in v0.4.0.
func NewSJFBCO(opt SJFBCOOptions) (*SJFBCO, error) { return newSJFBCO(opt) }

// GADGET is the gadget policy.
//
// Deprecated: use New("gadget", Config{GADGET: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type GADGET = gadgetPolicy

// NewGADGET returns the gadget policy.
//
// Deprecated: use New("gadget", Config{GADGET: opt}); removed in v0.4.0.
func NewGADGET(opt GADGETOptions) (*GADGET, error) { return newGADGET(opt) }

// FirstFit is the first-fit policy.
//
// Deprecated: use New("first-fit", Config{Options: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type FirstFit = firstFitPolicy

// NewFirstFit returns the first-fit policy.
//
// Deprecated: use New("first-fit", Config{Options: opt}); removed in v0.4.0.
func NewFirstFit(opt Options) (*FirstFit, error) { return newFirstFit(opt) }

// ListScheduling is the list-scheduling policy.
//
// Deprecated: use New("list-scheduling", Config{Options: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type ListScheduling = listPolicy

// NewListScheduling returns the list-scheduling policy.
//
// Deprecated: use New("list-scheduling", Config{Options: opt}); removed in v0.4.0.
func NewListScheduling(opt Options) (*ListScheduling, error) { return newListScheduling(opt) }

// Random is the random policy.
//
// Deprecated: use New("random", Config{Random: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type Random = randomPolicy

// NewRandom returns the random policy.
//
// Deprecated: use New("random", Config{Random: opt}); removed in v0.4.0.
func NewRandom(opt RandomOptions) (*Random, error) { return newRandom(opt) }

// Rubick is the rubick policy.
//
// Deprecated: use New("rubick", Config{Rubick: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type Rubick = rubickPolicy

// NewRubick returns the rubick policy.
//
// Deprecated: use New("rubick", Config{Rubick: opt}); removed in v0.4.0.
func NewRubick(opt RubickOptions) (*Rubick, error) { return newRubick(opt) }

// PSLocality is the ps-locality policy.
//
// Deprecated: use New("ps-locality", Config{PSLocality: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type PSLocality = psLocalityPolicy

// NewPSLocality returns the ps-locality policy.
//
// Deprecated: use New("ps-locality", Config{PSLocality: opt}); removed in v0.4.0.
func NewPSLocality(opt PSLocalityOptions) (*PSLocality, error) { return newPSLocality(opt) }

// SMD is the smd policy.
//
// Deprecated: use New("smd", Config{SMD: ...}), which returns it as a gpusched.Scheduler;
// removed in v0.4.0.
type SMD = smdPolicy

// NewSMD returns the smd policy.
//
// Deprecated: use New("smd", Config{SMD: opt}); removed in v0.4.0.
func NewSMD(opt SMDOptions) (*SMD, error) { return newSMD(opt) }
