package statejson

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Fast decoding. encoding/json scans every byte of a value twice when it decodes strictly (a
// Decoder first finds the value's end, then decodes it; Unmarshal first validates it), each
// scan a step of a state machine per byte, about 3 ns a byte: 90 ms for a 7 MB base of A-SRPT
// with its forest (benchmarks/host-31.md). FastUnmarshal decodes in one pass by recursive
// descent, with the binary columns' base64 strings found with bytes.IndexByte and decoded in
// place. It reads the forms that saved states use and gives up (returns false) on anything else
// and on every error, so that the caller decodes with encoding/json, which then gives the same
// value or its error: what FastUnmarshal accepts, encoding/json accepts, into the same value
// (a differential fuzz test, FuzzFastUnmarshal, checks it).

// maxFastDepth bounds the nesting that FastUnmarshal reads (encoding/json refuses more than
// 10,000 levels; FastUnmarshal gives up earlier).
const maxFastDepth = 1000

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// FastUnmarshal decodes data, one JSON value with nothing but white space after it, into v, a
// non-nil pointer to a zero value, as a json.Decoder with DisallowUnknownFields would, and
// reports true; where it cannot (malformed data, unknown or repeated fields, a field name
// matched only without regard to case, a type it does not read: interfaces, text unmarshalers,
// maps with other than string keys, the ",string" option...) it reports false and leaves v
// zero again, and the caller decodes with encoding/json. It never panics on bad data. Types
// that implement json.Unmarshaler get their UnmarshalJSON called with the value's bytes,
// which are valid JSON, as encoding/json calls it.
func FastUnmarshal(data []byte, v any) bool {
	return fastUnmarshal(data, v, fastRight)
}

// fastBroken names deliberately wrong variants of FastUnmarshal, which the tests run to show
// that the differential check catches them.
type fastBroken int

const (
	fastRight         fastBroken = iota
	fastUnknownFields            // unknown fields skipped, not refused
	fastEmptyNil                 // an empty array read as a nil slice
	fastLineEnds                 // base64 with raw line ends read (base64 skips them)
)

func fastUnmarshal(data []byte, v any, broken fastBroken) (ok bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	rv = rv.Elem()
	if !rv.CanSet() || !rv.IsZero() {
		return false
	}
	d := &fastDecoder{data: data, types: map[reflect.Type]*fastType{}, broken: broken}
	defer func() {
		if recover() != nil { // a safety net: a case not foreseen gives up, as an error does
			ok = false
		}
		if !ok {
			rv.SetZero()
		}
	}()
	d.space()
	if !d.decode(d.typeOf(rv.Type()), rv) {
		return false
	}
	d.space()
	return d.i == len(d.data)
}

// fastDecoder reads one JSON text.
type fastDecoder struct {
	data   []byte
	i      int
	depth  int
	types  map[reflect.Type]*fastType // the decoders made for this call
	broken fastBroken
}

// fastType decodes values of one type.
type fastType struct {
	t      reflect.Type
	decode func(d *fastDecoder, ft *fastType, v reflect.Value) bool
	elem   *fastType            // of a slice, array, pointer or map
	fields map[string]fastField // of a struct
	nf     int                  // number of fields of a struct
}

// fastField is a field of a struct: its index path and its type's decoder.
type fastField struct {
	index []int
	n     int // its number among the struct's fields
	ft    *fastType
}

func (d *fastDecoder) decode(ft *fastType, v reflect.Value) bool {
	return ft.decode(d, ft, v)
}

// space skips white space.
func (d *fastDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space (0 at the end).
func (d *fastDecoder) peek() byte {
	d.space()
	if d.i < len(d.data) {
		return d.data[d.i]
	}
	return 0
}

// literal consumes the literal s (true, false, null) if it comes next.
func (d *fastDecoder) literal(s string) bool {
	if !bytes.HasPrefix(d.data[d.i:], []byte(s)) {
		return false
	}
	d.i += len(s)
	return true
}

// typeOf returns the decoder of values of type t, made once per call.
func (d *fastDecoder) typeOf(t reflect.Type) *fastType {
	if ft := d.types[t]; ft != nil {
		return ft
	}
	ft := &fastType{t: t}
	d.types[t] = ft // before the elements: recursive types
	pt := reflect.PointerTo(t)
	switch {
	case pt.Implements(unmarshalerType):
		if t.Name() == "" || t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
			ft.decode = giveUp
		} else {
			ft.decode = decodeUnmarshaler
		}
		return ft
	case pt.Implements(textUnmarshalerType), t == numberType:
		ft.decode = giveUp
		return ft
	}
	switch t.Kind() {
	case reflect.Bool:
		ft.decode = decodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		ft.decode = decodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		ft.decode = decodeUint
	case reflect.Float32, reflect.Float64:
		ft.decode = decodeFloat
	case reflect.String:
		ft.decode = decodeString
	case reflect.Pointer:
		if t.Name() != "" {
			ft.decode = giveUp
			break
		}
		ft.elem = d.typeOf(t.Elem())
		ft.decode = decodePointer
	case reflect.Slice:
		ft.elem = d.typeOf(t.Elem())
		ft.decode = decodeSlice
		switch t {
		case reflect.TypeFor[[]float64]():
			ft.decode = decodeFloats
		case reflect.TypeFor[[]int]():
			ft.decode = decodeInts
		case reflect.TypeFor[[]uint64]():
			ft.decode = decodeUint64s
		case reflect.TypeFor[[]string]():
			ft.decode = decodeStrings
		}
	case reflect.Array:
		ft.elem = d.typeOf(t.Elem())
		ft.decode = decodeArray
	case reflect.Map:
		kt := t.Key()
		if kt.Kind() != reflect.String || reflect.PointerTo(kt).Implements(textUnmarshalerType) {
			ft.decode = giveUp
			break
		}
		ft.elem = d.typeOf(t.Elem())
		ft.decode = decodeMap
	case reflect.Struct:
		if !d.structFields(ft) {
			ft.decode = giveUp
			break
		}
		ft.decode = decodeStruct
	default: // interfaces, channels, functions, complex numbers
		ft.decode = giveUp
	}
	return ft
}

// structFields sets ft.fields as encoding/json names the fields of struct type ft.t; false
// where a rule it does not follow would matter (a tag with options it does not read, an
// embedded pointer, two fields of one name at one depth).
func (d *fastDecoder) structFields(ft *fastType) bool {
	type found struct {
		field fastField
		depth int
		dup   bool
	}
	byName := map[string]*found{}
	var walk func(t reflect.Type, index []int, depth int) bool
	walk = func(t reflect.Type, index []int, depth int) bool {
		if depth > 10 {
			return false
		}
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			plain := true // no option but omitempty and omitzero
			for _, o := range strings.Split(opts, ",") {
				plain = plain && (o == "" || o == "omitempty" || o == "omitzero")
			}
			at := append(index[:len(index):len(index)], i)
			if sf.Anonymous {
				if name != "" || sf.Type.Kind() == reflect.Pointer {
					return false
				}
				if sf.Type.Kind() == reflect.Struct {
					if !sf.IsExported() {
						return false // its fields cannot be set through it
					}
					if !walk(sf.Type, at, depth+1) {
						return false
					}
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if !validTag(name) {
				name = sf.Name
			}
			ft := d.typeOf(sf.Type)
			if !plain {
				ft = &fastType{t: sf.Type, decode: giveUp} // ",string" and options of later versions
			}
			switch f := byName[name]; {
			case f == nil || f.depth > depth: // the shallowest field of a name wins
				byName[name] = &found{field: fastField{index: at, ft: ft}, depth: depth}
			case f.depth == depth:
				f.dup = true // encoding/json's rule (a tagged one wins, else none) is not followed
			}
		}
		return true
	}
	if !walk(ft.t, nil, 0) {
		return false
	}
	ft.fields = make(map[string]fastField, len(byName))
	for name, f := range byName {
		if f.dup {
			return false
		}
		f.field.n = ft.nf
		ft.nf++
		ft.fields[name] = f.field
	}
	return true
}

// validTag reports whether encoding/json takes name from a tag as it is.
func validTag(name string) bool {
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return name != ""
}

func giveUp(*fastDecoder, *fastType, reflect.Value) bool { return false }

// decodeUnmarshaler hands the value's bytes to the type's UnmarshalJSON.
func decodeUnmarshaler(d *fastDecoder, _ *fastType, v reflect.Value) bool {
	d.space()
	start := d.i
	if !d.skip() {
		return false
	}
	return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(d.data[start:d.i]) == nil
}

func decodeBool(d *fastDecoder, _ *fastType, v reflect.Value) bool {
	switch d.peek() {
	case 't':
		if d.literal("true") {
			v.SetBool(true)
			return true
		}
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	return false
}

func decodeInt(d *fastDecoder, _ *fastType, v reflect.Value) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	n, ok := d.int64()
	if !ok || v.OverflowInt(n) {
		return false
	}
	v.SetInt(n)
	return true
}

func decodeUint(d *fastDecoder, _ *fastType, v reflect.Value) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	n, ok := d.uint64()
	if !ok || v.OverflowUint(n) {
		return false
	}
	v.SetUint(n)
	return true
}

func decodeFloat(d *fastDecoder, _ *fastType, v reflect.Value) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	x, ok := d.float(v.Type().Bits())
	if !ok || v.OverflowFloat(x) {
		return false
	}
	v.SetFloat(x)
	return true
}

