package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/example/bench/handwritten"
	"github.com/noamgen/noamgen/integration/dyntest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/storetest/evolve/lookupsunique"
)

// handPlayers is the hand-written DynamoDB store of lookupsunique.Player
// (one unique lookup, email) with DynamoDB transactions, the way the AWS
// guidance for unique attributes has it: a player is the item "p#<id>"
// of one table (partition key pk, S), its email claimed by the item
// "email#<email>" of the same table holding the owner's id. Every write
// that claims or releases an email is one TransactWriteItems: the
// player's Put or Update on condition of the email read (or that the
// player does not exist), a Put of the new claim on condition
// attribute_not_exists(pk), a Delete of the old one on condition that it
// is the player's. Reads are strongly consistent GetItems. An empty email
// is not claimed (as the generated lookup indexes no zero value).
//
// Simplifications against the generated store, none of which the
// benchmarks meet: no List or lookup by anything else, no
// repair (a transaction leaves nothing to repair), no size checks.
type handPlayers struct {
	c     *dynamodb.Client
	table string
}

// playerItem is the stored form of a player.
type playerItem struct {
	PK     string                `dynamodbav:"pk"`
	ID     string                `dynamodbav:"id"`
	Name   string                `dynamodbav:"name"`
	Email  string                `dynamodbav:"email"`
	City   string                `dynamodbav:"city"`
	Scores []lookupsunique.Score `dynamodbav:"scores"`
}

func newHandPlayers(ctx context.Context, c *dynamodb.Client, table string) (*handPlayers, error) {
	return &handPlayers{c: c, table: table}, handwritten.CreateDynamoTable(ctx, c, table, "pk", "")
}

func playerPK(id string) string   { return "p#" + id }
func emailPK(email string) string { return "email#" + email }

func pk(v string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: v}}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// claim is the Put of email's claim by player id.
func (h *handPlayers) claim(id, email string) types.TransactWriteItem {
	return types.TransactWriteItem{Put: &types.Put{
		TableName:                aws.String(h.table),
		Item:                     map[string]types.AttributeValue{"pk": s(emailPK(email)), "owner": s(id)},
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": "pk"},
	}}
}

// release is the Delete of email's claim if player id holds it.
func (h *handPlayers) release(id, email string) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(h.table), Key: pk(emailPK(email)),
		ConditionExpression:       aws.String("#o = :id"),
		ExpressionAttributeNames:  map[string]string{"#o": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": s(id)},
	}}
}

// failed returns which actions of a cancelled transaction failed their
// condition (nil if err is no cancellation).
func failed(err error) []bool {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return nil
	}
	out := make([]bool, len(tc.CancellationReasons))
	for i, r := range tc.CancellationReasons {
		out[i] = aws.ToString(r.Code) == "ConditionalCheckFailed"
	}
	return out
}

// Get reads a player: one GetItem.
func (h *handPlayers) Get(ctx context.Context, id string) (*lookupsunique.Player, error) {
	out, err := h.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(h.table), Key: pk(playerPK(id)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("get %s: %w", id, runtime.ErrNotFound)
	}
	var it playerItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, err
	}
	return &lookupsunique.Player{ID: it.ID, Name: it.Name, Email: it.Email, City: it.City, Scores: it.Scores}, nil
}

// GetByEmail reads the player holding email: the claim, then the player.
func (h *handPlayers) GetByEmail(ctx context.Context, email string) (*lookupsunique.Player, error) {
	out, err := h.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(h.table), Key: pk(emailPK(email)), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	owner, ok := out.Item["owner"].(*types.AttributeValueMemberS)
	if !ok {
		return nil, fmt.Errorf("get by email %q: %w", email, runtime.ErrNotFound)
	}
	return h.Get(ctx, owner.Value)
}

// Create stores a new player and claims its email: one
// TransactWriteItems. An existing player or a taken email is
// runtime.ErrDuplicate.
func (h *handPlayers) Create(ctx context.Context, p *lookupsunique.Player) error {
	item, err := attributevalue.MarshalMap(&playerItem{PK: playerPK(p.ID), ID: p.ID, Name: p.Name, Email: p.Email, City: p.City, Scores: p.Scores})
	if err != nil {
		return err
	}
	tx := []types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String(h.table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": "pk"},
	}}}
	if p.Email != "" {
		tx = append(tx, h.claim(p.ID, p.Email))
	}
	_, err = h.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
	switch f := failed(err); {
	case len(f) > 0 && f[0]:
		return fmt.Errorf("create %s: %w", p.ID, runtime.ErrDuplicate)
	case len(f) > 1 && f[1]:
		return fmt.Errorf("create %s: email %q: %w", p.ID, p.Email, runtime.ErrDuplicate)
	}
	return err
}

