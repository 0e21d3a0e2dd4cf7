package mongostore

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/runtime"
)

// Types of every kind an aggregate may hold, for the byte comparisons of
// the document encoder with the driver.

type encKey struct {
	Scope string `bson:"scope"`
	N     int64  `bson:"n"`
}

type encCity string

// encMarshaled has a marshaller on its pointer only: boxed (as a bson.D
// holds it) it is encoded as a plain string, through a pointer it would
// not be.
type encMarshaled string

func (m *encMarshaled) MarshalBSONValue() (byte, []byte, error) {
	return byte(bson.TypeInt32), []byte{1, 0, 0, 0}, nil
}

type encInner struct {
	M encMarshaled `bson:"m"`
}

type encAddr struct {
	Street string    `bson:"street"`
	Zip    *string   `bson:"zip,omitempty"`
	Inner  encInner  `bson:"inner"`
	Tags   []string  `bson:"tags"`
	At     time.Time `bson:"at"`
}

type encRound struct {
	Moves []string     `bson:"moves"`
	Spell string       `bson:"spell,omitempty"`
	M     encMarshaled `bson:"m"`
}

type encT struct {
	ID      encKey
	S       string
	C       encCity
	I       int
	Big     int
	I64     int64
	I32     int32
	U       uint32
	B       bool
	F       float64
	F32     float32
	P       *string
	NilP    *string
	Tags    []string
	Raw     []byte
	M       map[string]int
	NilM    map[string]int
	Addr    encAddr
	At      time.Time
	Any     any
	Mar     encMarshaled
	Rounds  []encRound
	Empty   []encRound
	Version int64
}

func encField[V any](key string, ptr func(*encT) *V) *runtime.Field[encT] {
	return runtime.NewField(key, key, ptr)
}

var encDesc = (&runtime.Desc[encT, encKey]{
	Aggregate: "EncT",
	ID:        func(t *encT) *encKey { return &t.ID },
	Fields: []*runtime.Field[encT]{
		encField("s", func(t *encT) *string { return &t.S }),
		encField("c", func(t *encT) *encCity { return &t.C }),
		encField("i", func(t *encT) *int { return &t.I }),
		encField("big", func(t *encT) *int { return &t.Big }),
		encField("i64", func(t *encT) *int64 { return &t.I64 }),
		encField("i32", func(t *encT) *int32 { return &t.I32 }),
		encField("u", func(t *encT) *uint32 { return &t.U }),
		encField("b", func(t *encT) *bool { return &t.B }),
		encField("f", func(t *encT) *float64 { return &t.F }),
		encField("f32", func(t *encT) *float32 { return &t.F32 }),
		encField("p", func(t *encT) **string { return &t.P }),
		encField("nilP", func(t *encT) **string { return &t.NilP }),
		encField("tags", func(t *encT) *[]string { return &t.Tags }),
		encField("raw", func(t *encT) *[]byte { return &t.Raw }),
		encField("m", func(t *encT) *map[string]int { return &t.M }),
		encField("nilM", func(t *encT) *map[string]int { return &t.NilM }),
		encField("addr", func(t *encT) *encAddr { return &t.Addr }),
		encField("at", func(t *encT) *time.Time { return &t.At }),
		encField("any", func(t *encT) *any { return &t.Any }),
		encField("mar", func(t *encT) *encMarshaled { return &t.Mar }),
		runtime.NewPartition("rounds", "Rounds", func(t *encT) *[]encRound { return &t.Rounds }),
		runtime.NewPartition("empty", "Empty", func(t *encT) *[]encRound { return &t.Empty }),
	},
	Version: runtime.NewVersion("version", "Version", func(t *encT) *int64 { return &t.Version }),
}).Init()

func newEncT() *encT {
	zip := "75001"
	return &encT{
		ID: encKey{Scope: "s", N: 7}, S: "héllo", C: "paris", I: 42, Big: 1 << 40, I64: -3, I32: 5, U: 1 << 31,
		B: true, F: 1.5, F32: 2.25, P: &zip, Raw: []byte("ab"), M: map[string]int{"k": 1},
		Addr:   encAddr{Street: "rue", Zip: &zip, Inner: encInner{M: "x"}},
		At:     time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		Any:    []int{1, 2},
		Mar:    "y",
		Rounds: []encRound{{Moves: []string{"a", "b"}, M: "z"}, {Spell: "s"}},
	}
}

