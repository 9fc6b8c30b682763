package gpusched_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// benchmarkDocs returns the benchmark documents by path: the index BENCHMARKS.md and every
// file under benchmarks/.
func benchmarkDocs(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("benchmarks", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, f := range append(files, "BENCHMARKS.md") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.ToSlash(f)] = string(b)
	}
	return docs
}

// headings returns the Markdown headings of doc, lower-cased, without the #s (lines in fenced
// code blocks excluded).
func headings(doc string) map[string]bool {
	heads := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			heads[strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))] = true
		}
	}
	return heads
}

// benchmarkSections returns the headings of the index and of every benchmarks/*.md file
// together, as headings does: a reference to `BENCHMARKS.md "Section"` may name a heading of
// any of them.
func benchmarkSections(docs map[string]string) map[string]bool {
	all := map[string]bool{}
	for _, doc := range docs {
		for h := range headings(doc) {
			all[h] = true
		}
	}
	return all
}

// hasHeading reports whether name is one of heads, or the part of one before a colon
// ("Performance model" for "Performance model: constants per GPU type").
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
	// `benchmarks/policy.md`, optionally followed by a section as above: `benchmarks/policy.md "Section"`
	benchFileRef = regexp.MustCompile(`\bbenchmarks/([A-Za-z0-9_.-]+\.md)(?:[ ,(]{0,3}"([^"]+)")?`)
	// a README status row: | `pkg` | ... BENCHMARKS.md ...
	statusRow = regexp.MustCompile("^\\| `([a-z/]+)` \\|")
	// a relative Markdown link target: [text](target)
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// benchmarkRefProblems returns what is wrong with the references to the benchmark documents
// in one file's text (file names it in the messages; pkg, when not "", is the package whose
// docs these are): a section named in quotes after BENCHMARKS.md must be a heading of the
// index or of a benchmarks/*.md file; a benchmarks/x.md file named must exist, and a section
// named after it must be one of its headings; and a package whose docs or status row point to
// BENCHMARKS.md without naming a section must have a heading of its own name (the predict
// section once vanished while predict's docs still pointed to it).
func benchmarkRefProblems(file, pkg, text string, docs map[string]string) []string {
	heads := benchmarkSections(docs)
	var bad []string
	for i, line := range strings.Split(text, "\n") {
		for _, m := range benchFileRef.FindAllStringSubmatch(line, -1) {
			doc, ok := docs["benchmarks/"+m[1]]
			if !ok {
				bad = append(bad, fmt.Sprintf("%s:%d names benchmarks/%s, which does not exist", file, i+1, m[1]))
				continue
			}
			if m[2] != "" && !hasHeading(headings(doc), m[2]) {
				bad = append(bad, fmt.Sprintf("%s:%d names section %q of benchmarks/%s, which has no such heading", file, i+1, m[2], m[1]))
			}
		}
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
					bad = append(bad, fmt.Sprintf("%s:%d names BENCHMARKS.md section %q, which does not exist", file, i+1, part))
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
			bad = append(bad, fmt.Sprintf("%s:%d points to BENCHMARKS.md, which has no %q section", file, i+1, "# "+p))
		}
	}
	return bad
}

