package redisstore

import (
	"errors"

	"github.com/redis/go-redis/v9"
)

// ErrNoContextTimeout: the go-redis client does not apply context
// deadlines to its commands (its options lack ContextTimeoutEnabled), so a
// call would wait for a stalled server until the client's ReadTimeout
// (3 s by default), whatever its deadline. EnsureIndexes fails with it
// (wrapped in a *runtime.Error): build the client with
// ContextTimeoutEnabled: true (README, "Redis").
var ErrNoContextTimeout = errors.New("the go-redis client ignores context deadlines on reads: set ContextTimeoutEnabled in its options")

// ContextTimeouts reports whether client c applies a context's deadline
// to its commands: go-redis does only with Options.ContextTimeoutEnabled
// (ClusterOptions, RingOptions: the same); without it, reads wait for
// ReadTimeout. A UniversalClient of another type is assumed to.
func ContextTimeouts(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true
}
