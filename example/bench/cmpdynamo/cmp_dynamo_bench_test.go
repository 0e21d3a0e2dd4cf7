package cmpdynamo_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/example/bench/cmpbench"
	"github.com/noamgen/noamgen/example/bench/handwritten"
	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
)

// Generated vs hand-written on DynamoDB (dynalite, or the endpoint at
// NOAM_DYNAMO_ENDPOINT): both implementations on the same server and
// client, in tables of their own (prefixes "<run>gen_" and "<run>hand_").
// dynalite takes about 0.6 ms a request and rewrites the whole item on
// every write, so run few iterations:
//
//	go test ./example/bench/cmpdynamo -run '^$' -bench Cmp -benchtime 200x -count 6 > dynamo.txt
//	benchstat -col /impl dynamo.txt
//
// or STORES=dynamo scripts/bench-compare.sh.
//
// Two suites. store=dynamo: the generated defaults against the baseline
// a DynamoDB user writes today, so ListByCityStars and SetCity compare a
// generated GSI lookup with handwritten.HotelDynamoGSI (one Query of a
// GSI; SetCity one UpdateItem). store=dynamo-table (the benchmarks named
// ...Table): every lookup in an index table on both sides, the generated
// hotels under Options{IndexTables: true} against handwritten.HotelDynamo.
// GetByName is in both: a unique lookup is a claim in the index table
// whatever the option (a GSI cannot refuse a duplicate), and dynalite has
// no transactions; the unique-claiming write in one transaction is
// measured on minidyn (integration/bench, BenchmarkCmpUniqueTxDynamo).

func TestMain(m *testing.M) {
	code := m.Run()
	if srv := server.Load(); srv != nil && os.Getenv(dynalitetest.EnvEndpoint) != "" {
		// Tables on an external endpoint outlive the process.
		if err := dropTables(srv.Client(), *prefix.Load()); err != nil {
			fmt.Fprintln(os.Stderr, "dropping the benchmark tables:", err)
		}
	}
	dynalitetest.Stop()
	os.Exit(code)
}

// dropTables deletes the tables whose names start with p.
func dropTables(c *dynamodb.Client, p string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := &dynamodb.ListTablesInput{ExclusiveStartTableName: aws.String(p)}
	for {
		out, err := c.ListTables(ctx, in)
		if err != nil {
			return err
		}
		for _, name := range out.TableNames {
			if !strings.HasPrefix(name, p) {
				return nil
			}
			if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
				return err
			}
		}
		if out.LastEvaluatedTableName == nil {
			return nil
		}
		in.ExclusiveStartTableName = out.LastEvaluatedTableName
	}
}

// openDynamoImpls returns the generated and the hand-written repositories
// over new tables under prefix. The city and stars lookup is a GSI on
// both sides: the generated default, and handwritten.HotelDynamoGSI; the
// unique name a claim in an index table on both.
func openDynamoImpls(c *dynamodb.Client, prefix string) ([]cmpbench.Impl, error) {
	ctx := context.Background()
	o := dynamostore.Options{TablePrefix: prefix + "gen_"}
	games := game.NewGameDynamoRepository(c, o)
	hotels := hotel.NewHotelDynamoRepository(c, o)
	eao := bench.NewVersionedEAOGameDynamoRepository(c, o)
	for _, ensure := range []func(context.Context) error{games.EnsureIndexes, hotels.EnsureIndexes, eao.EnsureIndexes} {
		if err := ensure(ctx); err != nil {
			return nil, err
		}
	}
	handGames, err := handwritten.NewGameDynamo(ctx, c, prefix+"hand_Game")
	if err != nil {
		return nil, err
	}
	handHotels, err := handwritten.NewHotelDynamoGSI(ctx, c, prefix+"hand_HotelGSI")
	if err != nil {
		return nil, err
	}
	handEAO := &handwritten.DynamoBlobs[bench.VersionedEAOGame]{
		C: c, Table: prefix + "hand_VersionedEAOGame", KeyAttr: "ID", VersionAttr: "Version",
		ID:      func(g *bench.VersionedEAOGame) string { return g.ID },
		Version: func(g *bench.VersionedEAOGame) *int64 { return &g.Version },
	}
	if err := handEAO.Ensure(ctx); err != nil {
		return nil, err
	}
	return []cmpbench.Impl{
		{Name: "gen", Games: games, Hotels: cmpbench.GenHotels{HotelRepository: hotels}, EAO: eao, UnorderedList: true},
		{Name: "hand", Games: handGames, Hotels: handHotels, EAO: handEAO, UnorderedList: true},
	}, nil
}

