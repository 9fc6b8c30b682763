package statejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
)

// CheckFast is for the tests of the packages that decode their saved states with
// FastUnmarshal: it decodes data, and n variants of it with a few bytes changed (chosen with
// seed), into fresh values of fresh's type both ways, FastUnmarshal and encoding/json with
// unknown fields and trailing data refused, and returns an error where FastUnmarshal accepts
// what encoding/json refuses or decodes it differently. It also returns an error when
// FastUnmarshal gives up on data itself (the form of a saved state, which it must read to be of
// use).
func CheckFast(data []byte, fresh func() any, n int, seed uint64) error {
	if v := fresh(); !FastUnmarshal(data, v) {
		return fmt.Errorf("statejson: FastUnmarshal gives up on the data (%.80q...)", data)
	}
	rng := rand.New(rand.NewPCG(seed, 31))
	const marks = `{}[]",:0123456789-.eE+ntfa\ `
	b := make([]byte, len(data))
	for k := 0; k <= n; k++ {
		copy(b, data)
		if k > 0 && len(b) > 0 {
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] = marks[rng.IntN(len(marks))]
			}
		}
		fast, slow := fresh(), fresh()
		if !FastUnmarshal(b, fast) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err := dec.Decode(slow)
		if err == nil {
			if _, end := dec.Token(); !errors.Is(end, io.EOF) {
				err = errTrailing
			}
		}
		if err != nil {
			return fmt.Errorf("statejson: variant %d: FastUnmarshal reads what encoding/json refuses: %v", k, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			return fmt.Errorf("statejson: variant %d: FastUnmarshal and encoding/json decode it differently", k)
		}
	}
	return nil
}
