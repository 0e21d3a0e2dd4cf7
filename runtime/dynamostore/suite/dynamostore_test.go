package dynamostore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var ctx = context.Background()

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got error %v, want %v", what, err, kind)
	}
}

// request is one logged request: its operation, request and reply bodies.
type request struct {
	op         string
	body, resp []byte
}

// logger is an HTTP client that logs every request the SDK sends.
type logger struct {
	mu  sync.Mutex
	log []request
	// before, when set, runs before a request is sent.
	before func(op string, body []byte)
	// fault, when set, decides per request whether to inject a fault: a
	// lost reply (the request is served, the client gets a connection
	// reset) or a request that never reaches the server.
	fault func(op string, body []byte) (lose, drop bool)
	// after, when set, runs once a request has been answered.
	after func(op string, body []byte)
	// stall, when set, decides per request whether to hold it until its
	// context ends (a server that stopped answering it).
	stall func(op string, body []byte) bool
}

// errReset is the injected network fault, the error a dropped connection
// gives (the SDK's retryer treats it as retryable, as it would a real one).
var errReset = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

func (l *logger) Do(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if l.before != nil {
		l.before(strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810."), body)
	}
	var lose, drop bool
	if l.fault != nil {
		lose, drop = l.fault(strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810."), body)
	}
	if drop {
		return nil, errReset
	}
	if l.stall != nil && l.stall(strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810."), body) {
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(time.Minute):
			return nil, errors.New("stalled a minute: a request without a deadline")
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if lose && err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errReset
	}
	var out []byte
	if err == nil {
		out, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(out))
	}
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	l.mu.Lock()
	l.log = append(l.log, request{op: op, body: body, resp: out})
	l.mu.Unlock()
	if l.after != nil && err == nil {
		l.after(op, body)
	}
	return resp, err
}

func (l *logger) take() []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.log
	l.log = nil
	return out
}

// fixture is a test server, a logging client and a fresh table prefix.
type fixture struct {
	c      *dynamodb.Client
	plain  *dynamodb.Client // without the log
	log    *logger
	prefix string
	o      dynamostore.Options
}

func newFixture(t *testing.T, s *dynalitetest.Server) *fixture {
	l := &logger{}
	f := &fixture{log: l, prefix: s.Prefix(t)}
	f.o = dynamostore.Options{TablePrefix: f.prefix}
	f.c = s.Client(func(o *dynamodb.Options) { o.HTTPClient = l })
	f.plain = s.Client()
	return f
}

func (f *fixture) matches(t *testing.T) *model.MatchDynamoRepository {
	r := model.NewMatchDynamoRepository(f.c, f.o)
	must(t, r.EnsureIndexes(ctx))
	return r
}

func strKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"_id": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, id)}}
}

// item reads the raw item of a block.
func (f *fixture) item(t *testing.T, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.prefix + table), Key: key, ConsistentRead: aws.Bool(true)})
	must(t, err)
	return out.Item
}

// index reads the raw items of one lookup of a collection's index table.
func (f *fixture) index(t *testing.T, collection, lookup string) []map[string]types.AttributeValue {
	t.Helper()
	out, err := f.c.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(f.prefix + dynamostore.IndexTable(collection)), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("p = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: lookup}},
	})
	must(t, err)
	return out.Items
}

func s(av types.AttributeValue) string {
	if x, ok := av.(*types.AttributeValueMemberS); ok {
		return x.Value
	}
	return fmt.Sprintf("<%T>", av)
}

func n(av types.AttributeValue) string {
	if x, ok := av.(*types.AttributeValueMemberN); ok {
		return x.Value
	}
	return fmt.Sprintf("<%T>", av)
}

// TestStore runs the DynamoDB-specific tests against one server.
func TestStore(t *testing.T) {
	sv := dynalitetest.Start(t)
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, f *fixture)
	}{
		{"ItemShape", testItemShape},
		{"AppendSendsOnlyTheNewElement", testAppendRequests},
		{"TooLarge", testTooLarge},
		{"NoStaleIndexItemsAfterWrites", testNoStaleItems},
		{"StaleItemsSkippedAndRepaired", testStaleItems},
		{"StaleUniqueClaim", testStaleClaim},
		{"StalledCreateLosesItsClaim", testStalledCreate},
		{"ScopeGap", testScopeGap},
		{"CounterOverflow", testCounterOverflow},
		{"PutSeesAConcurrentUnindexedWrite", testPutRace},
		{"AppendToABlockWithoutThePartition", testAppendOldSchema},
		{"DeadlineBoundsCleanup", testDeadlineCleanup},
		{"LostReply", testLostReply},
		{"CancelBeforeBlockWrite", testCancelBeforeBlockWrite},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newFixture(t, sv)) })
	}
}

var t0 = time.Date(2012, 1, 2, 3, 4, 5, 678e6, time.UTC)

