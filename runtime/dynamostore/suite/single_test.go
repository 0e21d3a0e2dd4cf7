package dynamostore_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
	"github.com/noamgen/noamgen/runtime/dynamostore/dynalitetest"
)

// TestSingleTable: with Options.SingleTable, hotels, posts and their
// comments (keyed by their post and a number) are items of one table; a
// Query of one partition key reads a post and its comments; the table has
// the overloaded GSIs the collections need, and the EnsureIndexes of a
// collection that needs fewer leaves the others' in place.
func TestSingleTable(t *testing.T) {
	sv := dynalitetest.Shared(t)
	prefix := sv.Prefix(t)
	c := sv.Client()
	o := dynamostore.Options{TablePrefix: prefix, SingleTable: "app"}
	table := prefix + "app"

	// Hotel has two GSI lookups (cityStars, address.zip), Post and
	// Comment one (author) each.
	hotels := hotel.NewHotelDynamoRepository(c, o)
	must(t, hotels.EnsureIndexes(ctx))
	posts := hotel.NewPostDynamoRepository(c, o)
	must(t, posts.EnsureIndexes(ctx))
	comments := hotel.NewCommentDynamoRepository(c, o)
	must(t, comments.EnsureIndexes(ctx))

	// No table of the table-per-collection layout.
	for _, n := range []string{"Hotel", "Hotel__index", "Post", "Comment", "Comment__index", dynamostore.CountersTable, dynamostore.SchemaTable} {
		_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(prefix + n)})
		var nf *types.ResourceNotFoundException
		if !errors.As(err, &nf) {
			t.Errorf("table %s: %v, want ResourceNotFoundException", prefix+n, err)
		}
	}
	desc, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	must(t, err)
	var gsis []string
	for _, g := range desc.Table.GlobalSecondaryIndexes {
		gsis = append(gsis, aws.ToString(g.IndexName))
		pk, sk := dynamostore.SingleGSIAttrs(len(gsis))
		if g.KeySchema[0].AttributeName == nil || *g.KeySchema[0].AttributeName != pk || *g.KeySchema[1].AttributeName != sk {
			t.Errorf("GSI %s keyed by %s, %s; want %s, %s", *g.IndexName, aws.ToString(g.KeySchema[0].AttributeName), aws.ToString(g.KeySchema[1].AttributeName), pk, sk)
		}
	}
	slices.Sort(gsis)
	if want := []string{"gsi1", "gsi2"}; !slices.Equal(gsis, want) {
		t.Fatalf("GSIs %v after the EnsureIndexes of Hotel, Post and Comment, want %v (Post's and Comment's, which need one, keep Hotel's two)", gsis, want)
	}

	must(t, hotels.Create(ctx, &hotel.Hotel{ID: "h1", Name: "Grand", City: "Oslo", Stars: 4, Address: hotel.Address{Zip: "0150"}}))
	must(t, hotels.Create(ctx, &hotel.Hotel{ID: "h2", Name: "Small", City: "Oslo", Stars: 2}))
	p := &hotel.Post{Title: "hello", Author: "ann"}
	must(t, posts.Create(ctx, p))
	other := &hotel.Post{Title: "other", Author: "bob"}
	must(t, posts.Create(ctx, other))
	for _, text := range []string{"first", "second"} {
		must(t, comments.Create(ctx, &hotel.Comment{Key: hotel.CommentKey{Post: p.ID}, Author: "bob", Text: text}))
	}
	must(t, comments.Create(ctx, &hotel.Comment{Key: hotel.CommentKey{Post: other.ID}, Author: "ann", Text: "elsewhere"}))

	// One Query of the post's partition key: its comments, then the post
	// (sort key: the collection's name, then the other key components).
	out, err := c.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": dynamostore.PKAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberB{Value: runtime.AppendInt(nil, p.ID)}},
		ConsistentRead:            aws.Bool(true),
	})
	must(t, err)
	var got []string
	for _, item := range out.Items {
		coll := item[dynamostore.CollAttr].(*types.AttributeValueMemberS).Value
		switch coll {
		case "Comment":
			got = append(got, coll+":"+item["text"].(*types.AttributeValueMemberS).Value)
		default:
			got = append(got, coll)
		}
	}
	if want := []string{"Comment:first", "Comment:second", "Post"}; !slices.Equal(got, want) {
		t.Fatalf("Query of post %d's partition key: %v, want %v", p.ID, got, want)
	}

	// Each collection reads its own items of the table.
	if n, err := hotels.Count(ctx); err != nil || n != 2 {
		t.Fatalf("hotels.Count = %d, %v; want 2", n, err)
	}
	if n, err := comments.Count(ctx); err != nil || n != 3 {
		t.Fatalf("comments.Count = %d, %v; want 3", n, err)
	}
	all, err := posts.List(ctx, runtime.PageRequest{Limit: 10})
	must(t, err)
	if len(all.Items) != 2 {
		t.Fatalf("posts.List: %d posts, want 2", len(all.Items))
	}
	page, err := comments.ListByPost(ctx, p.ID, runtime.PageRequest{})
	must(t, err)
	if len(page.Items) != 2 || page.Items[0].Text != "first" || page.Items[1].Text != "second" {
		t.Fatalf("ListByPost(%d): %v", p.ID, page.Items)
	}
	// The scope is the post's partition, read page by page in number
	// order; no scope items are written in the single table.
	first, err := comments.ListByPost(ctx, p.ID, runtime.PageRequest{Limit: 1})
	must(t, err)
	next, err := comments.ListByPost(ctx, p.ID, runtime.PageRequest{Limit: 1, Cursor: first.Next})
	must(t, err)
	if len(first.Items) != 1 || first.Items[0].Text != "first" || len(next.Items) != 1 || next.Items[0].Text != "second" || next.Next != "" {
		t.Fatalf("ListByPost(%d) a comment a page: %v then %v (next %q)", p.ID, first.Items, next.Items, next.Next)
	}
	scopeItems, err := c.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": dynamostore.PKAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberB{Value: append([]byte{1}, runtime.AppendString(runtime.AppendString(runtime.AppendString(nil, "index"), "Comment"), dynamostore.ScopeLookup)...)}},
	})
	must(t, err)
	if len(scopeItems.Items) != 0 {
		t.Fatalf("%d scope items of Comment in the single table, want none", len(scopeItems.Items))
	}
	h, err := hotels.GetByName(ctx, "Grand")
	must(t, err)
	if h.ID != "h1" {
		t.Fatalf("GetByName(Grand) = %s", h.ID)
	}
	if err := hotels.Create(ctx, &hotel.Hotel{ID: "h3", Name: "Grand"}); !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("a second hotel named Grand: %v, want ErrDuplicate", err)
	}
	byAuthor, err := comments.ListByAuthor(ctx, "bob", runtime.PageRequest{})
	must(t, err)
	if len(byAuthor.Items) != 2 {
		t.Fatalf("comments.ListByAuthor(bob): %d, want 2", len(byAuthor.Items))
	}
	byAuthorPosts, err := posts.ListByAuthor(ctx, "bob", runtime.PageRequest{})
	must(t, err)
	if len(byAuthorPosts.Items) != 1 || byAuthorPosts.Items[0].ID != other.ID {
		t.Fatalf("posts.ListByAuthor(bob): %v", byAuthorPosts.Items)
	}
}

