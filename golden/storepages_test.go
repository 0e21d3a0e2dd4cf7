package golden_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/noamgen/noamgen/explain"
	"github.com/noamgen/noamgen/parser"
	"github.com/noamgen/noamgen/templates"
)

// storePageMarker opens the generated part of a store's page in
// docs/stores: `noamgen explain` of one aggregate of an example package on
// that store, rendered from the store's declaration
// (runtime/<store>store/layout), the same text the command prints. The part
// ends with storePageEnd.
var storePageMarker = regexp.MustCompile(`<!-- explain: package=(\S+) aggregate=(\S+) store=(\S+) -->\n`)

const storePageEnd = "<!-- end of explain: regenerate with go test ./golden/ -update -->\n"

// TestStorePagesFresh checks that the generated parts of the store pages
// (docs/stores/*.md) are what `noamgen explain` writes today, so that the
// pages cannot drift from the declarations the adapters' requests are
// checked against (storetest's DeclaredRequests); -update rewrites them.
// Every registered store must have a page with such a part.
func TestStorePagesFresh(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(moduleRoot, "docs", "stores", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var covered []string
	for _, page := range pages {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rest := src
		for {
			m := storePageMarker.FindSubmatchIndex(rest)
			if m == nil {
				out.Write(rest)
				break
			}
			pkg, agg, store := string(rest[m[2]:m[3]]), string(rest[m[4]:m[5]]), string(rest[m[6]:m[7]])
			end := bytes.Index(rest[m[1]:], []byte(storePageEnd))
			if end < 0 {
				t.Fatalf("%s: the part %q has no end line %q", page, rest[m[0]:m[1]], storePageEnd)
			}
			md, err := explainOne(filepath.Join(moduleRoot, filepath.FromSlash(pkg)), agg, store)
			if err != nil {
				t.Fatalf("%s: %v", page, err)
			}
			out.Write(rest[:m[1]])
			out.Write(md)
			out.WriteString(storePageEnd)
			rest = rest[m[1]+end+len(storePageEnd):]
			covered = append(covered, store)
		}
		if *update {
			writeIfChanged(t, page, out.Bytes())
			continue
		}
		if !bytes.Equal(src, out.Bytes()) {
			t.Errorf("%s is out of date; run go test ./golden/ -update:\n%s", page, firstDiff(src, out.Bytes()))
		}
	}
	for _, st := range templates.StoreNames() {
		if !slices.Contains(covered, st) {
			t.Errorf("no page in docs/stores has the explain part of store %s", st)
		}
	}
}

// explainOne renders `noamgen explain -store store` of aggregate agg of
// the package in dir, its headings two levels down (a page's section).
func explainOne(dir, agg, store string) ([]byte, error) {
	schema, err := parser.Load(parser.Config{Dir: dir, Pattern: ".", BaseDir: dir})
	if err != nil {
		return nil, err
	}
	r, err := explain.Build(schema, explain.Config{Stores: []string{store}})
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(r.Aggregates, func(a *explain.Aggregate) bool { return a.Name == agg })
	if i < 0 {
		return nil, fmt.Errorf("package %s has no aggregate %s", dir, agg)
	}
	r.Aggregates = r.Aggregates[i : i+1]
	var b bytes.Buffer
	if err := explain.Markdown(&b, r); err != nil {
		return nil, err
	}
	return regexp.MustCompile(`(?m)^#`).ReplaceAll(b.Bytes(), []byte("###")), nil
}