// Delete removes a player and releases its email: a GetItem of the
// email, then one TransactWriteItems (on condition that the email is
// still the one read).
func (h *handPlayers) Delete(ctx context.Context, id string) error {
	for range 100 {
		out, err := h.c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(h.table), Key: pk(playerPK(id)), ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("#e"), ExpressionAttributeNames: map[string]string{"#e": "email"},
		})
		if err != nil {
			return err
		}
		if len(out.Item) == 0 {
			return fmt.Errorf("delete %s: %w", id, runtime.ErrNotFound)
		}
		e, _ := out.Item["email"].(*types.AttributeValueMemberS)
		if e == nil {
			e = &types.AttributeValueMemberS{}
		}
		tx := []types.TransactWriteItem{{Delete: &types.Delete{
			TableName: aws.String(h.table), Key: pk(playerPK(id)),
			ConditionExpression:       aws.String("#e = :old"),
			ExpressionAttributeNames:  map[string]string{"#e": "email"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":old": e},
		}}}
		if e.Value != "" {
			tx = append(tx, h.release(id, e.Value))
		}
		_, err = h.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
		if f := failed(err); f == nil || !f[0] {
			return err
		}
	}
	return fmt.Errorf("delete %s: changed concurrently 100 times in a row: %w", id, runtime.ErrConflict)
}

// Put creates or replaces a player: a GetItem of its email, then one
// TransactWriteItems of the player (on condition that its email is still
// the one read, or that it does not exist) and, if the email changes, the
// new claim and the old one's release. A write between the two is met by
// reading again.
func (h *handPlayers) Put(ctx context.Context, p *lookupsunique.Player) error {
	item, err := attributevalue.MarshalMap(&playerItem{PK: playerPK(p.ID), ID: p.ID, Name: p.Name, Email: p.Email, City: p.City, Scores: p.Scores})
	if err != nil {
		return err
	}
	return h.write(ctx, "put", p.ID, p.Email, true, func(old *string) types.TransactWriteItem {
		put := &types.Put{TableName: aws.String(h.table), Item: item, ExpressionAttributeNames: map[string]string{"#pk": "pk"}}
		if old == nil {
			put.ConditionExpression = aws.String("attribute_not_exists(#pk)")
		} else {
			put.ConditionExpression = aws.String("#e = :old")
			put.ExpressionAttributeNames = map[string]string{"#e": "email"}
			put.ExpressionAttributeValues = map[string]types.AttributeValue{":old": s(*old)}
		}
		return types.TransactWriteItem{Put: put}
	})
}

// SetEmail sets a player's email: a GetItem of the old one, then one
// TransactWriteItems of the player's UpdateItem (on condition that its
// email is still the one read), the new claim and the old one's release.
func (h *handPlayers) SetEmail(ctx context.Context, id, email string) error {
	return h.write(ctx, "set email", id, email, false, func(old *string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{
			TableName: aws.String(h.table), Key: pk(playerPK(id)),
			UpdateExpression:          aws.String("SET #e = :new"),
			ConditionExpression:       aws.String("#e = :old"),
			ExpressionAttributeNames:  map[string]string{"#e": "email"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":new": s(email), ":old": s(*old)},
		}}
	})
}

// write reads player id's email (nil: no player; an error unless upsert)
// and sends the transaction of the player's write (block, given the
// email read), the claim of email and the release of the old one.
func (h *handPlayers) write(ctx context.Context, op, id, email string, upsert bool, block func(old *string) types.TransactWriteItem) error {
	for range 100 {
		out, err := h.c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(h.table), Key: pk(playerPK(id)), ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("#e"), ExpressionAttributeNames: map[string]string{"#e": "email"},
		})
		if err != nil {
			return err
		}
		var old *string
		if e, ok := out.Item["email"].(*types.AttributeValueMemberS); ok {
			old = &e.Value
		} else if len(out.Item) > 0 {
			old = new(string)
		}
		if old == nil && !upsert {
			return fmt.Errorf("%s %s: %w", op, id, runtime.ErrNotFound)
		}
		tx := []types.TransactWriteItem{block(old)}
		claimAt := -1
		if old == nil || *old != email {
			if email != "" {
				claimAt = len(tx)
				tx = append(tx, h.claim(id, email))
			}
			if old != nil && *old != "" {
				tx = append(tx, h.release(id, *old))
			}
		}
		_, err = h.c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tx})
		f := failed(err)
		switch {
		case f == nil:
			return err
		case claimAt > 0 && f[claimAt]:
			return fmt.Errorf("%s %s: email %q: %w", op, id, email, runtime.ErrDuplicate)
		case !f[0]:
			return err
		}
		// The player changed since it was read: again.
	}
	return fmt.Errorf("%s %s: changed concurrently 100 times in a row: %w", op, id, runtime.ErrConflict)
}

