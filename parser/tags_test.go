package parser

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"go/types"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

func TestParseTag(t *testing.T) {
	for _, tc := range []struct {
		value string
		check func(tagSpec) bool
		errs  []string // substrings, one per error, in order
	}{
		{value: "aggregate,collection=c,strategy=eao,partition=a,partition=b", check: func(s tagSpec) bool {
			return s.aggregate && s.collection == "c" && s.strategy == "eao" && strings.Join(s.partitions, " ") == "a b"
		}},
		{value: "lookup=x,unique,zeros", check: func(s tagSpec) bool { return s.lookup && s.lookupName == "x" && s.unique && s.zeros }},
		{value: "id,counter", check: func(s tagSpec) bool { return s.id && s.counter }},
		{value: "ref=A,ref=B", check: func(s tagSpec) bool { return strings.Join(s.refs, " ") == "A B" }},
		{value: "-", check: func(s tagSpec) bool { return s.skip }},
		{value: "partiton=x", errs: []string{`unknown option "partiton" in noam tag ` + "`noam:\"partiton=x\"`" + `; did you mean "partition"?`}},
		{value: "strategy=eoa", errs: []string{`unknown strategy "eoa"`}},
		{value: "-,lookup", errs: []string{`"-" leaves the field out`}},
		{value: "lookup=", errs: []string{"option lookup= needs a name"}},
		{value: "unique", errs: []string{"option unique needs lookup"}},
		{value: "lookup,zeros", errs: []string{"option zeros needs unique"}},
		{value: "lookup=ab,unique,table", check: func(s tagSpec) bool { return s.lookup && s.unique && s.table }},
		{value: "table", errs: []string{"option table needs lookup"}},
		{value: "counter", errs: []string{"option counter needs id"}},
		{value: "lookup, unique", errs: []string{"space in noam tag"}},
		{value: "id,id", errs: []string{"option id is given twice"}},
		{value: "", errs: []string{"empty noam tag"}},
		{value: "id,,", errs: []string{"empty option"}},
	} {
		spec, errs := parseTag(tc.value)
		if len(errs) != len(tc.errs) {
			t.Errorf("parseTag(%q): errors %q, want %d", tc.value, errs, len(tc.errs))
			continue
		}
		for i, e := range errs {
			if !strings.Contains(e, tc.errs[i]) {
				t.Errorf("parseTag(%q): error %q, want it to contain %q", tc.value, e, tc.errs[i])
			}
		}
		if tc.check != nil && !tc.check(spec) {
			t.Errorf("parseTag(%q) = %+v", tc.value, spec)
		}
	}
}

