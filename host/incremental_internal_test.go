package host

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	gpusched "github.com/gpusched/gpusched"
	"github.com/gpusched/gpusched/topology"
)

// TestEntryKeyCoversEveryField: every field of a saved entry but the job (which never
// changes once submitted) and its model number changes the entry's key, so that a delta never
// leaves out an entry that changed (a field added to savedEntry and not to entryKey fails
// here). A key that ignores the GPUs fails it too.
func TestEntryKeyCoversEveryField(t *testing.T) {
	if missed := keyMisses(keyOf); len(missed) > 0 {
		t.Fatalf("the entry key ignores %v", missed)
	}
	noGPUs := func(s *savedEntry) entryKey { c := *s; c.GPUs = nil; return keyOf(&c) }
	if missed := keyMisses(noGPUs); len(missed) != 1 || missed[0] != "GPUs" {
		t.Fatalf("a key without the GPUs: misses %v, want [GPUs]", missed)
	}
}

// keyMisses returns the fields of savedEntry that do not change key(entry).
func keyMisses(key func(*savedEntry) entryKey) []string {
	var missed []string
	typ := reflect.TypeFor[savedEntry]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Name == "Job" || f.Name == "Model" {
			continue
		}
		var s savedEntry
		s.Limit = 1
		before := key(&s)
		v := reflect.ValueOf(&s).Elem().Field(i)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int32, reflect.Int64:
			v.SetInt(v.Int() + 3)
		case reflect.Uint8, reflect.Uint64:
			v.SetUint(3)
		case reflect.Float64:
			v.SetFloat(v.Float() + 2.5)
		case reflect.Slice:
			v.Set(reflect.ValueOf([]topology.GPUID{3}))
		case reflect.Pointer:
			v.Set(reflect.ValueOf(&savedRejection{Message: "x"}))
		default:
			missed = append(missed, f.Name+" (kind "+v.Kind().String()+")")
			continue
		}
		if key(&s) == before {
			missed = append(missed, f.Name)
		}
	}
	return missed
}

// TestMergeInPlace: merging a delta into its base's jobs, in place (the delta's jobs replace
// the base's or come after them all) or not (a delta job before one of the base's that it does
// not replace), gives the jobs a reference merge gives: the base's but the removed and replaced
// ones, and the delta's, in submission order. Merging in place in the second case fails it.
func TestMergeInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 500 {
		var base []savedEntry
		seq := uint64(0)
		for range rng.IntN(30) {
			seq += 1 + uint64(rng.IntN(3))
			base = append(base, savedEntry{Seq: seq, Done: 1})
		}
		var removed []uint64
		var changed []savedEntry
		for _, b := range base {
			switch rng.IntN(4) {
			case 0:
				removed = append(removed, b.Seq)
			case 1:
				changed = append(changed, savedEntry{Seq: b.Seq, Done: 2})
			}
		}
		if trial%3 == 0 && seq > 1 { // a job of the delta the base never held, before its last
			s := uint64(1 + rng.IntN(int(seq)))
			if !holds(base, s) {
				changed = append(changed, savedEntry{Seq: s, Done: 3})
			}
		}
		for range rng.IntN(5) { // arrivals since the base
			seq++
			changed = append(changed, savedEntry{Seq: seq, Done: 4})
		}
		slices.SortFunc(changed, func(a, b savedEntry) int { return cmp.Compare(a.Seq, b.Seq) })
		// The reference: by submission number, the delta's over the base's.
		ref := map[uint64]savedEntry{}
		for _, b := range base {
			ref[b.Seq] = b
		}
		for _, s := range removed {
			delete(ref, s)
		}
		for _, c := range changed {
			ref[c.Seq] = c
		}
		var want []savedEntry
		for _, s := range slices.Sorted(maps.Keys(ref)) {
			want = append(want, ref[s])
		}
		in := savedRuntime{JobCols: columns(changed), Removed: removed}
		if err := in.merge(&savedRuntime{Jobs: base}); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		got := slices.Clone(in.Jobs)
		for i := range got {
			got[i].Job, got[i].Limit = gpusched.Job{}, 0
		}
		for i := range want {
			want[i].Limit = 0
		}
		if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: merged %v, want %v", trial, got, want)
		}
	}
}
