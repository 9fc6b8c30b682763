package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestJudge(t *testing.T) {
	const p = "example.com/m"
	dep := map[string]bool{p + " Old": true, p + " OldType": true, p + " T.OldField": true}
	report := `Incompatible changes:
- Old: removed
- OldType: removed
- (*OldType).M: removed
- T.OldField: removed
- T.Field: removed
- F: changed from func() to func(int)
- New: removed
- Old: changed from int to string
garbage line
`
	allowed, refused := judge(p, report, dep, nil)
	const d = " (deprecated in the baseline)"
	if want := []string{"Old: removed" + d, "OldType: removed" + d, "(*OldType).M: removed" + d, "T.OldField: removed" + d}; !slices.Equal(allowed, want) {
		t.Errorf("allowed %q, want %q", allowed, want)
	}
	if want := []string{"T.Field: removed", "F: changed from func() to func(int)", "New: removed", "Old: changed from int to string", "garbage line"}; !slices.Equal(refused, want) {
		t.Errorf("refused %q, want %q", refused, want)
	}
	// Deprecated in another package does not count.
	if a, _ := judge("example.com/other", "- Old: removed\n", dep, nil); len(a) != 0 {
		t.Errorf("a removal allowed by another package's deprecation: %q", a)
	}
	// Types moved behind deprecated aliases: S = example.com/m/q.Spec in m.
	moves := map[string]alias{"example.com/m/q.Spec": {pkg: p, name: "S"}}
	report = `- S: changed from S to example.com/m/q.Spec
- F: changed from func(S) []S to func(S) []example.com/m/q.Spec
- G: changed from func(S) to func(example.com/m/q.SpecX)
- H: changed from func(int) to func(example.com/m/q.Spec)
`
	allowed, refused = judge(p, report, nil, moves)
	if len(allowed) != 2 || len(refused) != 2 || !strings.HasPrefix(refused[0], "G:") || !strings.HasPrefix(refused[1], "H:") {
		t.Errorf("moves: allowed %q, refused %q; want S and F allowed, G and H refused", allowed, refused)
	}
	// Seen from another package, the alias is named by its package's path.
	allowed, _ = judge("example.com/r", "- U.F: changed from example.com/m.S to example.com/m/q.Spec\n", nil, moves)
	if len(allowed) != 1 {
		t.Errorf("a moved type seen from another package refused")
	}
}