// testItemShape: one item per block, one native attribute per entry (the
// paper's Fig. 5), readable without noamgen.
func testItemShape(t *testing.T, f *fixture) {
	f.o.IndexTables = true // the index-table shape (TestGSI: the GSI attributes)
	ms := f.matches(t)
	m := &model.Match{ID: "m1", Code: "c1", Region: "north", Level: 3, Tags: []string{"a", "b"},
		Venue: model.Venue{City: "Rome", Seats: 10, Geo: &model.Geo{Lat: 41.9, Lon: 12.5}}, Start: t0,
		Meta:   map[string]int{"x": 1},
		Rounds: []model.Round{{Serial: "s0", Moves: []string{"e4"}, At: t0}, {Serial: "s1", At: t0}}}
	must(t, ms.Create(ctx, m))
	must(t, ms.EnsureIndexes(ctx)) // safe on every start: the tables are kept
	it := f.item(t, "matches", strKey("m1"))
	if s(it["code"]) != "c1" || s(it["region"]) != "north" || n(it["level"]) != "3" || n(it["version"]) != "1" || s(it["start"]) != "2012-01-02T03:04:05.678Z" {
		t.Errorf("scalar attributes: %#v", it)
	}
	if tags, ok := it["tags"].(*types.AttributeValueMemberL); !ok || len(tags.Value) != 2 || s(tags.Value[1]) != "b" {
		t.Errorf("tags: %#v", it["tags"])
	}
	venue, ok := it["venue"].(*types.AttributeValueMemberM)
	if !ok || s(venue.Value["city"]) != "Rome" || n(venue.Value["seats"]) != "10" {
		t.Fatalf("venue: %#v", it["venue"])
	}
	if geo, ok := venue.Value["geo"].(*types.AttributeValueMemberM); !ok || n(geo.Value["lat"]) != "41.9" {
		t.Errorf("venue.geo: %#v", venue.Value["geo"])
	}
	if meta, ok := it["meta"].(*types.AttributeValueMemberM); !ok || n(meta.Value["x"]) != "1" {
		t.Errorf("meta: %#v", it["meta"])
	}
	rounds, ok := it["rounds"].(*types.AttributeValueMemberL)
	if !ok || len(rounds.Value) != 2 {
		t.Fatalf("rounds: %#v", it["rounds"])
	}
	if r1, ok := rounds.Value[1].(*types.AttributeValueMemberM); !ok || s(r1.Value["serial"]) != "s1" {
		t.Errorf("rounds[1]: %#v", rounds.Value[1])
	}
	if l, ok := it["_len"].(*types.AttributeValueMemberM); !ok || n(l.Value["rounds"]) != "2" {
		t.Errorf("_len: %#v", it["_len"])
	}
	if _, ok := it["_seq"].(*types.AttributeValueMemberN); !ok {
		t.Errorf("no _seq stamp: %#v", it)
	}
	// The index table: one item per value, sorted by (value, block key).
	codes := f.index(t, "matches", "code")
	if len(codes) != 1 || !bytes.Equal(codes[0]["k"].(*types.AttributeValueMemberB).Value, runtime.AppendString(nil, "c1")) {
		t.Fatalf("code index items: %#v", codes)
	}
	if tags := f.index(t, "matches", "tags"); len(tags) != 2 {
		t.Fatalf("tags index items: %d, want 2", len(tags))
	}
	entryShape(t, codes[0], it)
	// EAO: the root entry is one map attribute; integer keys are N.
	js := model.NewJournalDynamoRepository(f.c, f.o)
	must(t, js.EnsureIndexes(ctx))
	must(t, js.Create(ctx, &model.Journal{Owner: "ann", Title: "T", Lines: []model.Line{{Kind: "k", Text: "x"}}}))
	jt := f.item(t, "Journal", map[string]types.AttributeValue{"_id": &types.AttributeValueMemberN{Value: "1"}})
	owners := f.index(t, "Journal", "owner")
	if len(owners) != 1 {
		t.Fatalf("owner index items: %d, want 1", len(owners))
	}
	entryShape(t, owners[0], jt) // id N, as the block's _id
	root, ok := jt["_root"].(*types.AttributeValueMemberM)
	if !ok || s(root.Value["owner"]) != "ann" || s(root.Value["title"]) != "T" {
		t.Fatalf("journal _root: %#v", jt)
	}
	if lines, ok := jt["lines"].(*types.AttributeValueMemberL); !ok || len(lines.Value) != 1 {
		t.Fatalf("journal lines: %#v", jt["lines"])
	}
	// The same struct comes back.
	got, err := ms.Get(ctx, "m1")
	must(t, err)
	if got.Venue.Geo == nil || got.Venue.Geo.Lat != 41.9 || !got.Start.Equal(t0) || got.Rounds[0].Moves[0] != "e4" || got.Meta["x"] != 1 {
		t.Fatalf("round trip: %+v", got)
	}
}

