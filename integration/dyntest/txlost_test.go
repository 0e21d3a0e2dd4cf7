package dyntest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/noamgen/noamgen/runtime/storetest/evolve/etf"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// Faults of the batch transactions (runtime/dynamostore/txbatch.go): a
// transport in front of minidyn loses the replies of chosen
// TransactWriteItems requests. The clients have the SDK's retryer off
// (aws.NopRetryer), so that each send of the adapter is one request: the
// default retryer would first resend a request whose reply was lost
// itself, with the same body and so the same ClientRequestToken.

// loss is what the transport does with one TransactWriteItems request.
type loss int

const (
	deliver     loss = iota
	dropReply        // the server applies it, the client gets an error
	dropRequest      // the server never sees it, the client gets an error
)

// errLost is the transport error of a lost request or reply.
var errLost = errors.New("read tcp: connection reset by peer (dyntest: lost on purpose)")

// lossy loses the TransactWriteItems requests or replies that plan says
// (by their number, from 1), and records the token of each.
type lossy struct {
	next   aws.HTTPClient
	plan   func(n int) loss
	mu     sync.Mutex
	tokens []string
}

func (l *lossy) Do(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".TransactWriteItems") {
		return l.next.Do(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	var in struct{ ClientRequestToken string }
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.tokens = append(l.tokens, in.ClientRequestToken)
	n := len(l.tokens)
	l.mu.Unlock()
	switch l.plan(n) {
	case dropRequest:
		return nil, errLost
	case dropReply:
		resp, err := l.next.Do(r)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("the request whose reply is dropped failed: %s", resp.Status)
		}
		return nil, errLost
	}
	return l.next.Do(r)
}

// take returns the tokens of the TransactWriteItems requests since the
// last take, and has the next ones delivered.
func (l *lossy) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.tokens
	l.tokens = nil
	l.plan = func(int) loss { return deliver }
	return t
}

// lose has the next TransactWriteItems requests treated as plan says
// (numbered from 1).
func (l *lossy) lose(plan func(n int) loss) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = nil
	l.plan = plan
}

// lossyClient returns a client of a fresh minidyn with transport l and
// the SDK's retryer off, and a table prefix.
func lossyClient(t *testing.T) (*dynamodb.Client, *lossy, string) {
	t.Helper()
	srv := Start(t)
	l := &lossy{plan: func(int) loss { return deliver }}
	c := srv.Client(func(o *dynamodb.Options) {
		l.next = o.HTTPClient
		if l.next == nil {
			l.next = awshttp.NewBuildableClient()
		}
		o.HTTPClient = l
		o.Retryer = aws.NopRetryer{}
	})
	return c, l, srv.Prefix(t)
}

// openLossy returns a Match repository with transactions over a fresh
// minidyn behind a lossy transport.
func openLossy(t *testing.T) (*model.MatchDynamoRepository, *lossy, string) {
	t.Helper()
	c, l, prefix := lossyClient(t)
	repo := model.NewMatchDynamoRepository(c, dynamostore.Options{TablePrefix: prefix, Transactions: dynamostore.TxOn})
	if err := repo.EnsureIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	return repo, l, prefix + dynamostore.IndexTable("matches")
}

// sends checks that the TransactWriteItems requests sent were n, all
// with one token.
func sends(t *testing.T, step string, tokens []string, n int) {
	t.Helper()
	if len(tokens) != n {
		t.Fatalf("%s sent %d TransactWriteItems, want %d", step, len(tokens), n)
	}
	for _, tok := range tokens {
		if tok == "" || tok != tokens[0] {
			t.Fatalf("%s sent the tokens %q, want one token for every send", step, tokens)
		}
	}
}

// codes checks which block holds each unique code, and that each Match
// is at its version.
func codes(t *testing.T, step string, repo *model.MatchDynamoRepository, index string, want map[string]string, versions map[string]int64) {
	t.Helper()
	code := func(s string) string { return runtime.FormatKey(runtime.AppendString(nil, s)) }
	w := map[string]string{}
	for c, id := range want {
		w[code(c)] = code(id)
	}
	ctx := context.Background()
	got := holders(t, repo.Client(), index)
	if fmt.Sprint(got) != fmt.Sprint(w) {
		t.Errorf("%s: claims %v, want %v", step, got, w)
	}
	for c, id := range want {
		if m, err := repo.GetByCode(ctx, c); err != nil || m.ID != id {
			t.Errorf("%s: GetByCode(%s) = %v, %v, want %s", step, c, m, err, id)
		}
	}
	for id, v := range versions {
		m, err := repo.Get(ctx, id)
		if err != nil || m.Version != v {
			t.Errorf("%s: Get(%s) = %v, %v, want version %d", step, id, m, err, v)
		}
	}
}

