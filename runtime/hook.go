package runtime

import (
	"context"
	"sync/atomic"
	"time"
)

// Option configures a repository. Generated constructors take options of
// every kind in one list: the runtime's own (WithHook, WithClock) and a
// store's (mongostore.IndexTables, dynamostore.Options, ...). NewRepo
// keeps the runtime's and the store's Open keeps its own; each ignores the
// rest.
type Option interface {
	// RepoOption marks the option types; it does nothing.
	RepoOption()
}

// config is what the runtime's options set.
type config struct {
	hooks []Hook
	now   func() time.Time
	lease time.Duration // WithLayoutLease
}

type runtimeOption func(*config)

func (runtimeOption) RepoOption() {}

// WithHook adds h to the hooks every operation of the repository passes
// through. Hooks run in the order given: the first wraps the others.
func WithHook(h Hook) Option {
	return runtimeOption(func(c *config) {
		if h != nil {
			c.hooks = append(c.hooks, h)
		}
	})
}

// WithClock makes the repository read the time from now instead of
// time.Now (created and updated timestamps, expiry): for tests.
func WithClock(now func() time.Time) Option {
	return runtimeOption(func(c *config) {
		if now != nil {
			c.now = now
		}
	})
}

func newConfig(opts []Option) *config {
	c := &config{now: time.Now}
	for _, o := range opts {
		if ro, ok := o.(runtimeOption); ok {
			ro(c)
		}
	}
	return c
}

// NowFunc returns the clock that opts set (WithClock), in the resolution
// of Repo.Now: for store adapters, which get the repository's options.
func NowFunc(opts []Option) func() time.Time {
	now := newConfig(opts).now
	return func() time.Time { return now().UTC().Truncate(time.Millisecond) }
}

// Now is the repository's clock in the timestamps' resolution: the time
// of WithClock (time.Now without it) in UTC, truncated to milliseconds,
// the precision every store keeps of a time.
func (r Repo[T, K]) Now() time.Time {
	now := time.Now
	if r.cfg != nil {
		now = r.cfg.now
	}
	return now().UTC().Truncate(time.Millisecond)
}

// Hook wraps one repository operation: it runs the operation by calling
// next (at most once, with ctx or a context derived from it) and returns
// what the operation returns, or an error of its own without calling next
// (authorisation, fault injection). c describes the operation; its
// Entries, Keys of the blocks read, and RoundTrips are complete when next
// has returned.
type Hook func(ctx context.Context, c *Call, next func(context.Context) error) error

// Call is one repository operation as hooks see it.
type Call struct {
	// Op is the generated method: "Get", "SetFirstPlayer", "ListByCityStars".
	Op string
	// Aggregate is the aggregate's Go type name ("Game"), Collection its
	// collection, Store the store's flag name (Caps.Name: "bolt", "mongo",
	// "redis", "dynamo").
	Aggregate, Collection, Store string
	// System is the store's db.system.name (Caps.System).
	System string
	// Keys are the block keys the call names (a write's block, the keys
	// of GetMany) and, after a read, the keys of the blocks it returned.
	Keys []any
	// Entries are the entries the call wrote or read, in the model's
	// notation ("" for the EAO root, "firstPlayer", "rounds[3]", "rounds"
	// for an element count, "version"): a whole-block write lists every
	// entry of the block, an entry-level write the entries it sets and the
	// version entry it bumps (an append: the element, the count, the
	// version), a read every entry of each block it returned (once per
	// block) and an element listing the elements of its page. Delete,
	// Repair, EnsureIndexes and Migrate list none. Reads' entries are
	// complete when next has returned.
	Entries []string
	// RoundTrips counts the requests the adapter sent to the store for
	// the call: commands, pipelines and script runs on Redis, commands on
	// MongoDB, HTTP requests (retries included) on DynamoDB, and
	// transactions on bbolt, which is embedded and sends nothing. It is
	// set when next returns.
	RoundTrips int

	trips atomic.Int64
}

type callKey struct{}

// RoundTrip counts one request to the store for the operation running in
// ctx, if a hook watches it: adapters call it once per request they send
// (a command, a pipeline, a script run, an HTTP request) and bbolt once
// per transaction.
func RoundTrip(ctx context.Context) {
	if c, ok := ctx.Value(callKey{}).(*Call); ok {
		c.trips.Add(1)
	}
}

// hooked reports whether the repository has hooks: without them no Call
// is made.
func (r Repo[T, K]) hooked() bool { return r.cfg != nil && len(r.cfg.hooks) > 0 }

// call starts the description of operation op on the blocks keys.
func (r Repo[T, K]) call(op string, keys ...any) *Call {
	caps := r.S.Caps()
	system := caps.System
	if system == "" {
		system = caps.Name
	}
	return &Call{Op: op, Aggregate: r.D.Aggregate, Collection: r.D.Collection, Store: caps.Name, System: system, Keys: keys}
}

// run passes operation c through the hooks to fn.
func (r Repo[T, K]) run(ctx context.Context, c *Call, fn func(context.Context) error) error {
	next := func(ctx context.Context) error {
		err := fn(context.WithValue(ctx, callKey{}, c))
		c.RoundTrips = int(c.trips.Load())
		return err
	}
	for i := len(r.cfg.hooks) - 1; i >= 0; i-- {
		h, inner := r.cfg.hooks[i], next
		next = func(ctx context.Context) error { return h(ctx, c, inner) }
	}
	return next(ctx)
}

// read adds the entries of the blocks read to c, and their keys when
// keys is set (listings, which name no key beforehand).
func (r Repo[T, K]) read(c *Call, keys bool, ts ...*T) {
	for _, t := range ts {
		if t == nil {
			continue
		}
		if keys {
			c.Keys = append(c.Keys, *r.D.ID(t))
		}
		c.Entries = append(c.Entries, r.D.Entries(t)...)
	}
}