// pair is an aggregate whose block key has two string components.
type pair struct {
	K pairKey
	V string
}

type pairKey struct{ A, B string }

var pairDesc = (&runtime.Desc[pair, pairKey]{
	Aggregate: "Pair", Collection: "pairs",
	Keys: runtime.KeyCodec[pairKey]{
		Append: func(b []byte, k pairKey) []byte { return runtime.AppendString(runtime.AppendString(b, k.A), k.B) },
		Read: func(r *runtime.KeyReader) (pairKey, error) {
			a, err := r.String()
			if err != nil {
				return pairKey{}, err
			}
			b, err := r.String()
			return pairKey{a, b}, err
		},
	},
	ID:     func(p *pair) *pairKey { return &p.K },
	Fields: []*runtime.Field[pair]{runtime.NewField("v", "V", func(p *pair) *string { return &p.V })},
}).Init()

// TestSingleTableSortKeyLimit: in the single table a block's sort key
// holds the key components after the first; one over DynamoDB's 1,024
// bytes fails with ErrTooLarge before anything is sent, and the same key
// is taken with a table per collection (its partition key holds 2,048).
func TestSingleTableSortKeyLimit(t *testing.T) {
	sv := dynalitetest.Shared(t)
	prefix := sv.Prefix(t)
	c := sv.Client()
	long := pairKey{A: "a", B: strings.Repeat("b", 1100)}
	l := &logger{}
	logged := sv.Client(func(o *dynamodb.Options) { o.HTTPClient = l })
	r := runtime.NewRepo[pair, pairKey](pairDesc, dynamostore.Open(logged, pairDesc, dynamostore.Options{TablePrefix: prefix, SingleTable: "app"}))
	must(t, r.Ensure(ctx))
	l.mu.Lock()
	l.log = nil
	l.mu.Unlock()
	if err := r.Create(ctx, &pair{K: long, V: "x"}); !errors.Is(err, runtime.ErrTooLarge) {
		t.Fatalf("Create of a block whose sort key holds 1,100 bytes: %v, want ErrTooLarge", err)
	}
	if sent := ops(l.log); len(sent) != 0 {
		t.Fatalf("the refused Create sent %v, want nothing", sent)
	}
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(prefix + "app"), FilterExpression: aws.String("#c = :c"),
		ExpressionAttributeNames:  map[string]string{"#c": dynamostore.CollAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{":c": &types.AttributeValueMemberS{Value: "pairs"}}})
	must(t, err)
	if out.Count != 0 {
		t.Fatalf("the refused Create wrote %d items", out.Count)
	}
	must(t, r.Create(ctx, &pair{K: pairKey{A: "a", B: "short"}, V: "x"}))
	per := runtime.NewRepo[pair, pairKey](pairDesc, dynamostore.Open(c, pairDesc, dynamostore.Options{TablePrefix: prefix}))
	must(t, per.Ensure(ctx))
	must(t, per.Create(ctx, &pair{K: long, V: "x"}))
}
