package handwritten

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/noamgen/noamgen/example/game"
	"github.com/noamgen/noamgen/example/hotel"
	"github.com/noamgen/noamgen/runtime"
)

// The hand-written go-redis v9 stores, for a single Redis node (no
// cluster: the scripts name keys of several hash slots).
//
// A game is one hash, "<prefix>game:<id>": firstPlayer, secondPlayer,
// version (decimal), rounds (the round count) and one field per round,
// rounds:0, rounds:1, ... (each the BSON document of the round), the
// stored layout of runtime/redisstore. The sorted set "<prefix>game:ids"
// lists the ids (score 0, read with ZRANGE BYLEX and paged by keyset).
// Every write is one Lua script run (EVALSHA), so the version check and
// the write are atomic: the script checks, then writes.
//
// A hotel is one hash, "<prefix>hotel:<id>": name, city, stars (decimal),
// _sk (stars encoded for the index) and data (the BSON document of the
// fields no lookup reads). Its lookups are two sorted sets of score 0,
// changed in the script of the hotel's write: "<prefix>hotel:byName"
// (members name NUL id, unique) and "<prefix>hotel:byCityStars" (members
// city NUL stars-key id). Names and cities with a NUL byte are refused
// (runtime.ErrInvalidValue). Only the two lookups the benchmarks read are
// kept (the generated store also keeps tags and addressZip).

// Game hash fields.
const (
	rFirst   = "firstPlayer"
	rSecond  = "secondPlayer"
	rVersion = "version"
	rRounds  = "rounds"
)

// roundField is the hash field of round i.
func roundField(i int) string { return "rounds:" + strconv.Itoa(i) }

// hsetPairs is the Lua loop that HSETs ARGV[from], ARGV[from+1], ...
const hsetPairs = `for i = %d, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
`

// putScript replaces a hash whole if its version field is ARGV[2] ("0":
// if it does not exist) and lists ARGV[1] in the sorted set KEYS[2]; the
// fields are ARGV[3...] in pairs. Returns 1, or 0 when the check failed.
var putScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'version')
if ARGV[2] == '0' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
elseif v ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
` + fmt.Sprintf(hsetPairs, 3) + `
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
`)

// updateScript sets fields ARGV[3...] (pairs) of an existing game and
// bumps its version, if the version is ARGV[1] ("0": any) and round
// ARGV[2] exists ("-1": none named). Returns the new version, or -1 (no
// game), -2 (version conflict), -3 (no such round).
var updateScript = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'version', 'rounds')
if not h[1] then return -1 end
if ARGV[1] ~= '0' and h[1] ~= ARGV[1] then return -2 end
if tonumber(ARGV[2]) >= tonumber(h[2] or '0') then return -3 end
` + fmt.Sprintf(hsetPairs, 3) + `
return redis.call('HINCRBY', KEYS[1], 'version', 1)
`)

