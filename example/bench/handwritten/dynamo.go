package handwritten

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
)

// The hand-written aws-sdk-go-v2 DynamoDB stores.
//
// A game is one item of its table (partition key id, S), marshalled with
// attributevalue.MarshalMap: firstPlayer, secondPlayer, rounds (a list of
// maps) and version (a number). Every write is one request whose
// ConditionExpression checks the version (or that the item exists), so a
// write is atomic without transactions, as in runtime/dynamostore.
//
// A hotel is one item of its table, with a write sequence (seq). Its two
// lookups are items of an index table (partition key p, sort key k, both
// S): the unique name as p "name:<name>", k "-", and city and stars as p
// "cityStars:<city>", k "<stars key><id>" (a partition per city, in
// (stars, id) order). Without transactions the index is kept by the
// protocol of runtime/dynamostore: a write adds the new index items
// first (a unique one with attribute_not_exists), then writes the hotel on
// condition that its seq is the one read (a failed write removes the
// items it added), then removes the old items; reads check every hotel
// against the index item that led to it and skip the stale ones.
//
// Deliberate simplifications against the generated store, none of which
// a benchmark exercises: a name claim left by a crashed Create stays
// until removed by hand (the generated store takes over a stale claim
// after dynamostore.StaleAfter); stale index items are skipped, not
// removed, by reads; there is no Repair; hotels have no Delete, so there
// are no incarnations to tell apart; names and cities must be non-empty
// and short enough for a key (2 KB); only the two lookups the benchmarks
// read are kept (the generated store also keeps tags and addressZip).

// condFailed reports a failed ConditionExpression.
func condFailed(err error) bool {
	var ce *types.ConditionalCheckFailedException
	return errors.As(err, &ce)
}

// CreateDynamoTable creates a table (on-demand) with partition key hash
// and, if rangeKey is not "", sort key rangeKey (both S), unless it
// exists, and waits until it is active.
func CreateDynamoTable(ctx context.Context, c *dynamodb.Client, name, hash, rangeKey string) error {
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(hash), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}},
	}
	if rangeKey != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(rangeKey), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(rangeKey), KeyType: types.KeyTypeRange})
	}
	if _, err := c.CreateTable(ctx, in); err != nil {
		var inUse *types.ResourceInUseException
		if !errors.As(err, &inUse) {
			return err
		}
	}
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return err
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func number(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// gameItem is the stored form of a game.
type gameItem struct {
	ID           string       `dynamodbav:"id"`
	FirstPlayer  string       `dynamodbav:"firstPlayer"`
	SecondPlayer string       `dynamodbav:"secondPlayer"`
	Rounds       []game.Round `dynamodbav:"rounds"`
	Version      int64        `dynamodbav:"version"`
}

// GameDynamo is the hand-written DynamoDB store of game.Game.
type GameDynamo struct {
	C     *dynamodb.Client
	Table string
}

// NewGameDynamo returns the store over table, creating it.
func NewGameDynamo(ctx context.Context, c *dynamodb.Client, table string) (*GameDynamo, error) {
	return &GameDynamo{C: c, Table: table}, CreateDynamoTable(ctx, c, table, "id", "")
}

func (s *GameDynamo) key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"id": str(id)}
}

func (it *gameItem) game() *game.Game {
	return &game.Game{ID: it.ID, FirstPlayer: it.FirstPlayer, SecondPlayer: it.SecondPlayer, Rounds: it.Rounds, Version: it.Version}
}

// Get reads a game: one GetItem (strongly consistent).
func (s *GameDynamo) Get(ctx context.Context, id string) (*game.Game, error) {
	out, err := s.C.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: s.key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("get %s: %w", id, runtime.ErrNotFound)
	}
	var it gameItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return nil, fmt.Errorf("get %s: %w", id, err)
	}
	return it.game(), nil
}

