// Command budget measures the size of the product and checks it against the
// budgets the house keeps (scripts/hygiene.sh runs it with --check): lines of
// product Go, the reading path of one event, the largest file, long
// functions, the root package's exported names, layers, docs and comment
// sentences. Run it from the repository's root:
//
//	go run ./lab/cmd/budget          # the table
//	go run ./lab/cmd/budget --check  # the table, exit 1 when a budget is exceeded
package main

import (
	"bufio"
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
	"sort"
	"strings"
)

// The budgets. Raising one is a commit that says why.
const (
	maxProductLines  = 26000 // non-test Go of the root module, without the lab and idempotency
	maxReadingPath   = 3000  // lines of the files docs/design.md lists as one event's path
	maxFileLines     = 700   // any product file
	maxLongFuncs     = 8     // product functions over longFunc lines
	longFunc         = 80
	maxRootExports   = 42 // exported names of package hookledger (methods included)
	maxDocPages      = 10
	maxDocLines      = 3000
	readingPathBegin = "<!-- reading path -->"
	readingPathEnd   = "<!-- /reading path -->"
)

func main() {
	check := flag.Bool("check", false, "exit 1 when a budget is exceeded")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: go run ./lab/cmd/budget [--check]   (from the repository's root)")
		flag.PrintDefaults()
	}
	flag.Parse()
	m, err := measure()
	if err != nil {
		fmt.Fprintln(os.Stderr, "budget:", err)
		os.Exit(2)
	}
	over := m.print(os.Stdout)
	if *check && over > 0 {
		fmt.Fprintf(os.Stderr, "budget: %d over budget; shrink it, or raise the budget in lab/cmd/budget in a commit that says why\n", over)
		os.Exit(1)
	}
}

type measures struct {
	productLines, internalLines int
	pathFiles                   []string
	pathLines                   int
	bigFile                     string
	bigLines                    int
	longFuncs                   []string
	rootExports                 []string
	upImports                   []string // layer violations
	pathErr                     error
	docPages, docLines          int
	sentences, words, longSent  int
}

// product lists the root module's tracked non-test Go files, without the
// lab and the idempotency module.
func product() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w (run from the repository's root)", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "lab/") || strings.HasPrefix(f, "idempotency") ||
			strings.Contains(f, "{{") {
			continue
		}
		files = append(files, f)
	}
	return files, nil
}

func measure() (*measures, error) {
	files, err := product()
	if err != nil {
		return nil, err
	}
	m := &measures{}
	fset := token.NewFileSet()
	for _, f := range files {
		n, err := lines(f)
		if err != nil {
			return nil, err
		}
		m.productLines += n
		if strings.HasPrefix(f, "internal/") {
			m.internalLines += n
		}
		if n > m.bigLines {
			m.bigFile, m.bigLines = f, n
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if l := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; l > longFunc {
					m.longFuncs = append(m.longFuncs, fmt.Sprintf("%s %s (%d)", f, fd.Name.Name, l))
				}
			}
		}
		if !strings.Contains(f, "/") && af.Name.Name == "hookledger" {
			m.rootExports = append(m.rootExports, exported(af)...)
		}
		for _, cg := range af.Comments {
			m.countSentences(cg.Text())
		}
	}
	sort.Strings(m.rootExports)
	if m.pathFiles, err = readingPath("docs/design.md"); err != nil {
		m.pathErr = err
	}
	for _, f := range m.pathFiles {
		n, err := lines(f)
		if err != nil {
			return nil, fmt.Errorf("docs/design.md's reading path: %w", err)
		}
		m.pathLines += n
	}
	docs, _ := filepath.Glob("docs/*.md")
	m.docPages = len(docs)
	for _, d := range docs {
		n, err := lines(d)
		if err != nil {
			return nil, err
		}
		m.docLines += n
	}
	m.upImports, err = layers()
	return m, err
}

