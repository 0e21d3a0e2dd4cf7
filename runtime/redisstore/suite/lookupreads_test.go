package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// afterHook runs fn after each command (or pipeline) it sees has been
// sent, with its name.
type afterHook struct{ fn func(name string) }

func (h afterHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h afterHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.fn(cmd.Name())
		return err
	}
}
func (h afterHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.fn(c.Name())
		}
		return err
	}
}

// TestLookupReads: on a single node a lookup read takes its entries as
// they are (the claim with HGET, the members with ZRANGE BYLEX), since a
// write changes a block and its entries in one script run; on a cluster
// it reads them with their meta (the index script) to verify them. Pages
// of a unique and of a non-unique lookup resume after their cursor.
func TestLookupReads(t *testing.T) {
	modes(t, func(t *testing.T, shared redis.UniversalClient) {
		c := ownClient(t, shared)
		_, cluster := c.(*redis.ClusterClient)
		matches := model.NewMatchRedisRepository(c)
		must(t, matches.EnsureIndexes(bg))
		for _, m := range []*model.Match{{ID: "m1", Code: "a", Tags: []string{"x", "y"}}, {ID: "m2", Code: "b", Tags: []string{"x"}}, {ID: "m3", Code: "c", Tags: []string{"x"}}} {
			must(t, matches.Create(bg, m))
		}
		var mu sync.Mutex
		var names []string
		c.AddHook(hook{func(cmd redis.Cmder) {
			mu.Lock()
			names = append(names, cmd.Name())
			mu.Unlock()
		}})
		sent := func() []string {
			mu.Lock()
			defer mu.Unlock()
			out := names
			names = nil
			return out
		}
		entries := "zrange" // the members as they are
		if cluster {
			entries = "evalsha" // the members and their meta
		}

		got, err := matches.GetByCode(bg, "b")
		must(t, err)
		if got.ID != "m2" {
			t.Fatalf("GetByCode(b) = %s, want m2", got.ID)
		}
		want := []string{"hget", "hgetall"}
		if cluster {
			want = []string{"evalsha", "hgetall"}
		}
		if s := sent(); !slices.Equal(s, want) {
			t.Fatalf("GetByCode sent %v, want %v", s, want)
		}
		if _, err := matches.GetByCode(bg, "none"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("GetByCode(none): %v, want ErrNotFound", err)
		}
		sent()

		// Pages of one: each page reads its entries, then its blocks.
		page := func(list func(runtime.PageRequest) (runtime.Page[*model.Match], error)) []string {
			t.Helper()
			var ids []string
			req := runtime.PageRequest{Limit: 1}
			for {
				p, err := list(req)
				must(t, err)
				for _, m := range p.Items {
					ids = append(ids, m.ID)
				}
				s := sent()
				if len(s) == 0 || s[0] != entries || !cluster && slices.Contains(s, "evalsha") {
					t.Fatalf("a page sent %v, want its entries first (%s), and no script run on a node", s, entries)
				}
				if p.Next == "" {
					return ids
				}
				req.Cursor = p.Next
			}
		}
		if ids := page(func(r runtime.PageRequest) (runtime.Page[*model.Match], error) { return matches.ListByTags(bg, "x", r) }); fmt.Sprint(ids) != "[m1 m2 m3]" {
			t.Fatalf("ListByTags(x) in pages of one: %v", ids)
		}
		if ids := page(func(r runtime.PageRequest) (runtime.Page[*model.Match], error) { return matches.ListByTags(bg, "y", r) }); fmt.Sprint(ids) != "[m1]" {
			t.Fatalf("ListByTags(y) in pages of one: %v", ids)
		}
		if ids := page(func(r runtime.PageRequest) (runtime.Page[*model.Match], error) { return matches.ListByCode(bg, "b", r) }); fmt.Sprint(ids) != "[m2]" {
			t.Fatalf("ListByCode(b) in pages of one: %v", ids)
		}
	})
}

// TestLookupReadsRecheck: a write that lands between a lookup read's
// entries and its blocks (here right after the entries were read) does
// not make the read return a block that no longer holds the value, on a
// single node as on a cluster.
func TestLookupReadsRecheck(t *testing.T) {
	modes(t, func(t *testing.T, shared redis.UniversalClient) {
		c := ownClient(t, shared)
		matches := model.NewMatchRedisRepository(c)
		writer := model.NewMatchRedisRepository(shared)
		must(t, matches.EnsureIndexes(bg))
		must(t, matches.Create(bg, &model.Match{ID: "m1", Code: "a", Tags: []string{"x"}}))
		must(t, matches.Create(bg, &model.Match{ID: "m2", Code: "b", Tags: []string{"x"}}))
		// between runs once, after the first command that reads entries.
		var between func()
		c.AddHook(afterHook{func(name string) {
			if f := between; f != nil && (name == "hget" || name == "zrange" || name == "evalsha") {
				between = nil
				f()
			}
		}})
		between = func() { must(t, writer.SetCode(bg, "m1", "z")) }
		if m, err := matches.GetByCode(bg, "a"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("GetByCode(a) while m1 moved to z: %v %v, want ErrNotFound", m, err)
		}
		between = func() { must(t, writer.SetTags(bg, "m1", []string{"w"})) }
		p, err := matches.ListByTags(bg, "x", runtime.PageRequest{})
		must(t, err)
		if len(p.Items) != 1 || p.Items[0].ID != "m2" {
			var ids []string
			for _, m := range p.Items {
				ids = append(ids, fmt.Sprintf("%s%v", m.ID, m.Tags))
			}
			t.Fatalf("ListByTags(x) while m1 moved to w: %v, want [m2]", ids)
		}
		if between != nil {
			t.Fatal("the write between the reads did not run")
		}
		got, err := matches.GetByCode(bg, "z")
		must(t, err)
		if got.ID != "m1" {
			t.Fatalf("GetByCode(z) = %s, want m1", got.ID)
		}
	})
}