// TestBenchmarkReferencesExist checks every mention of BENCHMARKS.md or of a benchmarks/*.md
// file in the repository's Go files, Markdown and scripts (benchmarkRefProblems), and that the
// check catches a missing section, a missing file and a missing package section.
func TestBenchmarkReferencesExist(t *testing.T) {
	docs := benchmarkDocs(t)
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
		slash := filepath.ToSlash(path)
		if slash == "BENCHMARKS.md" || slash == "docs_test.go" || strings.HasPrefix(slash, "benchmarks/") ||
			!(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".sh")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg := strings.SplitN(slash, "/", 2)[0]
		if !strings.Contains(slash, "/") || pkg == "cmd" || pkg == "bench" || pkg == "examples" || pkg == "internal" {
			pkg = "" // no package section required
		}
		for _, p := range benchmarkRefProblems(slash, pkg, string(data), docs) {
			t.Error(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for text, pkg := range map[string]string{
		`see BENCHMARKS.md "No such section"`:           "",
		`see benchmarks/nosuchfile.md`:                  "",
		`see benchmarks/policy.md "No such section"`:    "",
		`measured in BENCHMARKS.md`:                     "nosuchpackage",
		"| `nosuchpackage` | works (BENCHMARKS.md) |":   "",
		`"Not a heading" section of BENCHMARKS.md`:      "",
		`BENCHMARKS.md "policy / No such subsection"`:   "",
		`benchmarks/asrpt.md, "Schedule latency: nope"`: "",
		`(BENCHMARKS.md, "predict", "Real durations")`:  "nosuchpackage-but-named",
	} {
		bad := benchmarkRefProblems("x.go", pkg, text, docs)
		if len(bad) == 0 && pkg != "nosuchpackage-but-named" {
			t.Errorf("the check misses a broken reference: %s", text)
		}
		if len(bad) != 0 && pkg == "nosuchpackage-but-named" {
			t.Errorf("the check rejects a good reference %s: %v", text, bad)
		}
	}
}

// benchmarkIndexProblems returns what is wrong with the benchmark index (docs["BENCHMARKS.md"])
// and the files under benchmarks/: every benchmarks/*.md file must be linked from the index
// and start with a "# " heading, and every relative link in any of them must lead to a file
// that exists (exists says whether a path, relative to the repository root, does).
func benchmarkIndexProblems(docs map[string]string, exists func(string) bool) []string {
	var bad []string
	index := docs["BENCHMARKS.md"]
	linked := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(index, -1) {
		linked[path.Clean(m[1])] = true
	}
	names := slices.Sorted(maps.Keys(docs))
	for _, name := range names {
		doc := docs[name]
		if name == "BENCHMARKS.md" {
			continue
		}
		if !linked[name] {
			bad = append(bad, fmt.Sprintf("BENCHMARKS.md does not link %s", name))
		}
		if !strings.HasPrefix(doc, "# ") {
			bad = append(bad, fmt.Sprintf("%s does not start with a \"# <area>\" heading", name))
		}
	}
	for _, name := range names {
		for _, m := range mdLink.FindAllStringSubmatch(docs[name], -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue // an anchor in the same file, or a web address
			}
			p := path.Clean(path.Join(path.Dir(name), target))
			if _, ok := docs[p]; !ok && !exists(p) {
				bad = append(bad, fmt.Sprintf("%s links %s, which does not exist", name, m[1]))
			}
		}
	}
	return bad
}

// TestBenchmarkIndex: BENCHMARKS.md lists every file under benchmarks/ and its links lead
// somewhere; the check catches an unlisted file, a broken link and a file without its heading.
func TestBenchmarkIndex(t *testing.T) {
	docs := benchmarkDocs(t)
	exists := func(p string) bool {
		_, err := os.Stat(filepath.FromSlash(p))
		return err == nil
	}
	for _, p := range benchmarkIndexProblems(docs, exists) {
		t.Error(p)
	}
	if len(docs) < 10 {
		t.Errorf("found %d benchmark documents; expected the index and a file per area", len(docs))
	}
	for name, mutate := range map[string]func(map[string]string){
		"an unlisted file":        func(d map[string]string) { d["benchmarks/new-area.md"] = "# new area\n" },
		"a broken index link":     func(d map[string]string) { d["BENCHMARKS.md"] += "\n- [gone](benchmarks/gone.md)\n" },
		"a broken link in a file": func(d map[string]string) { d["benchmarks/policy.md"] += "\nsee [x](../bench/nosuch.sh)\n" },
		"a file without heading":  func(d map[string]string) { d["benchmarks/policy.md"] = "text\n" + d["benchmarks/policy.md"] },
	} {
		d := maps.Clone(docs)
		mutate(d)
		if len(benchmarkIndexProblems(d, exists)) == 0 {
			t.Errorf("the index check misses %s", name)
		}
	}
}

// libraryPackages returns the packages of the module a user imports, by directory (the root
// excluded): every top-level directory with Go files but bench, cmd, examples, internal, kube
// (a module of its own) and testdata.
func libraryPackages(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || slices.Contains([]string{"bench", "cmd", "examples", "internal", "kube", "testdata"}, name) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(name, "*.go"))
		if slices.ContainsFunc(files, func(f string) bool { return !strings.HasSuffix(f, "_test.go") }) {
			out = append(out, name)
		}
	}
	return out
}

