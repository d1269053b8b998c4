package hookd_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLibraryDocCompiles: every exported name docs/library.md mentions is
// used by a tiny program in a module of its own, which must compile. The
// docs cannot name an internal package, a field that went away or a
// method that was renamed: this fails first.
func TestLibraryDocCompiles(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("docs", "library.md"))
	if err != nil {
		t.Fatal(err)
	}
	api := exportedAPI(t)
	uses := map[string]bool{}
	mention := func(typ, name string) {
		if line, ok := api.use(typ, name); ok {
			uses[line] = true
		} else {
			what := "hookd." + name
			if typ != "" {
				what = typ + "." + name
			}
			t.Errorf("docs/library.md mentions %s, which package hookd does not export", what)
		}
	}
	for _, m := range regexp.MustCompile(`\bhookd\.([A-Z]\w*)(?:\.([A-Z]\w*))?`).FindAllStringSubmatch(string(doc), -1) {
		if m[2] != "" && api.types[m[1]] {
			mention(m[1], m[2])
		} else {
			mention("", m[1])
		}
	}
	for _, m := range regexp.MustCompile(`\bhooks\.([A-Z]\w*)`).FindAllStringSubmatch(string(doc), -1) {
		mention("Hookd", m[1])
	}
	for _, m := range regexp.MustCompile("`(Config|Event|EventType)\\.([A-Z]\\w*)").FindAllStringSubmatch(string(doc), -1) {
		mention(m[1], m[2])
	}
	if len(uses) < 15 {
		t.Fatalf("docs/library.md mentions only %d names of the API; the test expects the doc to walk through it", len(uses))
	}
	lines := slices.Sorted(func(yield func(string) bool) {
		for l := range uses {
			if !yield(l) {
				return
			}
		}
	})
	root, _ := filepath.Abs(".")
	dir := t.TempDir()
	// The probe requires what hookd requires, at the same versions, as a
	// user's module does once `go get` has added hookd: so it builds from
	// the module cache alone (GOPROXY=off), whatever else the cache holds.
	own, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goMod := strings.Replace(string(own), "module github.com/hookd/hookd", "module docprobe", 1) +
		fmt.Sprintf("\nrequire github.com/hookd/hookd v0.0.0\n\nreplace github.com/hookd/hookd => %s\n", root)
	program := "package main\n\nimport \"github.com/hookd/hookd\"\n\nfunc main() {\n\t" + strings.Join(lines, "\n\t") + "\n}\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum, "main.go": []byte(program)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a program using what docs/library.md names does not compile from another module: %v\n%s\n%s", err, out, program)
	}
}

// api is package hookd's exported names, from its source.
type api struct {
	types   map[string]bool
	values  map[string]bool            // funcs, consts, vars
	members map[string]map[string]bool // type → method or field → is method
}

func exportedAPI(t *testing.T) *api {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	a := &api{types: map[string]bool{}, values: map[string]bool{}, members: map[string]map[string]bool{}}
	member := func(typ, name string, method bool) {
		if a.members[typ] == nil {
			a.members[typ] = map[string]bool{}
		}
		a.members[typ][name] = method
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					a.values[d.Name.Name] = true
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				member(recv.(*ast.Ident).Name, d.Name.Name, true)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						a.types[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									member(s.Name.Name, n.Name, false)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							a.values[n.Name] = true
						}
					}
				}
			}
		}
	}
	return a
}

// use returns a statement that uses typ.name (or the package-level name
// when typ is empty), and whether the package exports it.
func (a *api) use(typ, name string) (string, bool) {
	if !ast.IsExported(name) {
		return "", false
	}
	switch {
	case typ == "" && a.types[name]:
		return fmt.Sprintf("var _ *hookd.%s", name), true
	case typ == "":
		return fmt.Sprintf("_ = hookd.%s", name), a.values[name]
	}
	method, ok := a.members[typ][name]
	switch {
	case !ok:
		return "", false
	case method:
		return fmt.Sprintf("_ = (*hookd.%s).%s", typ, name), true
	default:
		return fmt.Sprintf("_ = (&hookd.%s{}).%s", typ, name), true
	}
}
