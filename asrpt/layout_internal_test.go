package asrpt

import (
	"testing"
	"unsafe"
)

// TestJobStateLayout checks what the walks over the priority order rely on: a job's state is
// 192 bytes (a size class whose objects start on a cache line), the fields they read or write
// at every call lie in its first 64 bytes, those decide and compactCandidates read of the
// prefix's and the running jobs in the next 64, and the virtual queue's mirror in the last.
func TestJobStateLayout(t *testing.T) {
	var st jobState
	if n := unsafe.Sizeof(st); n != 192 {
		t.Errorf("jobState is %d bytes, want 192 (a size class aligned to cache lines)", n)
	}
	lines := []map[string]uintptr{{
		"key": unsafe.Offsetof(st.key), "gpus": unsafe.Offsetof(st.gpus),
		"iters": unsafe.Offsetof(st.iters), "tau": unsafe.Offsetof(st.tau),
		"weight": unsafe.Offsetof(st.weight), "vfinish": unsafe.Offsetof(st.vfinish),
		"stamp": unsafe.Offsetof(st.stamp), "vdone": unsafe.Offsetof(st.vdone),
		"gone": unsafe.Offsetof(st.gone), "unfit": unsafe.Offsetof(st.unfit),
		"inWait": unsafe.Offsetof(st.inWait),
	}, {
		"prefix": unsafe.Offsetof(st.prefix), "displaced": unsafe.Offsetof(st.displaced),
		"preempted": unsafe.Offsetof(st.preempted), "overruns": unsafe.Offsetof(st.overruns),
	}, {
		"rem": unsafe.Offsetof(st.rem), "rel": unsafe.Offsetof(st.rel), "vkey": unsafe.Offsetof(st.vkey),
	}}
	for line, fields := range lines {
		for name, off := range fields {
			if int(off)/64 != line {
				t.Errorf("jobState.%s at byte %d, outside cache line %d", name, off, line)
			}
		}
	}
}
