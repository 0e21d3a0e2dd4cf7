package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
)

// Options configure an adapter. Give them to Open, or to a generated
// New...RedisRepository constructor, among its options (Options is a
// runtime.Option), or with WithOptions, which wraps the client they take.
type Options struct {
	// WaitReplicas, when above 0, makes every script run a write depends
	// on wait until that many replicas of the node that ran it have
	// acknowledged it (Redis WAIT, sent after the script on the same
	// connection): on a single node the run that writes the block, its
	// lookups and its listing; on a cluster the runs that claim unique
	// values, add the other lookup entries and write the block. Redis
	// replicates asynchronously: without this option a write the master
	// acknowledged can be lost when the master dies and a replica that had
	// not received it is promoted — a lost rename leaves a unique value
	// claimed by no one while a block holds it, so that another block can
	// take it too.
	//
	// When fewer replicas acknowledge within WaitTimeout, the write fails:
	//   - with runtime.ErrUnknownOutcome when the block was written (on
	//     the master, which may lose it on failover): the detail says how
	//     many replicas acknowledged. Read the block to find out, or retry.
	//   - with runtime.ErrUnavailable on a cluster when a claim or a lookup
	//     entry was not acknowledged: the block write is then not sent (the
	//     block is unchanged) and the entries the write added are undone
	//     (best effort; reads verify entries, and a claim whose holder does
	//     not hold the value is taken over after StaleAfter).
	//
	// A write with the option that succeeded is on the master and on
	// WaitReplicas replicas, so it survives the loss of the master when one
	// of them is promoted (Redis Cluster promotes the replica with the
	// largest replication offset). WAIT does not make Redis strongly
	// consistent: a replica that acknowledged may still not be the one
	// promoted if others fail too. The best-effort steps that follow a
	// cluster write (listing, counter, removal of old entries) are not
	// waited for: Repair restores what a failover lost of them.
	// Writes to a shard whose master has fewer replicas than WaitReplicas
	// (after a failover, until the old master rejoins as a replica) fail.
	//
	// A batch (CreateMany, PutMany, DeleteMany) on a single node (a
	// *redis.Client) sends its items' script runs in one pipeline, on one
	// connection, ended by one WAIT: each item written fails as its single
	// call would when that WAIT was acknowledged by fewer replicas. On a
	// cluster the items of a batch are the single calls.
	WaitReplicas int
	// WaitTimeout bounds each WAIT (DefaultWaitTimeout when 0; never
	// unbounded, whatever WAIT's own 0 means). It is also capped to half
	// the client's ReadTimeout and to the context's deadline, so that the
	// reply is read in time.
	WaitTimeout time.Duration
	// StrictDeadlines makes the adapter use the client exactly as given:
	// EnsureIndexes then fails with ErrNoContextTimeout when the client
	// lacks ContextTimeoutEnabled, instead of the repositories' commands
	// going through a client derived from it that has it (DeadlineClient).
	StrictDeadlines bool
}

// RepoOption makes Options a runtime.Option.
func (Options) RepoOption() {}

// DefaultWaitTimeout is the WaitTimeout of Options that leave it 0.
const DefaultWaitTimeout = time.Second

// WithOptions returns c carrying options o: pass it to Open, or to a
// generated constructor, in place of c (it is a redis.UniversalClient
// that forwards everything to c). Store.Client returns c itself.
func WithOptions(c redis.UniversalClient, o Options) redis.UniversalClient {
	if oc, ok := c.(*optClient); ok {
		c = oc.UniversalClient
	}
	return &optClient{UniversalClient: c, o: o}
}

// optClient is a client carrying Options; the store keeps the client
// underneath for everything but the script runs that wait (s.w).
type optClient struct {
	redis.UniversalClient
	o Options
}

// unwrap returns the client and options c carries.
func unwrap(c redis.UniversalClient) (redis.UniversalClient, Options) {
	if oc, ok := c.(*optClient); ok {
		return oc.UniversalClient, oc.o
	}
	return c, Options{}
}

// writer is the client a store runs waited scripts on: c itself without
// WaitReplicas, else an optClient over it, which evalRun recognizes.
func writer(c redis.UniversalClient, o Options) redis.UniversalClient {
	if o.WaitReplicas <= 0 {
		return c
	}
	return &optClient{UniversalClient: c, o: o}
}

// waits reports whether the store's writes wait for replicas.
func (s *Store[T, K]) waits() bool { return s.w != s.c }

// lostWait is the detail of a write whose reply was lost but which the
// read-back found applied: on the master, its replication unconfirmed.
const lostWait = "(the reply was lost; the write is applied on the master, but no WAIT confirmed its replicas: it may be lost on failover)"

// unreplicated is a script run applied on its node but acknowledged by
// fewer replicas than asked within the timeout (or whose WAIT failed).
type unreplicated struct {
	acked, want int64
	timeout     time.Duration
	err         error // WAIT's own error, if it had no answer
}

func (u *unreplicated) Error() string {
	if u.err != nil {
		return fmt.Sprintf("applied on the master, WAIT for %d replicas failed (%v): it may be lost on failover", u.want, u.err)
	}
	return fmt.Sprintf("applied on the master, acknowledged by %d of %d replicas within %s: it may be lost on failover", u.acked, u.want, u.timeout)
}

func isUnreplicated(err error) (*unreplicated, bool) {
	var u *unreplicated
	return u, errors.As(err, &u)
}