// uniquePlayers is what the unique-write comparison calls: the methods
// of lookupsunique.PlayerRepository that handPlayers has.
type uniquePlayers interface {
	Get(ctx context.Context, id string) (*lookupsunique.Player, error)
	GetByEmail(ctx context.Context, email string) (*lookupsunique.Player, error)
	Create(ctx context.Context, p *lookupsunique.Player) error
	Put(ctx context.Context, p *lookupsunique.Player) error
	SetEmail(ctx context.Context, id, email string) error
	Delete(ctx context.Context, id string) error
}

// uniqueImpl is one side of the comparison, over a minidyn of its own
// (or NOAM_DYNAMO_ENDPOINT), with its client's request count.
type uniqueImpl struct {
	name string
	repo uniquePlayers
	sent *atomic.Int64
}

// openUnique returns the generated players (transactions on) and the
// hand-written ones, each over a server of its own.
func openUnique(tb testing.TB) []uniqueImpl {
	ctx := context.Background()
	var out []uniqueImpl
	for _, name := range []string{"gen", "hand"} {
		srv := dyntest.Start(tb)
		sent := new(atomic.Int64)
		c := srv.Client(func(o *dynamodb.Options) {
			next := o.HTTPClient
			if next == nil {
				next = awshttp.NewBuildableClient()
			}
			o.HTTPClient = countRequests{next, sent}
		})
		var repo uniquePlayers
		if name == "gen" {
			r := lookupsunique.NewPlayerDynamoRepository(c, dynamostore.Options{TablePrefix: srv.Prefix(tb), Transactions: dynamostore.TxOn})
			if err := r.EnsureIndexes(ctx); err != nil {
				tb.Fatal(err)
			}
			repo = r
		} else {
			h, err := newHandPlayers(ctx, c, srv.Prefix(tb)+"players")
			if err != nil {
				tb.Fatal(err)
			}
			repo = h
		}
		out = append(out, uniqueImpl{name: name, repo: repo, sent: sent})
	}
	return out
}

// newPlayer is player id with email.
func newPlayer(id, email string) *lookupsunique.Player {
	return &lookupsunique.Player{ID: id, Name: "Player " + id, Email: email, City: "Rome", Scores: []lookupsunique.Score{{Game: "g1", Points: 3}, {Game: "g2", Points: 5}}}
}

