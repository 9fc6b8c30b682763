// Command apicheck keeps the module's exported API compatible with the last release: it
// compares every library package (every package of the module but main packages and those
// under internal/, examples/ and bench/) with the release's baseline under api/ using
// golang.org/x/exp/cmd/apidiff, and fails on an incompatible change unless it removes an
// identifier that the baseline marked Deprecated (the rule of CONTRIBUTING.md: exported API
// goes only after one release as a deprecated wrapper).
//
// Usage, from the module root, with apidiff installed (.ci/run installs the pinned version):
//
//	go run ./internal/apicheck api/v0.2.0            # check the working tree against a baseline
//	go run ./internal/apicheck -write api/v0.3.0     # write a new baseline (at a release cut)
//	go run ./internal/apicheck -count                # exported identifiers per package
//
// A baseline directory holds, per package, apidiff's export data (<path>.export, the root
// package as gpusched.export, "/" in a path as "_"), packages.txt (import path and file of each
// package) and deprecated.txt (each identifier whose doc comment has a "Deprecated:"
// paragraph at the baseline, as "importpath Name" or "importpath Type.Member").
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
}

// errIncompatible reports that the check found changes the rule does not allow.
var errIncompatible = errors.New("incompatible API changes")

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("apicheck", flag.ContinueOnError)
	write := fs.Bool("write", false, "write a new baseline into DIR instead of checking against it")
	count := fs.Bool("count", false, "print the exported identifiers of each library package and exit")
	apidiff := fs.String("apidiff", "apidiff", "the apidiff binary (golang.org/x/exp/cmd/apidiff)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	pkgs, err := libraryPackages()
	if err != nil {
		return err
	}
	if *count {
		return printCounts(out, pkgs)
	}
	if fs.NArg() != 1 {
		return errors.New("usage: apicheck [-write] [-apidiff PATH] DIR | apicheck -count")
	}
	dir := fs.Arg(0)
	if *write {
		return writeBaseline(dir, pkgs, *apidiff)
	}
	return check(out, dir, pkgs, *apidiff)
}

// pkg is one library package: its import path and directory.
type pkg struct{ path, dir string }

// libraryPackages lists the module's packages a user may import: go list's packages less
// main packages and those under internal/, examples/, bench/ and testdata/.
func libraryPackages() ([]pkg, error) {
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{.Name}}", "./...")
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var out []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[2] == "main" || slices.ContainsFunc([]string{"internal", "examples", "bench", "testdata"}, func(e string) bool {
			return strings.Contains(f[0]+"/", "/"+e+"/")
		}) {
			continue
		}
		out = append(out, pkg{path: f[0], dir: f[1]})
	}
	if len(out) == 0 {
		return nil, errors.New("go list found no library package")
	}
	return out, nil
}

// exportFile is the baseline file name of the package with import path p in module mod.
func exportFile(mod, p string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(p, mod), "/")
	if rel == "" {
		rel = filepath.Base(mod)
	}
	return strings.ReplaceAll(rel, "/", "_") + ".export"
}

// modulePath is the shortest import path of pkgs (the root package's).
func modulePath(pkgs []pkg) string {
	m := pkgs[0].path
	for _, p := range pkgs {
		if len(p.path) < len(m) {
			m = p.path
		}
	}
	return m
}

func writeBaseline(dir string, pkgs []pkg, apidiff string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mod := modulePath(pkgs)
	var list, deps bytes.Buffer
	for _, p := range pkgs {
		file := exportFile(mod, p.path)
		cmd := exec.Command(apidiff, "-w", filepath.Join(dir, file), p.path)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apidiff -w %s: %w", p.path, err)
		}
		fmt.Fprintf(&list, "%s %s\n", p.path, file)
		names, err := deprecated(p.dir)
		if err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintf(&deps, "%s %s\n", p.path, n)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "packages.txt"), list.Bytes(), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "deprecated.txt"), deps.Bytes(), 0o644)
}

func check(out io.Writer, dir string, pkgs []pkg, apidiff string) error {
	base, err := readPairs(filepath.Join(dir, "packages.txt"))
	if err != nil {
		return err
	}
	deps, err := readPairs(filepath.Join(dir, "deprecated.txt"))
	if err != nil {
		return err
	}
	depSet := map[string]bool{}
	for _, d := range deps {
		depSet[d[0]+" "+d[1]] = true
	}
	have := map[string]bool{}
	moves := map[string]alias{}
	for _, p := range pkgs {
		have[p.path] = true
		if err := movedTypes(p, moves); err != nil {
			return err
		}
	}
	var bad []string
	for _, b := range base {
		path, file := b[0], b[1]
		if !have[path] {
			bad = append(bad, fmt.Sprintf("%s: package removed", path))
			continue
		}
		cmd := exec.Command(apidiff, "-incompatible", filepath.Join(dir, file), path)
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("apidiff %s: %w", path, err)
		}
		allowed, refused := judge(path, stdout.String(), depSet, moves)
		for _, a := range allowed {
			fmt.Fprintf(out, "%s: %s: allowed\n", path, a)
		}
		for _, r := range refused {
			bad = append(bad, fmt.Sprintf("%s: %s", path, r))
		}
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintln(out, b)
		}
		return fmt.Errorf("%w: %d against %s (see CONTRIBUTING.md, \"API compatibility\")", errIncompatible, len(bad), dir)
	}
	fmt.Fprintf(out, "%d packages compatible with %s\n", len(base), dir)
	return nil
}