// put writes g at version want+1 if its stored version is want (0: if
// it does not exist): one PutItem.
func (s *GameDynamo) put(ctx context.Context, g *game.Game, want int64, fail error) error {
	rounds := g.Rounds
	if rounds == nil {
		rounds = []game.Round{} // a list, so that list_append works
	}
	item, err := attributevalue.MarshalMap(&gameItem{ID: g.ID, FirstPlayer: g.FirstPlayer, SecondPlayer: g.SecondPlayer, Rounds: rounds, Version: want + 1})
	if err != nil {
		return err
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: item}
	if want == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#id)")
		in.ExpressionAttributeNames = map[string]string{"#id": "id"}
	} else {
		in.ConditionExpression = aws.String("#v = :v")
		in.ExpressionAttributeNames = map[string]string{"#v": "version"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": number(want)}
	}
	if _, err := s.C.PutItem(ctx, in); err != nil {
		if condFailed(err) {
			return fail
		}
		return err
	}
	g.Version = want + 1
	return nil
}

// Create stores a new game with version 1: one PutItem.
func (s *GameDynamo) Create(ctx context.Context, g *game.Game) error {
	return s.put(ctx, g, 0, fmt.Errorf("create %s: %w", g.ID, runtime.ErrDuplicate))
}

// Put replaces the game if its stored version is g.Version (0: it must
// not exist): one PutItem.
func (s *GameDynamo) Put(ctx context.Context, g *game.Game) error {
	return s.put(ctx, g, g.Version, fmt.Errorf("put %s: %w", g.ID, runtime.ErrConflict))
}

// SetSecondPlayer sets one attribute and bumps the version: one
// UpdateItem.
func (s *GameDynamo) SetSecondPlayer(ctx context.Context, id string, v string) error {
	_, err := s.C.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: s.key(id),
		UpdateExpression:          aws.String("SET #s = :s, #v = #v + :one"),
		ConditionExpression:       aws.String("attribute_exists(#id)"),
		ExpressionAttributeNames:  map[string]string{"#s": "secondPlayer", "#v": "version", "#id": "id"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": str(v), ":one": number(1)},
	})
	if condFailed(err) {
		return fmt.Errorf("set second player %s: %w", id, runtime.ErrNotFound)
	}
	return err
}

