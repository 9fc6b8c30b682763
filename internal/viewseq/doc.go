// Package viewseq tells whether a view's delta continues the view a scheduler saw last, without
// trusting the host's sequence identifier to be comparable.
//
// gpusched.ViewDelta.Source is an interface value that schedulers compare with ==. A host that
// put a slice, a map or a struct holding one there would make that comparison panic; Same
// answers false for such a value instead, so the scheduler rescans the view as it does for a
// view of an unknown sequence.
package viewseq
