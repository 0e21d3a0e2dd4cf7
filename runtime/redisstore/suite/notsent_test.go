package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
	"github.com/noamgen/noamgen/runtime/storetest"
	"github.com/noamgen/noamgen/runtime/storetest/model"
)

// scriptKeys returns the keys a script run (EVALSHA, EVAL) names, nil for
// any other command.
func scriptKeys(cmd redis.Cmder) []string {
	args := cmd.Args()
	if (cmd.Name() != "evalsha" && cmd.Name() != "eval") || len(args) < 3 {
		return nil
	}
	n, _ := args[2].(int)
	keys := []string{}
	for _, k := range args[3:min(len(args), 3+n)] {
		keys = append(keys, fmt.Sprint(k))
	}
	return keys
}

// cancelBefore counts the script runs that succeed before the first run
// naming block (a write's claims and index entries on a cluster), and
// cancels the write's context once want of them have succeeded (want 0:
// only count).
type cancelBefore struct {
	mu     sync.Mutex
	block  string
	want   int
	cancel context.CancelFunc
	n      int  // successful runs before the block's
	ran    bool // a run naming block was sent
	// refuse, when set, fails every script run after the cancel without
	// sending it (the undo cannot reach the server).
	refuse bool
}

func (h *cancelBefore) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cancelBefore) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		keys := scriptKeys(cmd)
		h.mu.Lock()
		isBlock := slices.Contains(keys, h.block)
		h.ran = h.ran || isBlock
		refused := h.refuse && keys != nil && h.want > 0 && h.n >= h.want
		h.mu.Unlock()
		if refused {
			cmd.SetErr(errInjected)
			return errInjected
		}
		err := next(ctx, cmd)
		h.mu.Lock()
		defer h.mu.Unlock()
		if keys != nil && err == nil && !h.ran {
			if h.n++; h.n == h.want {
				h.cancel()
			}
		}
		return err
	}
}
func (h *cancelBefore) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// dumpCluster reads every key of every master with its value.
func dumpCluster(t *testing.T, c *redis.ClusterClient) map[string]any {
	t.Helper()
	var mu sync.Mutex
	out := map[string]any{}
	err := c.ForEachMaster(bg, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, "*").Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			var v any
			switch typ := m.Type(ctx, k).Val(); typ {
			case "hash":
				v, err = m.HGetAll(ctx, k).Result()
			case "zset":
				v, err = m.ZRangeWithScores(ctx, k, 0, -1).Result()
			case "string":
				v, err = m.Get(ctx, k).Result()
			case "set":
				var ms []string
				ms, err = m.SMembers(ctx, k).Result()
				slices.Sort(ms)
				v = ms
			default:
				v = typ
			}
			if err != nil {
				return err
			}
			mu.Lock()
			out[k] = v
			mu.Unlock()
		}
		return nil
	})
	must(t, err)
	return out
}

// TestCancelBeforeBlockScript: on a cluster, a write whose context is
// cancelled once its claims and index entries were added, before its block
// script is sent, never sends that script and so is definitely not
// applied: it removes its entries before returning (every key of the
// cluster exactly as before, Repair finds nothing) and fails with the
// context's error, not an unknown outcome.
func TestCancelBeforeBlockScript(t *testing.T) {
	shared := redistest.Cluster(t)
	c := redis.NewClusterClient(shared.Options())
	defer c.Close()
	h := &cancelBefore{}
	c.AddHook(h)
	matches := model.NewMatchRedisRepository(c)
	plain := ensured(t, model.NewMatchRedisRepository(shared))
	for _, id := range []string{"dry", "m"} {
		must(t, plain.Create(bg, storetest.StartMatch(id)))
	}
	blockKey := func(id string) string { return "matches:{" + id + "}" }
	for _, w := range storetest.MatchWrites() {
		// A dry run on another block counts the script runs before the
		// block's.
		h.mu.Lock()
		h.block, h.want, h.n, h.ran = blockKey(w.Block("dry")), 0, 0, false
		h.mu.Unlock()
		must(t, w.Run(bg, matches, "dry"))
		h.mu.Lock()
		adds := h.n
		h.mu.Unlock()
		if adds == 0 {
			t.Fatalf("%s: the dry run ran no script before the block's", w.Name)
		}
		before := dumpCluster(t, shared)
		ctx, cancel := context.WithCancel(bg)
		h.mu.Lock()
		h.block, h.want, h.n, h.ran, h.cancel = blockKey(w.Block("m")), adds, 0, false, cancel
		h.mu.Unlock()
		err := w.Run(ctx, matches, "m")
		cancel()
		h.mu.Lock()
		n, ran := h.n, h.ran
		h.mu.Unlock()
		if n < adds {
			t.Fatalf("%s: %d script runs before the block's, want %d", w.Name, n, adds)
		}
		storetest.CheckNotSent(t, w.Name, err)
		if ran {
			t.Fatalf("%s: the block script was sent after the cancel", w.Name)
		}
		if after := dumpCluster(t, shared); !reflect.DeepEqual(after, before) {
			t.Fatalf("%s: the cancelled write changed the cluster:\nbefore %v\nafter  %v", w.Name, before, after)
		}
		clean(t, w.Name+" cancelled before its block script", plain.Repair)
	}

	// An undo that cannot reach the server leaves the entries to Repair
	// and says so; the error is still the context's.
	code := "refused"
	run := func(ctx context.Context, id string) error {
		return matches.Update(ctx, id, model.MatchUpdate{Code: &code})
	}
	before := dumpCluster(t, shared)
	ctx, cancel := context.WithCancel(bg)
	h.mu.Lock()
	h.block, h.want, h.n, h.ran, h.cancel, h.refuse = "matches:{m}", 1, 0, false, cancel, true
	h.mu.Unlock()
	err := run(ctx, "m")
	cancel()
	h.mu.Lock()
	h.refuse = false
	h.mu.Unlock()
	if !errors.Is(err, context.Canceled) || errors.Is(err, runtime.ErrUnknownOutcome) || !strings.Contains(err.Error(), "Repair") || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("an Update whose undo failed: %v, want the context's error saying the entries stay for Repair", err)
	}
	if reflect.DeepEqual(dumpCluster(t, shared), before) {
		t.Fatal("the undo was refused, but the claim is gone")
	}
	if _, err := plain.GetByCode(bg, code); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("GetByCode of the claim left behind: %v, want ErrNotFound (reads verify)", err)
	}
	rep, err := plain.Repair(bg)
	must(t, err)
	if rep.Removed == 0 {
		t.Fatalf("Repair after the refused undo removed nothing: %v", rep)
	}
	if after := dumpCluster(t, shared); !reflect.DeepEqual(after, before) {
		t.Fatalf("after Repair the cluster differs from before the write:\nbefore %v\nafter  %v", before, after)
	}
}