// cliPolicies returns the names of the policies "gpusched compare" runs, in its order, from
// its registry (cmd/gpusched/policies.go).
func cliPolicies(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("cmd/gpusched/policies.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^\t\t\{"([a-z0-9-]+)", "`).FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	if len(out) < 10 {
		t.Fatalf("read %d policies from cmd/gpusched/policies.go: its registry changed shape", len(out))
	}
	return out
}

// exportedNames returns the exported top-level identifiers of the package in dir.
func exportedNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}

// docFacts is what the docs must agree on with the code.
type docFacts struct {
	packages []string                   // libraryPackages
	policies []string                   // cliPolicies
	exported map[string]map[string]bool // exportedNames of policy and asrpt
}

// countWords are the number words the docs may count policies with.
var countWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
	"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
	"seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}

// docBlock returns the lines of the tab-indented block after the heading "// # "+heading in
// a doc comment, up to the next heading.
func docBlock(doc, heading string) []string {
	_, rest, ok := strings.Cut(doc, "// # "+heading+"\n")
	if !ok {
		return nil
	}
	var out []string
	for _, line := range strings.Split(rest, "\n") {
		if strings.HasPrefix(line, "// # ") {
			break
		}
		if strings.HasPrefix(line, "//\t") {
			out = append(out, strings.TrimPrefix(line, "//\t"))
		}
	}
	return out
}

// docMismatches returns where the root package doc (doc.go), the README and package
// policy's doc disagree with the code on the packages and the policies: each list must name
// exactly the library's packages (the README's table adds the root and cmd/gpusched), the
// root doc's policy block exactly the policies gpusched compare runs, in its order, with the
// count it states and identifiers that exist, policy's table every policy of package policy
// with its constructor, and every count of policies in the README must be the real one.
func docMismatches(rootDoc, readme, policyDoc string, f docFacts) []string {
	var bad []string
	// Packages in doc.go.
	var docPkgs []string
	for _, line := range docBlock(rootDoc, "Packages and how data flows") {
		if name, _, ok := strings.Cut(line, " "); ok {
			docPkgs = append(docPkgs, name)
		}
	}
	if a, b := sorted(docPkgs), sorted(f.packages); !slices.Equal(a, b) {
		bad = append(bad, fmt.Sprintf("doc.go lists packages %v; the module has %v", a, b))
	}
	// Packages in the README's table.
	_, table, _ := strings.Cut(readme, "\n## Packages\n")
	table, _, _ = strings.Cut(table, "\n## ")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z/]+)`").FindAllStringSubmatch(table, -1) {
		rows = append(rows, m[1])
	}
	if a, b := sorted(rows), sorted(append(slices.Clone(f.packages), "gpusched", "cmd/gpusched")); !slices.Equal(a, b) {
		bad = append(bad, fmt.Sprintf("README's package table has %v; the module has %v", a, b))
	}
	// Policies in doc.go.
	var docPols []string
	for _, line := range docBlock(rootDoc, "Policies") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		docPols = append(docPols, fields[0])
		for _, m := range regexp.MustCompile(`\b(policy|asrpt)\.([A-Z]\w*)`).FindAllStringSubmatch(line, -1) {
			if !f.exported[m[1]][m[2]] {
				bad = append(bad, fmt.Sprintf("doc.go: policy %s names %s.%s, which does not exist", fields[0], m[1], m[2]))
			}
		}
	}
	if !slices.Equal(docPols, f.policies) {
		bad = append(bad, fmt.Sprintf("doc.go lists policies %v; gpusched compare runs %v", docPols, f.policies))
	}
	if m := regexp.MustCompile(`The (\d+) policies`).FindStringSubmatch(rootDoc); m == nil || m[1] != strconv.Itoa(len(f.policies)) {
		bad = append(bad, fmt.Sprintf("doc.go does not say \"The %d policies\"", len(f.policies)))
	}
	// Policies of package policy in its doc's table.
	for _, line := range docBlock(rootDoc, "Policies") {
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.HasPrefix(fields[1], "policy.") {
			continue
		}
		m := regexp.MustCompile(`(?m)^//\t` + regexp.QuoteMeta(fields[0]) + `\s+(\w*Options)\s`).FindStringSubmatch(policyDoc)
		if m == nil || !f.exported["policy"][m[1]] {
			bad = append(bad, fmt.Sprintf("policy/doc.go's table has no row for %s with an options type that exists", fields[0]))
		}
	}
	// Policies in the README: each named, every count right.
	for _, p := range f.policies {
		if !strings.Contains(readme, "`"+p+"`") {
			bad = append(bad, fmt.Sprintf("README does not name policy `%s`", p))
		}
	}
	for _, m := range regexp.MustCompile(`(?i)\b(\d+|[a-z]+)\s+policies\b`).FindAllStringSubmatch(readme, -1) {
		n, isWord := countWords[strings.ToLower(m[1])]
		if !isWord {
			var err error
			if n, err = strconv.Atoi(m[1]); err != nil {
				continue // "oracle policies", "PS policies"
			}
		}
		if n != len(f.policies) {
			bad = append(bad, fmt.Sprintf("README says %q; there are %d", m[0], len(f.policies)))
		}
	}
	return bad
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestDocsMatchCode: the root package doc, the README and package policy's doc name the
// packages and the policies that exist (the root doc once listed 9 packages and 6 policies of
// 14 and 16, the README twelve policies); and the check catches a doc that drops a package, a
// policy, or names a type that does not exist.
func TestDocsMatchCode(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	rootDoc, readme, policyDoc := read("doc.go"), read("README.md"), read("policy/doc.go")
	f := docFacts{packages: libraryPackages(t), policies: cliPolicies(t),
		exported: map[string]map[string]bool{"policy": exportedNames(t, "policy"), "asrpt": exportedNames(t, "asrpt")}}
	for _, m := range docMismatches(rootDoc, readme, policyDoc, f) {
		t.Error(m)
	}
	for name, mutate := range map[string]func() (string, string, string){
		"a package dropped": func() (string, string, string) {
			return strings.Replace(rootDoc, "//\tconsolidate ", "//\tx", 1), readme, policyDoc
		},
		"a policy dropped": func() (string, string, string) {
			return strings.Replace(rootDoc, "//\tsmd ", "//\t", 1), readme, policyDoc
		},
		"a type misnamed": func() (string, string, string) {
			return strings.Replace(rootDoc, "policy.SMDOptions:", "policy.SMDXOptions:", 1), readme, policyDoc
		},
		"a stale README count": func() (string, string, string) { return rootDoc, readme + "\nunder twelve policies\n", policyDoc },
		"a README row dropped": func() (string, string, string) {
			return rootDoc, strings.Replace(readme, "| `ps` |", "| ps |", 1), policyDoc
		},
		"a policy row dropped": func() (string, string, string) {
			return rootDoc, readme, strings.Replace(policyDoc, "//\tsmd ", "//\tsmdx ", 1)
		},
		"a README policy gone": func() (string, string, string) {
			return rootDoc, strings.ReplaceAll(readme, "`asrpt-plan`", "asrpt-plan"), policyDoc
		},
		"another package added": func() (string, string, string) { return rootDoc, readme, policyDoc },
	} {
		g := f
		if name == "another package added" {
			g.packages = append(slices.Clone(f.packages), "newpkg")
		}
		r, rm, pd := mutate()
		if len(docMismatches(r, rm, pd, g)) == 0 {
			t.Errorf("the check misses %s", name)
		}
	}
}

