// Package handwritten is the baseline that noamgen's generated repositories
// are measured against: what a competent Go developer writes by hand for
// the same operations with the same guarantees, without a generator.
//
// On bbolt an aggregate is one BSON value (bson.Marshal of the struct)
// under its key, every write is one read-write transaction that checks and
// bumps the version in the same transaction, and a lookup is an index
// bucket kept in the same transaction. On MongoDB (mongo.go) an aggregate
// is one document, with the same round trips as the generated code and
// native indexes for lookups. On a single Redis node (redis.go) an
// aggregate is a hash, every write one Lua script written for it, lookups
// sorted sets changed in the same script. On DynamoDB (dynamo.go) an
// aggregate is one item (attributevalue), every write one conditional
// request, lookups items of an index table kept by the generated store's
// protocol without transactions.
//
// Listing cursors are the plain last key (not signed, unlike the
// generated ones).
package handwritten

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
)

// BoltBlobs stores aggregates of type T as one BSON value each in a bbolt
// bucket, keyed by their id, with an int64 version field (bson key
// VersionKey) checked and bumped in the write transaction.
type BoltBlobs[T any] struct {
	DB         *bbolt.DB
	Bucket     []byte
	VersionKey string
	ID         func(*T) string
	Version    func(*T) *int64
}

// Ensure creates the bucket.
func (s *BoltBlobs[T]) Ensure() error {
	return s.DB.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(s.Bucket)
		return err
	})
}

// Get reads aggregate id.
func (s *BoltBlobs[T]) Get(ctx context.Context, id string) (*T, error) {
	v := new(T)
	err := s.DB.View(func(tx *bbolt.Tx) error {
		data := tx.Bucket(s.Bucket).Get([]byte(id))
		if data == nil {
			return fmt.Errorf("get %s: %w", id, runtime.ErrNotFound)
		}
		return bson.Unmarshal(data, v)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Create stores a new aggregate with version 1.
func (s *BoltBlobs[T]) Create(ctx context.Context, v *T) error {
	return s.DB.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(s.Bucket)
		key := []byte(s.ID(v))
		if b.Get(key) != nil {
			return fmt.Errorf("create %s: %w", key, runtime.ErrDuplicate)
		}
		return s.write(b, key, v, 1)
	})
}

// Put replaces the aggregate if its stored version is v's (0: it must not
// exist), and bumps the version.
func (s *BoltBlobs[T]) Put(ctx context.Context, v *T) error {
	return s.DB.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(s.Bucket)
		key := []byte(s.ID(v))
		want := *s.Version(v)
		old := b.Get(key)
		switch {
		case want == 0 && old != nil, want != 0 && old == nil:
			return fmt.Errorf("put %s: %w", key, runtime.ErrConflict)
		case want != 0:
			if cur, ok := bson.Raw(old).Lookup(s.VersionKey).Int64OK(); !ok || cur != want {
				return fmt.Errorf("put %s: %w", key, runtime.ErrConflict)
			}
		}
		return s.write(b, key, v, want+1)
	})
}

// write stores v under key with version version, and sets v's version on
// success.
func (s *BoltBlobs[T]) write(b *bbolt.Bucket, key []byte, v *T, version int64) error {
	p := s.Version(v)
	old := *p
	*p = version
	data, err := bson.Marshal(v)
	if err == nil {
		err = b.Put(key, data)
	}
	if err != nil {
		*p = old
	}
	return err
}

// Modify reads aggregate id, applies fn and writes it back with the
// version bumped, in one transaction.
func (s *BoltBlobs[T]) Modify(id string, fn func(v *T) error) error {
	return s.DB.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(s.Bucket)
		key := []byte(id)
		data := b.Get(key)
		if data == nil {
			return fmt.Errorf("modify %s: %w", id, runtime.ErrNotFound)
		}
		v := new(T)
		if err := bson.Unmarshal(data, v); err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
		return s.write(b, key, v, *s.Version(v)+1)
	})
}

