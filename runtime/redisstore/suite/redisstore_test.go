package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/internal/limit"
	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

var bg = context.Background()

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// modes runs fn on a single node and on the 3-master cluster.
func modes(t *testing.T, fn func(t *testing.T, c redis.UniversalClient)) {
	t.Run("single", func(t *testing.T) { fn(t, redistest.Server(t)) })
	t.Run("cluster", func(t *testing.T) { fn(t, redistest.Cluster(t)) })
}

// ownClient returns a client of its own to the server (or cluster) of
// shared, closed when t ends, for a test that hooks the commands it sends
// (the shared client serves every test of the package).
func ownClient(t *testing.T, shared redis.UniversalClient) redis.UniversalClient {
	var c redis.UniversalClient
	if cc, ok := shared.(*redis.ClusterClient); ok {
		c = redis.NewClusterClient(cc.Options())
	} else {
		c = redis.NewClient(shared.(*redis.Client).Options())
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func clean(t *testing.T, what string, repair func(context.Context) (runtime.RepairReport, error)) {
	t.Helper()
	rep, err := repair(bg)
	must(t, err)
	if rep.Added != 0 || rep.Removed != 0 || len(rep.Conflicts) != 0 {
		t.Fatalf("after %s, Repair found lookup entries to fix: %v %q", what, rep, rep.Conflicts)
	}
}

// TestConflictingUpdates: 16 goroutines each make 100 updates of one block
// that move it between lookup values (region, level, tags), with no
// version condition: every update lands (a write that keeps losing the
// block's write sequence reports runtime.ErrConflict and is retried), the
// version counts them all, and the index tables end exactly right.
func TestConflictingUpdates(t *testing.T) {
	per := 100
	if testing.Short() {
		per = 50
	}
	modes(t, func(t *testing.T, c redis.UniversalClient) {
		matches := ensured(t, model.NewMatchRedisRepository(c))
		must(t, matches.Create(bg, &model.Match{ID: "c", Code: "c", Region: "r", Tags: []string{"t"}}))
		const workers = 16
		errs := make([]error, workers)
		retries := make([]int, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range per {
					region, tags := fmt.Sprint("r", w), []string{fmt.Sprint("t", k%3), fmt.Sprint("w", w)}
					for {
						err := matches.Update(bg, "c", model.MatchUpdate{Region: &region, Level: &k, Tags: &tags})
						if errors.Is(err, runtime.ErrConflict) {
							retries[w]++
							continue
						}
						if err != nil {
							errs[w] = err
							return
						}
						break
					}
				}
			}()
		}
		wg.Wait()
		total := 0
		for w := range workers {
			must(t, errs[w])
			total += retries[w]
		}
		m, err := matches.Get(bg, "c")
		must(t, err)
		if m.Version != int64(workers*per+1) || m.Level != per-1 {
			t.Fatalf("after %d updates: version %d, level %d", workers*per, m.Version, m.Level)
		}
		t.Logf("%d updates, %d retried after losing the block", workers*per, total)
		clean(t, "the updates", matches.Repair)
		page, err := matches.ListByRegionLevel(bg, model.MatchRegionLevelQuery{Region: runtime.Eq(m.Region), Level: runtime.Eq(m.Level)}, runtime.PageRequest{})
		must(t, err)
		if len(page.Items) != 1 {
			t.Fatalf("ListByRegionLevel(%s, %d): %d items", m.Region, m.Level, len(page.Items))
		}
		for w := range workers {
			page, err := matches.ListByTags(bg, fmt.Sprint("w", w), runtime.PageRequest{})
			must(t, err)
			if held := fmt.Sprint("w", w) == m.Tags[1]; (len(page.Items) == 1) != held {
				t.Fatalf("ListByTags(w%d): %d items, the block holds %v", w, len(page.Items), m.Tags)
			}
		}
	})
}

// TestOneScriptOnANode: on a single node a write that changes lookup
// values reads the block once and writes the block, the index tables and
// the listing in one script run; on a cluster the index tables are
// separate runs (claim, block, removal of the old values). The read is
// an HMGET of the entries the lookups need (no round, no venue), and an
// update of a partition's element reads the whole block.
func TestOneScriptOnANode(t *testing.T) {
	modes(t, func(t *testing.T, shared redis.UniversalClient) {
		c := ownClient(t, shared)
		matches := model.NewMatchRedisRepository(c)
		must(t, matches.EnsureIndexes(bg))
		must(t, matches.Create(bg, &model.Match{ID: "m", Code: "a"}))
		var mu sync.Mutex
		var names []string
		var read []any
		c.AddHook(hook{func(cmd redis.Cmder) {
			mu.Lock()
			names = append(names, cmd.Name())
			if cmd.Name() == "hmget" {
				read = cmd.Args()[2:]
			}
			mu.Unlock()
		}})
		must(t, matches.SetCode(bg, "m", "b"))
		want := []string{"hmget", "evalsha"}
		if _, cluster := c.(*redis.ClusterClient); cluster {
			// claim "b", the block, remove "a"
			want = []string{"hmget", "evalsha", "evalsha", "evalsha"}
		}
		if fmt.Sprint(names) != fmt.Sprint(want) {
			t.Fatalf("SetCode sent %v, want %v", names, want)
		}
		if got := fmt.Sprint(read); got != "[_seq _inc version code]" {
			t.Fatalf("SetCode read %s, want the stamps, the version and code", got)
		}
		// An update of a lookup field with an element of a partition
		// needs the partition (the element must exist): the whole block
		// is read.
		names = nil
		code := "c"
		err := matches.Update(bg, "m", model.MatchUpdate{Code: &code, RoundsAt: map[int]model.Round{0: {}}})
		if !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("an update of a missing round: %v", err)
		}
		if len(names) == 0 || names[0] != "hgetall" {
			t.Fatalf("an update of the code and a round sent %v, want an HGETALL first", names)
		}
		got, err := matches.GetByCode(bg, "b")
		must(t, err)
		if got.ID != "m" {
			t.Fatalf("GetByCode(b) = %s", got.ID)
		}
		_, err = matches.GetByCode(bg, "a")
		if !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("GetByCode(a) after SetCode(b): %v", err)
		}
	})
}

