package redisstore

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/internal/redistest"
	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/storetest/indextest"
)

// docPrims are the primitives of a collection "docs" of indextest.Doc
// blocks (hash fields "code" and "tags"), as the adapter's own.
func docPrims(c redis.UniversalClient) *prims[indextest.Doc] {
	var ls []ixLookup
	for _, l := range indextest.Lookups() {
		tag := "{docs." + l.Name + "}"
		lk := ixLookup{z: tag, meta: tag + ":meta", parts: 1}
		if l.Unique {
			lk.claims = tag + ":claims"
		}
		ls = append(ls, lk)
	}
	return &prims[indextest.Doc]{
		c: c, w: c, names: naming{coll: "docs", parts: []byte{tagString}}, lookups: ls,
		decode: func(bk []byte, h map[string]string) (indextest.Doc, error) {
			id, err := runtime.NewKeyReader(bk).String()
			d := indextest.Doc{ID: id, Code: h["code"]}
			if h["tags"] != "" {
				d.Tags = strings.Split(h["tags"], ",")
			}
			return d, err
		},
	}
}

// TestPrimitives runs the engine's primitives suite on a single node and
// on the cluster.
func TestPrimitives(t *testing.T) {
	for _, mode := range []string{"single", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			indextest.Primitives(t, func(t *testing.T) indextest.Harness[indextest.Doc] {
				var c redis.UniversalClient
				if mode == "single" {
					c = redistest.Server(t)
				} else {
					c = redistest.Cluster(t)
				}
				p := docPrims(c)
				return indextest.Harness[indextest.Doc]{P: p, View: func(d indextest.Doc) indextest.Doc { return d }, Write: func(ctx context.Context, d indextest.Doc, st index.Stamp) error {
					name := p.names.blockKey(d.Key())
					if err := c.Del(ctx, name).Err(); err != nil {
						return err
					}
					fields := []any{"code", d.Code, "tags", strings.Join(d.Tags, ",")}
					if st.Seq != 0 {
						fields = append(fields, seqField, pad(st.Seq))
					}
					if st.Inc != 0 {
						fields = append(fields, incField, encInc(st.Inc))
					}
					return c.HSet(ctx, name, fields...).Err()
				}}
			})
		})
	}
}