// testAppendRequests: AppendRounds sends only the new round, whatever the
// number of rounds: without lookups on the rounds, one UpdateItem whose
// reply gives the new round's index; with them (Match), the
// protocol's requests, none of which carries an old round either.
func testAppendRequests(t *testing.T, f *fixture) {
	games := game.NewGameDynamoRepository(f.c, f.o)
	must(t, games.EnsureIndexes(ctx))
	g := &game.Game{ID: "g", FirstPlayer: "mary"}
	for i := range 100 {
		g.Rounds = append(g.Rounds, game.Round{Moves: []string{fmt.Sprintf("old-move-%03d", i), strings.Repeat("x", 100)}})
	}
	must(t, games.Create(ctx, g))
	f.log.take()
	i, err := games.AppendRounds(ctx, "g", game.Round{Moves: []string{"new-move"}})
	must(t, err)
	if i != 100 {
		t.Fatalf("AppendRounds index %d, want 100", i)
	}
	log := f.log.take()
	var ops []string
	for _, r := range log {
		ops = append(ops, r.op)
		if bytes.Contains(r.body, []byte("old-move")) {
			t.Errorf("%s sent an old round: %s", r.op, r.body)
		}
		if bytes.Contains(r.resp, []byte("old-move")) {
			t.Errorf("%s's reply carried an old round (%d bytes)", r.op, len(r.resp))
		}
	}
	if strings.Join(ops, ",") != "UpdateItem" {
		t.Fatalf("AppendRounds sent %v, want one UpdateItem", ops)
	}
	up := log[0].body
	if !bytes.Contains(up, []byte(fmt.Sprintf("[%d]", dynamostore.AppendPast))) || !bytes.Contains(up, []byte("new-move")) || !bytes.Contains(up, []byte("UPDATED_NEW")) || len(up) > 1024 {
		t.Fatalf("the UpdateItem (%d bytes): %s", len(up), up)
	}
	// The index comes from the reply, so concurrent appends do not need
	// retries: each gets its own index.
	var wg sync.WaitGroup
	idx := make([]int, 8)
	for w := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			idx[w], err = games.AppendRounds(ctx, "g", game.Round{Moves: []string{fmt.Sprintf("concurrent-%d", w)}})
			if err != nil {
				t.Errorf("concurrent AppendRounds: %v", err)
			}
		}()
	}
	wg.Wait()
	log = f.log.take()
	if len(log) != len(idx) {
		t.Errorf("%d concurrent appends sent %d requests, want one each", len(idx), len(log))
	}
	cg, err := games.Get(ctx, "g")
	must(t, err)
	for w, i := range idx {
		if i < 101 || i >= len(cg.Rounds) || cg.Rounds[i].Moves[0] != fmt.Sprintf("concurrent-%d", w) {
			t.Errorf("append %d returned index %d, which does not hold its round", w, i)
		}
	}
	if len(cg.Rounds) != 101+len(idx) || cg.Version != 2+int64(len(idx)) {
		t.Fatalf("after the concurrent appends: %d rounds, version %d", len(cg.Rounds), cg.Version)
	}
	// A missing block: the condition fails, the read that follows says
	// ErrNotFound.
	_, err = games.AppendRounds(ctx, "nope", game.Round{})
	wantErr(t, err, runtime.ErrNotFound, "AppendRounds of a missing game")
	f.log.take()
	// SetRoundsAt is SET rounds[7], one request.
	must(t, games.SetRoundsAt(ctx, "g", 7, game.Round{Spell: "haste"}))
	log = f.log.take()
	if len(log) != 1 || log[0].op != "UpdateItem" || !bytes.Contains(log[0].body, []byte("[7]")) || bytes.Contains(log[0].body, []byte("old-move")) {
		t.Fatalf("SetRoundsAt sent %d requests: %s", len(log), log[0].body)
	}
	got, err := games.Get(ctx, "g")
	must(t, err)
	if len(got.Rounds) != 109 || got.Rounds[100].Moves[0] != "new-move" || got.Rounds[7].Spell != "haste" || got.Version != 11 {
		t.Fatalf("game after the writes: %d rounds, version %d", len(got.Rounds), got.Version)
	}

	// With a lookup on the rounds' serials.
	ms := f.matches(t)
	m := &model.Match{ID: "m", Code: "c"}
	for i := range 50 {
		m.Rounds = append(m.Rounds, model.Round{Serial: fmt.Sprintf("old-serial-%03d", i), Moves: []string{strings.Repeat("y", 100)}})
	}
	must(t, ms.Create(ctx, m))
	f.log.take()
	i, err = ms.AppendRounds(ctx, "m", model.Round{Serial: "new-serial"})
	must(t, err)
	if i != 50 {
		t.Fatalf("Match AppendRounds index %d, want 50", i)
	}
	updates := 0
	for _, r := range f.log.take() {
		if bytes.Contains(r.body, []byte("old-serial")) {
			t.Errorf("%s sent an old round: %s", r.op, r.body)
		}
		if r.op == "UpdateItem" {
			updates++
			if !bytes.Contains(r.body, []byte("list_append")) || !bytes.Contains(r.body, []byte("new-serial")) {
				t.Errorf("the UpdateItem: %s", r.body)
			}
		}
	}
	if updates != 1 {
		t.Fatalf("Match AppendRounds sent %d UpdateItem requests, want 1", updates)
	}
	if _, err := ms.GetByRoundsSerial(ctx, "new-serial"); err != nil {
		t.Fatalf("the new round's serial: %v", err)
	}
}

// testTooLarge: a write that would make an item larger than 400 KB fails
// with runtime.ErrTooLarge and changes nothing (block and index).
func testTooLarge(t *testing.T, f *fixture) {
	big := strings.Repeat("z", 420*1024)
	ms := f.matches(t)
	err := ms.Create(ctx, &model.Match{ID: "big", Code: "big-code", Tags: []string{"t"}, Venue: model.Venue{City: "Rome", Doors: []string{big}}})
	wantErr(t, err, runtime.ErrTooLarge, "Create of a 420 KB match")
	_, err = ms.Get(ctx, "big")
	wantErr(t, err, runtime.ErrNotFound, "Get after the failed Create")
	_, err = ms.GetByCode(ctx, "big-code")
	wantErr(t, err, runtime.ErrNotFound, "GetByCode after the failed Create")
	if items := f.index(t, "matches", "code"); len(items) != 0 {
		t.Fatalf("the failed Create left %d code index items", len(items))
	}

	must(t, ms.Create(ctx, &model.Match{ID: "m", Code: "c", Rounds: []model.Round{{Serial: "s0"}}}))
	before := f.item(t, "matches", strKey("m"))
	half := strings.Repeat("h", 250*1024)
	must(t, ms.SetVenue(ctx, "m", model.Venue{City: "Rome", Doors: []string{half}}))
	before = f.item(t, "matches", strKey("m"))
	_, err = ms.AppendRounds(ctx, "m", model.Round{Serial: "s-big", Moves: []string{half}})
	wantErr(t, err, runtime.ErrTooLarge, "AppendRounds past 400 KB")
	wantErr(t, ms.SetMeta(ctx, "m", map[string]int{half: 1}), runtime.ErrTooLarge, "SetMeta past 400 KB")
	// Lookup values are sort keys: DynamoDB keeps at most 1024 bytes.
	wantErr(t, ms.SetCode(ctx, "m", "c2"+strings.Repeat("k", 1100)), runtime.ErrTooLarge, "SetCode with a 1 KB code")
	wantErr(t, ms.SetTags(ctx, "m", []string{"t", strings.Repeat("k", 1100)}), runtime.ErrTooLarge, "SetTags with a 1 KB tag")
	after := f.item(t, "matches", strKey("m"))
	if n(after["version"]) != n(before["version"]) || len(after["rounds"].(*types.AttributeValueMemberL).Value) != 1 || s(after["code"]) != "c" {
		t.Fatalf("failed writes changed the item: version %s -> %s", n(before["version"]), n(after["version"]))
	}
	_, err = ms.GetByRoundsSerial(ctx, "s-big")
	wantErr(t, err, runtime.ErrNotFound, "the failed append's serial")
	for _, l := range []string{"roundsSerial", "code", "tags"} {
		for _, it := range f.index(t, "matches", l) {
			if bytes.Contains(it["k"].(*types.AttributeValueMemberB).Value, []byte("s-big")) || bytes.Contains(it["k"].(*types.AttributeValueMemberB).Value, []byte("c2")) || len(it["k"].(*types.AttributeValueMemberB).Value) > 1024 {
				t.Fatalf("a failed write left index item %s %q", l, it["k"].(*types.AttributeValueMemberB).Value[:20])
			}
		}
	}
	rep, err := ms.Repair(ctx)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 {
		t.Fatalf("Repair after failed writes: %v", rep)
	}

	// Without lookups: the server refuses the UpdateItem.
	games := game.NewGameDynamoRepository(f.c, f.o)
	must(t, games.EnsureIndexes(ctx))
	must(t, games.Create(ctx, &game.Game{ID: "g", FirstPlayer: half}))
	_, err = games.AppendRounds(ctx, "g", game.Round{Moves: []string{half}})
	wantErr(t, err, runtime.ErrTooLarge, "Game AppendRounds past 400 KB")
	wantErr(t, games.Put(ctx, &game.Game{ID: "g", FirstPlayer: big, Version: 1}), runtime.ErrTooLarge, "Game Put past 400 KB")
	g, err := games.Get(ctx, "g")
	must(t, err)
	if len(g.Rounds) != 0 || g.Version != 1 || g.FirstPlayer != half {
		t.Fatalf("failed Game writes changed it: %d rounds, version %d", len(g.Rounds), g.Version)
	}
}

