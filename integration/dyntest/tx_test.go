package dyntest

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// ops counts a client's requests by operation (X-Amz-Target).
type ops struct {
	mu   sync.Mutex
	sent map[string]int
	next aws.HTTPClient
}

func (o *ops) Do(r *http.Request) (*http.Response, error) {
	t := r.Header.Get("X-Amz-Target")
	o.mu.Lock()
	o.sent[t[strings.LastIndexByte(t, '.')+1:]]++
	o.mu.Unlock()
	return o.next.Do(r)
}

// take returns the counts since the last take.
func (o *ops) take() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.sent
	o.sent = map[string]int{}
	return m
}

// open returns a Match repository over a fresh minidyn with transactions
// tx, its client's request counts and the index table's name.
func open(t *testing.T, tx dynamostore.Tx) (*model.MatchDynamoRepository, *ops, string) {
	t.Helper()
	srv := Start(t)
	counts := &ops{sent: map[string]int{}}
	c := srv.Client(func(o *dynamodb.Options) {
		counts.next = o.HTTPClient
		if counts.next == nil {
			counts.next = awshttp.NewBuildableClient()
		}
		o.HTTPClient = counts
	})
	prefix := srv.Prefix(t)
	repo := model.NewMatchDynamoRepository(c, dynamostore.Options{TablePrefix: prefix, Transactions: tx})
	if err := repo.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	counts.take()
	return repo, counts, prefix + dynamostore.IndexTable("matches")
}

func want[V comparable](t *testing.T, step string, got, want map[string]V) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s sent %v, want %v", step, got, want)
	}
}

// holders returns, per unique code, the block key (as a string) of its
// claim in index table table.
func holders(t *testing.T, c *dynamodb.Client, table string) map[string]string {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	claims := map[string]string{}
	for _, it := range out.Items {
		if p := it["p"].(*types.AttributeValueMemberS).Value; p != "code" {
			continue
		}
		k := it["k"].(*types.AttributeValueMemberB).Value
		id := it["id"].(*types.AttributeValueMemberB).Value
		claims[runtime.FormatKey(k)] = runtime.FormatKey(id)
	}
	return claims
}

// TestTransactions checks that with transactions (auto-detected on
// minidyn) a write that claims or releases unique values is exactly one
// TransactWriteItems of the block and its index items: a Create, a
// duplicate that writes nothing, an update that moves a unique value
// (releasing the old claim in the same request), a Delete that releases
// the block's claims.
func TestTransactions(t *testing.T) {
	ctx := context.Background()
	repo, counts, index := open(t, dynamostore.TxAuto)
	c := repo.Client()
	code := func(s string) string { return runtime.FormatKey(runtime.AppendString(nil, s)) }
	id := code

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(repo.Create(ctx, &model.Match{ID: "m1", Code: "c1", Region: "r", Level: 1, Tags: []string{"a", "b"}}))
	want(t, "Create", counts.take(), map[string]int{"TransactWriteItems": 1})

	err := repo.Create(ctx, &model.Match{ID: "m2", Code: "c1", Tags: []string{"z"}})
	if !errors.Is(err, runtime.ErrDuplicate) || !strings.Contains(err.Error(), "code") || !strings.Contains(err.Error(), "c1") {
		t.Fatalf("Create of a taken code: %v, want ErrDuplicate naming lookup code and its value", err)
	}
	got := counts.take()
	if got["TransactWriteItems"] != 1 || got["PutItem"]+got["UpdateItem"]+got["DeleteItem"] != 0 {
		t.Errorf("the duplicate Create sent %v, want one TransactWriteItems and reads", got)
	}
	if _, err := repo.Get(ctx, "m2"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("the refused Create wrote block m2: %v", err)
	}
	if l, err := repo.ListByTags(ctx, "z", runtime.PageRequest{}); err != nil || len(l.Items) != 0 {
		t.Errorf("the refused Create wrote index items: ListByTags z = %v, %v", l, err)
	}
	want(t, "claims after the duplicate", holders(t, c, index), map[string]string{code("c1"): id("m1")})
	counts.take()

	must(repo.SetCode(ctx, "m1", "c2"))
	want(t, "SetCode", counts.take(), map[string]int{"GetItem": 1, "TransactWriteItems": 1})
	want(t, "claims after SetCode", holders(t, c, index), map[string]string{code("c2"): id("m1")})
	must(repo.Create(ctx, &model.Match{ID: "m3", Code: "c1"}))
	m, err := repo.Get(ctx, "m3")
	must(err)
	m.Code = "c3"
	counts.take()
	must(repo.Put(ctx, m))
	want(t, "Put", counts.take(), map[string]int{"GetItem": 1, "TransactWriteItems": 1})
	want(t, "claims after Put", holders(t, c, index), map[string]string{code("c2"): id("m1"), code("c3"): id("m3")})
	counts.take()

	must(repo.Delete(ctx, "m1"))
	want(t, "Delete", counts.take(), map[string]int{"GetItem": 1, "TransactWriteItems": 1})
	want(t, "claims after Delete", holders(t, c, index), map[string]string{code("c3"): id("m3")})
	if l, err := repo.ListByTags(ctx, "a", runtime.PageRequest{}); err != nil || len(l.Items) != 0 {
		t.Errorf("Delete left index items: ListByTags a = %v, %v", l, err)
	}
	must(repo.Create(ctx, &model.Match{ID: "m4", Code: "c2"}))
	if got, err := repo.GetByCode(ctx, "c2"); err != nil || got.ID != "m4" {
		t.Errorf("GetByCode c2 after its holder's Delete and a new Create: %v, %v", got, err)
	}
}

// TestTransactionsOff checks that TxOff keeps the protocol on the same
// endpoint: no TransactWriteItems, the index items in requests of their
// own.
func TestTransactionsOff(t *testing.T) {
	ctx := context.Background()
	repo, counts, _ := open(t, dynamostore.TxOff)
	if err := repo.Create(ctx, &model.Match{ID: "m1", Code: "c1", Tags: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if got := counts.take(); got["TransactWriteItems"] != 0 || got["PutItem"] < 2 {
		t.Errorf("Create with TxOff sent %v, want the index items and the block in PutItems of their own", got)
	}
	if err := repo.Create(ctx, &model.Match{ID: "m2", Code: "c1"}); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("Create of a taken code: %v, want ErrDuplicate", err)
	}
	if got := counts.take(); got["TransactWriteItems"] != 0 {
		t.Errorf("TxOff sent %v", got)
	}
}