type hook struct{ fn func(redis.Cmder) }

func (h hook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.fn(cmd)
		return next(ctx, cmd)
	}
}
func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.fn(c)
		}
		return next(ctx, cmds)
	}
}

// TestStaleClaim: on a cluster, a unique claim left by a write that never
// wrote its block (a crash between the claim and the block) keeps its
// value from other blocks while it is younger than StaleAfter (the write
// may be in flight), and is taken over once older.
func TestStaleClaim(t *testing.T) {
	c := redistest.Cluster(t)
	matches := ensured(t, model.NewMatchRedisRepository(c))
	value := string(runtime.AppendString(nil, "prize"))
	ghost := string(runtime.AppendString(nil, "ghost"))
	claim := func(age time.Duration) {
		seq := fmt.Sprintf("%020d", time.Now().Add(-age).UnixNano())
		must(t, c.HSet(bg, "{matches.code}:claims", value, ghost).Err())
		must(t, c.ZAdd(bg, "{matches.code}", redis.Z{Member: value + ghost}).Err())
		must(t, c.HSet(bg, "{matches.code}:meta", value+ghost, "x "+seq).Err())
	}
	claim(time.Second)
	err := matches.Create(bg, &model.Match{ID: "m", Code: "prize"})
	if !errors.Is(err, runtime.ErrDuplicate) {
		t.Fatalf("Create while a fresh claim holds the value: %v, want ErrDuplicate", err)
	}
	if _, err := matches.GetByCode(bg, "prize"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByCode through a claim of no block: %v", err)
	}
	claim(2 * redisstore.StaleAfter)
	must(t, matches.Create(bg, &model.Match{ID: "m", Code: "prize"}))
	got, err := matches.GetByCode(bg, "prize")
	must(t, err)
	if got.ID != "m" {
		t.Fatalf("GetByCode after the takeover: %s", got.ID)
	}
	clean(t, "the takeover", matches.Repair)
}