// entryShape checks the attributes of index item e of block item b, as
// stored data has them: id (the block's _id attribute), inc (the block's
// _inc), s (the write sequence, N) and w (the attempt's mark, N).
func entryShape(t *testing.T, e, b map[string]types.AttributeValue) {
	t.Helper()
	if !reflect.DeepEqual(e["id"], b["_id"]) || n(e["inc"]) != n(b["_inc"]) || strings.HasPrefix(n(e["s"]), "<") || strings.HasPrefix(n(e["w"]), "<") || len(e) != 6 {
		t.Fatalf("index item %#v of block %#v: want p, k, id (the block's _id), inc (its _inc), s and w", e, b)
	}
}

func keys(items []map[string]types.AttributeValue) []string {
	var out []string
	for _, it := range items {
		out = append(out, describe(it["k"].(*types.AttributeValueMemberB).Value))
	}
	return out
}

// describe renders the first part of an index key.
func describe(k []byte) string {
	r := runtime.NewKeyReader(k)
	v, err := r.String()
	if err != nil {
		return fmt.Sprintf("%x", k)
	}
	return v
}

// testNoStaleItems: the bugs of ElectroDB and dynamodb-onetable (unique
// and index items left behind on delete, change and partial update) do
// not happen: after each write the index table holds exactly the items of
// the current values, and the old values find nothing.
func testNoStaleItems(t *testing.T, f *fixture) {
	f.o.IndexTables = true // the index items of venueCity, otherwise a GSI
	ms := f.matches(t)
	must(t, ms.Create(ctx, &model.Match{ID: "m", Code: "c1", Tags: []string{"a", "b"}, Venue: model.Venue{City: "Rome"},
		Rounds: []model.Round{{Serial: "s0"}, {Serial: "s1"}}}))
	check := func(what string, lookup string, want ...string) {
		t.Helper()
		if got := keys(f.index(t, "matches", lookup)); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: %s index items %q, want %q", what, lookup, got, want)
		}
	}
	// Change (a setter), partial update (an element), Put (whole).
	must(t, ms.SetCode(ctx, "m", "c2"))
	check("SetCode", "code", "c2")
	_, err := ms.GetByCode(ctx, "c1")
	wantErr(t, err, runtime.ErrNotFound, "GetByCode of the old code")
	must(t, ms.SetRoundsAt(ctx, "m", 1, model.Round{Serial: "s1b"}))
	check("SetRoundsAt", "roundsSerial", "s0", "s1b")
	_, err = ms.GetByRoundsSerial(ctx, "s1")
	wantErr(t, err, runtime.ErrNotFound, "GetByRoundsSerial of the replaced round")
	must(t, ms.Update(ctx, "m", model.MatchUpdate{Tags: runtime.Ptr([]string{"b", "c"}), RoundsAt: map[int]model.Round{0: {Serial: "s0b"}}}))
	check("Update", "tags", "b", "c")
	check("Update", "roundsSerial", "s0b", "s1b")
	m, err := ms.Get(ctx, "m")
	must(t, err)
	m.Code, m.Venue.City, m.Rounds = "c3", "Oslo", m.Rounds[:1]
	must(t, ms.Put(ctx, m))
	check("Put", "code", "c3")
	check("Put", "venueCity", "Oslo")
	check("Put", "roundsSerial", "s0b")
	page, err := ms.ListByVenueCity(ctx, "Rome", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 0 {
		t.Fatalf("ListByVenueCity of the old city: %d items", len(page.Items))
	}
	// The freed unique values can be taken by another block.
	must(t, ms.Create(ctx, &model.Match{ID: "n", Code: "c1", Rounds: []model.Round{{Serial: "s1"}}}))
	// Delete removes every index item of the block.
	must(t, ms.Delete(ctx, "m"))
	check("Delete", "code", "c1")
	check("Delete", "roundsSerial", "s1")
	check("Delete", "tags")
	check("Delete", "venueCity", "")
	check("Delete", "regionLevel", "")
}

// putIndex writes an index item as a writer that stopped halfway would
// have left it.
func (f *fixture) putIndex(t *testing.T, lookup string, k []byte, id string, s int64) {
	t.Helper()
	_, err := f.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.prefix + dynamostore.IndexTable("matches")), Item: map[string]types.AttributeValue{
		"p": &types.AttributeValueMemberS{Value: lookup}, "k": &types.AttributeValueMemberB{Value: k},
		"id": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, id)}, "inc": &types.AttributeValueMemberN{Value: "1"},
		"s": &types.AttributeValueMemberN{Value: fmt.Sprint(s)}, "w": &types.AttributeValueMemberN{Value: "1"},
	}})
	must(t, err)
}