// appendScript appends round ARGV[1] to an existing game and bumps its
// version; it returns the round's index, or -1 (no game).
var appendScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local n = redis.call('HINCRBY', KEYS[1], 'rounds', 1)
redis.call('HSET', KEYS[1], 'rounds:' .. (n - 1), ARGV[1])
redis.call('HINCRBY', KEYS[1], 'version', 1)
return n - 1
`)

// GameRedis is the hand-written go-redis store of game.Game.
type GameRedis struct {
	C      redis.UniversalClient
	Prefix string
}

// NewGameRedis returns the store over c, its keys under prefix.
func NewGameRedis(c redis.UniversalClient, prefix string) *GameRedis {
	return &GameRedis{C: c, Prefix: prefix}
}

func (s *GameRedis) key(id string) string { return s.Prefix + "game:" + id }
func (s *GameRedis) ids() string          { return s.Prefix + "game:ids" }

// decodeGame builds game id from its hash.
func decodeGame(id string, h map[string]string) (*game.Game, error) {
	g := &game.Game{ID: id, FirstPlayer: h[rFirst], SecondPlayer: h[rSecond]}
	var err error
	if g.Version, err = strconv.ParseInt(h[rVersion], 10, 64); err != nil {
		return nil, fmt.Errorf("game %s: bad version %q", id, h[rVersion])
	}
	n, err := strconv.Atoi(h[rRounds])
	if err != nil || n < 0 {
		return nil, fmt.Errorf("game %s: bad round count %q", id, h[rRounds])
	}
	g.Rounds = make([]game.Round, n)
	for i := range g.Rounds {
		data, ok := h[roundField(i)]
		if !ok {
			return nil, fmt.Errorf("game %s: round %d is missing", id, i)
		}
		if err := bson.Unmarshal([]byte(data), &g.Rounds[i]); err != nil {
			return nil, fmt.Errorf("game %s: round %d: %w", id, i, err)
		}
	}
	return g, nil
}

// Get reads a game: one HGETALL.
func (s *GameRedis) Get(ctx context.Context, id string) (*game.Game, error) {
	h, err := s.C.HGetAll(ctx, s.key(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("get %s: %w", id, runtime.ErrNotFound)
	}
	return decodeGame(id, h)
}

// gameArgs are the script arguments of game g at version version: its id,
// the expected version want, then its fields in pairs.
func gameArgs(g *game.Game, want, version int64) ([]any, error) {
	args := make([]any, 0, 10+2*len(g.Rounds))
	args = append(args, g.ID, strconv.FormatInt(want, 10),
		rFirst, g.FirstPlayer, rSecond, g.SecondPlayer,
		rVersion, strconv.FormatInt(version, 10), rRounds, strconv.Itoa(len(g.Rounds)))
	for i := range g.Rounds {
		data, err := bson.Marshal(&g.Rounds[i])
		if err != nil {
			return nil, fmt.Errorf("game %s: round %d: %w", g.ID, i, err)
		}
		args = append(args, roundField(i), data)
	}
	return args, nil
}

// put runs putScript for g expecting version want; fail is the error of
// a failed check.
func (s *GameRedis) put(ctx context.Context, g *game.Game, want int64, fail error) error {
	args, err := gameArgs(g, want, want+1)
	if err != nil {
		return err
	}
	ok, err := putScript.Run(ctx, s.C, []string{s.key(g.ID), s.ids()}, args...).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return fail
	}
	g.Version = want + 1
	return nil
}

// Create stores a new game with version 1: one script run.
func (s *GameRedis) Create(ctx context.Context, g *game.Game) error {
	return s.put(ctx, g, 0, fmt.Errorf("create %s: %w", g.ID, runtime.ErrDuplicate))
}

// Put replaces the game if its stored version is g.Version (0: it must
// not exist): one script run.
func (s *GameRedis) Put(ctx context.Context, g *game.Game) error {
	return s.put(ctx, g, g.Version, fmt.Errorf("put %s: %w", g.ID, runtime.ErrConflict))
}

// update runs updateScript.
func (s *GameRedis) update(ctx context.Context, op, id string, ifVersion int64, maxRound int, pairs ...any) error {
	args := make([]any, 0, 2+len(pairs))
	args = append(args, strconv.FormatInt(ifVersion, 10), strconv.Itoa(maxRound))
	args = append(args, pairs...)
	n, err := updateScript.Run(ctx, s.C, []string{s.key(id)}, args...).Int64()
	if err != nil {
		return err
	}
	switch n {
	case -1:
		return fmt.Errorf("%s %s: %w", op, id, runtime.ErrNotFound)
	case -2:
		return fmt.Errorf("%s %s: %w", op, id, runtime.ErrConflict)
	case -3:
		return fmt.Errorf("%s %s: round %d: %w", op, id, maxRound, runtime.ErrNotFound)
	}
	return nil
}

// SetSecondPlayer sets one field and bumps the version: one script run.
func (s *GameRedis) SetSecondPlayer(ctx context.Context, id string, v string) error {
	return s.update(ctx, "set second player", id, 0, -1, rSecond, v)
}

// AppendRounds adds a round and returns its index: one script run that
// sends only the new round.
func (s *GameRedis) AppendRounds(ctx context.Context, id string, e game.Round) (int, error) {
	data, err := bson.Marshal(&e)
	if err != nil {
		return 0, err
	}
	n, err := appendScript.Run(ctx, s.C, []string{s.key(id)}, data).Int()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("append %s: %w", id, runtime.ErrNotFound)
	}
	return n, nil
}

// Update writes the changes of u (rounds named must exist, optional
// version condition) and bumps the version: one script run.
func (s *GameRedis) Update(ctx context.Context, id string, u game.GameUpdate) error {
	var pairs []any
	if u.FirstPlayer != nil {
		pairs = append(pairs, rFirst, *u.FirstPlayer)
	}
	if u.SecondPlayer != nil {
		pairs = append(pairs, rSecond, *u.SecondPlayer)
	}
	maxRound := -1
	for i, r := range u.RoundsAt {
		if i < 0 {
			return fmt.Errorf("update %s: round %d: %w", id, i, runtime.ErrNotFound)
		}
		data, err := bson.Marshal(&r)
		if err != nil {
			return err
		}
		pairs = append(pairs, roundField(i), data)
		maxRound = max(maxRound, i)
	}
	return s.update(ctx, "update", id, u.IfVersion, maxRound, pairs...)
}

// List reads a page of games in id order: one ZRANGE BYLEX of the ids
// (limit+1 of them) and one pipeline of HGETALLs; the cursor is the last
// id. A game deleted between the two is left out.
func (s *GameRedis) List(ctx context.Context, req runtime.PageRequest) (runtime.Page[*game.Game], error) {
	n := req.Size()
	lo := "-"
	if req.Cursor != "" {
		lo = "(" + req.Cursor
	}
	var page runtime.Page[*game.Game]
	ids, err := s.C.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.ids(), Start: lo, Stop: "+", ByLex: true, Count: int64(n + 1)}).Result()
	if err != nil {
		return page, err
	}
	if len(ids) > n {
		ids = ids[:n]
		page.Next = ids[n-1]
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := s.C.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.key(id))
		}
		return nil
	}); err != nil {
		return page, err
	}
	page.Items = make([]*game.Game, 0, len(ids))
	for i, c := range cmds {
		if h := c.Val(); len(h) > 0 {
			g, err := decodeGame(ids[i], h)
			if err != nil {
				return page, err
			}
			page.Items = append(page.Items, g)
		}
	}
	return page, nil
}

// RedisBlobs stores aggregates of type T as one BSON document each in a
// hash "<Prefix><id>" (field doc, and field version, which the scripts
// check), like the generated EAO layout.
type RedisBlobs[T any] struct {
	C       redis.UniversalClient
	Prefix  string
	ID      func(*T) string
	Version func(*T) *int64
}

// blobScript writes ARGV[2] as the document at version ARGV[3] if the
// version is ARGV[1] ("0": if the hash does not exist). Returns 1 or 0.
var blobScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'version')
if ARGV[1] == '0' then
  if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
elseif v ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'doc', ARGV[2], 'version', ARGV[3])
return 1
`)