// TestKeyNames checks the names of the hashes: the block key in a hash
// tag, a composite key as quoted strings and numbers.
func TestKeyNames(t *testing.T) {
	c := redistest.Server(t)
	replies := model.NewReplyRedisRepository(c)
	r := &model.Reply{Key: model.ReplyKey{Thread: `a}b,"c`}}
	must(t, replies.Create(bg, r))
	keys, err := c.Keys(bg, "Reply*").Result()
	must(t, err)
	want := map[string]bool{`Reply:{"a}b,\"c",1}`: true, "Reply:blocks": true, `Reply:counter:{"a}b,\"c"}`: true}
	for _, k := range keys {
		if !want[k] {
			t.Errorf("key %q", k)
		}
		delete(want, k)
	}
	if len(want) != 0 {
		t.Fatalf("keys %q, missing %v", keys, want)
	}
	cards := model.NewCardRedisRepository(c)
	must(t, cards.Create(bg, &model.Card{ID: -7}))
	if n := c.Exists(bg, "Card:{-7}").Val(); n != 1 {
		t.Fatalf("no hash Card:{-7}")
	}
	// Repair finds blocks by their names.
	rep, err := replies.Repair(bg)
	must(t, err)
	if rep.Aggregates != 1 {
		t.Fatalf("Repair read %d replies", rep.Aggregates)
	}
	rep, err = cards.Repair(bg)
	must(t, err)
	if rep.Aggregates != 1 {
		t.Fatalf("Repair read %d cards", rep.Aggregates)
	}
}

// TestTooLarge: an entry over Redis's value limit (512 MB, lowered here to
// 1 KiB so that the test allocates little) fails with runtime.ErrTooLarge
// before anything is sent.
func TestTooLarge(t *testing.T) {
	defer limit.Set("redisstore.bulk", 1<<10)()
	c := redistest.Server(t)
	cards := model.NewCardRedisRepository(c)
	matches := model.NewMatchRedisRepository(c)
	big := strings.Repeat("x", 2<<10)
	err := cards.Create(bg, &model.Card{ID: 1, Title: big})
	if !errors.Is(err, runtime.ErrTooLarge) {
		t.Fatalf("Create of a 2 KiB title: %v", err)
	}
	if n := c.DBSize(bg).Val(); n != 0 {
		t.Fatalf("%d keys after a refused write", n)
	}
	must(t, matches.EnsureIndexes(bg))
	must(t, matches.Create(bg, &model.Match{ID: "m", Code: "m"}))
	_, err = matches.AppendRounds(bg, "m", model.Round{Serial: big})
	if !errors.Is(err, runtime.ErrTooLarge) {
		t.Fatalf("AppendRounds of a 2 KiB round: %v", err)
	}
	err = matches.SetRegion(bg, "m", big)
	if !errors.Is(err, runtime.ErrTooLarge) {
		t.Fatalf("SetRegion of a 2 KiB region: %v", err)
	}
	m, err := matches.Get(bg, "m")
	must(t, err)
	if m.Version != 1 || len(m.Rounds) != 0 || m.Region != "" {
		t.Fatalf("refused writes changed the match: %+v", m)
	}
}

// fault is a hook that injects one fault into the first script run naming
// key: a lost reply (the server runs the script, the client sees an
// error) or a crash before it (the script never reaches the server).
type fault struct {
	key  string
	lose bool // true: lost reply; false: not sent
	mu   sync.Mutex
	done bool
}

var errInjected = errors.New("connection reset (injected)")

