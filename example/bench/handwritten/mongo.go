package handwritten

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
)

// gameDoc is the stored form of a game: one document, _id the game's id.
type gameDoc struct {
	ID           string       `bson:"_id"`
	FirstPlayer  string       `bson:"firstPlayer"`
	SecondPlayer string       `bson:"secondPlayer"`
	Rounds       []game.Round `bson:"rounds"`
	Version      int64        `bson:"version"`
}

// GameMongo is the hand-written mongo-driver v2 store of game.Game.
type GameMongo struct {
	Coll *mongo.Collection
	// noProjection is set once the server refused a projection in
	// findAndModify (FerretDB v1): AppendRounds then gets the whole game back.
	noProjection atomic.Bool
}

// NewGameMongo returns the store over db's "Game" collection.
func NewGameMongo(db *mongo.Database) *GameMongo {
	return &GameMongo{Coll: db.Collection("Game")}
}

func byID(id string) bson.D { return bson.D{{Key: "_id", Value: id}} }

// Get reads a game: one find.
func (s *GameMongo) Get(ctx context.Context, id string) (*game.Game, error) {
	var d gameDoc
	if err := s.Coll.FindOne(ctx, byID(id)).Decode(&d); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, fmt.Errorf("get %s: %w", id, runtime.ErrNotFound)
		}
		return nil, err
	}
	return &game.Game{ID: d.ID, FirstPlayer: d.FirstPlayer, SecondPlayer: d.SecondPlayer, Rounds: d.Rounds, Version: d.Version}, nil
}

func newGameDoc(g *game.Game, version int64) *gameDoc {
	rounds := g.Rounds
	if rounds == nil {
		rounds = []game.Round{}
	}
	return &gameDoc{ID: g.ID, FirstPlayer: g.FirstPlayer, SecondPlayer: g.SecondPlayer, Rounds: rounds, Version: version}
}

// Create inserts a game with version 1.
func (s *GameMongo) Create(ctx context.Context, g *game.Game) error {
	if _, err := s.Coll.InsertOne(ctx, newGameDoc(g, 1)); err != nil {
		if mongo.IsDuplicateKeyError(err) {
			return fmt.Errorf("create %s: %w", g.ID, runtime.ErrDuplicate)
		}
		return err
	}
	g.Version = 1
	return nil
}

// Put replaces the game if its stored version is g.Version (insert when 0).
func (s *GameMongo) Put(ctx context.Context, g *game.Game) error {
	d := newGameDoc(g, g.Version+1)
	if g.Version == 0 {
		if _, err := s.Coll.InsertOne(ctx, d); err != nil {
			if mongo.IsDuplicateKeyError(err) {
				return fmt.Errorf("put %s: %w", g.ID, runtime.ErrConflict)
			}
			return err
		}
	} else {
		res, err := s.Coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: g.ID}, {Key: "version", Value: g.Version}}, d)
		if err != nil {
			return err
		}
		if res.MatchedCount == 0 {
			return fmt.Errorf("put %s: %w", g.ID, runtime.ErrConflict)
		}
	}
	g.Version = d.Version
	return nil
}

// SetSecondPlayer sets one field and bumps the version: one update.
func (s *GameMongo) SetSecondPlayer(ctx context.Context, id string, v string) error {
	res, err := s.Coll.UpdateOne(ctx, byID(id), bson.D{
		{Key: "$set", Value: bson.D{{Key: "secondPlayer", Value: v}}},
		{Key: "$inc", Value: bson.D{{Key: "version", Value: 1}}},
	})
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("set second player %s: %w", id, runtime.ErrNotFound)
	}
	return nil
}

var appendProjection = bson.D{{Key: "_id", Value: 0}, {Key: "n", Value: bson.D{{Key: "$size", Value: "$rounds"}}}}