// BenchmarkCmpUniqueTxDynamo compares the generated writes that claim a
// unique value in one transaction (Options.Transactions TxOn) with the
// hand-written TransactWriteItems of handPlayers, on minidyn: Create of
// a new player (claims its email), Put of a player with a new email and
// SetEmail (each claims the new email and releases the old one). minidyn
// answers in the process: time and allocations include the server's,
// and its TransactWriteItems copies the tables it touches, a cost that
// grows with them; so each op runs on fresh servers, and the players
// Create makes are deleted again (untimed), so that the tables stay at
// a player or two on both sides:
//
//	cd integration && go test ./bench -run '^$' -bench CmpUniqueTxDynamo -benchmem -benchtime 300x -count 6
func BenchmarkCmpUniqueTxDynamo(b *testing.B) {
	ctx := context.Background()
	n := 0 // b.Run runs its function more than once: ids and emails stay new
	next := func() int { n++; return n }
	for _, op := range []string{"Create", "Put", "SetEmail"} {
		b.Run("op="+op, func(b *testing.B) {
			for _, im := range openUnique(b) {
				b.Run("impl="+im.name, func(b *testing.B) {
					var p *lookupsunique.Player
					if op != "Create" {
						k := next()
						p = newPlayer(fmt.Sprintf("%s-%d", op, k), fmt.Sprintf("%s-%d@example.com", op, k))
						if err := im.repo.Create(ctx, p); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportAllocs()
					var sent int64
					b.ResetTimer()
					for range b.N {
						k := next()
						n0 := im.sent.Load()
						var err error
						switch op {
						case "Create":
							id := fmt.Sprintf("c-%d", k)
							if err = im.repo.Create(ctx, newPlayer(id, fmt.Sprintf("c-%d@example.com", k))); err == nil {
								sent += im.sent.Load() - n0
								b.StopTimer()
								err = im.repo.Delete(ctx, id)
								b.StartTimer()
								n0 = im.sent.Load()
							}
						case "Put":
							p.Email = fmt.Sprintf("p-%d@example.com", k)
							err = im.repo.Put(ctx, p)
						case "SetEmail":
							err = im.repo.SetEmail(ctx, p.ID, fmt.Sprintf("s-%d@example.com", k))
						}
						if err != nil {
							b.Fatal(err)
						}
						sent += im.sent.Load() - n0
					}
					b.StopTimer()
					b.ReportMetric(float64(sent)/float64(b.N), "requests/op")
				})
			}
		})
	}
}

// TestCmpUniqueTxBaseline checks that handPlayers does what the
// generated players with transactions do: the same results, the same
// runtime errors, the same writes refused, and the same number of
// requests per write (no timings).
func TestCmpUniqueTxBaseline(t *testing.T) {
	ctx := context.Background()
	for _, im := range openUnique(t) {
		r := im.repo
		must := func(what string, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %s: %v", im.name, what, err)
			}
		}
		want := func(what string, err, kind error) {
			t.Helper()
			if !errors.Is(err, kind) {
				t.Errorf("%s: %s: %v, want %v", im.name, what, err, kind)
			}
		}
		requests := func(what string, n int64) {
			t.Helper()
			if got := im.sent.Swap(0); got != n {
				t.Errorf("%s: %s sent %d requests, want %d", im.name, what, got, n)
			}
		}
		holder := func(email, id string) {
			t.Helper()
			p, err := r.GetByEmail(ctx, email)
			if id == "" {
				want("GetByEmail("+email+")", err, runtime.ErrNotFound)
				return
			}
			if err != nil || p.ID != id || p.Email != email {
				t.Errorf("%s: GetByEmail(%s) = %+v, %v, want %s", im.name, email, p, err, id)
			}
		}
		im.sent.Store(0)
		must("Create a", r.Create(ctx, newPlayer("a", "a@x")))
		requests("Create", 1)
		want("Create of a taken email", r.Create(ctx, newPlayer("b", "a@x")), runtime.ErrDuplicate)
		want("Create of an existing player", r.Create(ctx, newPlayer("a", "other@x")), runtime.ErrDuplicate)
		_, err := r.Get(ctx, "b")
		want("Get of the refused player", err, runtime.ErrNotFound)
		holder("other@x", "")
		holder("a@x", "a")

		im.sent.Store(0)
		must("SetEmail a", r.SetEmail(ctx, "a", "a2@x"))
		requests("SetEmail", 2)
		holder("a@x", "")
		holder("a2@x", "a")
		must("Create c with a's old email", r.Create(ctx, newPlayer("c", "a@x")))
		want("SetEmail to a taken email", r.SetEmail(ctx, "c", "a2@x"), runtime.ErrDuplicate)
		want("SetEmail of a missing player", r.SetEmail(ctx, "nobody", "n@x"), runtime.ErrNotFound)
		holder("a@x", "c")

		p := newPlayer("c", "c2@x")
		p.City = "Oslo"
		im.sent.Store(0)
		must("Put c with a new email", r.Put(ctx, p))
		requests("Put", 2)
		holder("a@x", "")
		holder("c2@x", "c")
		if got, err := r.Get(ctx, "c"); err != nil || got.City != "Oslo" || len(got.Scores) != 2 || got.Scores[1].Points != 5 {
			t.Errorf("%s: Get(c) after Put = %+v, %v", im.name, got, err)
		}
		want("Put of a new player with a taken email", r.Put(ctx, newPlayer("d", "c2@x")), runtime.ErrDuplicate)
		_, err = r.Get(ctx, "d")
		want("Get of the refused Put's player", err, runtime.ErrNotFound)
		must("Put of a new player", r.Put(ctx, newPlayer("d", "d@x")))
		holder("d@x", "d")
		holder("c2@x", "c")

		im.sent.Store(0)
		must("Delete d", r.Delete(ctx, "d"))
		requests("Delete", 2)
		holder("d@x", "")
		want("Delete of a missing player", r.Delete(ctx, "d"), runtime.ErrNotFound)
		must("Create with the deleted player's email", r.Create(ctx, newPlayer("e", "d@x")))
		holder("d@x", "e")
	}
}