func (f *fault) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f *fault) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		hit := false
		if cmd.Name() == "evalsha" && len(args) > 3 {
			n, _ := args[2].(int)
			for _, k := range args[3:min(len(args), 3+n)] {
				hit = hit || k == f.key
			}
		}
		f.mu.Lock()
		hit = hit && !f.done
		if hit {
			f.done = true
		}
		f.mu.Unlock()
		if !hit {
			return next(ctx, cmd)
		}
		if f.lose {
			_ = next(ctx, cmd)
		}
		cmd.SetErr(errInjected)
		return errInjected
	}
}
func (f *fault) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLostReply: a write whose script ran but whose reply was lost reads
// the block back, finds its write sequence and completes (on a cluster:
// removes the old entries); a write whose script never ran fails, changes
// no block, and leaves at most entries that reads skip and Repair removes;
// its retry succeeds.
func TestLostReply(t *testing.T) {
	modes(t, func(t *testing.T, shared redis.UniversalClient) {
		open := func(f *fault) (model.MatchRepository, func()) {
			c := ownClient(t, shared)
			c.AddHook(f)
			return model.NewMatchRedisRepository(c), func() { c.Close() }
		}
		plain := ensured(t, model.NewMatchRedisRepository(shared))
		must(t, plain.Create(bg, &model.Match{ID: "m", Code: "a"}))

		lost := &fault{key: "matches:{m}", lose: true}
		matches, done := open(lost)
		must(t, matches.SetCode(bg, "m", "b"))
		done()
		if !lost.done {
			t.Fatal("no fault injected")
		}
		got, err := plain.GetByCode(bg, "b")
		must(t, err)
		if got.ID != "m" || got.Version != 2 {
			t.Fatalf("after a lost reply: %+v", got)
		}
		clean(t, "a lost reply", plain.Repair)

		crash := &fault{key: "matches:{m}"}
		matches, done = open(crash)
		err = matches.SetCode(bg, "m", "c")
		done()
		if !crash.done {
			t.Fatal("no fault injected")
		}
		if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "outcome unknown") {
			t.Fatalf("SetCode whose script never ran: %v", err)
		}
		if _, err := plain.GetByCode(bg, "c"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("GetByCode(c) after a write that did not happen: %v", err)
		}
		got, err = plain.GetByCode(bg, "b")
		must(t, err)
		if got.ID != "m" || got.Version != 2 {
			t.Fatalf("the block changed: %+v", got)
		}
		rep, err := plain.Repair(bg)
		must(t, err)
		if _, cluster := shared.(*redis.ClusterClient); cluster != (rep.Removed == 1) || rep.Added != 0 {
			t.Fatalf("Repair after the crash: %v (a cluster keeps the claim of c, which Repair removes)", rep)
		}
		must(t, plain.SetCode(bg, "m", "c"))
		got, err = plain.GetByCode(bg, "c")
		must(t, err)
		if got.ID != "m" || got.Version != 3 {
			t.Fatalf("after the retry: %+v", got)
		}
		clean(t, "the retry", plain.Repair)
	})
}

// resend is a hook that sends the first script run whose arguments hold
// marker twice, as go-redis does when a reply is lost (it resends a
// command after io.EOF or a read timeout): the server runs it, then runs
// it again, and the client sees the second reply.
type resend struct {
	marker string
	mu     sync.Mutex
	done   bool
}

