package redisstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime/redisstore"
	"github.com/noamgen/noamgen/runtime/redisstore/layout"
)

// requests counts what the conformance suite's clients send, as the
// declaration (runtime/redisstore/layout) counts it: one per command, one
// per pipeline (a script run is one command).
var requests struct {
	n      atomic.Int64
	mu     sync.Mutex
	hooked map[redis.UniversalClient]bool
}

func sent() int { return int(requests.n.Load()) }

// counted adds the request counter to c once.
func counted(c redis.UniversalClient) redis.UniversalClient {
	requests.mu.Lock()
	defer requests.mu.Unlock()
	if requests.hooked == nil {
		requests.hooked = map[redis.UniversalClient]bool{}
	}
	if !requests.hooked[c] {
		requests.hooked[c] = true
		c.AddHook(counter{})
	}
	return c
}

type counter struct{}

func (counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		requests.n.Add(1)
		return next(ctx, cmd)
	}
}
func (counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		requests.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestDeclaredNames checks the names the declaration shows against the
// adapter's.
func TestDeclaredNames(t *testing.T) {
	if layout.MaxValueBytes != redisstore.MaxValueBytes {
		t.Errorf("layout.MaxValueBytes %d, the adapter's %d", layout.MaxValueBytes, redisstore.MaxValueBytes)
	}
}
