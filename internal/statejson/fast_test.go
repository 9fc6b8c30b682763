package statejson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fastSample has a field of every form FastUnmarshal reads, and of some it gives up on.
type fastSample struct {
	Header
	B     bool                 `json:"b"`
	I     int                  `json:"i,omitempty"`
	I8    int8                 `json:"i8"`
	I32   int32                `json:"i32"`
	U16   uint16               `json:"u16"`
	U64   uint64               `json:"u64"`
	F32   float32              `json:"f32"`
	F     float64              `json:"f"`
	S     string               `json:"s"`
	ID    fastID               `json:"id"`
	P     *int                 `json:"p"`
	PP    **fastInner          `json:"pp"`
	Fs    []float64            `json:"fs"`
	Is    []int                `json:"is"`
	Us    []uint64             `json:"us"`
	Ss    []string             `json:"ss"`
	IDs   []fastID             `json:"ids"`
	Bs    []byte               `json:"bs"`
	NB    fastBytes            `json:"nb"`
	I32s  []int32              `json:"i32s"`
	Arr   [2]int               `json:"arr"`
	M     map[string]fastInner `json:"m"`
	MID   map[fastID]int       `json:"mid"`
	Fl    Float                `json:"fl"`
	Fls   []Float              `json:"fls"`
	Raw   json.RawMessage      `json:"raw"`
	In    fastInner            `json:"in"`
	Ptrs  []*fastInner         `json:"ptrs"`
	Deep  [][]int              `json:"deep"`
	Tree  *fastTree            `json:"tree"`
	Any   any                  `json:"any"`
	Num   json.Number          `json:"num"`
	Str   int                  `json:"str,string"`
	Plain int                  // no tag: its Go name
	Skip  int                  `json:"-"`
	//lint:ignore SA5008 the field named "-", which encoding/json reads under that name
	Dash int `json:"-,"`
	//lint:ignore U1000 an unexported field, which a JSON field "low" must not reach
	low int
}

type (
	fastID    string
	fastBytes []byte
	fastInner struct {
		X int     `json:"x"`
		Y []int   `json:"y,omitempty"`
		Z *string `json:"z,omitzero"`
	}
	fastTree struct {
		V    int         `json:"v"`
		Kids []*fastTree `json:"kids"`
	}
)

// strictDecode is what the callers of FastUnmarshal fall back to: encoding/json with unknown
// fields refused and nothing after the value.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data")
	}
	return nil
}

// fastSame checks FastUnmarshal (with the variant broken) against strictDecode on data: where
// the fast one decodes, encoding/json decodes into the same value (compared by their JSON
// forms, which tell nil from empty and keep NaN); where it gives up, it leaves a zero value.
func fastSame(data []byte, broken fastBroken) error {
	var fast, slow fastSample
	ok := fastUnmarshal(data, &fast, broken)
	if !ok {
		if !reflect.ValueOf(fast).IsZero() {
			return errors.New("gave up and left a value that is not zero")
		}
		return nil
	}
	if err := strictDecode(data, &slow); err != nil {
		return errors.New("fast decoded what encoding/json refuses: " + err.Error())
	}
	a, err1 := json.Marshal(&fast)
	b, err2 := json.Marshal(&slow)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return errors.New("decoded differently:\nfast " + string(a) + "\njson " + string(b))
	}
	// The JSON forms hide invalid UTF-8 (written as U+FFFD); compare the values too, with
	// the floats that may be NaN compared by their bits.
	bits := func(v *fastSample) []uint64 {
		out := []uint64{math.Float64bits(float64(v.Fl))}
		for _, x := range v.Fls {
			out = append(out, math.Float64bits(float64(x)))
		}
		v.Fl, v.Fls = 0, nil
		return out
	}
	if !slices.Equal(bits(&fast), bits(&slow)) || !reflect.DeepEqual(fast, slow) {
		return errors.New("decoded differently: " + string(a))
	}
	return nil
}