// testStaleItems: index items whose block does not hold their value (a
// write that stopped between its index items and its block) are never
// returned by reads, are removed by reads once older than StaleAfter, and
// by Repair.
func testStaleItems(t *testing.T, f *fixture) {
	ms := f.matches(t)
	must(t, ms.Create(ctx, &model.Match{ID: "m", Code: "c", Tags: []string{"a"}}))
	now := time.Now().UnixNano()
	tag := func(v, id string) []byte { return runtime.AppendString(runtime.AppendString(nil, v), id) }
	f.putIndex(t, "tags", tag("a", "ghost"), "ghost", now)          // no such block
	f.putIndex(t, "tags", tag("z", "m"), "m", now)                  // m has no tag z
	f.putIndex(t, "code", runtime.AppendString(nil, "x"), "m", now) // m's code is c
	page, err := ms.ListByTags(ctx, "a", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].ID != "m" {
		t.Fatalf("ListByTags a: %d items", len(page.Items))
	}
	page, err = ms.ListByTags(ctx, "z", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 0 {
		t.Fatalf("ListByTags z returned a stale item")
	}
	_, err = ms.GetByCode(ctx, "x")
	wantErr(t, err, runtime.ErrNotFound, "GetByCode of a stale item")
	// Fresh stale items stay (they may be a write in flight) ...
	if n := len(f.index(t, "matches", "tags")); n != 3 {
		t.Fatalf("%d tag items, want 3 (fresh stale items are left alone)", n)
	}
	// ... Repair removes them.
	rep, err := ms.Repair(ctx)
	must(t, err)
	if rep.Removed != 3 || rep.Added != 0 || rep.Aggregates != 1 {
		t.Fatalf("Repair: %v, want 3 removed", rep)
	}
	if got := keys(f.index(t, "matches", "tags")); strings.Join(got, ",") != "a" {
		t.Fatalf("tag items after Repair: %q", got)
	}
	// Repair also writes missing items.
	_, err = f.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(f.prefix + dynamostore.IndexTable("matches")), Key: map[string]types.AttributeValue{
		"p": &types.AttributeValueMemberS{Value: "code"}, "k": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, "c")}}})
	must(t, err)
	rep, err = ms.Repair(ctx)
	must(t, err)
	if rep.Added != 1 || rep.Removed != 0 {
		t.Fatalf("Repair of a missing item: %v", rep)
	}
	if _, err := ms.GetByCode(ctx, "c"); err != nil {
		t.Fatalf("GetByCode after Repair: %v", err)
	}
	// Old stale items are removed by the reads that meet them.
	old := time.Now().Add(-time.Hour).UnixNano()
	f.putIndex(t, "tags", tag("a", "ghost"), "ghost", old)
	page, err = ms.ListByTags(ctx, "a", runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 1 {
		t.Fatalf("ListByTags a: %d items", len(page.Items))
	}
	if got := keys(f.index(t, "matches", "tags")); strings.Join(got, ",") != "a" {
		t.Fatalf("tag items after a read met an old stale one: %q", got)
	}
}

// testStaleClaim: a unique value claimed by an index item whose block
// does not hold it is refused while the claim is fresh (a write in
// flight) and taken over once it is older than StaleAfter.
func testStaleClaim(t *testing.T, f *fixture) {
	ms := f.matches(t)
	f.putIndex(t, "code", runtime.AppendString(nil, "x"), "ghost", time.Now().UnixNano())
	wantErr(t, ms.Create(ctx, &model.Match{ID: "m", Code: "x"}), runtime.ErrDuplicate, "Create with a freshly claimed code")
	_, err := ms.Get(ctx, "m")
	wantErr(t, err, runtime.ErrNotFound, "Get after the refused Create")
	f.putIndex(t, "code", runtime.AppendString(nil, "x"), "ghost", time.Now().Add(-time.Hour).UnixNano())
	must(t, ms.Create(ctx, &model.Match{ID: "m", Code: "x"}))
	got, err := ms.GetByCode(ctx, "x")
	must(t, err)
	if got.ID != "m" {
		t.Fatalf("GetByCode x: %s", got.ID)
	}
	// A value another block holds is never taken over.
	wantErr(t, ms.Create(ctx, &model.Match{ID: "n", Code: "x"}), runtime.ErrDuplicate, "Create with a held code")
}

