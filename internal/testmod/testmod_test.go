package testmod_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/internal/testmod"
)

// TestTestsWriteOnlyUnderTempDir reads every test file of the repository
// (both modules) and fails on a temporary file or directory made inside the
// tree: os.MkdirTemp and os.CreateTemp must be given "" (the system's
// temporary directory) or a t.TempDir(), and os.Create, os.WriteFile,
// os.Mkdir and os.MkdirAll no bare string literal (a path relative to the
// package's folder). A test that needs a package inside a module uses
// testmod.New.
func TestTestsWriteOnlyUnderTempDir(t *testing.T) {
	root := testmod.Root(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (n == "testdata" || n == "node_modules" || strings.HasPrefix(n, "_") || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "os" {
				return true
			}
			arg := call.Args[0]
			switch sel.Sel.Name {
			case "MkdirTemp", "CreateTemp":
				if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, _ := strconv.Unquote(lit.Value); s == "" {
						return true
					}
				}
				if callsTempDir(arg) {
					return true
				}
				t.Errorf("%s: os.%s in a directory that may be inside the repository; give it \"\" or t.TempDir(), or use testmod.New", fset.Position(call.Pos()), sel.Sel.Name)
			case "Create", "WriteFile", "Mkdir", "MkdirAll":
				if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					t.Errorf("%s: os.%s(%s) writes into the package's folder; write under t.TempDir()", fset.Position(call.Pos()), sel.Sel.Name, lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatalf("no test file found under %s", root)
	}
}

// callsTempDir reports whether e calls a method or function named TempDir
// (t.TempDir(), b.TempDir()).
func callsTempDir(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if s, ok := c.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "TempDir" {
				found = true
			}
		}
		return !found
	})
	return found
}