// AppendRounds pushes a round and returns its index: one findAndModify
// that returns only the new length ($size projection). A server that
// refuses a projection in findAndModify (FerretDB v1) gets the plain
// command, which returns the whole game.
func (s *GameMongo) AppendRounds(ctx context.Context, id string, e game.Round) (int, error) {
	update := bson.D{
		{Key: "$push", Value: bson.D{{Key: "rounds", Value: e}}},
		{Key: "$inc", Value: bson.D{{Key: "version", Value: 1}}},
	}
	opts := options.FindOneAndUpdate().SetReturnDocument(options.After)
	if !s.noProjection.Load() {
		raw, err := s.Coll.FindOneAndUpdate(ctx, byID(id), update, opts.SetProjection(appendProjection)).Raw()
		if err == nil {
			n, ok := raw.Lookup("n").AsInt64OK()
			if !ok {
				return 0, fmt.Errorf("append %s: no length in %s", id, raw)
			}
			return int(n) - 1, nil
		}
		var se mongo.ServerError
		if !errors.As(err, &se) {
			return 0, appendErr(id, err)
		}
		s.noProjection.Store(true)
		opts = options.FindOneAndUpdate().SetReturnDocument(options.After)
	}
	raw, err := s.Coll.FindOneAndUpdate(ctx, byID(id), update, opts).Raw()
	if err != nil {
		return 0, appendErr(id, err)
	}
	elems, err := raw.Lookup("rounds").Array().Values()
	if err != nil {
		return 0, err
	}
	return len(elems) - 1, nil
}

func appendErr(id string, err error) error {
	if errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("append %s: %w", id, runtime.ErrNotFound)
	}
	return err
}

// Update applies u in one update (elements must exist, optional version
// condition) and bumps the version.
func (s *GameMongo) Update(ctx context.Context, id string, u game.GameUpdate) error {
	filter := byID(id)
	var set bson.D
	if u.FirstPlayer != nil {
		set = append(set, bson.E{Key: "firstPlayer", Value: *u.FirstPlayer})
	}
	if u.SecondPlayer != nil {
		set = append(set, bson.E{Key: "secondPlayer", Value: *u.SecondPlayer})
	}
	for i, r := range u.RoundsAt {
		path := "rounds." + strconv.Itoa(i)
		filter = append(filter, bson.E{Key: path, Value: bson.D{{Key: "$exists", Value: true}}})
		set = append(set, bson.E{Key: path, Value: r})
	}
	if u.IfVersion != 0 {
		filter = append(filter, bson.E{Key: "version", Value: u.IfVersion})
	}
	res, err := s.Coll.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}, {Key: "$inc", Value: bson.D{{Key: "version", Value: 1}}}})
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		// Only on failure: a second read would tell not found from conflict.
		return fmt.Errorf("update %s: %w", id, runtime.ErrNotFound)
	}
	return nil
}

// List reads a page of games in _id order: one find of limit+1 documents
// in one batch, decoding only limit of them; the cursor is the last _id.
func (s *GameMongo) List(ctx context.Context, req runtime.PageRequest) (runtime.Page[*game.Game], error) {
	n := req.Size()
	filter := bson.D{}
	if req.Cursor != "" {
		filter = bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: req.Cursor}}}}
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(n + 1)).SetBatchSize(int32(n + 2))
	cur, err := s.Coll.Find(ctx, filter, opts)
	if err != nil {
		return runtime.Page[*game.Game]{}, err
	}
	defer cur.Close(ctx)
	var page runtime.Page[*game.Game]
	for cur.Next(ctx) {
		if len(page.Items) == n {
			page.Next = page.Items[n-1].ID
			break
		}
		var d gameDoc
		if err := cur.Decode(&d); err != nil {
			return page, err
		}
		page.Items = append(page.Items, &game.Game{ID: d.ID, FirstPlayer: d.FirstPlayer, SecondPlayer: d.SecondPlayer, Rounds: d.Rounds, Version: d.Version})
	}
	return page, cur.Err()
}

// hotelDoc is the stored form of a hotel.
type hotelDoc struct {
	ID      string        `bson:"_id"`
	Name    string        `bson:"name"`
	City    string        `bson:"city"`
	Stars   int           `bson:"stars"`
	Tags    []string      `bson:"tags"`
	Address hotel.Address `bson:"address"`
	Rooms   []hotel.Room  `bson:"rooms"`
}