// driverBytes is what the driver sends for v on a collection opened by
// Collection.
func driverBytes(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := bson.NewEncoder(bson.NewDocumentWriter(&buf))
	enc.NilSliceAsEmpty()
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAppendDoc: the document built in a buffer has the bytes the driver
// makes of the bson.D the adapter used to send, for every kind of value
// (types with pointer marshallers included), and a buffer reused from the
// pool gives the same bytes again.
func TestAppendDoc(t *testing.T) {
	s := &Store[encT, encKey]{d: encDesc}
	s.initAddrs()
	for _, v := range []*encT{newEncT(), {}} {
		want := driverBytes(t, s.doc(v, 3, Stamp{}))
		for range 2 {
			w := getDocBuf()
			if err := s.appendDoc(w, v, 3); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(w.b, want) {
				t.Fatalf("appendDoc:\n got %v\nwant %v", bson.Raw(w.b), bson.Raw(want))
			}
			w.release()
		}
	}
	// A string key: the game's.
	g := &Store[encRound, string]{d: (&runtime.Desc[encRound, string]{
		Aggregate: "R", ID: func(r *encRound) *string { return &r.Spell },
		Fields: []*runtime.Field[encRound]{runtime.NewPartition("moves", "Moves", func(r *encRound) *[]string { return &r.Moves })},
	}).Init()}
	g.initAddrs()
	r := &encRound{Spell: "g1", Moves: []string{"x"}}
	w := getDocBuf()
	defer w.release()
	if err := g.appendDoc(w, r, 1); err != nil {
		t.Fatal(err)
	}
	if want := driverBytes(t, g.doc(r, 1, Stamp{})); !bytes.Equal(w.b, want) {
		t.Fatalf("appendDoc:\n got %v\nwant %v", bson.Raw(w.b), bson.Raw(want))
	}
}

// oldUpdate is the filter and update command Update sent as bson.D.
func oldUpdate(t *testing.T, s *Store[encT, encKey], id encKey, u runtime.Update[encT]) (bson.D, bson.D) {
	filter := ByID(id)
	set, unset := bson.D{}, bson.D{}
	for _, c := range u.Changes {
		if c.Field.Kind == runtime.KindField && slices.Contains(s.sliceKeys, c.Field.Key) {
			// A slice set whole drops the count of a partitioned layout.
			unset = append(unset, bson.E{Key: LenKey + "." + c.Field.Key, Value: ""})
		}
		if c.Elem {
			e := Elem{Field: c.Field.Key, Index: c.Index}
			filter = append(filter, bson.E{Key: e.Path(), Value: bson.D{{Key: "$exists", Value: true}}})
			set = append(set, bson.E{Key: e.Path(), Value: c.Value})
			continue
		}
		set = append(set, bson.E{Key: c.Field.Key, Value: c.Value})
		if c.Field.Kind == runtime.KindPartition {
			var v encT
			if err := c.Field.Assign(&v, c.Value); err != nil {
				t.Fatal(err)
			}
			set = append(set, bson.E{Key: LenKey + "." + c.Field.Key, Value: c.Field.Len(&v)})
		}
	}
	if u.IfVersion != 0 {
		filter = append(filter, bson.E{Key: "version", Value: u.IfVersion})
	}
	update := bson.D{{Key: "$set", Value: set}}
	if len(unset) > 0 {
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	return filter, append(update, bson.E{Key: "$inc", Value: s.versionInc()})
}

// TestAppendUpdate: Update's filter and command built in a buffer have the
// bytes of the bson.D it used to send.
func TestAppendUpdate(t *testing.T) {
	s := &Store[encT, encKey]{d: encDesc}
	s.initAddrs()
	v := newEncT()
	f := encDesc.Field
	for _, u := range []runtime.Update[encT]{
		{Changes: []runtime.Change[encT]{runtime.Set(f("s"), "x"), runtime.SetAt(f("rounds"), 5, v.Rounds[0])}},
		{Changes: []runtime.Change[encT]{runtime.SetAt(f("rounds"), -1, v.Rounds[1]), runtime.SetAt(f("rounds"), 123456, encRound{})}, IfVersion: 9},
		{Changes: []runtime.Change[encT]{runtime.Set(f("rounds"), v.Rounds), runtime.Set(f("empty"), []encRound(nil))}},
		{Changes: []runtime.Change[encT]{
			runtime.Set(f("c"), v.C), runtime.Set(f("i"), v.I), runtime.Set(f("big"), v.Big), runtime.Set(f("i32"), v.I32),
			runtime.Set(f("f32"), v.F32), runtime.Set(f("p"), v.P), runtime.Set(f("nilP"), v.NilP), runtime.Set(f("tags"), v.Tags),
			runtime.Set(f("m"), v.M), runtime.Set(f("addr"), v.Addr), runtime.Set(f("at"), v.At), runtime.Set(f("any"), v.Any),
			runtime.Set(f("mar"), v.Mar), runtime.Set(f("b"), false), runtime.Set(f("f"), 0.5), runtime.Set(f("i64"), int64(1)),
		}},
	} {
		filter, update := oldUpdate(t, s, v.ID, u)
		w := getDocBuf()
		nf, empty, err := s.appendUpdate(w, v.ID, u)
		if err != nil {
			t.Fatal(err)
		}
		if empty {
			t.Errorf("%v: empty", u.Keys())
		}
		if want := driverBytes(t, filter); !bytes.Equal(w.b[:nf], want) {
			t.Errorf("filter:\n got %v\nwant %v", bson.Raw(w.b[:nf]), bson.Raw(want))
		}
		if want := driverBytes(t, update); !bytes.Equal(w.b[nf:], want) {
			t.Errorf("update:\n got %v\nwant %v", bson.Raw(w.b[nf:]), bson.Raw(want))
		}
		w.release()
	}
}

// TestAppendUpdateRoot: a change of an EAO root entry sets the root's
// fields as top-level fields, as bson.Marshal writes them.
func TestAppendUpdateRoot(t *testing.T) {
	type root struct {
		Street string   `bson:"street"`
		Tags   []string `bson:"tags"`
	}
	d := (&runtime.Desc[encAddr, string]{
		Aggregate: "A", EAO: true, ID: func(a *encAddr) *string { return &a.Street },
		Root:   runtime.NewRoot([]string{"tags"}, func(a *encAddr) root { return root{Tags: a.Tags} }, func(a *encAddr, r root) { a.Tags = r.Tags }),
		Fields: []*runtime.Field[encAddr]{runtime.NewField("tags", "Tags", func(a *encAddr) *[]string { return &a.Tags })},
	}).Init()
	s := &Store[encAddr, string]{d: d}
	s.initAddrs()
	w := getDocBuf()
	defer w.release()
	u := runtime.Update[encAddr]{Changes: []runtime.Change[encAddr]{runtime.Set(d.Root, root{Street: "s"})}}
	nf, empty, err := s.appendUpdate(w, "a", u)
	if err != nil || empty {
		t.Fatal(err, empty)
	}
	// A nil slice in the root is null, as bson.Marshal writes it; the
	// count a partitioned layout kept of it is removed.
	want := driverBytes(t, bson.D{{Key: "$set", Value: bson.D{{Key: "street", Value: "s"}, {Key: "tags", Value: nil}}},
		{Key: "$unset", Value: bson.D{{Key: LenKey + ".tags", Value: ""}}}})
	if !bytes.Equal(w.b[nf:], want) {
		t.Errorf("update:\n got %v\nwant %v", bson.Raw(w.b[nf:]), bson.Raw(want))
	}
	// No change: an empty $set.
	w2 := getDocBuf()
	defer w2.release()
	if _, empty, err := s.appendUpdate(w2, "a", runtime.Update[encAddr]{}); err != nil || !empty {
		t.Fatal(err, empty)
	}
}

// TestAppendDocError: a value the driver cannot encode is an error, and a
// buffer that failed half-way is not a problem for the next document.
func TestAppendDocError(t *testing.T) {
	s := &Store[encT, encKey]{d: encDesc}
	s.initAddrs()
	v := newEncT()
	v.Any = make(chan int)
	w := getDocBuf()
	err := s.appendDoc(w, v, 1)
	if err == nil || !strings.Contains(err.Error(), "chan") {
		t.Fatalf("appendDoc of a chan: %v", err)
	}
	w.release()
	v.Any = nil
	w = getDocBuf()
	defer w.release()
	if err := s.appendDoc(w, v, 1); err != nil {
		t.Fatal(err)
	}
	if want := driverBytes(t, s.doc(v, 1, Stamp{})); !bytes.Equal(w.b, want) {
		t.Fatalf("appendDoc after an error:\n got %v\nwant %v", bson.Raw(w.b), bson.Raw(want))
	}
}