// TestBatchTxLostReply checks that a batch transaction whose reply is
// lost is sent once more with the same ClientRequestToken and applied
// once: the items succeed, at the versions of one write, with no
// ErrDuplicate of their own claims (the harness answers the second send
// as DynamoDB answers a token it has applied: dyntest.go).
func TestBatchTxLostReply(t *testing.T) {
	ctx := context.Background()
	repo, l, index := openLossy(t)
	firstLost := func(n int) loss {
		if n == 1 {
			return dropReply
		}
		return deliver
	}

	ms := matches(0, 3, true)
	l.lose(firstLost)
	if err := repo.CreateMany(ctx, ms); err != nil {
		t.Fatalf("CreateMany with a lost reply: %v", err)
	}
	sends(t, "CreateMany", l.take(), 2)
	for _, m := range ms {
		if m.Version != 1 {
			t.Errorf("CreateMany left %s at version %d, want 1", m.ID, m.Version)
		}
	}
	codes(t, "after CreateMany", repo, index, map[string]string{"c0": "m0", "c1": "m1", "c2": "m2"}, map[string]int64{"m0": 1, "m1": 1, "m2": 1})

	// Codes moved: each claims a new one and releases its old one.
	for i, m := range ms {
		m.Code = fmt.Sprintf("n%d", i)
	}
	l.lose(firstLost)
	if err := repo.PutMany(ctx, ms); err != nil {
		t.Fatalf("PutMany with a lost reply: %v", err)
	}
	sends(t, "PutMany", l.take(), 2)
	for _, m := range ms {
		if m.Version != 2 {
			t.Errorf("PutMany left %s at version %d, want 2", m.ID, m.Version)
		}
	}
	codes(t, "after PutMany", repo, index, map[string]string{"n0": "m0", "n1": "m1", "n2": "m2"}, map[string]int64{"m0": 2, "m1": 2, "m2": 2})

	l.lose(firstLost)
	if err := repo.DeleteMany(ctx, []string{"m0", "m1"}); err != nil {
		t.Fatalf("DeleteMany with a lost reply: %v", err)
	}
	sends(t, "DeleteMany", l.take(), 2)
	codes(t, "after DeleteMany", repo, index, map[string]string{"n2": "m2"}, map[string]int64{"m2": 2})
	for _, id := range []string{"m0", "m1"} {
		if _, err := repo.Get(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Get(%s) after DeleteMany: %v, want ErrNotFound", id, err)
		}
	}
	if page, err := repo.ListByTags(ctx, "t", runtime.PageRequest{}); err != nil || len(page.Items) != 1 || page.Items[0].ID != "m2" {
		t.Errorf("ListByTags(t) after DeleteMany = %v, %v, want m2 alone", page.Items, err)
	}
}

// TestBatchTxLostTwice checks the second lost reply: the blocks are read
// back, and a transaction that was applied (its blocks carry its
// stamps) leaves its items done; one that was not (its requests lost)
// leaves them runtime.ErrUnknownOutcome, with nothing written.
func TestBatchTxLostTwice(t *testing.T) {
	ctx := context.Background()
	repo, l, index := openLossy(t)
	twice := func(kind loss) func(int) loss {
		return func(n int) loss {
			if n <= 2 {
				return kind
			}
			return deliver
		}
	}

	// Applied: both replies lost.
	ms := matches(0, 3, true)
	l.lose(twice(dropReply))
	if err := repo.CreateMany(ctx, ms); err != nil {
		t.Fatalf("CreateMany applied, both replies lost: %v, want it read back as done", err)
	}
	sends(t, "CreateMany", l.take(), 2)
	for _, m := range ms {
		if m.Version != 1 {
			t.Errorf("CreateMany read back left %s at version %d, want 1", m.ID, m.Version)
		}
	}
	codes(t, "after CreateMany", repo, index, map[string]string{"c0": "m0", "c1": "m1", "c2": "m2"}, map[string]int64{"m0": 1, "m1": 1, "m2": 1})

	ms[0].Code = "n0"
	l.lose(twice(dropReply))
	if err := repo.PutMany(ctx, ms[:2]); err != nil {
		t.Fatalf("PutMany applied, both replies lost: %v, want it read back as done", err)
	}
	sends(t, "PutMany", l.take(), 2)
	if ms[0].Version != 2 || ms[1].Version != 2 {
		t.Errorf("PutMany read back left versions %d, %d, want 2", ms[0].Version, ms[1].Version)
	}
	codes(t, "after PutMany", repo, index, map[string]string{"n0": "m0", "c1": "m1", "c2": "m2"}, map[string]int64{"m0": 2, "m1": 2, "m2": 1})

	l.lose(twice(dropReply))
	if err := repo.DeleteMany(ctx, []string{"m1"}); err != nil {
		t.Fatalf("DeleteMany applied, both replies lost: %v, want it read back as done", err)
	}
	sends(t, "DeleteMany", l.take(), 2)
	codes(t, "after DeleteMany", repo, index, map[string]string{"n0": "m0", "c2": "m2"}, map[string]int64{"m0": 2, "m2": 1})

	// Not applied: both requests lost.
	fresh := matches(10, 2, false)
	l.lose(twice(dropRequest))
	errs := batchErrs(t, repo.CreateMany(ctx, fresh))
	sends(t, "CreateMany not applied", l.take(), 2)
	for i, m := range fresh {
		if !errors.Is(errs[i], runtime.ErrUnknownOutcome) {
			t.Errorf("CreateMany not applied: item %d: %v, want ErrUnknownOutcome", i, errs[i])
		}
		if m.Version != 0 {
			t.Errorf("CreateMany not applied set %s's version to %d", m.ID, m.Version)
		}
		if _, err := repo.Get(ctx, m.ID); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Get(%s) after the lost CreateMany: %v, want ErrNotFound", m.ID, err)
		}
	}
	ms[0].Code = "x0"
	l.lose(twice(dropRequest))
	errs = batchErrs(t, repo.PutMany(ctx, ms[:1]))
	sends(t, "PutMany not applied", l.take(), 2)
	if !errors.Is(errs[0], runtime.ErrUnknownOutcome) {
		t.Errorf("PutMany not applied: %v, want ErrUnknownOutcome", errs[0])
	}
	if ms[0].Version != 2 {
		t.Errorf("PutMany not applied set m0's version to %d, want it left at 2", ms[0].Version)
	}
	l.lose(twice(dropRequest))
	errs = batchErrs(t, repo.DeleteMany(ctx, []string{"m2"}))
	sends(t, "DeleteMany not applied", l.take(), 2)
	if !errors.Is(errs[0], runtime.ErrUnknownOutcome) {
		t.Errorf("DeleteMany not applied: %v, want ErrUnknownOutcome", errs[0])
	}
	codes(t, "after the lost writes", repo, index, map[string]string{"n0": "m0", "c2": "m2"}, map[string]int64{"m0": 2, "m2": 1})
}

