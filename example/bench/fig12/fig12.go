// Package fig12 is the experiment of the NoAM paper (Bugiotti et al.,
// section 8, Figure 12) on noamgen's generated repositories: games of about
// a dozen rounds (about 8 KB) in three layouts generated from the tagged
// structs of package bench,
//
//   - EAO: the whole game one entry (bench.EAOGame); adding a round reads
//     the game and writes it back whole;
//   - ROUNDS: a root entry and one entry per round (bench.RoundsGame, Fig. 8);
//     adding a round is AppendRounds;
//   - BLOCKS: rounds as blocks of their own (bench.BlocksGame and
//     bench.GameRound keyed {game, seq}), the layout the paper measures
//     against its guidelines; reading a game is Get of the game and
//     ListByGame of its rounds, adding a round is Create of a GameRound;
//
// under three workloads: (a) game retrievals only, (b) round additions
// only, (c) a 50/50 mix, each on random games, for a sweep of database
// sizes (numbers of games). Layouts are interleaved: at each size every
// repetition runs each workload on the layouts round-robin, Chunk
// operations on each in turn, starting with a different layout each time,
// so that a slow spell of a shared machine hits every layout alike. Games stay at a fixed size: they are loaded
// with BaseRounds rounds, and a game that reaches BaseRounds+ExtraRounds
// rounds is replaced (untimed) by a fresh one under a new id, so every game
// read has BaseRounds to BaseRounds+ExtraRounds-1 rounds, a dozen on
// average. Each size starts with an untimed warm-up; only the operations
// are timed.
package fig12

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/noamgen/noamgen/example/bench"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/dynamostore"
)

// Game sizes: loaded with BaseRounds rounds, replaced at
// BaseRounds+ExtraRounds, so about a dozen rounds on average.
const (
	BaseRounds  = 10
	ExtraRounds = 4
)

// Layout is one data representation under test, over its own database
// (bbolt file) or collections.
type Layout struct {
	Name string
	// Create stores game id with n rounds.
	Create func(ctx context.Context, id string, n int) error
	// Get reads game id whole and returns its number of rounds.
	Get func(ctx context.Context, id string) (int, error)
	// AddRound adds round r to game id.
	AddRound func(ctx context.Context, id string, r bench.Round) error
	// Delete removes game id (n rounds) whole.
	Delete func(ctx context.Context, id string, n int) error
}

// Layouts returns the three layouts over the given repositories.
func Layouts(eao bench.EAOGameRepository, rounds bench.RoundsGameRepository, games bench.BlocksGameRepository, gameRounds bench.GameRoundRepository) []Layout {
	return []Layout{
		{
			Name:   "EAO",
			Create: func(ctx context.Context, id string, n int) error { return eao.Create(ctx, bench.NewEAOGame(id, n)) },
			Get: func(ctx context.Context, id string) (int, error) {
				g, err := eao.Get(ctx, id)
				if err != nil {
					return 0, err
				}
				return len(g.Rounds), nil
			},
			AddRound: func(ctx context.Context, id string, r bench.Round) error {
				// What the layout forces: read the game, write it back whole.
				g, err := eao.Get(ctx, id)
				if err != nil {
					return err
				}
				g.Rounds = append(g.Rounds, r)
				return eao.Put(ctx, g)
			},
			Delete: func(ctx context.Context, id string, _ int) error { return eao.Delete(ctx, id) },
		},
		{
			Name: "ROUNDS",
			Create: func(ctx context.Context, id string, n int) error {
				return rounds.Create(ctx, bench.NewRoundsGame(id, n))
			},
			Get: func(ctx context.Context, id string) (int, error) {
				g, err := rounds.Get(ctx, id)
				if err != nil {
					return 0, err
				}
				return len(g.Rounds), nil
			},
			AddRound: func(ctx context.Context, id string, r bench.Round) error {
				_, err := rounds.AppendRounds(ctx, id, r)
				return err
			},
			Delete: func(ctx context.Context, id string, _ int) error { return rounds.Delete(ctx, id) },
		},
		{
			Name: "BLOCKS",
			Create: func(ctx context.Context, id string, n int) error {
				if err := games.Create(ctx, &bench.BlocksGame{ID: id, FirstPlayer: "mary", SecondPlayer: "rick"}); err != nil {
					return err
				}
				for i := range n {
					if err := gameRounds.Create(ctx, &bench.GameRound{Key: bench.GameRoundKey{Game: id}, Round: bench.NewRound(i)}); err != nil {
						return err
					}
				}
				return nil
			},
			Get: func(ctx context.Context, id string) (int, error) {
				// The game, then its rounds by computed keys, a page at a time.
				g, err := games.Get(ctx, id)
				if err != nil {
					return 0, err
				}
				var rs []bench.Round
				for r, err := range runtime.Pages(ctx, runtime.MaxPageLimit, func(ctx context.Context, req runtime.PageRequest) (runtime.Page[*bench.GameRound], error) {
					return gameRounds.ListByGame(ctx, g.ID, req)
				}) {
					if err != nil {
						return 0, err
					}
					rs = append(rs, r.Round)
				}
				return len(rs), nil
			},
			AddRound: func(ctx context.Context, id string, r bench.Round) error {
				return gameRounds.Create(ctx, &bench.GameRound{Key: bench.GameRoundKey{Game: id}, Round: r})
			},
			Delete: func(ctx context.Context, id string, n int) error {
				for seq := range int64(n) {
					if err := gameRounds.Delete(ctx, bench.GameRoundKey{Game: id, Seq: seq + 1}); err != nil {
						return err
					}
				}
				return games.Delete(ctx, id)
			},
		},
	}
}