func (r *resend) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *resend) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		hit := false
		if cmd.Name() == "evalsha" {
			for _, a := range cmd.Args() {
				switch v := a.(type) {
				case string:
					hit = hit || strings.Contains(v, r.marker)
				case []byte:
					hit = hit || bytes.Contains(v, []byte(r.marker))
				}
			}
		}
		r.mu.Lock()
		hit = hit && !r.done
		if hit {
			r.done = true
		}
		r.mu.Unlock()
		if hit {
			if err := next(ctx, cmd); err != nil {
				return err
			}
			cmd.SetErr(nil)
		}
		return next(ctx, cmd)
	}
}
func (r *resend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestResentWrite: a write whose script run is resent (the first run
// applied, its reply lost) is applied once and answers as the first run
// did: a Create does not fail with ErrDuplicate of itself, a setter moves
// the version by one, an append adds one element and returns its index;
// the lookups stay right. On a node and on a cluster.
func TestResentWrite(t *testing.T) {
	modes(t, func(t *testing.T, shared redis.UniversalClient) {
		open := func(marker string) (model.MatchRepository, *resend, func()) {
			c := ownClient(t, shared)
			r := &resend{marker: marker}
			c.AddHook(r)
			return model.NewMatchRedisRepository(c), r, func() { c.Close() }
		}
		plain := ensured(t, model.NewMatchRedisRepository(shared))
		ms, r, done := open("create-marker")
		err := ms.Create(bg, &model.Match{ID: "r", Code: "create-marker", Rounds: []model.Round{{Serial: "s0"}}})
		done()
		if !r.done || err != nil {
			t.Fatalf("resent Create (resent: %v): %v", r.done, err)
		}
		ms, r, done = open("set-marker")
		err = ms.SetCode(bg, "r", "set-marker")
		done()
		if !r.done || err != nil {
			t.Fatalf("resent SetCode (resent: %v): %v", r.done, err)
		}
		ms, r, done = open("append-marker")
		i, err := ms.AppendRounds(bg, "r", model.Round{Serial: "append-marker"})
		done()
		if !r.done || err != nil || i != 1 {
			t.Fatalf("resent AppendRounds (resent: %v): index %d, %v", r.done, i, err)
		}
		got, err := plain.GetByCode(bg, "set-marker")
		must(t, err)
		if got.ID != "r" || got.Version != 3 || len(got.Rounds) != 2 || got.Rounds[1].Serial != "append-marker" {
			t.Fatalf("after the resent writes: version %d, %d rounds: %+v", got.Version, len(got.Rounds), got)
		}
		if _, err := plain.GetByCode(bg, "create-marker"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("GetByCode of the old code: %v", err)
		}
		clean(t, "resent writes", plain.Repair)
	})
}

// dropProxy forwards TCP connections to a Redis server and, once armed,
// closes the client's connection instead of forwarding the reply to the
// first request holding marker: the server ran the command, the client
// sees io.EOF.
type dropProxy struct {
	ln      net.Listener
	target  string
	marker  []byte
	armed   atomic.Bool
	dropped atomic.Int32
}

func newDropProxy(t *testing.T, target, marker string) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	p := &dropProxy{ln: ln, target: target, marker: []byte(marker)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *dropProxy) serve(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	var dropNext atomic.Bool
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if bytes.Contains(buf[:n], p.marker) && p.armed.CompareAndSwap(true, false) {
					dropNext.Store(true)
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		s.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if dropNext.Load() {
				p.dropped.Add(1)
				break
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	c.Close()
	s.Close()
}

// TestGoRedisResendsAfterALostReply: go-redis, with its default options,
// resends a script run whose connection closed before the reply (the
// server had run it); the write is applied once all the same.
func TestGoRedisResendsAfterALostReply(t *testing.T) {
	srv := redistest.Server(t)
	p := newDropProxy(t, srv.Options().Addr, "lost-reply-marker")
	opts := *srv.Options()
	opts.Addr = p.ln.Addr().String()
	c := redis.NewClient(&opts)
	defer c.Close()
	games := ensured(t, model.NewMatchRedisRepository(c))
	must(t, games.Create(bg, &model.Match{ID: "p", Code: "p0"})) // loads the script
	p.armed.Store(true)
	i, err := games.AppendRounds(bg, "p", model.Round{Serial: "lost-reply-marker"})
	if p.dropped.Load() != 1 {
		t.Fatalf("no reply dropped (%d)", p.dropped.Load())
	}
	if err != nil || i != 0 {
		t.Fatalf("AppendRounds with a lost reply: index %d, %v", i, err)
	}
	got, err := model.NewMatchRedisRepository(srv).Get(bg, "p")
	must(t, err)
	if len(got.Rounds) != 1 || got.Version != 2 {
		t.Fatalf("after a lost reply: %d rounds, version %d", len(got.Rounds), got.Version)
	}
	clean(t, "a lost reply", model.NewMatchRedisRepository(srv).Repair)
}

// ensured runs EnsureIndexes of r, which records the collection's layout
// (until it has, writes that may claim unique values fail with
// runtime.ErrNotReady), and returns r.
func ensured[R interface{ EnsureIndexes(context.Context) error }](t testing.TB, r R) R {
	t.Helper()
	must(t, r.EnsureIndexes(bg))
	return r
}

// withTimeouts returns a client of the servers of c that honours context
// deadlines, as EnsureIndexes requires, closed when t ends.
func withTimeouts(t testing.TB, c redis.UniversalClient) redis.UniversalClient {
	var out redis.UniversalClient
	if cc, ok := c.(*redis.ClusterClient); ok {
		o := *cc.Options()
		o.ContextTimeoutEnabled = true
		out = redis.NewClusterClient(&o)
	} else {
		o := *c.(*redis.Client).Options()
		o.ContextTimeoutEnabled = true
		out = redis.NewClient(&o)
	}
	t.Cleanup(func() { out.Close() })
	return out
}