// openTableImpls returns the hotel repositories with every lookup in an
// index table: the generated one under Options{IndexTables: true}, and
// handwritten.HotelDynamo. No games: the suite runs the hotel
// benchmarks.
func openTableImpls(c *dynamodb.Client, prefix string) ([]cmpbench.Impl, error) {
	ctx := context.Background()
	hotels := hotel.NewHotelDynamoRepository(c, dynamostore.Options{TablePrefix: prefix + "gentab_", IndexTables: true})
	if err := hotels.EnsureIndexes(ctx); err != nil {
		return nil, err
	}
	handHotels, err := handwritten.NewHotelDynamo(ctx, c, prefix+"hand_Hotel")
	if err != nil {
		return nil, err
	}
	return []cmpbench.Impl{
		{Name: "gen", Hotels: cmpbench.GenHotels{HotelRepository: hotels}},
		{Name: "hand", Hotels: handHotels},
	}, nil
}

// server and prefix are set by the first benchmark.
var (
	server atomic.Pointer[dynalitetest.Server]
	prefix atomic.Pointer[string]
)

var dynamoSuite = cmpbench.NewSuite("dynamo", func() ([]cmpbench.Impl, error) {
	return openDynamoImpls(server.Load().Client(), *prefix.Load())
})

// tableSuite is the hotel benchmarks with index tables on both sides
// (store=dynamo-table).
var tableSuite = cmpbench.NewSuite("dynamo-table", func() ([]cmpbench.Impl, error) {
	return openTableImpls(server.Load().Client(), *prefix.Load())
})

func suite(b *testing.B) *cmpbench.Suite {
	start(b)
	return dynamoSuite
}

func tables(b *testing.B) *cmpbench.Suite {
	start(b)
	return tableSuite
}

// start sets server and prefix, once.
func start(b *testing.B) {
	if server.Load() == nil {
		srv := dynalitetest.Shared(b)
		// A prefix of this process (not srv.Prefix(b), whose tables on
		// an external endpoint go when b ends): TestMain drops them.
		p := fmt.Sprintf("cmp%x_", time.Now().UnixNano()&0xffffffffff)
		prefix.Store(&p)
		server.CompareAndSwap(nil, srv)
	}
}

func BenchmarkCmpGet(b *testing.B)             { suite(b).Get(b) }
func BenchmarkCmpPut(b *testing.B)             { suite(b).Put(b) }
func BenchmarkCmpSetSecondPlayer(b *testing.B) { suite(b).SetSecondPlayer(b) }
func BenchmarkCmpAppendRounds(b *testing.B)    { suite(b).AppendRounds(b) }
func BenchmarkCmpUpdate2(b *testing.B)         { suite(b).Update2(b) }
func BenchmarkCmpList50(b *testing.B)          { suite(b).List50(b) }
func BenchmarkCmpGetByName(b *testing.B)       { suite(b).GetByName(b) }
func BenchmarkCmpListByCityStars(b *testing.B) { suite(b).ListByCityStars(b) }
func BenchmarkCmpSetCity(b *testing.B)         { suite(b).SetCity(b) }
func BenchmarkCmpGetEAO(b *testing.B)          { suite(b).GetEAO(b) }
func BenchmarkCmpPutEAO(b *testing.B)          { suite(b).PutEAO(b) }
func BenchmarkCmpPutChanged(b *testing.B)      { suite(b).PutChanged(b) }
func BenchmarkCmpPutChangedEAO(b *testing.B)   { suite(b).PutChangedEAO(b) }

// The hotel benchmarks with every lookup in an index table.
func BenchmarkCmpGetByNameTable(b *testing.B)       { tables(b).GetByName(b) }
func BenchmarkCmpListByCityStarsTable(b *testing.B) { tables(b).ListByCityStars(b) }
func BenchmarkCmpSetCityTable(b *testing.B)         { tables(b).SetCity(b) }