// Get reads aggregate id: one HGET.
func (s *RedisBlobs[T]) Get(ctx context.Context, id string) (*T, error) {
	data, err := s.C.HGet(ctx, s.Prefix+id, "doc").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("get %s: %w", id, runtime.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := bson.Unmarshal(data, v); err != nil {
		return nil, err
	}
	return v, nil
}

// write stores v at version want+1 if its stored version is want (0: if
// it does not exist).
func (s *RedisBlobs[T]) write(ctx context.Context, v *T, want int64, fail error) error {
	p := s.Version(v)
	old := *p
	*p = want + 1
	data, err := bson.Marshal(v)
	*p = old
	if err != nil {
		return err
	}
	ok, err := blobScript.Run(ctx, s.C, []string{s.Prefix + s.ID(v)}, strconv.FormatInt(want, 10), data, strconv.FormatInt(want+1, 10)).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return fail
	}
	*p = want + 1
	return nil
}

// Create stores a new aggregate with version 1: one script run.
func (s *RedisBlobs[T]) Create(ctx context.Context, v *T) error {
	return s.write(ctx, v, 0, fmt.Errorf("create %s: %w", s.ID(v), runtime.ErrDuplicate))
}

// Put replaces the aggregate if its stored version is v's (0: it must
// not exist): one script run.
func (s *RedisBlobs[T]) Put(ctx context.Context, v *T) error {
	return s.write(ctx, v, *s.Version(v), fmt.Errorf("put %s: %w", s.ID(v), runtime.ErrConflict))
}

