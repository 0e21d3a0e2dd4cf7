package redisstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// pipeHook reports the number of commands of every pipeline a client sends.
type pipeHook struct{ fn func(n int) }

func (h pipeHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h pipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.fn(len(cmds))
		return next(ctx, cmds)
	}
}

// TestPipelinesBounded: a batch of more items than MaxPipelineCommands
// goes in several pipelines, none longer than MaxPipelineCommands, so that
// each stays within the client's read and write timeouts however large the
// batch (one unbounded pipeline of a 100,000-item CreateMany overran them
// and failed a third of its items); every item is written.
// storetest.HugeBatch writes large batches whole on every store.
func TestPipelinesBounded(t *testing.T) {
	modes(t, func(t *testing.T, shared redis.UniversalClient) {
		c := ownClient(t, shared)
		matches := model.NewMatchRedisRepository(c)
		must(t, matches.EnsureIndexes(bg))
		var mu sync.Mutex
		var sizes []int
		redisstore.DeadlineClient(c).AddHook(pipeHook{func(n int) {
			mu.Lock()
			sizes = append(sizes, n)
			mu.Unlock()
		}})
		n := 2*redisstore.MaxPipelineCommands + 17
		ms := make([]*model.Match, n)
		ids := make([]string, n)
		for i := range ms {
			ids[i] = fmt.Sprintf("pb%05d", i)
			ms[i] = &model.Match{ID: ids[i], Code: "code-" + ids[i], Region: "north", Tags: []string{fmt.Sprint("t", i%5)}}
		}
		check := func(op string, err error) {
			t.Helper()
			must(t, err)
			mu.Lock()
			defer mu.Unlock()
			longest := 0
			for _, s := range sizes {
				longest = max(longest, s)
			}
			if len(sizes) < 3 || longest > redisstore.MaxPipelineCommands {
				t.Fatalf("%s of %d items sent %d pipelines, the longest of %d commands; want at least 3, none over %d", op, n, len(sizes), longest, redisstore.MaxPipelineCommands)
			}
			sizes = nil
		}
		check("CreateMany", matches.CreateMany(bg, ms))
		got, err := matches.GetMany(bg, ids)
		must(t, err)
		for _, want := range ms {
			if m := got[want.ID]; m == nil || m.Code != want.Code {
				t.Fatalf("GetMany after CreateMany: %s is %+v", want.ID, m)
			}
		}
		for _, m := range ms {
			m.Region = "south"
		}
		check("PutMany", matches.PutMany(bg, ms))
		check("DeleteMany", matches.DeleteMany(bg, ids))
	})
}