// AppendRounds appends a round and returns its index: one UpdateItem
// with list_append, which sends only the new round; its UPDATED_NEW reply
// carries the new list (DynamoDB returns an updated top-level attribute
// whole), whose length gives the index. Only the length is looked at.
func (s *GameDynamo) AppendRounds(ctx context.Context, id string, e game.Round) (int, error) {
	r, err := attributevalue.Marshal(&e)
	if err != nil {
		return 0, err
	}
	out, err := s.C.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: s.key(id),
		UpdateExpression:          aws.String("SET #r = list_append(#r, :r), #v = #v + :one"),
		ConditionExpression:       aws.String("attribute_exists(#id)"),
		ExpressionAttributeNames:  map[string]string{"#r": "rounds", "#v": "version", "#id": "id"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":r": &types.AttributeValueMemberL{Value: []types.AttributeValue{r}}, ":one": number(1)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if condFailed(err) {
		return 0, fmt.Errorf("append %s: %w", id, runtime.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	l, ok := out.Attributes["rounds"].(*types.AttributeValueMemberL)
	if !ok || len(l.Value) == 0 {
		return 0, fmt.Errorf("append %s: no rounds in the reply", id)
	}
	return len(l.Value) - 1, nil
}

// Update writes the changes of u and bumps the version: one UpdateItem on
// condition that the game, every round named (and version u.IfVersion)
// exist. A failed condition reads the game to tell why.
func (s *GameDynamo) Update(ctx context.Context, id string, u game.GameUpdate) error {
	names := map[string]string{"#id": "id", "#v": "version"}
	values := map[string]types.AttributeValue{":one": number(1)}
	set := []string{"#v = #v + :one"}
	cond := []string{"attribute_exists(#id)"}
	if u.FirstPlayer != nil {
		names["#f"] = "firstPlayer"
		values[":f"] = str(*u.FirstPlayer)
		set = append(set, "#f = :f")
	}
	if u.SecondPlayer != nil {
		names["#s"] = "secondPlayer"
		values[":s"] = str(*u.SecondPlayer)
		set = append(set, "#s = :s")
	}
	maxRound := -1
	for i, r := range u.RoundsAt {
		if i < 0 {
			return fmt.Errorf("update %s: round %d: %w", id, i, runtime.ErrNotFound)
		}
		av, err := attributevalue.Marshal(&r)
		if err != nil {
			return err
		}
		names["#r"] = "rounds"
		p := ":r" + strconv.Itoa(i)
		values[p] = av
		set = append(set, "#r["+strconv.Itoa(i)+"] = "+p)
		maxRound = max(maxRound, i)
	}
	if maxRound >= 0 {
		values[":n"] = number(int64(maxRound))
		cond = append(cond, "size(#r) > :n")
	}
	if u.IfVersion != 0 {
		values[":want"] = number(u.IfVersion)
		cond = append(cond, "#v = :want")
	}
	_, err := s.C.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: s.key(id),
		UpdateExpression:          aws.String("SET " + strings.Join(set, ", ")),
		ConditionExpression:       aws.String(strings.Join(cond, " AND ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if !condFailed(err) {
		return err
	}
	g, gerr := s.Get(ctx, id)
	switch {
	case gerr != nil:
		return fmt.Errorf("update %s: %w", id, gerr)
	case u.IfVersion != 0 && g.Version != u.IfVersion:
		return fmt.Errorf("update %s: %w", id, runtime.ErrConflict)
	}
	return fmt.Errorf("update %s: round %d: %w", id, maxRound, runtime.ErrNotFound)
}

// List reads a page of games in the table's scan order: Scan requests of
// limit+1 items (strongly consistent) from the cursor, the id of the last
// game of the previous page.
func (s *GameDynamo) List(ctx context.Context, req runtime.PageRequest) (runtime.Page[*game.Game], error) {
	n := req.Size()
	var page runtime.Page[*game.Game]
	var start map[string]types.AttributeValue
	if req.Cursor != "" {
		start = s.key(req.Cursor)
	}
	var items []gameItem
	for {
		out, err := s.C.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(s.Table), ExclusiveStartKey: start, Limit: aws.Int32(int32(n + 1 - len(items))), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return page, err
		}
		var got []gameItem
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &got); err != nil {
			return page, err
		}
		items = append(items, got...)
		if len(items) > n || len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	if len(items) > n {
		items = items[:n]
		page.Next = items[n-1].ID
	}
	page.Items = make([]*game.Game, len(items))
	for i := range items {
		page.Items[i] = items[i].game()
	}
	return page, nil
}

// DynamoBlobs stores aggregates of type T as one item each, marshalled
// with attributevalue.MarshalMap (partition key KeyAttr, S), with the
// version attribute VersionAttr checked in each write's condition.
type DynamoBlobs[T any] struct {
	C           *dynamodb.Client
	Table       string
	KeyAttr     string
	VersionAttr string
	ID          func(*T) string
	Version     func(*T) *int64
}

// Ensure creates the table.
func (s *DynamoBlobs[T]) Ensure(ctx context.Context) error {
	return CreateDynamoTable(ctx, s.C, s.Table, s.KeyAttr, "")
}

// Get reads aggregate id: one GetItem.
func (s *DynamoBlobs[T]) Get(ctx context.Context, id string) (*T, error) {
	out, err := s.C.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: map[string]types.AttributeValue{s.KeyAttr: str(id)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, fmt.Errorf("get %s: %w", id, runtime.ErrNotFound)
	}
	v := new(T)
	if err := attributevalue.UnmarshalMap(out.Item, v); err != nil {
		return nil, err
	}
	return v, nil
}

// write stores v at version want+1 if its stored version is want (0: if
// it does not exist): one PutItem.
func (s *DynamoBlobs[T]) write(ctx context.Context, v *T, want int64, fail error) error {
	p := s.Version(v)
	old := *p
	*p = want + 1
	item, err := attributevalue.MarshalMap(v)
	*p = old
	if err != nil {
		return err
	}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.Table), Item: item}
	if want == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#k)")
		in.ExpressionAttributeNames = map[string]string{"#k": s.KeyAttr}
	} else {
		in.ConditionExpression = aws.String("#v = :v")
		in.ExpressionAttributeNames = map[string]string{"#v": s.VersionAttr}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": number(want)}
	}
	if _, err := s.C.PutItem(ctx, in); err != nil {
		if condFailed(err) {
			return fail
		}
		return err
	}
	*p = want + 1
	return nil
}

