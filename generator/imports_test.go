package generator

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNoParserImport keeps the pipeline one way: cmd/noamgen runs the
// parser, which builds the model; the generator reads only the model (its
// positioned errors and generated-file header included) and never the
// parser.
func TestNoParserImport(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path == "github.com/noamgen/noamgen/parser" {
				t.Errorf("%s imports %s: the generator reads the model only", name, path)
			}
		}
	}
}
