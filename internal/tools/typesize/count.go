package main

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Type is one named type of a package and the number of methods declared on it.
type Type struct {
	Dir     string // the package's directory, relative to the module's root
	Package string // its name: a directory's external test package (name_test) is a package of its own
	Name    string
	Methods int
}

func (t Type) String() string {
	return fmt.Sprintf("%s.%s (%s)", t.Package, t.Name, t.Dir)
}

// Count counts the methods declared in the hand-written Go files under root on each type
// declared in a hand-written file, largest first. Test files count: a method a test
// declares on a type is one more to know about it. Directories that Go ignores (testdata,
// names starting with "." or "_") and nested modules are skipped.
func Count(root string) ([]Type, error) {
	type key struct{ dir, pkg, name string }
	methods := map[key]int{}
	declared := map[key]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a module of its own
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok {
						declared[key{dir, pkg, ts.Name.Name}] = true
					}
				}
			case *ast.FuncDecl:
				if decl.Recv != nil && len(decl.Recv.List) == 1 {
					if name := receiverType(decl.Recv.List[0].Type); name != "" {
						methods[key{dir, pkg, name}]++
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var types []Type
	for k, n := range methods {
		if declared[k] {
			types = append(types, Type{Dir: k.dir, Package: k.pkg, Name: k.name, Methods: n})
		}
	}
	slices.SortFunc(types, func(a, b Type) int {
		return cmp.Or(cmp.Compare(b.Methods, a.Methods), cmp.Compare(a.Dir, b.Dir), cmp.Compare(a.Package, b.Package), cmp.Compare(a.Name, b.Name))
	})
	return types, nil
}

// receiverType is the name of the type a receiver belongs to: T for T, *T, T[P] and *T[P].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
