package stores_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noamgen/noamgen/templates"
	_ "github.com/noamgen/noamgen/templates/stores"
)

// TestEveryStoreRegistered checks that every store folder under templates/
// (one whose Go files call templates.Register) is imported by this package,
// so that a new store cannot be forgotten.
func TestEveryStoreRegistered(t *testing.T) {
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, n := range templates.StoreNames() {
		registered[n] = true
	}
	found := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "stores" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", d.Name(), "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(src), "Register(t.Store{") || strings.Contains(string(src), "templates.Register(") {
				found++
				if !registered[d.Name()] {
					t.Errorf("templates/%s registers a store but templates/stores does not import it (registered: %v)", d.Name(), templates.StoreNames())
				}
			}
		}
	}
	if found < 2 {
		t.Fatalf("found %d store folders, want at least bolt and mongo", found)
	}
}
