package policy

import (
	"fmt"

	"github.com/gpusched/gpusched"
)

// The zero value of every scheduler type of this package works as the scheduler its
// constructor returns for zero options (newFIFO(Options{}), newTiresias(TiresiasOptions{}),
// ...): it sets itself up on first use. Where zero options are not valid (the SRPT oracle
// needs Iterations) its methods return the constructor's error instead. A nil pointer returns
// an error. Setting up is a write: a zero value is not safe for concurrent first use, even
// for the policies that are safe for concurrent use once built.

// errNil reports a method called on a nil scheduler.
func errNil(typ string) error {
	return fmt.Errorf("%w: nil *policy.%s (use New%s)", ErrInvalidOptions, typ, typ)
}

// adopt replaces the zero value *dst by what the constructor returns.
func adopt[T any](dst *T, build func() (*T, error)) error {
	n, err := build()
	if err != nil {
		return err
	}
	*dst = *n
	return nil
}

func (f *fifoPolicy) ready() error {
	switch {
	case f == nil:
		return errNil("FIFO")
	case f.name == "":
		return adopt(f, func() (*fifoPolicy, error) { return newFIFO(Options{}) })
	}
	return nil
}

func (f *firstFitPolicy) ready() error {
	switch {
	case f == nil:
		return errNil("FirstFit")
	case f.name == "":
		return adopt(f, func() (*firstFitPolicy, error) { return newFirstFit(Options{}) })
	}
	return nil
}

func (l *listPolicy) ready() error {
	switch {
	case l == nil:
		return errNil("ListScheduling")
	case l.name == "":
		return adopt(l, func() (*listPolicy, error) { return newListScheduling(Options{}) })
	}
	return nil
}

func (g *gadgetPolicy) ready() error {
	switch {
	case g == nil:
		return errNil("GADGET")
	case g.name == "":
		return adopt(g, func() (*gadgetPolicy, error) { return newGADGET(GADGETOptions{}) })
	}
	return nil
}

func (r *randomPolicy) ready() error {
	switch {
	case r == nil:
		return errNil("Random")
	case r.src == nil:
		return adopt(r, func() (*randomPolicy, error) { return newRandom(RandomOptions{}) })
	}
	return nil
}

func (s *sjfPolicy) ready() error {
	switch {
	case s == nil:
		return errNil("SJF")
	case s.wait == nil:
		return adopt(s, func() (*sjfPolicy, error) { return newSJF(SJFOptions{}) })
	}
	return nil
}

func (s *oraclePolicy) ready() error {
	switch {
	case s == nil:
		return errNil("SRPTOracle")
	case s.jobs == nil:
		return adopt(s, func() (*oraclePolicy, error) { return newSRPTOracle(OracleOptions{}) })
	}
	return nil
}

func (t *tiresiasPolicy) ready() error {
	switch {
	case t == nil:
		return errNil("Tiresias")
	case t.wait == nil:
		return adopt(t, func() (*tiresiasPolicy, error) { return newTiresias(TiresiasOptions{}) })
	}
	return nil
}

func (s *sjfbcoPolicy) ready() error {
	switch {
	case s == nil:
		return errNil("SJFBCO")
	case s.iters == nil:
		return adopt(s, func() (*sjfbcoPolicy, error) { return newSJFBCO(SJFBCOOptions{}) })
	}
	return nil
}

func (r *rubickPolicy) ready() error {
	switch {
	case r == nil:
		return errNil("Rubick")
	case r.tput == nil:
		return adopt(r, func() (*rubickPolicy, error) { return newRubick(RubickOptions{}) })
	}
	return nil
}

func (s *smdPolicy) ready() error {
	switch {
	case s == nil:
		return errNil("SMD")
	case s.steps == nil:
		return adopt(s, func() (*smdPolicy, error) { return newSMD(SMDOptions{}) })
	}
	return nil
}

func (p *psLocalityPolicy) ready() error {
	switch {
	case p == nil:
		return errNil("PSLocality")
	case p.rng == nil:
		return adopt(p, func() (*psLocalityPolicy, error) { return newPSLocality(PSLocalityOptions{}) })
	}
	return nil
}

// observed reports whether a completion may be looked at: the scheduler is ready and the
// completion names a job.
func observed(ready func() error, c gpusched.Completion) bool {
	return c.Job != nil && ready() == nil
}