// Create stores a new aggregate with version 1.
func (s *DynamoBlobs[T]) Create(ctx context.Context, v *T) error {
	return s.write(ctx, v, 0, fmt.Errorf("create %s: %w", s.ID(v), runtime.ErrDuplicate))
}

// Put replaces the aggregate if its stored version is v's (0: it must
// not exist).
func (s *DynamoBlobs[T]) Put(ctx context.Context, v *T) error {
	return s.write(ctx, v, *s.Version(v), fmt.Errorf("put %s: %w", s.ID(v), runtime.ErrConflict))
}

// hotelItem is the stored form of a hotel.
type hotelItem struct {
	ID      string        `dynamodbav:"id"`
	Name    string        `dynamodbav:"name"`
	City    string        `dynamodbav:"city"`
	Stars   int           `dynamodbav:"stars"`
	Tags    []string      `dynamodbav:"tags"`
	Address hotel.Address `dynamodbav:"address"`
	Rooms   []hotel.Room  `dynamodbav:"rooms"`
	Seq     int64         `dynamodbav:"seq"`
}

func (it *hotelItem) hotel() *hotel.Hotel {
	return &hotel.Hotel{ID: it.ID, Name: it.Name, City: it.City, Stars: it.Stars, Tags: it.Tags, Address: it.Address, Rooms: it.Rooms}
}

// HotelDynamo is the hand-written DynamoDB store of hotel.Hotel.
type HotelDynamo struct {
	C     *dynamodb.Client
	Table string // the hotels
	Index string // the index items
}

// NewHotelDynamo returns the store over table and its index table
// table+"_index", creating them.
func NewHotelDynamo(ctx context.Context, c *dynamodb.Client, table string) (*HotelDynamo, error) {
	s := &HotelDynamo{C: c, Table: table, Index: table + "_index"}
	if err := CreateDynamoTable(ctx, c, s.Table, "id", ""); err != nil {
		return nil, err
	}
	return s, CreateDynamoTable(ctx, c, s.Index, "p", "k")
}

func (s *HotelDynamo) key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"id": str(id)}
}

// nameKey and cityStarsKey are the keys of a hotel's index items.
func nameKey(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"p": str("name:" + name), "k": str("-")}
}

func cityStarsIndexKey(city string, stars int, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"p": str("cityStars:" + city), "k": str(starsKey(stars) + id)}
}

// addIndex writes index item key of hotel id, written by the write of
// sequence seq (token w, for undo); unique items only if the key is free.
func (s *HotelDynamo) addIndex(ctx context.Context, key map[string]types.AttributeValue, id string, seq, w int64, unique bool) error {
	item := map[string]types.AttributeValue{"p": key["p"], "k": key["k"], "id": str(id), "s": number(seq), "w": number(w)}
	in := &dynamodb.PutItemInput{TableName: aws.String(s.Index), Item: item}
	if unique {
		in.ConditionExpression = aws.String("attribute_not_exists(#p)")
		in.ExpressionAttributeNames = map[string]string{"#p": "p"}
	}
	_, err := s.C.PutItem(ctx, in)
	return err
}

// undoIndex removes index item key if attempt w wrote it (and nothing
// wrote it since): best effort, with a context that is not cancelled.
func (s *HotelDynamo) undoIndex(ctx context.Context, key map[string]types.AttributeValue, w int64) {
	_, _ = s.C.DeleteItem(context.WithoutCancel(ctx), &dynamodb.DeleteItemInput{
		TableName: aws.String(s.Index), Key: key,
		ConditionExpression:       aws.String("#w = :w"),
		ExpressionAttributeNames:  map[string]string{"#w": "w"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":w": number(w)},
	})
}