// TestBatchTxLostTwiceNoStamps checks the second lost reply of a batch of
// blocks without stamps (an aggregate without an index table): nothing
// tells whether the transaction was applied, so its items are
// runtime.ErrUnknownOutcome although it was.
func TestBatchTxLostTwiceNoStamps(t *testing.T) {
	ctx := context.Background()
	c, l, prefix := lossyClient(t)
	repo := etf.NewPlayerDynamoRepository(c, dynamostore.Options{TablePrefix: prefix, Transactions: dynamostore.TxOn})
	if err := repo.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	ps := []*etf.Player{{ID: "a", Name: "Ann"}, {ID: "b", Name: "Bob"}}
	l.lose(func(n int) loss {
		if n <= 2 {
			return dropReply
		}
		return deliver
	})
	errs := batchErrs(t, repo.CreateMany(ctx, ps))
	sends(t, "CreateMany", l.take(), 2)
	for i := range ps {
		if !errors.Is(errs[i], runtime.ErrUnknownOutcome) {
			t.Errorf("item %d: %v, want ErrUnknownOutcome", i, errs[i])
		}
		if p, err := repo.Get(ctx, ps[i].ID); err != nil || p.Name != ps[i].Name {
			t.Errorf("Get(%s) = %v, %v: the transaction was applied", ps[i].ID, p, err)
		}
	}
}

// TestIdempotentTokens checks the harness's ClientRequestToken against
// DynamoDB's documented behaviour: the same transaction sent again with
// the token of one that succeeded succeeds and applies nothing; other
// parameters under that token are IdempotentParameterMismatchException;
// without a token it is applied again (here: its condition fails).
func TestIdempotentTokens(t *testing.T) {
	ctx := context.Background()
	srv := Start(t)
	if srv.External {
		t.Skip("checks the harness's answers, not an external endpoint's")
	}
	c := srv.Client()
	table := srv.Prefix(t) + "tokens"
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	tx := func(id, token string) *dynamodb.TransactWriteItemsInput {
		in := &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{{Update: &types.Update{
			TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
			UpdateExpression:          aws.String("SET n = if_not_exists(n, :zero) + :one"),
			ConditionExpression:       aws.String("attribute_not_exists(n)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":zero": &types.AttributeValueMemberN{Value: "0"}, ":one": &types.AttributeValueMemberN{Value: "1"}},
		}}}}
		if token != "" {
			in.ClientRequestToken = aws.String(token)
		}
		return in
	}
	if _, err := c.TransactWriteItems(ctx, tx("a", "tok-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TransactWriteItems(ctx, tx("a", "tok-1")); err != nil {
		t.Errorf("the same transaction and token again: %v, want success", err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := out.Item["n"].(*types.AttributeValueMemberN); n == nil || n.Value != "1" {
		t.Errorf("after the resend n = %v, want 1 (applied once)", out.Item["n"])
	}
	var mismatch *types.IdempotentParameterMismatchException
	if _, err := c.TransactWriteItems(ctx, tx("b", "tok-1")); !errors.As(err, &mismatch) {
		t.Errorf("another transaction with a used token: %v, want IdempotentParameterMismatchException", err)
	}
	var tc *types.TransactionCanceledException
	if _, err := c.TransactWriteItems(ctx, tx("a", "")); !errors.As(err, &tc) {
		t.Errorf("the transaction again without a token: %v, want it cancelled by its condition", err)
	}
}
