package redisstore

import (
	"context"
	"errors"
	"io"
	"net"
	stdruntime "runtime"
	"sync"
	"syscall"
	"weak"

	"github.com/redis/go-redis/v9"
)

// Context deadlines. go-redis applies a context's deadline to a command's
// reads and writes only when the client's options have
// ContextTimeoutEnabled; without it a call waits for a stalled server
// until ReadTimeout (3 s by default), whatever its deadline. Open takes
// the client as the application built it and, when it lacks the option,
// sends the repository's commands through a client derived from it that
// has it (DeadlineClient), so that the application's other commands keep
// the behaviour it chose:
//
//   - a *redis.Client (also a failover client): a copy of it (go-redis's
//     Client.WithTimeout) that shares its connection pool, with
//     ContextTimeoutEnabled set: no connection more, nothing to close
//     (closing the application's client closes the pool both use).
//   - a *redis.ClusterClient or a *redis.Ring: a client of their own, made
//     from the same options with ContextTimeoutEnabled set, closed when the
//     application's client is garbage-collected. It has connection pools of
//     its own (up to PoolSize more connections per node, made as the
//     repositories need them) and its own view of the cluster's slots.
//     The application's ReloadState does not reach that view, so the
//     derived cluster client reloads it itself as soon as a node cannot be
//     reached (a killed master, a failover): go-redis alone would keep
//     sending that node's slots to it until its periodic reload, up to
//     10 s later.
//
// A derived client is made once per client of the application and shared
// by the repositories opened over it. go-redis copies no hooks to it (they
// are the client's own, and WithTimeout's copy starts without them): the
// hooks that should see the repositories' commands (tracing, metrics) are
// added to DeadlineClient's result as well, before opening repositories.
//
// Options.StrictDeadlines turns this off: the client is used as given and
// EnsureIndexes refuses one without ContextTimeoutEnabled.

// ErrNoContextTimeout: the go-redis client does not apply context
// deadlines to its commands (its options lack ContextTimeoutEnabled), so a
// call would wait for a stalled server until the client's ReadTimeout
// (3 s by default), whatever its deadline. Under Options.StrictDeadlines,
// EnsureIndexes fails with it (wrapped in a *runtime.Error).
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

// reloadOnLostNode is the hook of every node of a derived cluster client:
// a command or pipeline that fails for want of the node (a refused dial, a
// connection reset; not a Redis error reply, not the caller's deadline)
// asks the cluster client to reload its slots, so that its next attempt
// (go-redis retries up to MaxRedirects times) goes to the node now serving
// them.
type reloadOnLostNode struct{ c *redis.ClusterClient }

func (h reloadOnLostNode) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnLostNode) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(err)
		return err
	}
}

func (h reloadOnLostNode) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(err)
		return err
	}
}

func (h reloadOnLostNode) check(err error) {
	if lostNode(err) {
		h.c.ReloadState(context.Background()) // lazy: one reload at a time
	}
}

// lostNode reports whether err says the node could not be reached or
// dropped the connection, as against a reply, a nil, or the caller's
// context ending.
func lostNode(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return !ne.Timeout()
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// derived maps a client of the application (weakly: the entry goes when
// the client is collected) to the client DeadlineClient derived from it.
var derived sync.Map

// DeadlineClient returns the client the repositories opened over c send
// their commands through: c itself when it applies context deadlines
// (ContextTimeouts), else the client derived from it (the same one for
// every call with the same c; see "Context deadlines" in deadline.go). A
// derived client has none of c's hooks: add to it those that should see
// the repositories' commands (redisotel.InstrumentTracing(DeadlineClient(c))),
// before opening them.
func DeadlineClient(c redis.UniversalClient) redis.UniversalClient {
	c, _ = unwrap(c)
	if ContextTimeouts(c) {
		return c
	}
	switch c := c.(type) {
	case *redis.Client:
		return derive(c, false, func() redis.UniversalClient {
			d := c.WithTimeout(c.Options().ReadTimeout)
			o := d.Options() // the copy's own options
			o.WriteTimeout, o.ContextTimeoutEnabled = c.Options().WriteTimeout, true
			return d
		})
	case *redis.ClusterClient:
		return derive(c, true, func() redis.UniversalClient {
			o := *c.Options()
			o.ContextTimeoutEnabled = true
			d := redis.NewClusterClient(&o)
			d.OnNewNode(func(n *redis.Client) { n.AddHook(reloadOnLostNode{d}) })
			return d
		})
	case *redis.Ring:
		return derive(c, true, func() redis.UniversalClient {
			o := *c.Options()
			o.ContextTimeoutEnabled = true
			return redis.NewRing(&o)
		})
	}
	return c
}

// derive returns the client derived from c, made by mk the first time
// with the round-trip hook; owned: it has connections of its own, closed
// when c is collected.
func derive[C any](c *C, owned bool, mk func() redis.UniversalClient) redis.UniversalClient {
	k := weak.Make(c)
	if d, ok := derived.Load(k); ok {
		return d.(redis.UniversalClient)
	}
	d := mk()
	if got, loaded := derived.LoadOrStore(k, d); loaded {
		if owned {
			_ = d.Close()
		}
		return got.(redis.UniversalClient)
	}
	countTrips(d)
	stdruntime.AddCleanup(c, func(k weak.Pointer[C]) {
		derived.Delete(k)
		if owned {
			_ = d.Close()
		}
	}, k)
	return d
}
