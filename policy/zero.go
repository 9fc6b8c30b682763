package policy

import (
	"fmt"

	"github.com/gpusched/gpusched"
)

// The zero value of every scheduler type of this package works as the scheduler its
// constructor returns for zero options (NewFIFO(Options{}), NewTiresias(TiresiasOptions{}),
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

func (f *FIFO) ready() error {
	switch {
	case f == nil:
		return errNil("FIFO")
	case f.name == "":
		return adopt(f, func() (*FIFO, error) { return NewFIFO(Options{}) })
	}
	return nil
}

func (f *FirstFit) ready() error {
	switch {
	case f == nil:
		return errNil("FirstFit")
	case f.name == "":
		return adopt(f, func() (*FirstFit, error) { return NewFirstFit(Options{}) })
	}
	return nil
}

func (l *ListScheduling) ready() error {
	switch {
	case l == nil:
		return errNil("ListScheduling")
	case l.name == "":
		return adopt(l, func() (*ListScheduling, error) { return NewListScheduling(Options{}) })
	}
	return nil
}

func (g *GADGET) ready() error {
	switch {
	case g == nil:
		return errNil("GADGET")
	case g.name == "":
		return adopt(g, func() (*GADGET, error) { return NewGADGET(GADGETOptions{}) })
	}
	return nil
}

func (r *Random) ready() error {
	switch {
	case r == nil:
		return errNil("Random")
	case r.src == nil:
		return adopt(r, func() (*Random, error) { return NewRandom(RandomOptions{}) })
	}
	return nil
}

func (s *SJF) ready() error {
	switch {
	case s == nil:
		return errNil("SJF")
	case s.wait == nil:
		return adopt(s, func() (*SJF, error) { return NewSJF(SJFOptions{}) })
	}
	return nil
}

func (s *SRPTOracle) ready() error {
	switch {
	case s == nil:
		return errNil("SRPTOracle")
	case s.jobs == nil:
		return adopt(s, func() (*SRPTOracle, error) { return NewSRPTOracle(OracleOptions{}) })
	}
	return nil
}

func (t *Tiresias) ready() error {
	switch {
	case t == nil:
		return errNil("Tiresias")
	case t.wait == nil:
		return adopt(t, func() (*Tiresias, error) { return NewTiresias(TiresiasOptions{}) })
	}
	return nil
}

func (s *SJFBCO) ready() error {
	switch {
	case s == nil:
		return errNil("SJFBCO")
	case s.iters == nil:
		return adopt(s, func() (*SJFBCO, error) { return NewSJFBCO(SJFBCOOptions{}) })
	}
	return nil
}

func (r *Rubick) ready() error {
	switch {
	case r == nil:
		return errNil("Rubick")
	case r.tput == nil:
		return adopt(r, func() (*Rubick, error) { return NewRubick(RubickOptions{}) })
	}
	return nil
}

func (s *SMD) ready() error {
	switch {
	case s == nil:
		return errNil("SMD")
	case s.steps == nil:
		return adopt(s, func() (*SMD, error) { return NewSMD(SMDOptions{}) })
	}
	return nil
}

func (p *PSLocality) ready() error {
	switch {
	case p == nil:
		return errNil("PSLocality")
	case p.rng == nil:
		return adopt(p, func() (*PSLocality, error) { return NewPSLocality(PSLocalityOptions{}) })
	}
	return nil
}

// observed reports whether a completion may be looked at: the scheduler is ready and the
// completion names a job.
func observed(ready func() error, c gpusched.Completion) bool {
	return c.Job != nil && ready() == nil
}