// TestExamplesListed: every example directory is in the README with the command that runs
// it: "go run ./examples/NAME" for a command, "go test ./examples/NAME" for a package of
// tests (two examples were once never mentioned).
func TestExamplesListed(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		verb := "go test"
		if b, err := os.ReadFile(filepath.Join("examples", e.Name(), "main.go")); err == nil && strings.Contains(string(b), "package main") {
			verb = "go run"
		}
		if want := "`" + verb + " ./examples/" + e.Name(); !strings.Contains(string(readme), want) {
			t.Errorf("README does not say how to run examples/%s (%s`)", e.Name(), want)
		}
	}
}

var (
	// a backtick span, possibly across a line break
	codeSpan = regexp.MustCompile("(?s)`([^`]+)`")
	// a path to something under bench/ in prose or a command
	benchPath = regexp.MustCompile(`(?:^|[\s` + "`" + `(])(?:\./)?(bench/[A-Za-z0-9_][A-Za-z0-9_./-]*[A-Za-z0-9_])`)
	// a subcommand case of cmd/gpusched's main
	subcommandCase = regexp.MustCompile(`(?m)^\tcase "([a-z][a-z-]*)"`)
	// a test, benchmark or fuzz function
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	// a word that may be a subcommand
	lowerWord = regexp.MustCompile(`^[a-z]+$`)
)

