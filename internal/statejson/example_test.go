package statejson_test

import (
	"encoding/json"
	"fmt"

	"github.com/gpusched/gpusched/internal/statejson"
)

// A state read in one pass, and one that FastUnmarshal hands back to encoding/json (a field
// matched only without regard to case), which reads it into the same value.
func ExampleFastUnmarshal() {
	type state struct {
		statejson.Header
		IDs []string `json:"ids"`
		Bin []byte   `json:"bin"`
	}
	var a state
	fmt.Println(statejson.FastUnmarshal([]byte(`{"kind":"k","version":1,"ids":["a","b"],"bin":"AQID"}`), &a), a.IDs, a.Bin)
	var b state
	data := []byte(`{"kind":"k","version":1,"IDS":["a"]}`)
	if !statejson.FastUnmarshal(data, &b) {
		fmt.Println(json.Unmarshal(data, &b), b.IDs)
	}
	// Output:
	// true [a b] [1 2 3]
	// <nil> [a]
}
