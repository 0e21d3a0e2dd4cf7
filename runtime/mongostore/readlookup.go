package mongostore

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
)

// readLookup reads up to n aggregates found by the named lookup in key
// range rng after position rng.After, in index key order: entries are read
// n+1 at a time, their aggregates in one batch, and every entry is verified
// against its aggregate; stale entries are skipped (and removed once older
// than StaleAfter). It returns the index key of the last item and whether
// more follow.
func (x *Indexed[K, D, T]) readLookup(ctx context.Context, op, lookup string, rng *runtime.KeyRange, n int) ([]T, []byte, bool, error) {
	i := x.lookup(lookup)
	items := make([]T, 0, min(n, 64))
	var keys []string
	start, end := rng.Start(), rng.To
	for len(items) <= n && bytes.Compare(start, end) < 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, false, runtime.Fail(op, x.Agg, nil, nil, err)
		}
		want := n + 1 - len(items)
		filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: IndexKey(start)}, {Key: "$lt", Value: IndexKey(end)}}}}
		opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(want)).SetBatchSize(oneBatch(want))
		cur, err := x.tables[i].Find(ctx, filter, opts)
		if err != nil {
			return nil, nil, false, runtime.Fail(op, x.Agg, nil, nil, err)
		}
		var entries []entry[K]
		if err := cur.All(ctx, &entries); err != nil {
			return nil, nil, false, runtime.Fail(op, x.Agg, nil, nil, err)
		}
		if len(entries) == 0 {
			break
		}
		ids := make([]K, 0, len(entries))
		for _, e := range entries {
			ids = append(ids, e.ID)
		}
		docs, err := getMany(ctx, x.Coll, ids, x.Convert, x.KeyOf)
		if err != nil {
			return nil, nil, false, runtime.Fail(op, x.Agg, nil, nil, err)
		}
		for _, e := range entries {
			if v, ok := docs[e.ID]; ok {
				if _, held := slices.BinarySearch(x.entryKeys(i, e.ID, v), e.Key); held {
					items, keys = append(items, v), append(keys, e.Key)
					continue
				}
			}
			x.drop(ctx, i, &e)
		}
		last, err := hex.DecodeString(entries[len(entries)-1].Key)
		if err != nil {
			return nil, nil, false, runtime.Fail(op, x.Agg, nil, nil, fmt.Errorf("index entry %q: %w", entries[len(entries)-1].Key, err))
		}
		start = append(last, 0)
		if len(entries) < want {
			break
		}
	}
	more := len(items) > n
	items = items[:min(len(items), n)]
	var last []byte
	if len(items) > 0 {
		last, _ = hex.DecodeString(keys[len(items)-1])
	}
	return items, last, more, nil
}