// MongoLayouts returns the three layouts over db's collections.
func MongoLayouts(db *mongo.Database) []Layout {
	return Layouts(bench.NewEAOGameMongoRepository(db), bench.NewRoundsGameMongoRepository(db),
		bench.NewBlocksGameMongoRepository(db), bench.NewGameRoundMongoRepository(db))
}

// RedisLayouts returns the three layouts over a Redis node or cluster.
func RedisLayouts(rdb redis.UniversalClient) []Layout {
	return Layouts(bench.NewEAOGameRedisRepository(rdb), bench.NewRoundsGameRedisRepository(rdb),
		bench.NewBlocksGameRedisRepository(rdb), bench.NewGameRoundRedisRepository(rdb))
}

// DynamoLayouts returns the three layouts over DynamoDB tables named with
// prefix, after creating them (EnsureIndexes).
func DynamoLayouts(ctx context.Context, c *dynamodb.Client, prefix string) ([]Layout, error) {
	opts := dynamostore.Options{TablePrefix: prefix}
	eao, rounds := bench.NewEAOGameDynamoRepository(c, opts), bench.NewRoundsGameDynamoRepository(c, opts)
	games, gameRounds := bench.NewBlocksGameDynamoRepository(c, opts), bench.NewGameRoundDynamoRepository(c, opts)
	for _, r := range []interface{ EnsureIndexes(context.Context) error }{eao, rounds, games, gameRounds} {
		if err := r.EnsureIndexes(ctx); err != nil {
			return nil, err
		}
	}
	return Layouts(eao, rounds, games, gameRounds), nil
}

// Workload is one of the paper's workloads: the fraction of operations
// that are game retrievals (the others add a round).
type Workload struct {
	Name     string
	ReadFrac float64
}

// Workloads are the paper's three workloads.
var Workloads = []Workload{
	{"(a) retrievals", 1},
	{"(b) round additions", 0},
	{"(c) 50/50 mix", 0.5},
}

// Config is one run of the experiment.
type Config struct {
	Store   string // for the report, e.g. "bbolt (NoSync)"
	Sizes   []int  // numbers of games, increasing
	Ops     int    // operations per layout, workload, size and repetition
	Repeats int    // repetitions
	Chunk   int    // operations per layout in a row (default 50): layouts are interleaved chunk by chunk
	Seed    uint64
	// Progress, when not nil, receives a progress bar (a terminal line
	// rewritten in place).
	Progress io.Writer `json:"-"`
}

func (cfg Config) chunk() int {
	if cfg.Chunk <= 0 {
		return 50
	}
	return cfg.Chunk
}

// Result is what one layout did under one workload at one size.
type Result struct {
	Size      int
	Workload  string
	Layout    string
	Ops       int
	Mean      time.Duration
	P50, P95  time.Duration
	OpsPerSec float64 // operations per second of operation time
}

// game is one game of one layout: its current id and number of rounds.
type game struct {
	id     string
	rounds int
	gen    int
}