// exported lists a root file's exported names: top-level identifiers and
// methods.
func exported(af *ast.File) []string {
	var out []string
	for _, d := range af.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv != nil {
				t := d.Recv.List[0].Type
				if s, ok := t.(*ast.StarExpr); ok {
					t = s.X
				}
				if id, ok := t.(*ast.Ident); ok && id.IsExported() {
					out = append(out, id.Name+"."+d.Name.Name)
				}
				continue
			}
			out = append(out, d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						out = append(out, s.Name.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

var sentenceEnd = regexp.MustCompile(`[.!?](\s|$)`)

// countSentences counts the prose sentences of a comment (code examples,
// indented, are left out) and their words.
func (m *measures) countSentences(text string) {
	var prose []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "+build") || strings.HasPrefix(l, "go:") {
			continue
		}
		prose = append(prose, l)
	}
	for _, s := range sentenceEnd.Split(strings.Join(prose, " "), -1) {
		n := len(strings.Fields(s))
		if n < 3 {
			continue // a label, not a sentence
		}
		m.sentences++
		m.words += n
		if n > 40 {
			m.longSent++
		}
	}
}

// readingPath returns the files design.md lists between its reading path
// markers, one backquoted path a line.
func readingPath(doc string) ([]string, error) {
	f, err := os.Open(doc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var files []string
	in := false
	path := regexp.MustCompile("`([^`]+\\.go)`")
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.Contains(l, readingPathBegin):
			in = true
		case strings.Contains(l, readingPathEnd):
			in = false
		case in:
			if mm := path.FindStringSubmatch(l); mm != nil {
				files = append(files, mm[1])
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s lists no reading path between %q and %q", doc, readingPathBegin, readingPathEnd)
	}
	return files, sc.Err()
}

// layers lists imports that point up: a package under internal/ importing
// the root package, ledger and webhook importing internal/, or a leaf
// (dynamo, jsoncheck) importing anything of the module.
func layers() ([]string, error) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	const mod = "github.com/hookledger/hookledger"
	var bad []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fs := strings.Fields(l)
		if len(fs) == 0 {
			continue
		}
		p := strings.TrimPrefix(strings.TrimPrefix(fs[0], mod), "/")
		for _, imp := range fs[1:] {
			switch {
			case strings.HasPrefix(p, "internal/") && imp == mod:
				bad = append(bad, p+" imports the root package")
			case (p == "ledger" || p == "webhook" || strings.HasPrefix(p, "ledger/") || strings.HasPrefix(p, "webhook/")) &&
				strings.HasPrefix(imp, mod+"/internal/"):
				bad = append(bad, p+" imports "+strings.TrimPrefix(imp, mod+"/"))
			case (p == "dynamo" || p == "jsoncheck") && strings.HasPrefix(imp, mod+"/"):
				bad = append(bad, p+" imports "+strings.TrimPrefix(imp, mod+"/")+" (a leaf imports nothing of the module)")
			}
		}
	}
	return bad, nil
}

func lines(f string) (int, error) {
	b, err := os.ReadFile(f)
	if err != nil {
		return 0, err
	}
	return strings.Count(string(b), "\n"), nil
}

func (m *measures) print(w io.Writer) (over int) {
	row := func(what string, got, limit int) {
		mark := ""
		if limit > 0 && got > limit {
			mark, over = "  OVER", over+1
		}
		if limit > 0 {
			fmt.Fprintf(w, "%-48s %7d  (budget %d)%s\n", what, got, limit, mark)
		} else {
			fmt.Fprintf(w, "%-48s %7d\n", what, got)
		}
	}
	row("product non-test Go lines", m.productLines, maxProductLines)
	row("  of which internal/", m.internalLines, 0)
	row(fmt.Sprintf("reading path lines (%d files)", len(m.pathFiles)), m.pathLines, maxReadingPath)
	if m.pathErr != nil {
		fmt.Fprintln(w, "    "+m.pathErr.Error())
		over++
	}
	row("largest product file: "+m.bigFile, m.bigLines, maxFileLines)
	row(fmt.Sprintf("product functions over %d lines", longFunc), len(m.longFuncs), maxLongFuncs)
	for _, f := range m.longFuncs {
		fmt.Fprintln(w, "    "+f)
	}
	row("exported names of package hookledger", len(m.rootExports), maxRootExports)
	row("docs/ pages", m.docPages, maxDocPages)
	row("docs/ lines", m.docLines, maxDocLines)
	row("imports that point up", len(m.upImports), -1)
	for _, u := range m.upImports {
		fmt.Fprintln(w, "    "+u)
		over++
	}
	if m.sentences > 0 {
		fmt.Fprintf(w, "%-48s %7.1f  (%d sentences, %.0f%% over 40 words)\n", "words per comment sentence (product)",
			float64(m.words)/float64(m.sentences), m.sentences, 100*float64(m.longSent)/float64(m.sentences))
	}
	return over
}
