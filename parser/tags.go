package parser

import (
	"fmt"
	"go/ast"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/fatih/structtag"
)

// tagSpec is one noam tag, parsed once. Every part of the parser reads tags
// through it; which options are allowed where (the aggregate marker, an
// aggregate's field, a field of a plain struct) is checked by the caller.
type tagSpec struct {
	text string   // the tag as written, `noam:"..."`, for messages
	opts []string // the option names in order (without values)

	skip      bool // "-": not persisted
	aggregate bool // the aggregate marker

	// Marker options.
	collection string // collection=NAME ("" when not given)
	strategy   string // strategy=eao|etf ("" when not given)
	partitions []string

	// Field options.
	id, version, counter bool
	uuid                 string // uuid or uuid=v4|v7: "v7" for uuid alone
	created, updated     bool   // timestamps kept by every write
	expires              bool   // the expiry time
	add                  bool   // a number writes add to (AddF)
	lookup               bool   // lookup or lookup=NAME
	lookupName           string // NAME of lookup=NAME, "" for the default name
	unique               bool
	zeros                bool // index zero values of a unique lookup
	table                bool // keep the lookup in an index table on every store
	refs                 []string
}

// markerOptions are the options of the aggregate marker, fieldOptions those
// of a field; knownOptions is both, for suggestions.
var (
	markerOptions = []string{"aggregate", "collection", "strategy", "partition"}
	fieldOptions  = []string{"-", "id", "version", "counter", "uuid", "created", "updated", "expires", "add", "lookup", "unique", "zeros", "table", "ref"}
	knownOptions  = append(append([]string{}, markerOptions...), fieldOptions...)
	strategies    = []string{"etf", "eao"}
)

// optionValue says whether an option takes a value: "no", "yes" (required)
// or "optional".
var optionValue = map[string]string{
	"-": "no", "aggregate": "no", "id": "no", "version": "no", "counter": "no", "created": "no", "updated": "no", "expires": "no", "add": "no", "unique": "no", "zeros": "no", "table": "no",
	"collection": "yes", "strategy": "yes", "partition": "yes", "ref": "yes",
	"lookup": "optional", "uuid": "optional",
}

// counterNeedsID starts the message for a counter option without id.
const counterNeedsID = "option counter needs id"