// List reads a page of aggregates in key order; the cursor is the last key.
func (s *BoltBlobs[T]) List(ctx context.Context, req runtime.PageRequest) (runtime.Page[*T], error) {
	n := req.Size()
	var page runtime.Page[*T]
	err := s.DB.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(s.Bucket).Cursor()
		var k, data []byte
		if req.Cursor == "" {
			k, data = c.First()
		} else {
			k, data = c.Seek([]byte(req.Cursor))
			if k != nil && string(k) == req.Cursor {
				k, data = c.Next()
			}
		}
		for ; k != nil; k, data = c.Next() {
			if len(page.Items) == n {
				page.Next = s.ID(page.Items[n-1])
				break
			}
			v := new(T)
			if err := bson.Unmarshal(data, v); err != nil {
				return err
			}
			page.Items = append(page.Items, v)
		}
		return nil
	})
	return page, err
}

// GameBolt is the hand-written bbolt store of game.Game: one BSON value per
// game.
type GameBolt struct {
	BoltBlobs[game.Game]
}

// NewGameBolt returns the store over db's "Game" bucket, creating it.
func NewGameBolt(db *bbolt.DB) (*GameBolt, error) {
	s := &GameBolt{BoltBlobs[game.Game]{
		DB: db, Bucket: []byte("Game"), VersionKey: "version",
		ID:      func(g *game.Game) string { return g.ID },
		Version: func(g *game.Game) *int64 { return &g.Version },
	}}
	return s, s.Ensure()
}

// SetSecondPlayer rewrites the game with a new second player.
func (s *GameBolt) SetSecondPlayer(ctx context.Context, id string, v string) error {
	return s.Modify(id, func(g *game.Game) error {
		g.SecondPlayer = v
		return nil
	})
}

// AppendRounds rewrites the game with one more round and returns its index.
func (s *GameBolt) AppendRounds(ctx context.Context, id string, e game.Round) (int, error) {
	var i int
	err := s.Modify(id, func(g *game.Game) error {
		g.Rounds = append(g.Rounds, e)
		i = len(g.Rounds) - 1
		return nil
	})
	return i, err
}

// Update rewrites the game with the changes of u.
func (s *GameBolt) Update(ctx context.Context, id string, u game.GameUpdate) error {
	return s.Modify(id, func(g *game.Game) error {
		if u.IfVersion != 0 && g.Version != u.IfVersion {
			return fmt.Errorf("update %s: %w", id, runtime.ErrConflict)
		}
		if u.FirstPlayer != nil {
			g.FirstPlayer = *u.FirstPlayer
		}
		if u.SecondPlayer != nil {
			g.SecondPlayer = *u.SecondPlayer
		}
		for i, r := range u.RoundsAt {
			if i < 0 || i >= len(g.Rounds) {
				return fmt.Errorf("update %s: rounds[%d]: %w", id, i, runtime.ErrNotFound)
			}
			g.Rounds[i] = r
		}
		return nil
	})
}

// HotelBolt is the hand-written bbolt store of hotel.Hotel: one BSON value
// per hotel in bucket "Hotel", and two index buckets kept in the same
// transaction: "Hotel.name" (name -> id, unique) and "Hotel.cityStars"
// (city, 0, stars, id -> nothing).
type HotelBolt struct {
	DB *bbolt.DB
}

var (
	hotelBucket     = []byte("Hotel")
	hotelNames      = []byte("Hotel.name")
	hotelCityStars  = []byte("Hotel.cityStars")
	hotelBucketList = [][]byte{hotelBucket, hotelNames, hotelCityStars}
)

