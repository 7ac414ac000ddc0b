package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// maxMethods bounds the methods a hand-written type of the store declares: past it, a
// type holds more than one concern and a caller of one must take them all.
const maxMethods = 30

// generated is the header Go's convention puts on generated files, which are left out.
var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// TestEachConcernIsSmall counts the methods each type of the package declares in its
// hand-written files.
func TestEachConcernIsSmall(t *testing.T) {
	counts := map[string]int{}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if generated.Match(src) {
			continue
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				counts[receiverType(fn.Recv.List[0].Type)]++
			}
		}
	}
	types := make([]string, 0, len(counts))
	for typ := range counts {
		types = append(types, typ)
	}
	sort.Slice(types, func(i, j int) bool { return counts[types[i]] > counts[types[j]] })
	for _, typ := range types {
		t.Logf("%-14s %2d methods", typ, counts[typ])
		if counts[typ] > maxMethods {
			t.Errorf("%s declares %d methods, more than %d: split it by concern", typ, counts[typ], maxMethods)
		}
	}
	for _, concern := range []string{"Records", "Jobs", "Ledger", "Runs", "AuditLog", "Housekeeping"} {
		if counts[concern] == 0 {
			t.Errorf("concern %s declares no method", concern)
		}
	}
}

// receiverType is the name of the type of a method's receiver, T or *T.
func receiverType(e ast.Expr) string {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}