// Create stores a new hotel: its name claim (a conditional PutItem: a
// name in use fails with runtime.ErrDuplicate), its cityStars item, then
// the hotel on condition that it does not exist (if it does, the two
// items are removed again).
func (s *HotelDynamo) Create(ctx context.Context, h *hotel.Hotel) error {
	item, err := attributevalue.MarshalMap(&hotelItem{ID: h.ID, Name: h.Name, City: h.City, Stars: h.Stars, Tags: h.Tags, Address: h.Address, Rooms: h.Rooms, Seq: 1})
	if err != nil {
		return err
	}
	w := rand.Int64()
	name, cs := nameKey(h.Name), cityStarsIndexKey(h.City, h.Stars, h.ID)
	if err := s.addIndex(ctx, name, h.ID, 1, w, true); err != nil {
		if condFailed(err) {
			return fmt.Errorf("create %s: name %q: %w", h.ID, h.Name, runtime.ErrDuplicate)
		}
		return err
	}
	if err := s.addIndex(ctx, cs, h.ID, 1, w, false); err != nil {
		s.undoIndex(ctx, name, w)
		return err
	}
	_, err = s.C.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.Table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": "id"},
	})
	if err != nil {
		// A lost reply would leave the items: reads check them.
		s.undoIndex(ctx, name, w)
		s.undoIndex(ctx, cs, w)
		if condFailed(err) {
			return fmt.Errorf("create %s: %w", h.ID, runtime.ErrDuplicate)
		}
		return err
	}
	return nil
}

// get reads hotel id (nil if there is none).
func (s *HotelDynamo) get(ctx context.Context, id string) (*hotelItem, error) {
	out, err := s.C.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Table), Key: s.key(id), ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		return nil, err
	}
	it := new(hotelItem)
	return it, attributevalue.UnmarshalMap(out.Item, it)
}

// GetByName reads the hotel with that name: one GetItem of the name
// claim, one of the hotel, which must have the name.
func (s *HotelDynamo) GetByName(ctx context.Context, name string) (*hotel.Hotel, error) {
	notFound := fmt.Errorf("get by name %q: %w", name, runtime.ErrNotFound)
	out, err := s.C.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.Index), Key: nameKey(name), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	id, ok := out.Item["id"].(*types.AttributeValueMemberS)
	if !ok {
		return nil, notFound
	}
	it, err := s.get(ctx, id.Value)
	if err != nil {
		return nil, err
	}
	if it == nil || it.Name != name {
		return nil, notFound // a stale claim
	}
	return it.hotel(), nil
}

// ListByCityStars reads a page of the hotels in city with at least
// minStars stars, in (stars, id) order: a Query of the city's index
// partition from the stars key (or after the cursor, the last sort key),
// and one BatchGetItem of the hotels, each checked against its index item
// (stale items are skipped, and the Query goes on until the page is full
// or the partition ends).
func (s *HotelDynamo) ListByCityStars(ctx context.Context, city string, minStars int, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
	n := req.Size()
	var page runtime.Page[*hotel.Hotel]
	cond, from := "#p = :p AND #k >= :k", starsKey(minStars)
	if req.Cursor != "" {
		if len(req.Cursor) < 16 {
			return page, fmt.Errorf("cursor %q: %w", req.Cursor, runtime.ErrBadCursor)
		}
		cond, from = "#p = :p AND #k > :k", req.Cursor
	}
	var keys []string
	for len(page.Items) <= n {
		out, err := s.C.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(s.Index), ConsistentRead: aws.Bool(true), Limit: aws.Int32(int32(n + 1 - len(page.Items))),
			KeyConditionExpression:    aws.String(cond),
			ExpressionAttributeNames:  map[string]string{"#p": "p", "#k": "k"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": str("cityStars:" + city), ":k": str(from)},
		})
		if err != nil {
			return page, err
		}
		if len(out.Items) == 0 {
			break
		}
		ids := make([]string, len(out.Items))
		ks := make([]string, len(out.Items))
		batch := make([]map[string]types.AttributeValue, len(out.Items))
		for i, e := range out.Items {
			k, _ := e["k"].(*types.AttributeValueMemberS)
			id, _ := e["id"].(*types.AttributeValueMemberS)
			if k == nil || id == nil {
				return page, fmt.Errorf("index item %v has no key or id", e)
			}
			ids[i], ks[i], batch[i] = id.Value, k.Value, s.key(id.Value)
		}
		hotels, err := s.batchGet(ctx, batch)
		if err != nil {
			return page, err
		}
		for i, id := range ids {
			if it, ok := hotels[id]; ok && it.City == city && it.Stars >= minStars && starsKey(it.Stars)+id == ks[i] {
				page.Items = append(page.Items, it.hotel())
				keys = append(keys, ks[i])
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		cond, from = "#p = :p AND #k > :k", ks[len(ks)-1]
	}
	if len(page.Items) > n {
		page.Items = page.Items[:n]
		page.Next = keys[n-1]
	}
	return page, nil
}

// batchGet reads the hotels with the given keys (at most 100) with
// BatchGetItem, retrying unprocessed keys.
func (s *HotelDynamo) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) (map[string]*hotelItem, error) {
	out := make(map[string]*hotelItem, len(keys))
	for len(keys) > 0 {
		res, err := s.C.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			s.Table: {Keys: keys, ConsistentRead: aws.Bool(true)},
		}})
		if err != nil {
			return nil, err
		}
		for _, item := range res.Responses[s.Table] {
			it := new(hotelItem)
			if err := attributevalue.UnmarshalMap(item, it); err != nil {
				return nil, err
			}
			out[it.ID] = it
		}
		keys = res.UnprocessedKeys[s.Table].Keys
	}
	return out, nil
}