// NewHotelBolt returns the store over db, creating its buckets.
func NewHotelBolt(db *bbolt.DB) (*HotelBolt, error) {
	err := db.Update(func(tx *bbolt.Tx) error {
		for _, name := range hotelBucketList {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	return &HotelBolt{DB: db}, err
}

// cityStarsKey is city, a zero byte, stars (big-endian, sign bit flipped
// so that negative values sort first), then the id.
func cityStarsKey(city string, stars int, id string) []byte {
	b := make([]byte, 0, len(city)+9+len(id))
	b = append(b, city...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(stars)^(1<<63))
	return append(b, id...)
}

// Create stores a new hotel and its index entries; a name in use fails
// with runtime.ErrDuplicate.
func (s *HotelBolt) Create(ctx context.Context, h *hotel.Hotel) error {
	return s.DB.Update(func(tx *bbolt.Tx) error {
		b, names, cs := tx.Bucket(hotelBucket), tx.Bucket(hotelNames), tx.Bucket(hotelCityStars)
		if b.Get([]byte(h.ID)) != nil || names.Get([]byte(h.Name)) != nil {
			return fmt.Errorf("create %s: %w", h.ID, runtime.ErrDuplicate)
		}
		data, err := bson.Marshal(h)
		if err != nil {
			return err
		}
		if err := names.Put([]byte(h.Name), []byte(h.ID)); err != nil {
			return err
		}
		if err := cs.Put(cityStarsKey(h.City, h.Stars, h.ID), []byte{}); err != nil {
			return err
		}
		return b.Put([]byte(h.ID), data)
	})
}

// GetByName reads the hotel with that name through the name index.
func (s *HotelBolt) GetByName(ctx context.Context, name string) (*hotel.Hotel, error) {
	h := new(hotel.Hotel)
	err := s.DB.View(func(tx *bbolt.Tx) error {
		id := tx.Bucket(hotelNames).Get([]byte(name))
		if id == nil {
			return fmt.Errorf("get by name %q: %w", name, runtime.ErrNotFound)
		}
		data := tx.Bucket(hotelBucket).Get(id)
		if data == nil {
			return fmt.Errorf("get by name %q: %w", name, runtime.ErrNotFound)
		}
		return bson.Unmarshal(data, h)
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// ListByCityStars reads a page of the hotels in city with at least
// minStars stars, in (stars, id) order; the cursor is the last index key.
func (s *HotelBolt) ListByCityStars(ctx context.Context, city string, minStars int, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
	n := req.Size()
	var page runtime.Page[*hotel.Hotel]
	prefix := append([]byte(city), 0)
	err := s.DB.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(hotelBucket)
		c := tx.Bucket(hotelCityStars).Cursor()
		var k []byte
		if req.Cursor == "" {
			k, _ = c.Seek(cityStarsKey(city, minStars, ""))
		} else {
			k, _ = c.Seek([]byte(req.Cursor))
			if k != nil && string(k) == req.Cursor {
				k, _ = c.Next()
			}
		}
		var last []byte
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(page.Items) == n {
				page.Next = string(last)
				break
			}
			id := k[len(prefix)+8:]
			h := new(hotel.Hotel)
			if err := bson.Unmarshal(b.Get(id), h); err != nil {
				return err
			}
			page.Items = append(page.Items, h)
			last = k
		}
		return nil
	})
	return page, err
}

// SetCity rewrites the hotel with a new city and moves its cityStars
// index entry, in one transaction.
func (s *HotelBolt) SetCity(ctx context.Context, id string, city string) error {
	return s.DB.Update(func(tx *bbolt.Tx) error {
		b, cs := tx.Bucket(hotelBucket), tx.Bucket(hotelCityStars)
		data := b.Get([]byte(id))
		if data == nil {
			return fmt.Errorf("set city %s: %w", id, runtime.ErrNotFound)
		}
		h := new(hotel.Hotel)
		if err := bson.Unmarshal(data, h); err != nil {
			return err
		}
		if err := cs.Delete(cityStarsKey(h.City, h.Stars, id)); err != nil {
			return err
		}
		h.City = city
		if err := cs.Put(cityStarsKey(h.City, h.Stars, id), []byte{}); err != nil {
			return err
		}
		data, err := bson.Marshal(h)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), data)
	})
}
