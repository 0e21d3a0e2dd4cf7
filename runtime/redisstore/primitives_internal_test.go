package redisstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/index"
	"github.com/noamgen/noamgen/runtime/redisstore/redistest"
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
				return indextest.Harness[indextest.Doc]{P: p, Unordered: true, View: func(d indextest.Doc) indextest.Doc { return d }, Write: func(ctx context.Context, d indextest.Doc, st index.Stamp) error {
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

// TestScanBlocksBounded: ScanBlocks (Repair's first pass, and the listing
// repair's scan) holds one SCAN reply and one page of names at a time, on
// a single node and on the cluster, visits every block hash, and its
// position resumes in other primitives (another process resuming a
// build).
func TestScanBlocksBounded(t *testing.T) {
	defer func(n int) { scanCount = n }(scanCount)
	scanCount = 10
	const blocks, limit = 400, 16
	for _, mode := range []string{"single", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			var c redis.UniversalClient
			if mode == "single" {
				c = redistest.Server(t)
			} else {
				c = redistest.Cluster(t)
			}
			p := docPrims(c)
			for i := range blocks {
				d := indextest.Doc{ID: fmt.Sprintf("d%03d", i), Code: "c"}
				if err := c.HSet(ctx, p.names.blockKey(d.Key()), "code", d.Code).Err(); err != nil {
					t.Fatal(err)
				}
			}
			held := 0
			p.held = func(n int) { held = max(held, n) }
			seen := map[string]bool{}
			var after []byte
			for pages := 0; ; pages++ {
				if pages == 5 {
					// Another process goes on from the position.
					p = docPrims(c)
					p.held = func(n int) { held = max(held, n) }
				}
				page, next, err := p.ScanBlocks(ctx, after, limit)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit {
					t.Fatalf("a page of %d blocks, limit %d", len(page), limit)
				}
				for _, b := range page {
					seen[string(b.Key)] = true
				}
				if next == nil {
					break
				}
				after = next
			}
			if len(seen) != blocks {
				t.Errorf("the scan visited %d of the %d blocks", len(seen), blocks)
			}
			// SCAN's COUNT is a hint: a reply may hold a few names more.
			if held == 0 || held > 3*scanCount+limit {
				t.Errorf("the scan held up to %d names at once, want at most a SCAN reply (about %d) and a page (%d)", held, scanCount, limit)
			}
		})
	}
}