// SetCity sets the city: it reads the hotel's city, stars and seq (one
// GetItem), adds the new cityStars item (PutItem), updates the hotel on
// condition that its seq is unchanged (UpdateItem; if it changed, the new
// item is removed and SetCity starts over), then removes the old item
// (DeleteItem, if it is still the one an earlier write of this hotel
// wrote).
func (s *HotelDynamo) SetCity(ctx context.Context, id string, city string) error {
	for attempt := range 100 {
		if attempt > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			time.Sleep(time.Duration(rand.Int64N(int64(min(attempt, 20)) * int64(time.Millisecond))))
		}
		out, err := s.C.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.Table), Key: s.key(id), ConsistentRead: aws.Bool(true),
			ProjectionExpression:     aws.String("#c, #st, #sq"),
			ExpressionAttributeNames: map[string]string{"#c": "city", "#st": "stars", "#sq": "seq"},
		})
		if err != nil {
			return err
		}
		if len(out.Item) == 0 {
			return fmt.Errorf("set city %s: %w", id, runtime.ErrNotFound)
		}
		var cur hotelItem
		if err := attributevalue.UnmarshalMap(out.Item, &cur); err != nil {
			return err
		}
		seq, w := cur.Seq+1, rand.Int64()
		moved := cur.City != city
		newKey := cityStarsIndexKey(city, cur.Stars, id)
		if moved {
			if err := s.addIndex(ctx, newKey, id, seq, w, false); err != nil {
				return err
			}
		}
		_, err = s.C.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(s.Table), Key: s.key(id),
			UpdateExpression:          aws.String("SET #c = :c, #sq = :new"),
			ConditionExpression:       aws.String("#sq = :old"),
			ExpressionAttributeNames:  map[string]string{"#c": "city", "#sq": "seq"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":c": str(city), ":new": number(seq), ":old": number(cur.Seq)},
		})
		if condFailed(err) {
			if moved {
				s.undoIndex(ctx, newKey, w)
			}
			continue // changed (or deleted) meanwhile
		}
		if err != nil {
			return err // the items stay if the reply was lost: reads check them
		}
		if moved {
			_, _ = s.C.DeleteItem(context.WithoutCancel(ctx), &dynamodb.DeleteItemInput{
				TableName: aws.String(s.Index), Key: cityStarsIndexKey(cur.City, cur.Stars, id),
				ConditionExpression:       aws.String("#id = :id AND #s < :s"),
				ExpressionAttributeNames:  map[string]string{"#id": "id", "#s": "s"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":id": str(id), ":s": number(seq)},
			})
		}
		return nil
	}
	return fmt.Errorf("set city %s: changed concurrently 100 times in a row: %w", id, runtime.ErrConflict)
}