func TestSuggest(t *testing.T) {
	for _, tc := range []struct{ s, want string }{
		{"partiton", "partition"}, {"colection", "collection"}, {"idd", "id"}, {"lokup", "lookup"},
		{"Lookup", "lookup"}, {"sharded", ""}, {"x", ""}, {"indexed", ""},
	} {
		if got := suggest(tc.s, knownOptions); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// FuzzParseTag: any struct tag gives a spec or errors, never a panic, and a
// tag without errors means what it says.
func FuzzParseTag(f *testing.F) {
	for _, s := range []string{
		`noam:"aggregate,collection=games,strategy=eao,partition=rounds"`,
		`noam:"lookup=cityStars,unique,zeros" bson:"city"`,
		`noam:"id,counter"`, `noam:"-"`, `noam:"ref=Player,lookup=game"`,
		`noam:"lookup, unique"`, `noam:"=,="`, `noam:""`, `noam:name`, `noam:"\x00"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, ok, err := lookupTag(raw, "noam")
		if err != nil || !ok {
			return
		}
		spec, errs := parseTag(v)
		if len(errs) > 0 {
			return
		}
		if spec.skip && len(spec.opts) != 1 {
			t.Fatalf("%q: - with other options accepted", v)
		}
		if spec.unique && !spec.lookup || spec.table && !spec.lookup || spec.zeros && !spec.unique || spec.counter && !spec.id {
			t.Fatalf("%q: option without the one it needs accepted: %+v", v, spec)
		}
		if spec.lookup && strings.Contains(v, "lookup=") && spec.lookupName == "" {
			t.Fatalf("%q: empty lookup name accepted", v)
		}
	})
}

// FuzzSchemaTags puts arbitrary tags on the fields of a small package,
// type-checks it in memory and builds its schema: every input gives a
// schema or positioned errors, never a panic.
func FuzzSchemaTags(f *testing.F) {
	f.Add(`noam:"aggregate"`, `noam:"id"`, `noam:"lookup"`, `noam:"ref=B"`, `noam:"lookup=x,unique"`)
	f.Add(`noam:"aggregate,partition=n,strategy=eao"`, `noam:"id,counter"`, `noam:"lookup=x"`, `bson:"_id"`, `noam:"lookup=x"`)
	f.Add(`noam:"aggregate,collection=B"`, `noam:"version"`, `noam:"-,lookup"`, `noam:"aggregate"`, `bson:"-" noam:"ref=A"`)
	f.Add(`noam:"aggregate,partition=N"`, `noam:"lookup, unique"`, `noam:"unique"`, `noam:"lookup=,zeros"`, `noam:"counter"`)
	f.Fuzz(func(t *testing.T, t0, t1, t2, t3, t4 string) {
		lit := func(s string) string {
			if strings.ContainsAny(s, "`\r") || !strconv.CanBackquote(s) {
				return strconv.Quote(s)
			}
			return "`" + s + "`"
		}
		src := "package p\n\ntype A struct {\n\t_ struct{} " + lit(t0) + "\n\tID string " + lit(t1) +
			"\n\tN []int64 " + lit(t2) + "\n\tS Sub " + lit(t3) + "\n\tV int64\n}\n\ntype Sub struct {\n\tX string " + lit(t4) +
			"\n\tY []Sub\n\tM map[string]*Sub\n\tH struct {\n\t\tZ int " + lit(t2) + "\n\t}\n}\n\ntype B struct {\n\t_ struct{} `noam:\"aggregate\"`\n\tID string `noam:\"id\"`\n}\n"
		pkg, ok := checkSource(src)
		if !ok {
			return
		}
		p := &loader{pkg: pkg}
		s := p.schema()
		for _, e := range p.errs {
			if !e.Pos.IsValid() {
				t.Fatalf("error without a position: %v\n%s", e, src)
			}
		}
		if len(p.errs) == 0 {
			for _, a := range s.Aggregates {
				if a.ID == nil {
					t.Fatalf("aggregate %s without id accepted\n%s", a.Name, src)
				}
			}
		}
	})
}

// checkSource parses and type-checks one file as package p, as go/packages
// would, without go list.
func checkSource(src string) (*packages.Package, bool) {
	fset := token.NewFileSet()
	file, err := goparser.ParseFile(fset, "p.go", src, goparser.ParseComments)
	if err != nil {
		return nil, false
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
	tpkg, err := (&types.Config{}).Check("example.com/p", fset, []*ast.File{file}, info)
	if err != nil {
		return nil, false
	}
	return &packages.Package{PkgPath: "example.com/p", Name: "p", Fset: fset, Syntax: []*ast.File{file}, Types: tpkg, TypesInfo: info, GoFiles: []string{"/p.go"}}, true
}

func TestIndexZero(t *testing.T) {
	pkg, ok := checkSource("package p\n\ntype M struct {\n\t_ struct{} `noam:\"aggregate\"`\n\tID string `noam:\"id\"`\n\tEmail string `noam:\"lookup,unique,zeros\"`\n\tNick string `noam:\"lookup,unique\"`\n\tA string `noam:\"lookup=ab,unique,zeros\"`\n\tB int `noam:\"lookup=ab,unique,zeros\"`\n}\n")
	if !ok {
		t.Fatal("does not compile")
	}
	p := &loader{pkg: pkg}
	s := p.schema()
	if len(p.errs) > 0 {
		t.Fatal(p.errs)
	}
	got := map[string]bool{}
	for _, l := range s.Aggregates[0].Lookups {
		got[l.Name] = l.IndexZero && l.Unique
	}
	if want := map[string]bool{"email": true, "nick": false, "ab": true}; len(got) != 3 || got["email"] != want["email"] || got["nick"] != want["nick"] || got["ab"] != want["ab"] {
		t.Fatalf("IndexZero by lookup: %v", got)
	}
}