// readPairs reads a file of "a b" lines.
func readPairs(name string) ([][2]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, b, ok := strings.Cut(line, " ")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want two fields: %q", name, n, line)
		}
		out = append(out, [2]string{a, strings.TrimSpace(b)})
	}
	return out, sc.Err()
}

// changeLine is one line of apidiff's report: "- Name: what changed".
var changeLine = regexp.MustCompile(`^- (\S+): (.*)$`)

// alias is a deprecated type alias: the package that declares it and its name.
type alias struct{ pkg, name string }

// movedTypes adds to moves the deprecated type aliases of package p (type Old = q.New, with a
// Deprecated paragraph), and its aliases of an internal package's types (type Name =
// internal/q.Name, deprecated or not: the library keeps exporting the type under its name):
// moves["<import path of q>.New"] = {p, Old}. Such an alias is how a type moves to another
// package; apidiff reports the moved type, and every signature that names it,
// as changed (golang/go#37138), and judge accepts the change once the new names are read back
// as the deprecated ones.
func movedTypes(p pkg, moves map[string]alias) error {
	files, err := parseDir(p.dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		imports := map[string]string{}
		for _, im := range f.Imports {
			path, err := strconv.Unquote(im.Path.Value)
			if err != nil {
				return err
			}
			name := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = path
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				sel, ok := ts.Type.(*ast.SelectorExpr)
				if !ts.Assign.IsValid() || !ok || !ts.Name.IsExported() {
					continue
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok || imports[x.Name] == "" {
					continue
				}
				if target := imports[x.Name]; isDeprecated(g.Doc, ts.Doc) || isInternal(target) {
					moves[target+"."+sel.Sel.Name] = alias{pkg: p.path, name: ts.Name.Name}
				}
			}
		}
	}
	return nil
}

// isInternal reports whether the import path p is that of an internal package (an "internal"
// element in it): no user can name its types, so a library package that aliases one of them
// (type T = internal/x.T) keeps T's name for good, and the type has only moved.
func isInternal(p string) bool {
	return slices.Contains(strings.Split(p, "/"), "internal")
}

// changedLine is the what of a changed identifier: "changed from OLD to NEW".
var changedLine = regexp.MustCompile(`^changed from (.*) to (.*)$`)

// readBack rewrites the types of moves in t, as apidiff writes them for package path (its
// own types unqualified, others by import path), to the deprecated aliases that name them.
func readBack(path, t string, moves map[string]alias) string {
	for target, a := range moves {
		name := a.pkg + "." + a.name
		if a.pkg == path {
			name = a.name
		}
		t = regexp.MustCompile(`(^|[^\w./])`+regexp.QuoteMeta(target)+`\b`).ReplaceAllString(t, "${1}"+name)
	}
	return t
}

// judge splits apidiff's incompatible changes of package path (report) into those the rule
// allows and the rest. Allowed: the removal of an identifier deprecated at the baseline (or
// of a member of a deprecated type), and a change whose new form, with each type moved behind
// a deprecated alias (moves, from movedTypes) read back as the alias, is the old form. Any
// line it cannot read is refused.
func judge(path, report string, deprecated map[string]bool, moves map[string]alias) (allowed, refused []string) {
	for _, line := range strings.Split(report, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasSuffix(line, "changes:") {
			continue
		}
		m := changeLine.FindStringSubmatch(line)
		if m == nil {
			refused = append(refused, line)
			continue
		}
		name := strings.NewReplacer("(*", "", "(", "", ")", "").Replace(m[1]) // (*T).M -> T.M
		typ, _, _ := strings.Cut(name, ".")
		if m[2] == "removed" && (deprecated[path+" "+name] || deprecated[path+" "+typ]) {
			allowed = append(allowed, line[2:]+" (deprecated in the baseline)")
			continue
		}
		if c := changedLine.FindStringSubmatch(m[2]); c != nil && c[1] == readBack(path, c[2], moves) {
			allowed = append(allowed, line[2:]+" (a type moved behind a deprecated alias)")
			continue
		}
		refused = append(refused, line[2:])
	}
	return allowed, refused
}