// HotelRedis is the hand-written go-redis store of hotel.Hotel.
type HotelRedis struct {
	C      redis.UniversalClient
	Prefix string
}

// NewHotelRedis returns the store over c, its keys under prefix.
func NewHotelRedis(c redis.UniversalClient, prefix string) *HotelRedis {
	return &HotelRedis{C: c, Prefix: prefix}
}

func (s *HotelRedis) key(id string) string { return s.Prefix + "hotel:" + id }
func (s *HotelRedis) byName() string       { return s.Prefix + "hotel:byName" }
func (s *HotelRedis) byCityStars() string  { return s.Prefix + "hotel:byCityStars" }

// hotelData is the stored document of a hotel's unindexed fields.
type hotelData struct {
	Tags    []string      `bson:"tags"`
	Address hotel.Address `bson:"address"`
	Rooms   []hotel.Room  `bson:"rooms"`
}

// starsKey encodes stars so that the keys sort as the numbers: 16 hex
// digits of the value with the sign bit flipped.
func starsKey(stars int) string { return fmt.Sprintf("%016x", uint64(stars)^(1<<63)) }

// createHotelScript stores a new hotel (fields ARGV[5...] in pairs) and
// its two index members (ARGV[3], ARGV[4]) if neither the hotel nor its
// name (members in [ARGV[1], ARGV[2]) of KEYS[2]) exists. Returns 1 or 0.
var createHotelScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if #redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', 0, 1) > 0 then return 0 end
` + fmt.Sprintf(hsetPairs, 5) + `
redis.call('ZADD', KEYS[2], 0, ARGV[3])
redis.call('ZADD', KEYS[3], 0, ARGV[4])
return 1
`)

// setCityScript moves hotel ARGV[1] to city ARGV[2]: its cityStars member
// and its city field. Returns 1, or 0 if there is no such hotel.
var setCityScript = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'city', '_sk')
if not h[1] then return 0 end
redis.call('ZREM', KEYS[2], h[1] .. '\0' .. h[2] .. ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[2] .. '\0' .. h[2] .. ARGV[1])
redis.call('HSET', KEYS[1], 'city', ARGV[2])
return 1
`)

func checkNUL(op, what, v string) error {
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%s: %s %q has a NUL byte: %w", op, what, v, runtime.ErrInvalidValue)
	}
	return nil
}

// Create stores a new hotel and its index members: one script run; a
// name in use fails with runtime.ErrDuplicate.
func (s *HotelRedis) Create(ctx context.Context, h *hotel.Hotel) error {
	if err := checkNUL("create", "name", h.Name); err != nil {
		return err
	}
	if err := checkNUL("create", "city", h.City); err != nil {
		return err
	}
	data, err := bson.Marshal(&hotelData{Tags: h.Tags, Address: h.Address, Rooms: h.Rooms})
	if err != nil {
		return err
	}
	sk := starsKey(h.Stars)
	ok, err := createHotelScript.Run(ctx, s.C, []string{s.key(h.ID), s.byName(), s.byCityStars()},
		"["+h.Name+"\x00", "("+h.Name+"\x01", h.Name+"\x00"+h.ID, h.City+"\x00"+sk+h.ID,
		"name", h.Name, "city", h.City, "stars", strconv.Itoa(h.Stars), "_sk", sk, "data", data).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return fmt.Errorf("create %s: %w", h.ID, runtime.ErrDuplicate)
	}
	return nil
}

