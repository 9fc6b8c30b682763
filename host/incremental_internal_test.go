package host

import (
	"reflect"
	"testing"

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