// deprecatedPara matches a doc comment's "Deprecated:" paragraph.
var deprecatedPara = regexp.MustCompile(`(?m)(^|\n\n)Deprecated: `)

func isDeprecated(groups ...*ast.CommentGroup) bool {
	for _, g := range groups {
		if g != nil && deprecatedPara.MatchString(g.Text()) {
			return true
		}
	}
	return false
}

// parseDir parses the package's non-test Go files.
func parseDir(dir string) ([]*ast.File, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		out = append(out, af)
	}
	return out, nil
}

// recvName is the name of a method's receiver type.
func recvName(d *ast.FuncDecl) string {
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// deprecated returns the exported identifiers of the package in dir whose doc comment (or
// their declaration group's) has a Deprecated paragraph: "Name" or "Type.Member", sorted.
func deprecated(dir string) ([]string, error) {
	files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || !isDeprecated(d.Doc) {
					continue
				}
				if d.Recv != nil {
					out = append(out, recvName(d)+"."+d.Name.Name)
				} else {
					out = append(out, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && isDeprecated(d.Doc, s.Doc) {
							out = append(out, s.Name.Name)
						}
						members(s, &out)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && isDeprecated(d.Doc, s.Doc) {
								out = append(out, n.Name)
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// members adds the deprecated fields of a struct type and methods of an interface type.
func members(s *ast.TypeSpec, out *[]string) {
	var fields *ast.FieldList
	switch t := s.Type.(type) {
	case *ast.StructType:
		fields = t.Fields
	case *ast.InterfaceType:
		fields = t.Methods
	default:
		return
	}
	for _, f := range fields.List {
		if !isDeprecated(f.Doc) {
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				*out = append(*out, s.Name.Name+"."+n.Name)
			}
		}
	}
}

// counts are the exported identifiers of one package.
type counts struct {
	top     int // top-level types, functions, constants and variables
	methods int // exported methods of exported types
	fields  int // exported fields and interface methods of exported types
	// kept counts the top-level identifiers and methods that stay once the deprecated ones
	// are removed: neither the identifier nor, for a method, its receiver type is deprecated.
	kept int
}

// countExported counts the exported identifiers of the package in dir.
func countExported(dir string) (counts, error) {
	files, err := parseDir(dir)
	if err != nil {
		return counts{}, err
	}
	deps, err := deprecated(dir)
	if err != nil {
		return counts{}, err
	}
	dep := make(map[string]bool, len(deps))
	for _, d := range deps {
		dep[d] = true
	}
	var c counts
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					c.top++
					if !dep[d.Name.Name] {
						c.kept++
					}
				} else if r := recvName(d); ast.IsExported(r) {
					c.methods++
					if !dep[r] && !dep[r+"."+d.Name.Name] {
						c.kept++
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						c.top++
						if !dep[s.Name.Name] {
							c.kept++
						}
						var fl *ast.FieldList
						switch t := s.Type.(type) {
						case *ast.StructType:
							fl = t.Fields
						case *ast.InterfaceType:
							fl = t.Methods
						}
						if fl != nil {
							for _, f := range fl.List {
								for _, n := range f.Names {
									if n.IsExported() {
										c.fields++
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								c.top++
								if !dep[n.Name] {
									c.kept++
								}
							}
						}
					}
				}
			}
		}
	}
	return c, nil
}

// printCounts prints, per package and in total, the exported top-level identifiers, methods
// and fields, how many of those are deprecated (top-level, and members), and how many
// top-level identifiers and methods stay once the deprecated ones are removed ("kept": issue
// #34's target counts top-level identifiers plus methods).
func printCounts(out io.Writer, pkgs []pkg) error {
	var total counts
	var totalDep [2]int
	fmt.Fprintf(out, "%-40s %5s %8s %7s %15s %18s %5s\n", "package", "top", "methods", "fields", "deprecated top", "deprecated members", "kept")
	for _, p := range pkgs {
		c, err := countExported(p.dir)
		if err != nil {
			return err
		}
		deps, err := deprecated(p.dir)
		if err != nil {
			return err
		}
		var dep [2]int
		for _, d := range deps {
			if strings.Contains(d, ".") {
				dep[1]++
			} else {
				dep[0]++
			}
		}
		total.top += c.top
		total.methods += c.methods
		total.fields += c.fields
		total.kept += c.kept
		totalDep[0] += dep[0]
		totalDep[1] += dep[1]
		fmt.Fprintf(out, "%-40s %5d %8d %7d %15d %18d %5d\n", p.path, c.top, c.methods, c.fields, dep[0], dep[1], c.kept)
	}
	fmt.Fprintf(out, "%-40s %5d %8d %7d %15d %18d %5d\n", "total", total.top, total.methods, total.fields, totalDep[0], totalDep[1], total.kept)
	return nil
}