// testStalledCreate: a Create that stalls between its unique claim and
// its block write for longer than StaleAfter may have its claim taken over
// by another block; it then finds out, removes the block it wrote and
// fails with ErrDuplicate, so that no value is held by two blocks.
func testStalledCreate(t *testing.T, f *fixture) {
	defer func(d time.Duration) { dynamostore.StaleAfter = d }(dynamostore.StaleAfter)
	dynamostore.StaleAfter = 100 * time.Millisecond
	ms := f.matches(t)
	table := []byte(`"TableName":"` + f.prefix + `matches"`)
	stalled := make(chan struct{})
	var once sync.Once
	f.log.before = func(op string, body []byte) {
		if op == "PutItem" && bytes.Contains(body, table) && bytes.Contains(body, []byte("stalled")) {
			once.Do(func() {
				close(stalled)
				time.Sleep(400 * time.Millisecond)
			})
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- ms.Create(ctx, &model.Match{ID: "a", Code: "x", Region: "stalled"}) }()
	<-stalled
	time.Sleep(150 * time.Millisecond) // a's claim is now older than StaleAfter
	b := model.NewMatchDynamoRepository(f.plain, f.o)
	must(t, b.Create(ctx, &model.Match{ID: "b", Code: "x"}))
	wantErr(t, <-errc, runtime.ErrDuplicate, "the stalled Create")
	_, err := ms.Get(ctx, "a")
	wantErr(t, err, runtime.ErrNotFound, "Get of the stalled block")
	got, err := ms.GetByCode(ctx, "x")
	must(t, err)
	if got.ID != "b" {
		t.Fatalf("code x is held by %s, want b", got.ID)
	}
}

// testScopeGap: listing a counter scope costs the same whatever the gap
// of free numbers before its blocks: one Query of the scope index and one
// BatchGetItem of the blocks.
func testScopeGap(t *testing.T, f *fixture) {
	replies := model.NewReplyDynamoRepository(f.c, f.o)
	must(t, replies.EnsureIndexes(ctx))
	must(t, replies.Create(ctx, &model.Reply{Key: model.ReplyKey{Thread: "t"}, Body: "1"}))
	must(t, replies.Create(ctx, &model.Reply{Key: model.ReplyKey{Thread: "t", Seq: 20000}, Body: "far"}))
	must(t, replies.Create(ctx, &model.Reply{Key: model.ReplyKey{Thread: "t"}, Body: "next"}))
	must(t, replies.Create(ctx, &model.Reply{Key: model.ReplyKey{Thread: "tt"}, Body: "other thread"}))
	f.log.take()
	page, err := replies.ListByThread(ctx, "t", runtime.PageRequest{Limit: 10})
	must(t, err)
	var got []int64
	for _, r := range page.Items {
		got = append(got, r.Key.Seq)
	}
	if fmt.Sprint(got) != "[1 20000 20001]" || page.Next != "" {
		t.Fatalf("ListByThread t: %v (next %q)", got, page.Next)
	}
	if log := f.log.take(); len(log) > 2 {
		var ops []string
		for _, r := range log {
			ops = append(ops, r.op)
		}
		t.Fatalf("ListByThread after a gap of 20,000 numbers sent %d requests: %v", len(log), ops)
	}
	must(t, replies.Delete(ctx, model.ReplyKey{Thread: "t", Seq: 20000}))
	page, err = replies.ListByThread(ctx, "t", runtime.PageRequest{Limit: 1})
	must(t, err)
	page, err = replies.ListByThread(ctx, "t", runtime.PageRequest{Limit: 1, Cursor: page.Next})
	must(t, err)
	if len(page.Items) != 1 || page.Items[0].Key.Seq != 20001 {
		t.Fatalf("second page after a Delete: %+v", page.Items)
	}
}

// testCounterOverflow: after an explicit id of math.MaxInt64 the counter
// cannot allocate another number: ErrOverflow, nothing written.
func testCounterOverflow(t *testing.T, f *fixture) {
	js := model.NewJournalDynamoRepository(f.c, f.o)
	must(t, js.EnsureIndexes(ctx))
	must(t, js.Create(ctx, &model.Journal{ID: math.MaxInt64, Title: "last"}))
	j := &model.Journal{Title: "one more"}
	wantErr(t, js.Create(ctx, j), runtime.ErrOverflow, "Create after MaxInt64")
	if j.ID != 0 || j.Version != 0 {
		t.Fatalf("the failed Create changed the journal: %+v", j)
	}
	n := 0
	for _, err := range js.All(ctx) {
		must(t, err)
		n++
	}
	if n != 1 {
		t.Fatalf("%d journals, want 1", n)
	}
}

// testAppendOldSchema: a block written before its aggregate had the
// partition (no list, no count) takes its first element; an append to a
// block deleted meanwhile does not create one.
func testAppendOldSchema(t *testing.T, f *fixture) {
	// The test counts requests: past the default layout lease (2 s on a
	// loaded machine) a write reads the schema record again.
	games := game.NewGameDynamoRepository(f.c, f.o, runtime.WithLayoutLease(time.Hour))
	must(t, games.EnsureIndexes(ctx))
	_, err := f.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.prefix + "Game"), Item: map[string]types.AttributeValue{
		"_id": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, "old")}, "firstPlayer": &types.AttributeValueMemberS{Value: "ann"},
		"version": &types.AttributeValueMemberN{Value: "1"}, "_len": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
	}})
	must(t, err)
	i, err := games.AppendRounds(ctx, "old", game.Round{Moves: []string{"e4"}})
	must(t, err)
	g, err := games.Get(ctx, "old")
	must(t, err)
	if i != 0 || len(g.Rounds) != 1 || g.Rounds[0].Moves[0] != "e4" || g.Version != 2 || g.FirstPlayer != "ann" {
		t.Fatalf("after the first append: index %d, %+v", i, g)
	}
	_, err = games.AppendRounds(ctx, "gone", game.Round{})
	wantErr(t, err, runtime.ErrNotFound, "AppendRounds to a missing game")

	// A list longer than dynamostore.AppendPast: SET rounds[AppendPast]
	// would overwrite an element, so the condition sends the append the
	// read-first way, and the new round goes at the end.
	long := make([]types.AttributeValue, dynamostore.AppendPast+2)
	for i := range long {
		long[i] = &types.AttributeValueMemberNULL{Value: true}
	}
	_, err = f.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.prefix + "Game"), Item: map[string]types.AttributeValue{
		"_id": &types.AttributeValueMemberB{Value: runtime.AppendString(nil, "long")}, "firstPlayer": &types.AttributeValueMemberS{Value: "bo"},
		"version": &types.AttributeValueMemberN{Value: "1"}, "rounds": &types.AttributeValueMemberL{Value: long},
		"_len": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"rounds": &types.AttributeValueMemberN{Value: fmt.Sprint(len(long))}}},
	}})
	must(t, err)
	f.log.take()
	i, err = games.AppendRounds(ctx, "long", game.Round{Moves: []string{"last"}})
	must(t, err)
	if i != len(long) {
		t.Fatalf("append to a list of %d: index %d", len(long), i)
	}
	if ops := f.log.take(); len(ops) != 3 {
		t.Errorf("append to a long list: %d requests, want 3 (the refused UpdateItem, the count, the list_append)", len(ops))
	}
	g, err = games.Get(ctx, "long")
	must(t, err)
	if len(g.Rounds) != len(long)+1 || g.Rounds[len(long)].Moves[0] != "last" || g.Rounds[dynamostore.AppendPast].Moves != nil {
		t.Fatalf("after the append to a long list: %d rounds", len(g.Rounds))
	}
	_, err = games.Get(ctx, "gone")
	wantErr(t, err, runtime.ErrNotFound, "Get after an append to a missing game")
}