func decodeString(d *fastDecoder, _ *fastType, v reflect.Value) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	s, ok := d.string()
	if ok {
		v.SetString(s)
	}
	return ok
}

func decodePointer(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	if d.peek() == 'n' {
		if !d.literal("null") {
			return false
		}
		v.SetZero()
		return true
	}
	if v.IsNil() {
		v.Set(reflect.New(ft.t.Elem()))
	}
	return d.decode(ft.elem, v.Elem())
}

// open consumes the opening bracket c of an array or object, counting the depth.
func (d *fastDecoder) open(c byte) bool {
	if d.peek() != c || d.depth >= maxFastDepth {
		return false
	}
	d.i++
	d.depth++
	return true
}

// next consumes what follows an element of an array or object: a comma (true, more) or the
// closing bracket (false, done); ok is false for anything else.
func (d *fastDecoder) next(end byte) (more, ok bool) {
	switch d.peek() {
	case ',':
		d.i++
		return true, true
	case end:
		d.i++
		d.depth--
		return false, true
	}
	return false, false
}

// empty consumes the closing bracket of an empty array or object if it comes next.
func (d *fastDecoder) empty(end byte) bool {
	if d.peek() == end {
		d.i++
		d.depth--
		return true
	}
	return false
}

func decodeSlice(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	switch d.peek() {
	case 'n':
		if !d.literal("null") {
			return false
		}
		v.SetZero()
		return true
	case '"':
		if ft.t.Elem().Kind() != reflect.Uint8 {
			return false
		}
		b, ok := d.base64()
		if ok {
			v.SetBytes(b)
		}
		return ok
	}
	if !d.open('[') {
		return false
	}
	if d.empty(']') {
		if d.broken != fastEmptyNil {
			v.Set(reflect.MakeSlice(ft.t, 0, 0))
		}
		return true
	}
	switch ft.t.Elem().Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		v.Set(reflect.MakeSlice(ft.t, 0, d.lenHint()))
	}
	for n := 0; ; n++ {
		if n >= v.Cap() {
			v.Grow(1)
		}
		v.SetLen(n + 1)
		if !d.decode(ft.elem, v.Index(n)) {
			return false
		}
		more, ok := d.next(']')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

// decodeFloats, decodeInts, decodeUint64s and decodeStrings are decodeSlice for the slices of
// those unnamed types, without reflection per element.
func decodeFloats(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	return decodeTyped(d, ft, v, func(d *fastDecoder) (float64, bool) { return d.float(64) })
}

func decodeInts(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	return decodeTyped(d, ft, v, func(d *fastDecoder) (int, bool) {
		n, ok := d.int64()
		return int(n), ok && int64(int(n)) == n
	})
}

func decodeUint64s(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	return decodeTyped(d, ft, v, (*fastDecoder).uint64)
}

func decodeStrings(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	return decodeTyped(d, ft, v, (*fastDecoder).string)
}

// decodeTyped decodes an array of values that elem reads (never null) into v, a []T.
func decodeTyped[T any](d *fastDecoder, ft *fastType, v reflect.Value, elem func(*fastDecoder) (T, bool)) bool {
	p := v.Addr().Interface().(*[]T)
	switch d.peek() {
	case 'n':
		if !d.literal("null") {
			return false
		}
		*p = nil
		return true
	case '[':
	default:
		return decodeSlice(d, ft, v) // a string: base64 of a byte slice
	}
	d.open('[')
	out := []T{}
	if d.broken == fastEmptyNil {
		out = nil
	}
	if !d.empty(']') {
		if _, text := any(out).([]string); !text {
			out = make([]T, 0, d.lenHint())
		}
		for {
			if d.peek() == 'n' {
				return false // null leaves an element as it is: the generic path
			}
			x, ok := elem(d)
			if !ok {
				return false
			}
			out = append(out, x)
			more, ok := d.next(']')
			if !ok {
				return false
			}
			if !more {
				break
			}
		}
	}
	*p = out
	return true
}

// lenHint guesses the length of the array that begins at d.i (after its bracket): its commas
// before the first closing bracket, plus one. Exact for an array of numbers, which is what it is
// for: a capacity that spares the copies of growing (at most one element for every two bytes
// of the data, so bounded by the data's size).
func (d *fastDecoder) lenHint() int {
	rest := d.data[d.i:]
	if end := bytes.IndexByte(rest, ']'); end >= 0 {
		rest = rest[:end]
	}
	return bytes.Count(rest, []byte{','}) + 1
}

func decodeArray(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	if !d.open('[') {
		return false
	}
	n := ft.t.Len()
	if n == 0 {
		return d.empty(']')
	}
	for i := 0; ; i++ {
		if i >= n || !d.decode(ft.elem, v.Index(i)) {
			return false // more values than the array holds: encoding/json drops them
		}
		more, ok := d.next(']')
		if !ok {
			return false
		}
		if !more {
			return i == n-1 // fewer: encoding/json zeroes the rest
		}
	}
}

func decodeMap(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	if d.peek() == 'n' {
		if !d.literal("null") {
			return false
		}
		v.SetZero()
		return true
	}
	if !d.open('{') {
		return false
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(ft.t))
	}
	if d.empty('}') {
		return true
	}
	kt := ft.t.Key()
	for {
		if d.peek() != '"' {
			return false
		}
		k, ok := d.string()
		if !ok || d.peek() != ':' {
			return false
		}
		d.i++
		e := reflect.New(ft.elem.t).Elem()
		if !d.decode(ft.elem, e) {
			return false
		}
		kv := reflect.ValueOf(k)
		if kt != kv.Type() {
			kv = kv.Convert(kt)
		}
		v.SetMapIndex(kv, e)
		more, ok := d.next('}')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

func decodeStruct(d *fastDecoder, ft *fastType, v reflect.Value) bool {
	if d.peek() == 'n' {
		return d.literal("null")
	}
	if !d.open('{') {
		return false
	}
	if d.empty('}') {
		return true
	}
	var seen uint64
	var seenMore []bool
	if ft.nf > 64 {
		seenMore = make([]bool, ft.nf)
	}
	for {
		if d.peek() != '"' {
			return false
		}
		k, ok := d.key()
		if !ok || d.peek() != ':' {
			return false
		}
		d.i++
		f, known := ft.fields[string(k)]
		if !known && d.broken == fastUnknownFields {
			if !d.skip() {
				return false
			}
		} else if !known {
			return false // unknown, or known only without regard to case
		} else if seenMore != nil {
			if seenMore[f.n] {
				return false
			}
			seenMore[f.n] = true
		} else {
			if seen&(1<<f.n) != 0 {
				return false // repeated: encoding/json decodes it again, into what it holds
			}
			seen |= 1 << f.n
		}
		if known {
			fv := v.Field(f.index[0])
			for _, x := range f.index[1:] {
				fv = fv.Field(x)
			}
			if !d.decode(f.ft, fv) {
				return false
			}
		}
		more, ok := d.next('}')
		if !ok {
			return false
		}
		if !more {
			return true
		}
	}
}

// key reads an object's key, returning its bytes without quotes when it has no escapes and
// only printable ASCII characters (false otherwise: the caller gives up).
func (d *fastDecoder) key() ([]byte, bool) {
	d.i++ // the quote
	for j := d.i; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			k := d.data[d.i:j]
			d.i = j + 1
			return k, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// string reads a JSON string: without escapes and of printable
// ASCII by itself, otherwise as encoding/json unquotes it.
func (d *fastDecoder) string() (string, bool) {
	if d.peek() != '"' {
		return "", false
	}
	d.i++
	for j := d.i; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			s := string(d.data[d.i:j])
			d.i = j + 1
			return s, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			start := d.i - 1
			d.i = start
			if !d.skipString() {
				return "", false
			}
			if s, ok := unquoteASCII(d.data[start+1 : d.i-1]); ok {
				return s, true
			}
			var s string
			return s, json.Unmarshal(d.data[start:d.i], &s) == nil
		}
	}
	return "", false
}

// base64 reads a JSON string as encoding/json reads one into a byte slice: the standard
// base64 of the bytes.
func (d *fastDecoder) base64() ([]byte, bool) {
	start := d.i
	d.i++
	end := bytes.IndexByte(d.data[d.i:], '"')
	if end < 0 {
		return nil, false
	}
	s := d.data[d.i : d.i+end]
	if bytes.IndexByte(s, '\\') >= 0 || d.broken != fastLineEnds && (bytes.IndexByte(s, '\n') >= 0 || bytes.IndexByte(s, '\r') >= 0) {
		// escapes, or line ends that base64 would skip but JSON refuses: encoding/json decides
		d.i = start
		if !d.skipString() {
			return nil, false
		}
		var b []byte
		return b, json.Unmarshal(d.data[start:d.i], &b) == nil
	}
	d.i += end + 1
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	return b[:n], err == nil
}

// number reads a JSON number, checking its form, and returns its bytes.
func (d *fastDecoder) number() ([]byte, bool) {
	data, start := d.data, d.i
	i := start
	digits := func() int {
		k := i
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i - k
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case digits() == 0:
		return nil, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if digits() == 0 {
			return nil, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	d.i = i
	return data[start:i], true
}

func (d *fastDecoder) int64() (int64, bool) {
	d.space()
	s, ok := d.number()
	if !ok {
		return 0, false
	}
	if len(s) < 19 { // no overflow; a fraction or exponent is an error, as in strconv
		neg := s[0] == '-'
		if neg {
			s = s[1:]
		}
		var n int64
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = 10*n + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, true
	}
	n, err := strconv.ParseInt(string(s), 10, 64)
	return n, err == nil
}

func (d *fastDecoder) uint64() (uint64, bool) {
	d.space()
	s, ok := d.number()
	if !ok {
		return 0, false
	}
	if len(s) < 20 && s[0] != '-' {
		var n uint64
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = 10*n + uint64(c-'0')
		}
		return n, true
	}
	n, err := strconv.ParseUint(string(s), 10, 64)
	return n, err == nil
}

func (d *fastDecoder) float(bits int) (float64, bool) {
	d.space()
	s, ok := d.number()
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(s), bits)
	return x, err == nil
}

// skip passes over one JSON value, checking it as encoding/json's scanner does.
func (d *fastDecoder) skip() bool {
	switch d.peek() {
	case '{':
		if !d.open('{') {
			return false
		}
		if d.empty('}') {
			return true
		}
		for {
			if d.peek() != '"' || !d.skipString() || d.peek() != ':' {
				return false
			}
			d.i++
			if !d.skip() {
				return false
			}
			more, ok := d.next('}')
			if !ok {
				return false
			}
			if !more {
				return true
			}
		}
	case '[':
		if !d.open('[') {
			return false
		}
		if d.empty(']') {
			return true
		}
		for {
			if !d.skip() {
				return false
			}
			more, ok := d.next(']')
			if !ok {
				return false
			}
			if !more {
				return true
			}
		}
	case '"':
		return d.skipString()
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, ok := d.number()
	return ok
}

// skipString passes over a JSON string (at its quote), checking its escapes and that it holds
// no control characters.
func (d *fastDecoder) skipString() bool {
	data := d.data
	i := d.i + 1
	if end := bytes.IndexByte(data[i:], '"'); end >= 0 { // no escapes: one pass over the bytes
		plain := true
		for _, c := range data[i : i+end] {
			if c < 0x20 || c == '\\' {
				plain = false
				break
			}
		}
		if plain {
			d.i = i + end + 1
			return true
		}
	}
	for i < len(data) {
		switch c := data[i]; {
		case c == '"':
			d.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			i++
			if i >= len(data) {
				return false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(data) {
					return false
				}
				for _, h := range data[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 5
			default:
				return false
			}
		default:
			i++
		}
	}
	return false
}

// Base64 returns the bytes that b, a JSON string of standard base64 without escapes (as
// encoding/json writes a byte slice), holds: what json.Unmarshal of b into a []byte gives, in
// one pass. It reports false for anything else (escapes, null, other values, bad base64): the
// caller then decodes b with encoding/json, which decides.
func Base64(b []byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return nil, false
	}
	s := b[1 : len(b)-1]
	if bytes.IndexByte(s, '"') >= 0 || bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '\n') >= 0 || bytes.IndexByte(s, '\r') >= 0 {
		return nil, false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, s)
	if err != nil {
		return nil, false
	}
	return out[:n], true
}

// Number returns the value of b when it is a JSON number that fits a float64: what
// json.Unmarshal of b into a float64 gives, without its validation pass. It reports false for
// anything else: the caller then decodes b with encoding/json, which decides.
func Number(b []byte) (float64, bool) {
	d := fastDecoder{data: b}
	x, ok := d.float(64)
	return x, ok && d.i == len(b)
}

// unquoteASCII returns the string whose JSON form, between its quotes, is s (checked by
// skipString), as encoding/json unquotes it, when s is ASCII and its \u escapes are not
// surrogates; false otherwise (encoding/json decides, replacing bad UTF-8 and lone surrogates).
func unquoteASCII(s []byte) (string, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			return "", false
		case c != '\\':
			out = append(out, c)
			continue
		}
		i++ // skipString checked that an escape follows
		switch s[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := strconv.ParseUint(string(s[i+1:i+5]), 16, 32)
			if err != nil || 0xd800 <= r && r < 0xe000 {
				return "", false
			}
			out = utf8.AppendRune(out, rune(r))
			i += 4
		default: // '"', '\\', '/'
			out = append(out, s[i])
		}
	}
	return string(out), true
}