func (d *hotelDoc) hotel() *hotel.Hotel {
	return &hotel.Hotel{ID: d.ID, Name: d.Name, City: d.City, Stars: d.Stars, Tags: d.Tags, Address: d.Address, Rooms: d.Rooms}
}

// HotelMongo is the hand-written mongo-driver v2 store of hotel.Hotel,
// with native indexes: unique on name, and on (city, stars, _id).
type HotelMongo struct {
	Coll *mongo.Collection
}

// NewHotelMongo returns the store over db's "Hotel" collection and creates
// its indexes.
func NewHotelMongo(ctx context.Context, db *mongo.Database) (*HotelMongo, error) {
	coll := db.Collection("Hotel")
	_, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "name", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "city", Value: 1}, {Key: "stars", Value: 1}, {Key: "_id", Value: 1}}},
	})
	return &HotelMongo{Coll: coll}, err
}

// Create inserts a hotel; a name in use fails with runtime.ErrDuplicate.
func (s *HotelMongo) Create(ctx context.Context, h *hotel.Hotel) error {
	_, err := s.Coll.InsertOne(ctx, &hotelDoc{ID: h.ID, Name: h.Name, City: h.City, Stars: h.Stars, Tags: h.Tags, Address: h.Address, Rooms: h.Rooms})
	if mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("create %s: %w", h.ID, runtime.ErrDuplicate)
	}
	return err
}

// GetByName reads the hotel with that name: one find on the unique index.
func (s *HotelMongo) GetByName(ctx context.Context, name string) (*hotel.Hotel, error) {
	var d hotelDoc
	if err := s.Coll.FindOne(ctx, bson.D{{Key: "name", Value: name}}).Decode(&d); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, fmt.Errorf("get by name %q: %w", name, runtime.ErrNotFound)
		}
		return nil, err
	}
	return d.hotel(), nil
}

// ListByCityStars reads a page of the hotels in city with at least
// minStars stars in (stars, _id) order: one find on the compound index.
// The cursor is "stars/id" of the last hotel.
func (s *HotelMongo) ListByCityStars(ctx context.Context, city string, minStars int, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
	n := req.Size()
	filter := bson.D{{Key: "city", Value: city}, {Key: "stars", Value: bson.D{{Key: "$gte", Value: minStars}}}}
	if req.Cursor != "" {
		starsText, id, ok := strings.Cut(req.Cursor, "/")
		stars, err := strconv.Atoi(starsText)
		if !ok || err != nil {
			return runtime.Page[*hotel.Hotel]{}, fmt.Errorf("cursor %q: %w", req.Cursor, runtime.ErrBadCursor)
		}
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: "stars", Value: bson.D{{Key: "$gt", Value: stars}}}},
			bson.D{{Key: "stars", Value: stars}, {Key: "_id", Value: bson.D{{Key: "$gt", Value: id}}}},
		}})
	}
	opts := options.Find().SetSort(bson.D{{Key: "stars", Value: 1}, {Key: "_id", Value: 1}}).SetLimit(int64(n + 1)).SetBatchSize(int32(n + 2))
	cur, err := s.Coll.Find(ctx, filter, opts)
	if err != nil {
		return runtime.Page[*hotel.Hotel]{}, err
	}
	defer cur.Close(ctx)
	var page runtime.Page[*hotel.Hotel]
	for cur.Next(ctx) {
		if len(page.Items) == n {
			last := page.Items[n-1]
			page.Next = strconv.Itoa(last.Stars) + "/" + last.ID
			break
		}
		var d hotelDoc
		if err := cur.Decode(&d); err != nil {
			return page, err
		}
		page.Items = append(page.Items, d.hotel())
	}
	return page, cur.Err()
}

// SetCity sets the city: one update; the server maintains the index.
func (s *HotelMongo) SetCity(ctx context.Context, id string, city string) error {
	res, err := s.Coll.UpdateOne(ctx, byID(id), bson.D{{Key: "$set", Value: bson.D{{Key: "city", Value: city}}}})
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("set city %s: %w", id, runtime.ErrNotFound)
	}
	return nil
}