func TestDeprecated(t *testing.T) {
	dir := t.TempDir()
	src := `package m

// A is current.
type A struct {
	// X is current.
	X int
	// Y is old.
	//
	// Deprecated: use X.
	Y int
}

// B is old.
//
// Deprecated: use A.
type B int

// M is old.
//
// Deprecated: gone soon.
func (*A) M() {}

// F mentions Deprecated: in running text, which is not a deprecation.
func F() {}

// Deprecated: use A.
var V, W int

// Deprecated: unexported names are not API.
func g() {}

// C is old, and so are its methods.
//
// Deprecated: use A.
type C struct{}

// N goes with C.
func (C) N() {}
`
	if err := os.WriteFile(filepath.Join(dir, "m.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := deprecated(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A.M", "A.Y", "B", "C", "V", "W"}; !slices.Equal(got, want) {
		t.Errorf("deprecated = %q, want %q", got, want)
	}
	c, err := countExported(dir)
	if err != nil {
		t.Fatal(err)
	}
	// kept: A and F; not B, C, V, W (deprecated), A.M (deprecated) or C.N (its type is).
	if c != (counts{top: 6, methods: 2, fields: 2, kept: 2}) {
		t.Errorf("countExported = %+v, want 6 top-level, 2 methods, 2 fields, 2 kept", c)
	}
}

// TestRoundTrip writes a baseline of a small module with the real apidiff, then checks
// changes against it: an addition passes, a removal fails, and the same removal passes once
// the baseline marked it Deprecated.
func TestRoundTrip(t *testing.T) {
	apidiff, err := exec.LookPath("apidiff")
	if err != nil {
		if home, herr := os.UserHomeDir(); herr == nil {
			if _, serr := os.Stat(filepath.Join(home, "go", "bin", "apidiff")); serr == nil {
				apidiff, err = filepath.Join(home, "go", "bin", "apidiff"), nil
			}
		}
	}
	if err != nil {
		t.Skip("apidiff not installed (go install golang.org/x/exp/cmd/apidiff; .ci/run installs it)")
	}
	mod := t.TempDir()
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, "m.go"), []byte("package m\n\n"+src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/m\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(mod)
	const v1 = "// Keep stays.\nfunc Keep() {}\n\n// Old goes.\nfunc Old() {}\n"
	const v1dep = "// Keep stays.\nfunc Keep() {}\n\n// Old goes.\n//\n// Deprecated: use Keep.\nfunc Old() {}\n"
	checkWith := func(baseline, now string) error {
		t.Helper()
		write(baseline)
		base := filepath.Join(t.TempDir(), "api")
		if err := run([]string{"-apidiff", apidiff, "-write", base}, new(bytes.Buffer)); err != nil {
			t.Fatal(err)
		}
		write(now)
		var out bytes.Buffer
		err := run([]string{"-apidiff", apidiff, base}, &out)
		t.Logf("%s", out.String())
		return err
	}
	if err := checkWith(v1, v1+"\n// New is added.\nfunc New() {}\n"); err != nil {
		t.Errorf("an addition refused: %v", err)
	}
	if err := checkWith(v1, "// Keep stays.\nfunc Keep() {}\n"); !errors.Is(err, errIncompatible) {
		t.Errorf("a removal without deprecation: got %v, want errIncompatible", err)
	}
	if err := checkWith(v1, "// Keep stays.\nfunc Keep(int) {}\n\n// Old goes.\nfunc Old() {}\n"); !errors.Is(err, errIncompatible) {
		t.Errorf("a changed signature: got %v, want errIncompatible", err)
	}
	if err := checkWith(v1dep, "// Keep stays.\nfunc Keep() {}\n"); err != nil {
		t.Errorf("a removal deprecated in the baseline refused: %v", err)
	}
	// A type moved to another package behind a deprecated alias is compatible; behind an
	// alias that is not marked Deprecated it is not (the old name must go in a later release).
	if err := os.MkdirAll(filepath.Join(mod, "q"), 0o755); err != nil {
		t.Fatal(err)
	}
	const moved = "import \"example.com/m/q\"\n\n// S moved.\n//\n// Deprecated: use q.T.\ntype S = q.T\n\n// F takes S.\nfunc F(S) []S { return nil }\n"
	const q = "package q\n\n// T holds.\ntype T struct{ A int }\n"
	if err := os.WriteFile(filepath.Join(mod, "q", "q.go"), []byte(q), 0o644); err != nil {
		t.Fatal(err)
	}
	const before = "// S holds.\ntype S struct{ A int }\n\n// F takes S.\nfunc F(S) []S { return nil }\n"
	if err := checkWith(before, moved); err != nil {
		t.Errorf("a type moved behind a deprecated alias refused: %v", err)
	}
	if err := checkWith(before, strings.Replace(moved, "//\n// Deprecated: use q.T.\n", "", 1)); !errors.Is(err, errIncompatible) {
		t.Errorf("a type moved behind an alias not deprecated: got %v, want errIncompatible", err)
	}
	if err := os.RemoveAll(filepath.Join(mod, "q")); err != nil {
		t.Fatal(err)
	}
	// A type moved into an internal package behind an alias that keeps its name is compatible,
	// deprecated or not (the alias is the type's public name for good).
	if err := os.MkdirAll(filepath.Join(mod, "internal", "q"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "internal", "q", "q.go"), []byte(q), 0o644); err != nil {
		t.Fatal(err)
	}
	const internalMove = "import \"example.com/m/internal/q\"\n\n// S holds.\ntype S = q.T\n\n// F takes S.\nfunc F(S) []S { return nil }\n"
	if err := checkWith(before, internalMove); err != nil {
		t.Errorf("a type moved into an internal package behind an alias refused: %v", err)
	}
	if err := checkWith(before, strings.Replace(internalMove, "func F(S) []S", "func F(S) []int", 1)); !errors.Is(err, errIncompatible) {
		t.Errorf("a changed signature beside an internal move: got %v, want errIncompatible", err)
	}
	if err := os.RemoveAll(filepath.Join(mod, "internal")); err != nil {
		t.Fatal(err)
	}
	const s1 = "// S holds.\ntype S struct {\n\t// A stays.\n\tA int\n\t// B goes.\n\t//\n\t// Deprecated: use A.\n\tB int\n}\n"
	if err := checkWith(s1, strings.Replace(s1, "\tB int\n", "", 1)); err != nil {
		t.Errorf("a field deprecated in the baseline, removed, refused: %v", err)
	}
	if err := checkWith(s1, strings.Replace(s1, "\tA int\n", "", 1)); !errors.Is(err, errIncompatible) {
		t.Errorf("a field not deprecated, removed: got %v, want errIncompatible", err)
	}
}
