package redisstore

import (
	"context"
	stdruntime "runtime"
	"sync"
	"weak"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
)

// Round trips (runtime.RoundTrip) are counted by a go-redis hook that
// Open adds, once, to the client it is given: one per command and one per
// pipeline the client sends (a script run is one EVALSHA, and an EVAL
// more when the server lacks the script). A cluster client counts a
// command once, whatever redirects it follows. The adapter's calls to one
// node's client of a cluster, which the hook does not see, are counted
// where they are made: a script run followed by WAIT (one pipeline), and
// EnsureIndexes' loads of the scripts and Repair's SCAN on each master
// (one per master, however many commands they send there).

// tripHook is the hook.
type tripHook struct{}

func (tripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (tripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		runtime.RoundTrip(ctx)
		return next(ctx, cmd)
	}
}

func (tripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		runtime.RoundTrip(ctx)
		return next(ctx, cmds)
	}
}

var _ redis.Hook = tripHook{}

// hooked holds a weak pointer to each client that has the hook, so that
// a client shared by many repositories gets it once, and a client
// dropped leaves the set when it is collected.
var hooked sync.Map

// countTrips adds the hook to c, once. go-redis does not synchronize
// AddHook with the commands in flight: the first Open over a client must
// not run while other goroutines use it (open repositories at start-up).
func countTrips(c redis.UniversalClient) {
	switch c := c.(type) {
	case *redis.Client:
		addHook(c)
	case *redis.ClusterClient:
		addHook(c)
	case *redis.Ring:
		addHook(c)
	}
}

func addHook[C any, P interface {
	*C
	AddHook(redis.Hook)
}](c P) {
	k := weak.Make((*C)(c))
	if _, loaded := hooked.LoadOrStore(k, struct{}{}); loaded {
		return
	}
	stdruntime.AddCleanup((*C)(c), func(k weak.Pointer[C]) { hooked.Delete(k) }, k)
	c.AddHook(tripHook{})
}