// shellWords splits a command line as a POSIX shell would for the simple commands the
// benchmark files show: words split on blanks, single and double quotes removed; "&&", ";" and
// "|" outside quotes end a command, and "#" at the start of a word begins a comment.
func shellWords(line string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	end := func() {
		flush()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				j = len(line) - i - 1
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == ' ' || c == '\t' || c == '\n' || c == '\\':
			flush()
		case c == '#' && !inWord:
			end()
			return cmds
		case c == ';' || c == '|' || c == '&':
			end()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	end()
	return cmds
}

// benchmarkCommands returns the command lines of one benchmark file: every indented code line
// (with its continuation lines after a trailing backslash) and every backtick span.
func benchmarkCommands(doc string) []string {
	var out []string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "    ") {
			continue
		}
		cmd := lines[i]
		for strings.HasSuffix(strings.TrimSpace(cmd), "\\") && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		out = append(out, cmd)
	}
	for _, m := range codeSpan.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// benchmarkTree is what the commands check looks up in the repository.
type benchmarkTree struct {
	exists      func(path string) bool           // a file or directory, relative to the root
	funcs       func(dir string) map[string]bool // the Test, Benchmark, Fuzz and Example functions of a package
	subcommands map[string]bool                  // of cmd/gpusched
}

// benchmarkCommandProblems returns the commands of a benchmark file (name, text doc) that
// name something that does not exist: a script or program under bench/, a package given to
// go run, build or test (looked up from the root, then from kube/, its own module, whose
// commands the files run "in kube/"), a -bench pattern (or, without -bench, a -run pattern)
// that matches no function of the package, a gpusched subcommand.
func benchmarkCommandProblems(name, doc string, tree benchmarkTree) []string {
	var bad []string
	resolve := func(pkg string) (string, bool) {
		p := path.Clean(strings.TrimSuffix(pkg, "/..."))
		for _, base := range []string{".", "kube"} {
			if q := path.Join(base, p); tree.exists(q) {
				return q, true
			}
		}
		return "", false
	}
	for _, m := range benchPath.FindAllStringSubmatch(doc, -1) {
		if !tree.exists(m[1]) {
			bad = append(bad, fmt.Sprintf("%s names %s, which does not exist", name, m[1]))
		}
	}
	for _, line := range benchmarkCommands(doc) {
		for _, words := range shellWords(line) {
			for i, w := range words {
				if (w == "./cmd/gpusched" || strings.HasSuffix(w, "/gpusched")) && i+1 < len(words) &&
					lowerWord.MatchString(words[i+1]) && !tree.subcommands[words[i+1]] {
					bad = append(bad, fmt.Sprintf("%s: %q: gpusched has no subcommand %q", name, line, words[i+1]))
				}
			}
			if len(words) < 2 || words[0] != "go" || !slices.Contains([]string{"run", "build", "test"}, words[1]) {
				continue
			}
			var pkgs []string
			flags := map[string]string{}
			for i := 2; i < len(words); i++ {
				w := words[i]
				switch {
				case w == "-o" || w == "-run" || w == "-bench" || w == "-benchtime" || w == "-count" || w == "-cpuprofile" || w == "-memprofile":
					if i+1 < len(words) {
						flags[w] = words[i+1]
						i++
					}
				case strings.HasPrefix(w, "./") || w == ".":
					pkgs = append(pkgs, w)
				}
				if words[1] == "run" && len(pkgs) > 0 {
					break // the rest are the program's arguments
				}
			}
			for _, pkg := range pkgs {
				dir, ok := resolve(pkg)
				if !ok {
					bad = append(bad, fmt.Sprintf("%s: %q: no package %s", name, line, pkg))
					continue
				}
				if words[1] != "test" || strings.HasSuffix(pkg, "/...") {
					continue
				}
				flag := "-bench"
				pattern, ok := flags[flag]
				if !ok {
					flag = "-run"
					if pattern, ok = flags[flag]; !ok || pattern == "^$" || strings.EqualFold(pattern, "xxx") {
						continue
					}
				}
				// The pattern's first element names top-level functions; each alternative of
				// a plain "A|B|C" must match one (a renamed benchmark in a list is caught).
				top, _, _ := strings.Cut(pattern, "/")
				alts := []string{top}
				if !strings.ContainsAny(top, "()[]") {
					alts = strings.Split(top, "|")
				}
				prefix := map[string]string{"-bench": "Benchmark", "-run": "Test"}[flag]
				funcs := slices.Collect(maps.Keys(tree.funcs(dir)))
				for _, alt := range alts {
					re, err := regexp.Compile(alt)
					if err != nil {
						bad = append(bad, fmt.Sprintf("%s: %q: %s %q: %v", name, line, flag, pattern, err))
						continue
					}
					if !slices.ContainsFunc(funcs, func(f string) bool {
						return (strings.HasPrefix(f, prefix) || flag == "-run") && re.MatchString(f)
					}) {
						bad = append(bad, fmt.Sprintf("%s: %q: %s %q: %q matches no function of %s", name, line, flag, pattern, alt, dir))
					}
				}
			}
		}
	}
	return bad
}