// evalRun runs script sc on c: through its own client (go-redis's
// Script.Run: EVALSHA, EVAL when the server lacks it) or, on an optClient
// with WaitReplicas, followed by WAIT on the same connection. A run that
// passed its checks but was not acknowledged by enough replicas returns
// its reply and an *unreplicated.
func evalRun(ctx context.Context, c redis.UniversalClient, sc *redis.Script, keys []string, args []any) ([]any, error) {
	oc, ok := c.(*optClient)
	if !ok || oc.o.WaitReplicas <= 0 {
		return sc.Run(ctx, c, keys, args...).Slice()
	}
	return oc.evalWait(ctx, sc, keys, args)
}

// maxWaitRedirects bounds the redirects a waited run follows itself.
const maxWaitRedirects = 8

// evalWait sends EVALSHA and WAIT in one pipeline on the connection of the
// node that serves keys[0] (WAIT counts the replicas that have the writes
// of its connection). On a cluster it follows MOVED and ASK itself, since
// the pipeline goes to one node's client.
func (oc *optClient) evalWait(ctx context.Context, sc *redis.Script, keys []string, args []any) ([]any, error) {
	var node redis.UniversalClient = oc.UniversalClient
	cc, cluster := node.(*redis.ClusterClient)
	var pinned *redis.Client // the node a redirect named
	asking := false
	loaded := false
	for attempt := 0; ; attempt++ {
		switch {
		case pinned != nil:
			node, pinned = pinned, nil
		case cluster:
			m, err := cc.MasterForKey(ctx, keys[0])
			if err != nil {
				return nil, err
			}
			node = m
		}
		timeout := oc.timeout(ctx, node)
		var ev *redis.Cmd
		var wt *redis.IntCmd
		if cluster {
			runtime.RoundTrip(ctx) // a node's client, which has no hook
		}
		_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			if asking {
				p.Do(ctx, "asking")
			}
			ev = p.EvalSha(ctx, sc.Hash(), keys, args...)
			wt = oc.wait(ctx, p, timeout)
			return nil
		})
		asking = false
		err := ev.Err()
		switch {
		case err == nil:
		case redis.HasErrorPrefix(err, "NOSCRIPT") && !loaded:
			loaded = true
			if cluster {
				runtime.RoundTrip(ctx)
			}
			if err := sc.Load(ctx, node).Err(); err != nil {
				return nil, err
			}
			continue
		case cluster && attempt < maxWaitRedirects && redirect(err) != "":
			// The script did not run: go to the node the redirect names
			// (the client's slot map is stale, or the slot is moving).
			switch redirect(err) {
			case "ASK":
				if m := masterAt(ctx, cc, redirectAddr(err)); m != nil {
					pinned, asking = m, true
					continue
				}
			case "MOVED":
				cc.ReloadState(ctx)
				if m := masterAt(ctx, cc, redirectAddr(err)); m != nil {
					pinned = m
					continue
				}
			case "TRYAGAIN", "CLUSTERDOWN":
				if err := sleepCtx(ctx, time.Duration(attempt+1)*20*time.Millisecond); err != nil {
					return nil, err
				}
			}
			cc.ReloadState(ctx)
			if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
				return nil, err
			}
			continue
		default:
			return nil, err
		}
		res, err := ev.Slice()
		if err != nil {
			return nil, err
		}
		return res, oc.short(res, wt, timeout)
	}
}

// timeout is the timeout of a WAIT on node: WaitTimeout
// (DefaultWaitTimeout when 0), capped to half node's ReadTimeout and to
// the context's deadline.
func (oc *optClient) timeout(ctx context.Context, node redis.UniversalClient) time.Duration {
	timeout := oc.o.WaitTimeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	if nc, ok := node.(*redis.Client); ok {
		if rt := nc.Options().ReadTimeout; rt > 0 && timeout > rt/2 {
			timeout = rt / 2
		}
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = max(time.Until(d), time.Millisecond)
	}
	return timeout
}

// wait queues on p the WAIT for WaitReplicas replicas within timeout: it
// counts the replicas that have every write its connection made before.
func (oc *optClient) wait(ctx context.Context, p redis.Pipeliner, timeout time.Duration) *redis.IntCmd {
	wt := redis.NewIntCmd(ctx, "wait", oc.o.WaitReplicas, max(timeout.Milliseconds(), 1))
	_ = p.Process(ctx, wt)
	return wt
}

// short is the *unreplicated of a script run that replied res, followed
// by WAIT wt (within timeout) on its connection: nil when the run was not
// applied (its checks refused it) or enough replicas acknowledged it.
func (oc *optClient) short(res []any, wt *redis.IntCmd, timeout time.Duration) error {
	if len(res) == 0 || res[0] != "ok" {
		return nil
	}
	want := int64(oc.o.WaitReplicas)
	if n, err := wt.Result(); err != nil || n < want {
		return &unreplicated{acked: n, want: want, timeout: timeout, err: err}
	}
	return nil
}

// redirect returns the kind of a cluster redirect or refusal err is
// (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), "" for another error.
func redirect(err error) string {
	var re redis.Error
	if !errors.As(err, &re) {
		return ""
	}
	return refusalKind(re.Error())
}

// redirectAddr is the address of a MOVED or ASK error ("ASK 3999 host:port").
func redirectAddr(err error) string {
	f := strings.Fields(err.Error())
	if len(f) < 3 {
		return ""
	}
	return f[2]
}

// masterAt returns the client of the master at addr, nil if the client
// does not know one.
func masterAt(ctx context.Context, cc *redis.ClusterClient, addr string) *redis.Client {
	var found *redis.Client
	ch := make(chan *redis.Client, 16)
	_ = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if m.Options().Addr == addr {
			ch <- m
		}
		return nil
	})
	close(ch)
	for m := range ch {
		found = m
	}
	return found
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