// Run runs the experiment on the layouts, which must be over empty
// databases, and returns one Result per size, workload and layout.
func Run(ctx context.Context, cfg Config, layouts []Layout) ([]Result, error) {
	if !slices.IsSorted(cfg.Sizes) {
		return nil, fmt.Errorf("sizes %v are not increasing", cfg.Sizes)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	maxSize := cfg.Sizes[len(cfg.Sizes)-1]
	bar := newProgress(cfg.Progress, int64(maxSize*len(layouts))+int64(len(cfg.Sizes)*cfg.Repeats*len(Workloads)*len(layouts)*cfg.Ops))
	defer bar.done()

	games := make([][]game, len(layouts)) // per layout
	var results []Result
	for _, size := range cfg.Sizes {
		// Grow every layout's database to size games.
		for li, l := range layouts {
			bar.label(fmt.Sprintf("size %d: loading %s", size, l.Name))
			for i := len(games[li]); i < size; i++ {
				g := game{id: gameID(i, 0), rounds: BaseRounds}
				if err := l.Create(ctx, g.id, g.rounds); err != nil {
					return nil, fmt.Errorf("%s: loading %s: %w", l.Name, g.id, err)
				}
				games[li] = append(games[li], g)
				bar.add(1)
			}
		}
		// Warm up (untimed): a tenth of a repetition, every workload on
		// every layout.
		bar.label(fmt.Sprintf("size %d: warming up", size))
		for _, w := range Workloads {
			for li, l := range layouts {
				if _, err := runPhase(ctx, l, games[li][:size], w, cfg.Ops/10, rng, nil); err != nil {
					return nil, fmt.Errorf("%s, %s, %d games: %w", l.Name, w.Name, size, err)
				}
			}
		}
		lat := make(map[[2]int][]time.Duration) // [workload, layout]
		chunk := cfg.chunk()
		for rep := range cfg.Repeats {
			for wi, w := range Workloads {
				bar.label(fmt.Sprintf("size %d: rep %d/%d %s", size, rep+1, cfg.Repeats, w.Name))
				// Round-robin over the layouts in chunks of operations, so
				// that a slow spell of the machine hits every layout alike.
				for c := 0; c*chunk < cfg.Ops; c++ {
					n := min(chunk, cfg.Ops-c*chunk)
					for k := range layouts {
						li := (k + c + rep + wi) % len(layouts) // each layout in turn goes first
						l := layouts[li]
						d, err := runPhase(ctx, l, games[li][:size], w, n, rng, bar)
						if err != nil {
							return nil, fmt.Errorf("%s, %s, %d games: %w", l.Name, w.Name, size, err)
						}
						lat[[2]int{wi, li}] = append(lat[[2]int{wi, li}], d...)
					}
				}
			}
		}
		for wi, w := range Workloads {
			for li, l := range layouts {
				results = append(results, summarize(size, w.Name, l.Name, lat[[2]int{wi, li}]))
			}
		}
	}
	return results, nil
}

// runPhase runs ops operations of workload w on random games and returns
// their latencies. A game that reaches BaseRounds+ExtraRounds rounds is
// replaced by a fresh one under a new id (untimed).
func runPhase(ctx context.Context, l Layout, games []game, w Workload, ops int, rng *rand.Rand, bar *progress) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, ops)
	for range ops {
		g := &games[rng.IntN(len(games))]
		read := rng.Float64() < w.ReadFrac
		var r bench.Round
		if !read {
			r = bench.NewRound(g.rounds)
		}
		start := time.Now()
		if read {
			n, err := l.Get(ctx, g.id)
			if err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(start))
			if n != g.rounds {
				return nil, fmt.Errorf("game %s has %d rounds, want %d", g.id, n, g.rounds)
			}
		} else {
			if err := l.AddRound(ctx, g.id, r); err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(start))
			g.rounds++
			if g.rounds >= BaseRounds+ExtraRounds {
				if err := l.Delete(ctx, g.id, g.rounds); err != nil {
					return nil, fmt.Errorf("replacing %s: %w", g.id, err)
				}
				i, _ := parseGameID(g.id)
				*g = game{id: gameID(i, g.gen+1), rounds: BaseRounds, gen: g.gen + 1}
				if err := l.Create(ctx, g.id, g.rounds); err != nil {
					return nil, fmt.Errorf("replacing %s: %w", g.id, err)
				}
			}
		}
		if bar != nil {
			bar.add(1)
		}
	}
	return lat, nil
}

// gameID is the id of game i after gen replacements.
func gameID(i, gen int) string { return fmt.Sprintf("game-%07d-%d", i, gen) }

func parseGameID(id string) (i int, err error) {
	_, err = fmt.Sscanf(id, "game-%07d-", &i)
	return i, err
}

func summarize(size int, workload, layout string, lat []time.Duration) Result {
	slices.Sort(lat)
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	r := Result{Size: size, Workload: workload, Layout: layout, Ops: len(lat)}
	if len(lat) > 0 {
		r.Mean = sum / time.Duration(len(lat))
		r.P50 = lat[(len(lat)*50+99)/100-1]
		r.P95 = lat[(len(lat)*95+99)/100-1]
		r.OpsPerSec = float64(len(lat)) / sum.Seconds()
	}
	return r
}

// progress is a progress bar on a terminal line.
type progress struct {
	w          io.Writer
	total, n   int64
	text       string
	start, out time.Time
}

func newProgress(w io.Writer, total int64) *progress {
	return &progress{w: w, total: total, start: time.Now()}
}

func (p *progress) label(s string) {
	p.text = s
	p.draw(true)
}

func (p *progress) add(n int64) {
	p.n += n
	p.draw(false)
}

func (p *progress) draw(force bool) {
	if p.w == nil || (!force && time.Since(p.out) < 200*time.Millisecond) {
		return
	}
	p.out = time.Now()
	const width = 30
	frac := float64(p.n) / float64(max(p.total, 1))
	done := int(frac * width)
	eta := "?"
	if frac > 0.01 {
		eta = (time.Duration(float64(time.Since(p.start))/frac) - time.Since(p.start)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %s, eta %s\033[K", strings.Repeat("=", done), strings.Repeat(" ", width-done), 100*frac, p.text, eta)
}

func (p *progress) done() {
	if p.w != nil {
		fmt.Fprintf(p.w, "\r[%s] 100%% done in %s\033[K\n", strings.Repeat("=", 30), time.Since(p.start).Round(time.Second))
	}
}