// fastSeeds are inputs that the fast path reads (the first) or gives up on (the rest).
var fastSeeds = []string{
	`{"kind":"k","version":2,"b":true,"i":-3,"i8":-128,"i32":2147483647,"u16":65535,"u64":18446744073709551615,` +
		`"f32":1.5,"f":-2.5e-300,"s":"a b","id":"job-1","p":7,"pp":{"x":1},"fs":[0.1,-0,1e308],"is":[1,-2],"us":[3],` +
		`"ss":["x",""],"ids":["a","b"],"bs":"AAEC","nb":"/w==","i32s":[-1],"arr":[1,2],"m":{"a":{"x":1,"y":[]},"b":{}},` +
		`"mid":{"q":1},"fl":"NaN","fls":[1,"+Inf"],"raw":{"any":[1,"x",null]},"in":{"x":-1,"y":[2]},"ptrs":[null,{"x":3}],` +
		`"deep":[[],[1,2]],"tree":{"v":1,"kids":[{"v":2,"kids":null}]},"Plain":4}` + "\n",
	` { "kind" : "k" , "fs" : [ ] , "is" : [ ] , "ss" : [ ] , "us" : [ ] , "m" : { } } `,
	`{"fs":null,"is":null,"m":null,"p":null,"pp":null,"ptrs":[],"b":null,"i":null,"s":null,"arr":null,"in":null}`,
	`{"s":"\u00e9\n","ss":["\ud800"],"m":{"\u0041":{}},"id":"\"x\""}`,
	`{"s":"a\u0000\/\b\f\r\t\\\"","ss":["\u00e9","\uDC00x"],"m":{"m0\u0000":{}},"ids":["\u0031"]}`,
	`{"s":"caf` + "\xc3\xa9" + `","ss":["` + "\xff" + `"]}`,
	`{"bs":"AA\nEC"}`, `{"bs":"AA\\nEC"}`, `{"bs":"AA` + "\n" + `EC"}`, `{"bs":"A"}`, `{"nb":"AAEC","bs":[1,2]}`,
	`{"KIND":"k"}`, `{"x":1}`, `{"s":"a","s":"b"}`, `{"m":{"a":{"x":1}},"m":{"b":{"x":2}}}`, `{"in":{"x":1},"in":{"y":[1]}}`,
	`{"b":true}x`, `{"b":true}{}`, `{"b":true}]`, `{"i":1.5}`, `{"i":1e2}`, `{"i8":128}`, `{"u64":-1}`, `{"u64":-0}`,
	`{"f32":1e39}`, `{"f":1e400}`, `{"i":01}`, `{"i":-}`, `{"i":1.}`, `{"f":.5}`, `{"f":1e}`, `{"i":+1}`,
	`{"arr":[1]}`, `{"arr":[1,2,3]}`, `{"any":1}`, `{"num":1}`, `{"str":"1"}`, `{"Skip":1}`, `{"-":1}`, `{"low":1}`,
	`{"fs":[1,null]}`, `{"fs":[1,]}`, `{"fs":[,1]}`, `{"m":{"a":1}}`, `{"m":{1:{}}}`, `{"raw":[1,}`, `{"raw":tru}`,
	`{"fl":"inf"}`, `{"fl":null}`, `{"raw":null}`, `{"plain":4}`, `[]`, `null`, `"x"`, ``, `{`, `{"s":"a`, `{"s":"\x"}`,
	`{"s":"` + "\x01" + `"}`, `{"s":"\u12"}`, `{"tree":` + strings.Repeat(`{"kids":[`, 1200) + strings.Repeat(`]}`, 1200) + `}`,
}

func TestFastUnmarshalAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range fastSeeds {
		if err := fastSame([]byte(s), fastRight); err != nil {
			t.Errorf("%.80q: %v", s, err)
		}
	}
	// The fast path must read what saved states hold, or it is no faster.
	var v fastSample
	if !FastUnmarshal([]byte(fastSeeds[0]), &v) || !FastUnmarshal([]byte(fastSeeds[1]), new(fastSample)) || !FastUnmarshal([]byte(fastSeeds[2]), new(fastSample)) {
		t.Fatal("the fast path gave up on the forms it reads")
	}
	if v.Fs[2] != 1e308 || !math.IsNaN(float64(v.Fl)) || string(v.Bs) != "\x00\x01\x02" || v.Tree.Kids[0].V != 2 || v.PP == nil || (*v.PP).X != 1 {
		t.Errorf("decoded %+v", v)
	}
	// Given up: unknown fields, fields matched only without regard to case, repeated fields,
	// trailing data, ",string", interfaces, json.Number.
	for _, s := range []string{`{"x":1}`, `{"KIND":"k"}`, `{"s":"a","s":"b"}`, `{"b":true}]`, `{"str":"1"}`, `{"any":1}`, `{"num":1}`} {
		if FastUnmarshal([]byte(s), new(fastSample)) {
			t.Errorf("%s: read by the fast path", s)
		}
	}
	// Not a pointer to a zero value.
	if FastUnmarshal([]byte(`{}`), fastSample{}) || FastUnmarshal([]byte(`{}`), (*fastSample)(nil)) || FastUnmarshal([]byte(`{}`), &fastSample{I: 1}) {
		t.Error("read into something other than a pointer to a zero value")
	}
}