// TestBenchmarkCommandsExist: every command a benchmark file shows names scripts, packages,
// benchmarks, tests and subcommands that exist; the check catches each kind of dangling name.
func TestBenchmarkCommandsExist(t *testing.T) {
	main, err := os.ReadFile("cmd/gpusched/main.go")
	if err != nil {
		t.Fatal(err)
	}
	tree := benchmarkTree{
		exists: func(p string) bool {
			_, err := os.Stat(filepath.FromSlash(p))
			return err == nil
		},
		funcs: func(dir string) map[string]bool {
			out := map[string]bool{}
			files, _ := filepath.Glob(filepath.Join(filepath.FromSlash(dir), "*_test.go"))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
					out[m[1]] = true
				}
			}
			return out
		},
		subcommands: map[string]bool{},
	}
	for _, m := range subcommandCase.FindAllStringSubmatch(string(main), -1) {
		tree.subcommands[m[1]] = true
	}
	if len(tree.subcommands) < 4 {
		t.Fatalf("read subcommands %v from cmd/gpusched/main.go: its dispatch changed shape", tree.subcommands)
	}
	docs := benchmarkDocs(t)
	commands := 0
	for name, doc := range docs {
		commands += len(benchmarkCommands(doc))
		for _, p := range benchmarkCommandProblems(name, doc, tree) {
			t.Error(p)
		}
	}
	if commands < 50 {
		t.Errorf("found %d commands in the benchmark files; the extraction broke", commands)
	}
	for _, broken := range []string{
		"    bench/no_such_script.sh",
		"see `go run ./bench/nosuchprogram -x 1`",
		"    go test -run '^$' -bench NoSuchBenchmark -benchtime 3x ./srpt/",
		"`go test -run TestNoSuchTest -v ./policy`",
		"    go run ./cmd/gpusched nosuchcommand -policy fifo",
		"    /tmp/gpusched nosuchcommand -trace x.csv",
		"`go test -run '^$'\n-bench 'NoSuch/(a|b)' ./policy`",
		"    go test ./nosuchpackage/...",
		"    go test -run '^$' -bench 'Partition10k64|NoSuchOne' ./partition/",
	} {
		if len(benchmarkCommandProblems("x.md", broken, tree)) == 0 {
			t.Errorf("the commands check misses %q", broken)
		}
	}
	for _, good := range []string{
		"    go test -run '^$' -bench 'Leak/(fifo|sjf-bco$)' -benchtime 1x ./host/",
		"`go test -count=1 -run TestEndToEnd -v ./e2e` in `kube/`",
		"    go run ./examples/policy-sjfbco -alpha 0 # a comment ./nosuch",
	} {
		if p := benchmarkCommandProblems("x.md", good, tree); len(p) != 0 {
			t.Errorf("the commands check rejects a good command: %v", p)
		}
	}
}

