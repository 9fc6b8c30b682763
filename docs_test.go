package gpusched_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// benchmarkSections returns the headings of BENCHMARKS.md, lower-cased, without the #s.
func benchmarkSections(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heads := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "#") {
			heads[strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return heads
}

// hasHeading reports whether name is a heading of BENCHMARKS.md, or the part of one before a
// colon ("Performance model" for "Performance model: constants per GPU type").
func hasHeading(heads map[string]bool, name string) bool {
	name = strings.ToLower(strings.TrimSpace(name))
	if heads[name] {
		return true
	}
	for h := range heads {
		if strings.HasPrefix(h, name+":") {
			return true
		}
	}
	return false
}

var (
	// `BENCHMARKS.md "Section"`, `BENCHMARKS.md, "Section"`, `BENCHMARKS.md ("Section")`
	quotedAfter = regexp.MustCompile(`BENCHMARKS\.md[ ,(]{0,3}"([^"]+)"`)
	// `"Section" section of BENCHMARKS.md`, `"Section" in BENCHMARKS.md`
	quotedBefore = regexp.MustCompile(`"([^"]+)"(?: section)? (?:of|in) BENCHMARKS\.md`)
	// a README status row: | `pkg` | ... BENCHMARKS.md ...
	statusRow = regexp.MustCompile("^\\| `([a-z/]+)` \\|")
)

// TestBenchmarkReferencesExist checks every mention of BENCHMARKS.md in the repository's Go
// files and Markdown: a section named in quotes must be a heading of BENCHMARKS.md, and a
// package whose docs or status row point to BENCHMARKS.md must have its own "## <package>"
// section there (the predict section once vanished while predict's docs still pointed to it).
func TestBenchmarkReferencesExist(t *testing.T) {
	heads := benchmarkSections(t)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "kube") {
				return filepath.SkipDir
			}
			return nil
		}
		if path == "BENCHMARKS.md" || path == "docs_test.go" || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg := strings.SplitN(filepath.ToSlash(path), "/", 2)[0]
		if !strings.Contains(path, "/") || pkg == "cmd" || pkg == "bench" || pkg == "examples" || pkg == "internal" {
			pkg = "" // no package section required
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, "BENCHMARKS.md") {
				continue
			}
			var names []string
			for _, m := range quotedAfter.FindAllStringSubmatch(line, -1) {
				names = append(names, m[1])
			}
			for _, m := range quotedBefore.FindAllStringSubmatch(line, -1) {
				names = append(names, m[1])
			}
			for _, n := range names {
				for _, part := range strings.Split(n, " / ") { // "policy / Philly trace" names a path
					if !hasHeading(heads, part) {
						t.Errorf("%s:%d names BENCHMARKS.md section %q, which does not exist", path, i+1, part)
					}
				}
			}
			p := pkg
			if len(names) > 0 {
				p = "" // the line names its section
			}
			if m := statusRow.FindStringSubmatch(line); m != nil {
				p = m[1]
			}
			if p != "" && !heads[p] {
				t.Errorf("%s:%d points to BENCHMARKS.md, which has no %q section", path, i+1, "## "+p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