// TestFastUnmarshalBrokenVariants: the differential check catches each deliberately wrong
// variant on the seeds.
func TestFastUnmarshalBrokenVariants(t *testing.T) {
	for _, b := range []fastBroken{fastUnknownFields, fastEmptyNil, fastLineEnds} {
		caught := false
		for _, s := range fastSeeds {
			if fastSame([]byte(s), b) != nil {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("broken variant %d passes the check", b)
		}
	}
}

func FuzzFastUnmarshal(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{`"AAEC"`, `""`, `"AA\nEC"`, `"A"`, `1.5`, `-0`, `1e400`, `01`, ` 1`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := fastSame(data, fastRight); err != nil {
			t.Fatal(err)
		}
		if b, ok := Base64(data); ok {
			var want []byte
			if err := json.Unmarshal(data, &want); err != nil || !bytes.Equal(b, want) || want == nil {
				t.Fatalf("Base64(%q) = %q, encoding/json %q, %v", data, b, want, err)
			}
		}
		if x, ok := Number(data); ok {
			var want float64
			if err := json.Unmarshal(data, &want); err != nil || math.Float64bits(x) != math.Float64bits(want) {
				t.Fatalf("Number(%q) = %v, encoding/json %v, %v", data, x, want, err)
			}
		}
	})
}

// TestUnmarshalFastAndSlow: Unmarshal gives the same value and the same errors whether or not
// the fast path reads the data.
func TestUnmarshalFastAndSlow(t *testing.T) {
	var a, b state
	if err := Unmarshal([]byte(`{"kind":"k","version":2,"n":3}`), "k", 2, &a); err != nil {
		t.Fatal(err)
	}
	if err := Unmarshal([]byte(`{"kind":"k","version":2,"N":3}`), "k", 2, &b); err != nil { // encoding/json only
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("%+v and %+v", a, b)
	}
}

// TestFastUnmarshalManyFields: a struct of more than 64 fields (the repeated-field check keeps
// a slice instead of a bit set) decodes as encoding/json decodes it, and a repeated field
// still gives up.
func TestFastUnmarshalManyFields(t *testing.T) {
	var fields []reflect.StructField
	var data, repeated strings.Builder
	data.WriteString("{")
	for i := range 70 {
		name := "F" + strings.Repeat("x", i)
		fields = append(fields, reflect.StructField{Name: name, Type: reflect.TypeFor[int](), Tag: reflect.StructTag(`json:"f` + string(rune('a'+i%26)) + strings.Repeat("_", i/26) + `"`)})
		if i > 0 {
			data.WriteString(",")
		}
		data.WriteString(`"f` + string(rune('a'+i%26)) + strings.Repeat("_", i/26) + `":` + string(rune('0'+i%10)))
	}
	data.WriteString("}")
	typ := reflect.StructOf(fields)
	fast, slow := reflect.New(typ).Interface(), reflect.New(typ).Interface()
	if !FastUnmarshal([]byte(data.String()), fast) {
		t.Fatal("gave up on a struct of 70 fields")
	}
	if err := strictDecode([]byte(data.String()), slow); err != nil || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decoded differently (%v)", err)
	}
	repeated.WriteString(strings.TrimSuffix(data.String(), "}") + `,"fz_":1}`)
	if FastUnmarshal([]byte(repeated.String()), reflect.New(typ).Interface()) {
		t.Error("read a repeated field of a struct of 70 fields")
	}
}