// statusCellProblems returns the cells of the README's status table (the table under
// "## Status") longer than limit characters: the table says what works and what is missed,
// and the history and the figures live in CHANGELOG.md and benchmarks/ (its cells once ran
// to 1,484 characters).
func statusCellProblems(readme string, limit int) []string {
	_, table, ok := strings.Cut(readme, "\n## Status\n")
	if !ok {
		return []string{"README has no \"## Status\" section"}
	}
	table, _, _ = strings.Cut(table, "\n## ")
	var bad []string
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		rows++
		for _, cell := range strings.Split(strings.Trim(line, "|"), "|") {
			if n := len([]rune(strings.TrimSpace(cell))); n > limit {
				bad = append(bad, fmt.Sprintf("README status cell of %d characters (limit %d): %.60s...", n, limit, strings.TrimSpace(cell)))
			}
		}
	}
	if rows < 5 {
		bad = append(bad, fmt.Sprintf("README's status table has %d rows", rows))
	}
	return bad
}

// TestStatusTableShort: the README's status table keeps short cells; the check catches a long one.
func TestStatusTableShort(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, p := range statusCellProblems(readme, 250) {
		t.Error(p)
	}
	long := strings.Replace(readme, "| `srpt` | works;", "| `srpt` | works; "+strings.Repeat("and then ", 40), 1)
	if len(statusCellProblems(long, 250)) == 0 {
		t.Error("the check misses a 360-character cell")
	}
}

// hexCommit is a commit named in a benchmark file: 7 to 40 hexadecimal digits with a digit
// and a letter among them.
var hexCommit = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// benchmarkProvenanceProblems returns the benchmark files (the index aside) that name no
// commit or show no command (a go run, go test or go build line, or a bench/ script or
// program): every file must say what produced its figures and at which commit.
func benchmarkProvenanceProblems(docs map[string]string) []string {
	var bad []string
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		doc := docs[name]
		if name == "BENCHMARKS.md" {
			continue
		}
		commit := slices.ContainsFunc(hexCommit.FindAllString(doc, -1), func(h string) bool {
			return strings.ContainsAny(h, "0123456789") && strings.ContainsAny(h, "abcdef")
		})
		if !commit {
			bad = append(bad, fmt.Sprintf("%s names no commit", name))
		}
		command := slices.ContainsFunc(benchmarkCommands(doc), func(c string) bool {
			for _, words := range shellWords(c) {
				if (len(words) > 1 && words[0] == "go") || strings.Contains(words[0], "bench/") {
					return true
				}
			}
			return false
		})
		if !command {
			bad = append(bad, fmt.Sprintf("%s shows no command (go run/test/build or a bench/ script)", name))
		}
	}
	return bad
}

// TestBenchmarkProvenance: every benchmark file names a commit and a command; the check
// catches a file without either.
func TestBenchmarkProvenance(t *testing.T) {
	docs := benchmarkDocs(t)
	for _, p := range benchmarkProvenanceProblems(docs) {
		t.Error(p)
	}
	for name, doc := range map[string]string{
		"no commit":  "# x\n\n    go test -bench . ./srpt\n",
		"no command": "# x\n\nAt commit 4f59689 it took 3 s.\n",
	} {
		if len(benchmarkProvenanceProblems(map[string]string{"benchmarks/x.md": doc})) == 0 {
			t.Errorf("the provenance check misses a file with %s", name)
		}
	}
}
