package asrpt

import (
	"testing"
	"unsafe"
)

// TestJobStateLayout checks what the walks over the priority order rely on: a job's state is
// 192 bytes (a size class whose objects start on a cache line) and the fields they read or
// write at every call lie in its first 64 bytes.
func TestJobStateLayout(t *testing.T) {
	var st jobState
	if n := unsafe.Sizeof(st); n != 192 {
		t.Errorf("jobState is %d bytes, want 192 (a size class aligned to cache lines)", n)
	}
	hot := map[string]uintptr{
		"key": unsafe.Offsetof(st.key), "gpus": unsafe.Offsetof(st.gpus),
		"iters": unsafe.Offsetof(st.iters), "tau": unsafe.Offsetof(st.tau),
		"weight": unsafe.Offsetof(st.weight), "vfinish": unsafe.Offsetof(st.vfinish),
		"stamp": unsafe.Offsetof(st.stamp), "vdone": unsafe.Offsetof(st.vdone),
		"gone": unsafe.Offsetof(st.gone), "unfit": unsafe.Offsetof(st.unfit),
		"inWait": unsafe.Offsetof(st.inWait), "vrank": unsafe.Offsetof(st.vrank),
	}
	for name, off := range hot {
		if off >= 64 {
			t.Errorf("jobState.%s at byte %d, outside the first cache line", name, off)
		}
	}
}
