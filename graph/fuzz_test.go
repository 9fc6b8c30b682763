package graph

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// FuzzReadPlacements: the reader never panics; what it accepts is well-formed, and writing the
// rows back and reading them again gives the same rows.
func FuzzReadPlacements(f *testing.F) {
	f.Add("placement,local_bsz,step_time,sync_time\n1,32,0.04,0.0005\n1111,64,0.14,0.08\n")
	f.Add("placement,local_bsz,step_time,sync_time\r\n22,4,1.2,0.8\r\n")
	f.Add("local_bsz,placement,sync_time,step_time,extra\n12,4,0.1,0.9,x\n")
	f.Add("placement,local_bsz,step_time,sync_time\n00,4,0.1,0\n")
	f.Add("placement,local_bsz,step_time,sync_time\n1,4,NaN,0\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		rows, err := ReadPlacements(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.csv") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		var b strings.Builder
		b.WriteString("placement,local_bsz,step_time,sync_time\n")
		for _, r := range rows {
			if checkPlacement(r.Placement) != nil || r.LocalBatch < 1 || !(r.StepTime > 0) || !(r.SyncTime >= 0) ||
				math.IsInf(r.StepTime, 0) || math.IsInf(r.SyncTime, 0) || r.GPUs() < 1 {
				t.Fatalf("accepted bad row %+v", r)
			}
			fmt.Fprintf(&b, "%s,%d,%v,%v\n", r.Placement, r.LocalBatch, r.StepTime, r.SyncTime)
		}
		again, err := ReadPlacements(strings.NewReader(b.String()), "again.csv")
		if err != nil || len(again) != len(rows) {
			t.Fatalf("re-read: %v (%d rows of %d)", err, len(again), len(rows))
		}
		for i := range rows {
			a, r := again[i], rows[i]
			if a.Placement != r.Placement || a.LocalBatch != r.LocalBatch || a.StepTime != r.StepTime || a.SyncTime != r.SyncTime {
				t.Fatalf("row %d: %+v != %+v", i, a, r)
			}
		}
	})
}