// TestCmpDynamoBaseline checks that the hand-written baseline and the
// generated code do the same thing on the benchmark data (no timings).
func TestCmpDynamoBaseline(t *testing.T) {
	srv := dynalitetest.Start(t)
	impls, err := openDynamoImpls(srv.Client(), srv.Prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	cmpbench.CheckBaseline(t, impls, true)
}

// TestCmpDynamoTableBaseline is TestCmpDynamoBaseline of the index-table
// suite: handwritten.HotelDynamo against the generated hotels under
// Options{IndexTables: true}.
func TestCmpDynamoTableBaseline(t *testing.T) {
	srv := dynalitetest.Start(t)
	impls, err := openTableImpls(srv.Client(), srv.Prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	cmpbench.CheckBaseline(t, impls, true)
}

// requests counts a client's requests by operation (X-Amz-Target).
type requests struct {
	next aws.HTTPClient
	mu   sync.Mutex
	n    map[string]int
}

func (r *requests) Do(req *http.Request) (*http.Response, error) {
	t := req.Header.Get("X-Amz-Target")
	r.mu.Lock()
	r.n[t[strings.LastIndexByte(t, '.')+1:]]++
	r.mu.Unlock()
	return r.next.Do(req)
}

func (r *requests) take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = map[string]int{}
	return n
}

// TestCmpDynamoRequests checks the requests each side of the lookup
// benchmarks sends, which a real endpoint's latency follows more than
// dynalite's (BENCHMARKS.md): GetByName two GetItems on both sides and
// in both suites; ListByCityStars one Query of the GSI on both sides,
// and with index tables a Query of the index and a BatchGetItem of the
// hotels; SetCity of a GSI lookup one UpdateItem by hand, a GetItem and
// an UpdateItem generated (the new index key needs the stored stars),
// and with index tables the protocol's four requests on both sides.
func TestCmpDynamoRequests(t *testing.T) {
	srv := dynalitetest.Start(t)
	counts := &requests{n: map[string]int{}}
	c := dynamodb.New(srv.Client().Options(), func(o *dynamodb.Options) {
		counts.next = o.HTTPClient
		if counts.next == nil {
			counts.next = awshttp.NewBuildableClient()
		}
		o.HTTPClient = counts
	})
	prefix := srv.Prefix(t)
	gsi, err := openDynamoImpls(c, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := openTableImpls(c, prefix)
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ getByName, list, setCity map[string]int }
	get2 := map[string]int{"GetItem": 2}
	protocol := map[string]int{"GetItem": 1, "PutItem": 1, "UpdateItem": 1, "DeleteItem": 1}
	for _, s := range []struct {
		suite string
		impls []cmpbench.Impl
		want  map[string]want
	}{
		{"dynamo", gsi, map[string]want{
			"gen":  {get2, map[string]int{"Query": 1}, map[string]int{"GetItem": 1, "UpdateItem": 1}},
			"hand": {get2, map[string]int{"Query": 1}, map[string]int{"UpdateItem": 1}},
		}},
		{"dynamo-table", tbl, map[string]want{
			"gen":  {get2, map[string]int{"Query": 1, "BatchGetItem": 1}, protocol},
			"hand": {get2, map[string]int{"Query": 1, "BatchGetItem": 1}, protocol},
		}},
	} {
		for _, im := range s.impls {
			if err := cmpbench.Load(cmpbench.Impl{Name: im.Name, Hotels: im.Hotels}, 0, cmpbench.BaselineHotels); err != nil {
				t.Fatal(err)
			}
			w := s.want[im.Name]
			check := func(op string, got, want map[string]int) {
				t.Helper()
				if !maps.Equal(got, want) {
					t.Errorf("store=%s impl=%s: %s sent %v, want %v", s.suite, im.Name, op, got, want)
				}
			}
			counts.take()
			if _, err := im.Hotels.GetByName(ctx, cmpbench.HotelName(42)); err != nil {
				t.Fatal(err)
			}
			check("GetByName", counts.take(), w.getByName)
			page, err := im.Hotels.ListByCityStars(ctx, cmpbench.City(2), cmpbench.MinStars, runtime.PageRequest{Limit: 5})
			if err != nil || len(page.Items) != 5 {
				t.Fatalf("store=%s impl=%s: ListByCityStars: %d hotels, %v", s.suite, im.Name, len(page.Items), err)
			}
			check("ListByCityStars", counts.take(), w.list)
			if err := im.Hotels.SetCity(ctx, cmpbench.NewHotel(42).ID, "elsewhere"); err != nil {
				t.Fatal(err)
			}
			check("SetCity", counts.take(), w.setCity)
		}
	}
}

var ctx = context.Background()