// decodeHotel builds hotel id from its hash.
func decodeHotel(id string, h map[string]string) (*hotel.Hotel, error) {
	stars, err := strconv.Atoi(h["stars"])
	if err != nil {
		return nil, fmt.Errorf("hotel %s: bad stars %q", id, h["stars"])
	}
	var d hotelData
	if err := bson.Unmarshal([]byte(h["data"]), &d); err != nil {
		return nil, fmt.Errorf("hotel %s: %w", id, err)
	}
	return &hotel.Hotel{ID: id, Name: h["name"], City: h["city"], Stars: stars, Tags: d.Tags, Address: d.Address, Rooms: d.Rooms}, nil
}

// GetByName reads the hotel with that name: one ZRANGE BYLEX of the name
// index, one HGETALL (the hotel is checked to still have the name: the
// two reads are not atomic).
func (s *HotelRedis) GetByName(ctx context.Context, name string) (*hotel.Hotel, error) {
	notFound := fmt.Errorf("get by name %q: %w", name, runtime.ErrNotFound)
	if strings.IndexByte(name, 0) >= 0 {
		return nil, notFound
	}
	ms, err := s.C.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.byName(), Start: "[" + name + "\x00", Stop: "(" + name + "\x01", ByLex: true, Count: 1}).Result()
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, notFound
	}
	id := ms[0][len(name)+1:]
	m, err := s.C.HGetAll(ctx, s.key(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(m) == 0 || m["name"] != name {
		return nil, notFound
	}
	return decodeHotel(id, m)
}

// ListByCityStars reads a page of the hotels in city with at least
// minStars stars, in (stars, id) order: one ZRANGE BYLEX of the index
// (limit+1 members) and one pipeline of HGETALLs. Hotels that no longer
// match (changed between the two reads) are left out, so a page may be
// short. The cursor is the last member.
func (s *HotelRedis) ListByCityStars(ctx context.Context, city string, minStars int, req runtime.PageRequest) (runtime.Page[*hotel.Hotel], error) {
	n := req.Size()
	var page runtime.Page[*hotel.Hotel]
	if strings.IndexByte(city, 0) >= 0 {
		return page, nil
	}
	prefix := city + "\x00"
	lo := "[" + prefix + starsKey(minStars)
	if req.Cursor != "" {
		if !strings.HasPrefix(req.Cursor, prefix) || len(req.Cursor) < len(prefix)+16 {
			return page, fmt.Errorf("cursor %q: %w", req.Cursor, runtime.ErrBadCursor)
		}
		lo = "(" + req.Cursor
	}
	ms, err := s.C.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.byCityStars(), Start: lo, Stop: "(" + city + "\x01", ByLex: true, Count: int64(n + 1)}).Result()
	if err != nil {
		return page, err
	}
	if len(ms) > n {
		ms = ms[:n]
		page.Next = ms[n-1]
	}
	cmds := make([]*redis.MapStringStringCmd, len(ms))
	if _, err := s.C.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range ms {
			cmds[i] = p.HGetAll(ctx, s.key(m[len(prefix)+16:]))
		}
		return nil
	}); err != nil {
		return page, err
	}
	page.Items = make([]*hotel.Hotel, 0, len(ms))
	for i, c := range cmds {
		m := c.Val()
		if len(m) == 0 || m["city"] != city {
			continue
		}
		h, err := decodeHotel(ms[i][len(prefix)+16:], m)
		if err != nil {
			return page, err
		}
		if h.Stars >= minStars {
			page.Items = append(page.Items, h)
		}
	}
	return page, nil
}

// SetCity sets the city and moves the cityStars member: one script run.
func (s *HotelRedis) SetCity(ctx context.Context, id string, city string) error {
	if err := checkNUL("set city", "city", city); err != nil {
		return err
	}
	ok, err := setCityScript.Run(ctx, s.C, []string{s.key(id), s.byCityStars()}, id, city).Int()
	if err != nil {
		return err
	}
	if ok == 0 {
		return fmt.Errorf("set city %s: %w", id, runtime.ErrNotFound)
	}
	return nil
}