// testPutRace: a write of an unindexed field (one UpdateItem that bumps
// the version but not the lookup stamp) between a Put's read and its
// block write makes the Put fail with ErrConflict, not overwrite it.
func testPutRace(t *testing.T, f *fixture) {
	ms := f.matches(t)
	must(t, ms.Create(ctx, &model.Match{ID: "m", Code: "c"}))
	m, err := ms.Get(ctx, "m")
	must(t, err)
	other := model.NewMatchDynamoRepository(f.plain, f.o)
	table := []byte(`"TableName":"` + f.prefix + `matches"`)
	var once sync.Once
	f.log.before = func(op string, body []byte) {
		if op == "PutItem" && bytes.Contains(body, table) {
			once.Do(func() { must(t, other.SetMeta(ctx, "m", map[string]int{"concurrent": 1})) })
		}
	}
	m.Code = "c2"
	wantErr(t, ms.Put(ctx, m), runtime.ErrConflict, "Put over a concurrent SetMeta")
	f.log.before = nil
	got, err := ms.Get(ctx, "m")
	must(t, err)
	if got.Meta["concurrent"] != 1 || got.Code != "c" || got.Version != 2 {
		t.Fatalf("after the race: %+v", got)
	}
	if _, err := ms.GetByCode(ctx, "c2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByCode of the failed Put's code: %v", err)
	}
	rep, err := ms.Repair(ctx)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 {
		t.Fatalf("Repair after the race: %v", rep)
	}
}

// once returns a fault hook that injects one fault (lost reply or dropped
// request) into the first request of kind op on table, and counts the
// requests of that kind.
func once(op, table string, lose bool) (hook func(string, []byte) (bool, bool), hit func() (bool, int)) {
	var mu sync.Mutex
	done, n := false, 0
	hook = func(o string, body []byte) (bool, bool) {
		if o != op || !bytes.Contains(body, []byte(`"TableName":"`+table+`"`)) {
			return false, false
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if done {
			return false, false
		}
		done = true
		return lose, !lose
	}
	return hook, func() (bool, int) { mu.Lock(); defer mu.Unlock(); return done, n }
}

// testLostReply: faults on the block write of a protocol write, with the
// SDK's own retries in play. A lost reply (the write was applied) ends in
// success, whatever the SDK's retry of the conditional request answers,
// and the lookups are right; a request that never arrived is retried and
// applied once; a Create whose reply is lost is not reported as
// ErrDuplicate of itself. Repair finds nothing to fix afterwards.
func testLostReply(t *testing.T, f *fixture) {
	ms := f.matches(t)
	table := f.prefix + "matches"
	must(t, ms.Create(ctx, &model.Match{ID: "m", Code: "a"}))
	check := func(what, code string, version int64) {
		t.Helper()
		got, err := ms.GetByCode(ctx, code)
		if err != nil || got.ID != "m" || got.Version != version {
			t.Fatalf("%s: GetByCode(%q) = %+v, %v", what, code, got, err)
		}
		rep, err := ms.Repair(ctx)
		must(t, err)
		if rep.Added+rep.Removed+len(rep.Conflicts) != 0 {
			t.Fatalf("%s: Repair fixed %+v", what, rep)
		}
	}
	for _, c := range []struct {
		name string
		lose bool
	}{{"lost reply", true}, {"dropped request", false}} {
		hook, hit := once("UpdateItem", table, c.lose)
		f.log.fault = hook
		before, err := ms.Get(ctx, "m")
		must(t, err)
		code := "c-" + strings.ReplaceAll(c.name, " ", "-")
		err = ms.SetCode(ctx, "m", code)
		f.log.fault = nil
		done, n := hit()
		if !done {
			t.Fatalf("%s: no fault injected", c.name)
		}
		if err != nil {
			t.Fatalf("%s: SetCode: %v (%d UpdateItem requests)", c.name, err, n)
		}
		check(c.name, code, before.Version+1)
		if _, err := ms.GetByCode(ctx, before.Code); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("%s: the old code still finds the match: %v", c.name, err)
		}
	}
	// Create with a lost reply.
	hook, hit := once("PutItem", table, true)
	f.log.fault = hook
	err := ms.Create(ctx, &model.Match{ID: "n", Code: "new"})
	f.log.fault = nil
	if done, n := hit(); !done || err != nil {
		t.Fatalf("Create with a lost reply (%d PutItem requests): %v", n, err)
	}
	got, err := ms.GetByCode(ctx, "new")
	if err != nil || got.ID != "n" {
		t.Fatalf("after Create with a lost reply: %+v, %v", got, err)
	}

	// Create and a versioned Put of an aggregate without lookups: the
	// SDK's resend after a lost reply fails its condition, and the block,
	// the item written, says the write is done.
	games := game.NewGameDynamoRepository(f.c, f.o)
	must(t, games.EnsureIndexes(ctx))
	hook, hit = once("PutItem", f.prefix+"Game", true)
	f.log.fault = hook
	lg := &game.Game{ID: "lg", FirstPlayer: "ann", Rounds: []game.Round{{Moves: []string{"e4"}, Spell: "haste"}}}
	err = games.Create(ctx, lg)
	f.log.fault = nil
	if done, n := hit(); !done || n != 2 || err != nil {
		t.Fatalf("Game Create with a lost reply (fault %v, %d PutItem requests): %v", done, n, err)
	}
	hook, hit = once("PutItem", f.prefix+"Game", true)
	f.log.fault = hook
	lg.SecondPlayer = "bo"
	err = games.Put(ctx, lg)
	f.log.fault = nil
	if done, n := hit(); !done || n != 2 || err != nil || lg.Version != 2 {
		t.Fatalf("Game Put with a lost reply (fault %v, %d PutItem requests): %v, version %d", done, n, err, lg.Version)
	}

	// A setter and an Update with IfVersion of a versioned block: the
	// resend fails on the update's token, which the block holds, and the
	// update is done once (the version moves by one, no ErrConflict).
	hook, hit = once("UpdateItem", f.prefix+"Game", true)
	f.log.fault = hook
	err = games.SetSecondPlayer(ctx, "lg", "cy")
	f.log.fault = nil
	if done, n := hit(); !done || n != 2 || err != nil {
		t.Fatalf("SetSecondPlayer with a lost reply (fault %v, %d requests): %v", done, n, err)
	}
	hook, hit = once("UpdateItem", f.prefix+"Game", true)
	f.log.fault = hook
	dee := "dee"
	err = games.Update(ctx, "lg", game.GameUpdate{IfVersion: 3, FirstPlayer: &dee})
	f.log.fault = nil
	if done, n := hit(); !done || n != 2 || err != nil {
		t.Fatalf("Update with IfVersion and a lost reply (fault %v, %d requests): %v", done, n, err)
	}
	if g, err := games.Get(ctx, "lg"); err != nil || g.Version != 4 || g.FirstPlayer != "dee" || g.SecondPlayer != "cy" {
		t.Fatalf("after the resent updates: %+v, %v", g, err)
	}

	// The one-request append is not resent by the SDK (a second send
	// would append twice): a lost reply is an error saying the outcome is
	// unknown, and the round is there once; a dropped request is the same
	// error, and no round was added.
	must(t, games.Create(ctx, &game.Game{ID: "g", FirstPlayer: "ann"}))
	for i, lose := range []bool{true, false} {
		hook, hit := once("UpdateItem", f.prefix+"Game", lose)
		f.log.fault = hook
		_, err := games.AppendRounds(ctx, "g", game.Round{Spell: fmt.Sprint("r", i)})
		f.log.fault = nil
		if done, n := hit(); !done || n != 1 {
			t.Fatalf("append (lost reply %v): fault %v, %d requests, want 1", lose, done, n)
		}
		if err == nil || !strings.Contains(err.Error(), "outcome unknown") {
			t.Fatalf("append (lost reply %v): %v, want an outcome-unknown error", lose, err)
		}
	}
	g, err := games.Get(ctx, "g")
	must(t, err)
	if len(g.Rounds) != 1 || g.Rounds[0].Spell != "r0" || g.Version != 2 {
		t.Fatalf("after a lost and a dropped append: %+v", g)
	}
}