// parseTag parses the value of a noam tag (what is between the quotes of
// noam:"..."). It returns the spec and the problems found, as messages
// that name the tag. It never panics, whatever value is given.
func parseTag(value string) (tagSpec, []string) {
	t := tagSpec{text: "`noam:" + fmt.Sprintf("%q", value) + "`"}
	var errs []string
	errorf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if strings.IndexFunc(value, unicode.IsSpace) >= 0 {
		errorf("space in noam tag %s; options are separated by commas alone: `noam:%q`", t.text, strings.Join(strings.FieldsFunc(value, unicode.IsSpace), ""))
	}
	if strings.TrimSpace(value) == "" {
		errorf("empty noam tag %s; remove it, or write `noam:\"-\"` to leave the field out", t.text)
		return t, errs
	}
	seen := map[string]bool{}
	emptyReported := false
	for _, item := range strings.Split(value, ",") {
		name, v, hasValue := strings.Cut(item, "=")
		name, v = strings.TrimSpace(name), strings.TrimSpace(v)
		if name == "" {
			if hasValue {
				errorf("option without a name %q in noam tag %s", item, t.text)
			} else if !emptyReported {
				errorf("empty option in noam tag %s (two commas, or a comma at an end)", t.text)
				emptyReported = true
			}
			continue
		}
		kind, known := optionValue[name]
		if !known {
			msg := fmt.Sprintf("unknown option %q in noam tag %s", name, t.text)
			if s := suggest(name, knownOptions); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			errs = append(errs, msg)
			continue
		}
		switch {
		case kind == "no" && hasValue:
			// Reported, and taken as given without the value.
			errorf("option %s takes no value in noam tag %s", name, t.text)
		case kind == "yes" && v == "":
			switch name {
			case "collection":
				errorf("option collection needs a name in noam tag %s", t.text)
			case "partition":
				errorf("option partition needs a field name in noam tag %s", t.text)
			case "ref":
				errorf("option ref needs an aggregate name in noam tag %s", t.text)
			default:
				errorf("option %s needs a value in noam tag %s", name, t.text)
			}
			continue
		case name == "lookup" && hasValue && v == "":
			errorf("option lookup= needs a name in noam tag %s; write `noam:\"lookup\"` for the default name (the field's path)", t.text)
			continue
		}
		// partition and ref may repeat with different values.
		if seen[name] && name != "partition" && name != "ref" {
			errorf("option %s is given twice in noam tag %s", name, t.text)
			continue
		}
		seen[name] = true
		t.opts = append(t.opts, name)
		switch name {
		case "-":
			t.skip = true
		case "aggregate":
			t.aggregate = true
		case "collection":
			t.collection = v
		case "strategy":
			if !contains(strategies, v) {
				msg := fmt.Sprintf("unknown strategy %q in noam tag %s (want eao or etf)", v, t.text)
				if s := suggest(v, strategies); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				}
				errs = append(errs, msg)
				continue
			}
			t.strategy = v
		case "partition":
			t.partitions = append(t.partitions, v)
		case "id":
			t.id = true
		case "version":
			t.version = true
		case "counter":
			t.counter = true
		case "uuid":
			switch v {
			case "", "v7":
				t.uuid = "v7"
			case "v4":
				t.uuid = "v4"
			default:
				errorf("unknown UUID version %q in noam tag %s (want v7, the default, or v4)", v, t.text)
				continue
			}
		case "created":
			t.created = true
		case "updated":
			t.updated = true
		case "expires":
			t.expires = true
		case "add":
			t.add = true
		case "lookup":
			t.lookup, t.lookupName = true, v
		case "unique":
			t.unique = true
		case "zeros":
			t.zeros = true
		case "table":
			t.table = true
		case "ref":
			if contains(t.refs, v) {
				errorf("option ref=%s is given twice in noam tag %s", v, t.text)
				continue
			}
			t.refs = append(t.refs, v)
		}
	}
	if t.skip && len(t.opts) > 1 {
		errorf("noam tag %s: \"-\" leaves the field out, so the other options mean nothing; write `noam:\"-\"` alone or drop the \"-\"", t.text)
	}
	if t.unique && !t.lookup {
		errorf("option unique needs lookup in noam tag %s; write `noam:\"lookup,unique\"`", t.text)
	}
	if t.table && !t.lookup {
		errorf("option table needs lookup in noam tag %s; write `noam:\"lookup,table\"`", t.text)
	}
	if t.zeros && !t.unique {
		errorf("option zeros needs unique in noam tag %s: only unique lookups leave zero values out; write `noam:\"lookup,unique,zeros\"`", t.text)
	}
	if t.uuid != "" && !t.id {
		errorf("option uuid needs id in noam tag %s: new UUIDs are block keys; tag the id field `noam:\"id,uuid\"`", t.text)
	}
	if t.uuid != "" && t.counter {
		errorf("options uuid and counter in noam tag %s: a block key comes from a counter or is a UUID, not both", t.text)
	}
	if t.counter && !t.id {
		errorf(counterNeedsID+" in noam tag %s: the counter allocates the block key; tag the id field `noam:\"id,counter\"`", t.text)
	}
	return t, errs
}

// rawTag returns the text of a field's tag without its quotes, or "".
func rawTag(f *ast.Field) string {
	if f.Tag == nil {
		return ""
	}
	if s, err := strconv.Unquote(f.Tag.Value); err == nil {
		return s
	}
	return strings.Trim(f.Tag.Value, "`")
}

// lookupTag finds the key's value in a struct tag and whether the tag holds
// it; err is set when structtag cannot parse the whole tag.
func lookupTag(raw, key string) (value string, ok bool, err error) {
	if _, err := structtag.Parse(raw); err != nil {
		return "", false, err
	}
	// The value exactly as written: structtag drops empty options.
	value, ok = reflect.StructTag(raw).Lookup(key)
	return value, ok, nil
}

// bsonName is the name of a bson tag ("" when none is given).
func bsonName(raw string) string {
	v, ok, err := lookupTag(raw, "bson")
	if err != nil || !ok {
		return ""
	}
	name, _, _ := strings.Cut(v, ",")
	return name
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns the candidate closest to s when it is close enough to be
// a likely misspelling (edit distance at most one per three letters of the
// candidate, at least 1 and at most 2; case differences are free), else "".
func suggest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if c == s {
			continue
		}
		d := editDistance(strings.ToLower(s), strings.ToLower(c))
		if n := len([]rune(c)); d > min(2, max(1, n/3)) || d >= n {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein (optimal string alignment)
// distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		// Misspellings of short names only; do not spend quadratic time.
		if a == b {
			return 0
		}
		return 1 << 20
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
