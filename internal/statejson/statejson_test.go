package statejson

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpusched/gpusched"
)

func TestFloatRoundTrip(t *testing.T) {
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -2.5, 0.1, 1e-310, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN()} {
		b, err := json.Marshal(Float(x))
		if err != nil {
			t.Fatalf("%v: %v", x, err)
		}
		var y Float
		if err := json.Unmarshal(b, &y); err != nil {
			t.Fatalf("%v (%s): %v", x, b, err)
		}
		if math.Float64bits(float64(y)) != math.Float64bits(x) && !(math.IsNaN(x) && math.IsNaN(float64(y))) {
			t.Errorf("%v: read back %v from %s", x, y, b)
		}
	}
	for _, bad := range []string{`"inf"`, `"1"`, `true`, `null`, `1e999`} {
		var y Float
		if err := json.Unmarshal([]byte(bad), &y); err == nil {
			t.Errorf("%s read as %v", bad, y)
		}
	}
}

type state struct {
	Header
	N int `json:"n"`
}

func TestUnmarshal(t *testing.T) {
	var s state
	if err := Unmarshal([]byte(` {"kind": "k", "version": 2, "n": 3} `), "k", 2, &s); err != nil || s.N != 3 {
		t.Fatalf("good data: %v %+v", err, s)
	}
	for data, msg := range map[string]string{
		``:                                      "no data",
		`{"kind": "k", "version": 2, "n": 3}x`:  "trailing data",
		`{"kind": "j", "version": 2}`:           `state of "j"`,
		`{"kind": "k", "version": 1}`:           "version 1, this code reads version 2",
		`{"version": 2}`:                        `no "kind"`,
		`{"kind": "k", "version": 2, "m": 1}`:   "unknown field",
		`{"kind": "k", "version": 2, "n": "x"}`: "cannot unmarshal",
		`[]`:                                    "cannot unmarshal",
	} {
		err := Unmarshal([]byte(data), "k", 2, &state{})
		if !errors.Is(err, gpusched.ErrBadState) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: got %v, want ErrBadState saying %q", data, err, msg)
		}
	}
}