// testDeadlineCleanup: the work a write goes on with after its deadline
// ends runtime.CleanupTimeout after it. A Delete whose block is gone but
// whose index items cannot be removed (their requests stall) returns an
// error matching context.DeadlineExceeded that says the block write is
// done, and Repair removes the items; a setter whose block write and
// read-back stall returns runtime.ErrUnknownOutcome matching
// DeadlineExceeded (the read-back had a 10 s timeout of its own).
func testDeadlineCleanup(t *testing.T, f *fixture) {
	defer func(d time.Duration) { runtime.CleanupTimeout = d }(runtime.CleanupTimeout)
	runtime.CleanupTimeout = 300 * time.Millisecond
	const deadline = 200 * time.Millisecond
	bound := deadline + runtime.CleanupTimeout + 2*time.Second
	ms := f.matches(t)
	must(t, ms.Create(ctx, &model.Match{ID: "m1", Code: "c1", Tags: []string{"a"}}))
	must(t, ms.Create(ctx, &model.Match{ID: "m2", Code: "c2", Tags: []string{"a", "b"}}))
	table := []byte(`"TableName":"` + f.prefix + `matches"`)
	index := []byte(`"TableName":"` + f.prefix + dynamostore.IndexTable("matches") + `"`)
	timed := func(what string, fn func(ctx context.Context) error) error {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		start := time.Now()
		err := fn(c)
		f.log.stall = nil
		if took := time.Since(start); took > bound {
			t.Fatalf("%s returned after %v (bound %v): %v", what, took, bound, err)
		}
		var re *runtime.Error
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &re) {
			t.Fatalf("%s: %v, want a *runtime.Error matching context.DeadlineExceeded", what, err)
		}
		return err
	}

	f.log.stall = func(op string, body []byte) bool { return op == "DeleteItem" && bytes.Contains(body, index) }
	err := timed("Delete with its index cleanup stalled", func(c context.Context) error { return ms.Delete(c, "m2") })
	if !strings.Contains(err.Error(), "block write is done") {
		t.Fatalf("Delete with its cleanup cut short: %v, want it to say the block write is done", err)
	}
	if _, err := ms.Get(ctx, "m2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Get after the cut Delete: %v, want ErrNotFound", err)
	}
	rep, err := ms.Repair(ctx)
	must(t, err)
	if rep.Removed == 0 {
		t.Fatalf("Repair after the cut Delete removed nothing: %+v", rep)
	}

	var wrote sync.Once
	var stalled atomic.Bool
	f.log.stall = func(op string, body []byte) bool {
		switch {
		case op == "UpdateItem" && bytes.Contains(body, table):
			wrote.Do(func() { stalled.Store(true) })
			return true
		case op == "GetItem" && bytes.Contains(body, table):
			return stalled.Load() // the read-back
		}
		return false
	}
	err = timed("SetCode with its block write and read-back stalled", func(c context.Context) error { return ms.SetCode(c, "m1", "c1-new") })
	if !errors.Is(err, runtime.ErrUnknownOutcome) {
		t.Fatalf("SetCode with its block write stalled: %v, want ErrUnknownOutcome", err)
	}
	if m, err := ms.Get(ctx, "m1"); err != nil || m.Code != "c1" {
		t.Fatalf("after the stalled SetCode: %+v, %v (the stalled write never reached the server)", m, err)
	}
	_, err = ms.Repair(ctx)
	must(t, err)
	if rep, err := ms.Repair(ctx); err != nil || rep.Added != 0 || rep.Removed != 0 {
		t.Fatalf("a second Repair after the cut writes: %v, %v", rep, err)
	}
	if m, err := ms.GetByCode(ctx, "c1"); err != nil || m.ID != "m1" {
		t.Fatalf("GetByCode after Repair: %+v, %v", m, err)
	}
}
