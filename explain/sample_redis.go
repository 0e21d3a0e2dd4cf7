package explain

// Sampling of a Redis server or cluster (noamgen explain -sample N -redis URL).

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/model"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/access"
	rlayout "github.com/noamgen/noamgen/runtime/redisstore/layout"
)

func init() {
	samplers["redis"] = redisSample
}

// redisListing is the sorted set listing the blocks of a.
func redisListing(a *model.Aggregate) string { return a.Collection + ":blocks" }

// ---- sampling

// redisConnect opens the server at url: a single node, or the cluster it is a
// node of. The client only sends read commands.
func redisConnect(ctx context.Context, url string) (redis.UniversalClient, string, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, "", fmt.Errorf("-redis %q: %w", url, err)
	}
	opt.DialTimeout, opt.ReadTimeout = 5*time.Second, 10*time.Second
	c := redis.NewClient(opt)
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		c.Close()
		return nil, "", fmt.Errorf("connecting to Redis at %s: %w", opt.Addr, err)
	}
	if !strings.Contains(info, "cluster_enabled:1") {
		return c, fmt.Sprintf("%s db %d", opt.Addr, opt.DB), nil
	}
	c.Close()
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{opt.Addr}, Username: opt.Username, Password: opt.Password, TLSConfig: opt.TLSConfig,
		DialTimeout: opt.DialTimeout, ReadTimeout: opt.ReadTimeout,
	})
	return cc, "the cluster of " + opt.Addr, nil
}

// redisSample reads at most n blocks of a, in block-key order (the listing),
// from the Redis server at conn["redis"], with read commands only
// (INFO, ZRANGE, HGETALL).
func redisSample(ctx context.Context, a *model.Aggregate, conn map[string]string, n int) (*Sample, error) {
	url := conn["redis"]
	if url == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, where, err := redisConnect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	raw, err := c.Get(ctx, SchemaKey(a.Collection)).Bytes()
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("reading %s: %w", SchemaKey(a.Collection), err)
	}
	rec, err := recordedOf(a, raw)
	if err != nil {
		return nil, err
	}
	members, err := c.ZRange(ctx, redisListing(a), 0, int64(n)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", redisListing(a), err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(members))
	names := make([]string, len(members))
	if len(members) > 0 {
		_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, m := range members {
				names[i] = a.Collection + ":{" + redisKeyText([]byte(m)) + "}"
				cmds[i] = p.HGetAll(ctx, names[i])
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the blocks of %s: %w", a.Collection, err)
		}
	}
	s := &Sample{Source: where + ", listing " + redisListing(a), MaxValueBytes: rlayout.MaxValueBytes, LimitOf: "value", Recorded: rec}
	acc := NewSampleSizes(a)
	for i, cmd := range cmds {
		h := cmd.Val()
		if len(h) == 0 {
			continue // listed, but gone (a cluster write in flight)
		}
		s.Blocks++
		key := redisKeyText([]byte(members[i]))
		parts := map[string]*PartitionSize{}
		part := func(name string) *PartitionSize {
			p := parts[name]
			if p == nil {
				p = &PartitionSize{Key: key, Field: name}
				parts[name] = p
			}
			return p
		}
		total := 0
		for f, v := range h {
			size := len(f) + len(v)
			total += size
			switch {
			case f == rlayout.Seq || f == rlayout.Inc || f == rlayout.Once:
			case strings.HasSuffix(f, "]") && strings.Contains(f, "["):
				name := f[:strings.IndexByte(f, '[')]
				acc.Entry(name+"[]", size)
				part(name).Elements++
				part(name).Bytes += size
			default:
				acc.Entry(f, size)
				if acc.Partitioned(f) {
					part(f).Bytes += size
				}
			}
		}
		var ps []PartitionSize
		for _, p := range parts {
			ps = append(ps, *p)
		}
		acc.Block(key, total, ps)
	}
	acc.Fill(s)
	return s, nil
}

// redisKeyText renders an encoded block key (a listing member) as the adapter
// names it inside a hash tag: one component bare, several as quoted
// strings and decimals separated by commas, bytes the codec did not make
// in hex.
func redisKeyText(bk []byte) string {
	var parts []any
	r := runtime.NewKeyReader(bk)
	for !r.Done() {
		switch r.Rest()[0] {
		case keyTagString:
			v, err := r.String()
			if err != nil {
				return fmt.Sprintf("%x", bk)
			}
			parts = append(parts, v)
		case keyTagInt:
			v, err := r.Int()
			if err != nil {
				return fmt.Sprintf("%x", bk)
			}
			parts = append(parts, v)
		case keyTagUint:
			v, err := r.Uint()
			if err != nil {
				return fmt.Sprintf("%x", bk)
			}
			parts = append(parts, v)
		default:
			return fmt.Sprintf("%x", bk)
		}
	}
	kv := make([]access.KeyValue, len(parts))
	for i, p := range parts {
		kv[i].Value = p
	}
	return access.KeyTag.Styled(kv)
}

// Component tags of the key codec (runtime/key.go).
const (
	keyTagString = 0x02
	keyTagInt    = 0x03
	keyTagUint   = 0x04
)
