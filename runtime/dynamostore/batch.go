package dynamostore

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/noamgen/noamgen/runtime"
	"github.com/noamgen/noamgen/runtime/bsonval"
)

// Batch writes (runtime.BatchStore). BatchWriteItem takes no condition
// and returns no old item, so it writes only what needs neither:
//
//   - PutMany of an aggregate without lookups (no index table), version,
//     counter or created timestamp: BatchWriteItem, 25 puts a request.
//   - DeleteMany of an aggregate without an index table: BatchGetItem of
//     the keys (100 a request) to tell the missing blocks
//     (runtime.ErrNotFound), then BatchWriteItem of the deletes of the
//     others. A block deleted by someone else between the two is
//     reported deleted.
//   - Everything else, where the endpoint has transactions, is packed
//     into TransactWriteItems of up to 100 actions (txbatch.go). A
//     CreateMany or PutMany with a counter moves each counter scope
//     once, then writes its blocks so (counterbatch.go).
//   - Otherwise the single conditional writes (BatchWriteItem takes no
//     condition; with a counter, after the counters moved once per
//     scope): concurrently, 8 at a time, when the order of the items
//     cannot matter (distinct keys, no unique lookup), one after the
//     other otherwise.
//
// BatchWriteItem's unprocessed items are sent again with backoff until
// the context ends; the items of a request that failed without a reply
// get runtime.ErrUnknownOutcome.

var _ runtime.BatchStore[struct{}, string] = (*Store[struct{}, string])(nil)

// MaxBatchWrite is the most requests one BatchWriteItem holds.
const MaxBatchWrite = 25

// batchParallel is how many single calls a batch runs at once.
const batchParallel = 8

// CreateMany writes new blocks, as Create each (a Create is conditional:
// transactions, or single calls; with a counter, counterbatch.go).
func (s *Store[T, K]) CreateMany(ctx context.Context, ts []*T) []error {
	if s.d.Counter != nil {
		return s.createCounted(ctx, ts)
	}
	if s.batchTx(ctx) {
		return s.txCreateMany(ctx, ts)
	}
	return s.each(ctx, len(s.ordered(ts)) > 0, len(ts), func(i int) error { return s.Create(ctx, ts[i]) })
}

// PutMany replaces blocks whole, as Put each.
func (s *Store[T, K]) PutMany(ctx context.Context, ts []*T) []error {
	if s.d.Counter != nil {
		return s.putCounted(ctx, ts)
	}
	if !s.plain() {
		if s.batchTx(ctx) {
			return s.txPutMany(ctx, ts)
		}
		return s.each(ctx, len(s.ordered(ts)) > 0, len(ts), func(i int) error { return s.Put(ctx, ts[i]) })
	}
	errs := make([]error, len(ts))
	reqs := make([]types.WriteRequest, len(ts))
	for i, t := range ts {
		id := *s.d.ID(t)
		if errs[i] = bsonval.CheckBlock("Put", s.d, t, MaxDepth); errs[i] != nil {
			continue
		}
		if errs[i] = s.checkValues("Put", id, t); errs[i] != nil {
			continue
		}
		item, err := s.item(t, 1, nil)
		if err != nil {
			errs[i] = runtime.Fail("Put", s.d.Aggregate, id, nil, err)
			continue
		}
		if errs[i] = s.checkSize("Put", id, item); errs[i] == nil {
			reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: item}}
		}
	}
	s.batchWrite(ctx, "Put", func(i int) K { return *s.d.ID(ts[i]) }, reqs, errs)
	return errs
}

// DeleteMany removes blocks, as Delete each.
func (s *Store[T, K]) DeleteMany(ctx context.Context, ids []K) []error {
	const op = "Delete"
	distinct := true
	seen := make(map[K]bool, len(ids))
	for _, id := range ids {
		distinct = distinct && !seen[id]
		seen[id] = true
	}
	if s.index != "" {
		if s.batchTx(ctx) {
			return s.txDeleteMany(ctx, ids)
		}
		return s.each(ctx, !distinct, len(ids), func(i int) error { return s.Delete(ctx, ids[i]) })
	}
	errs := make([]error, len(ids))
	found := map[string]bool{}
	var keys []map[string]types.AttributeValue
	flush := func() error {
		items, err := s.batchGet(ctx, s.table, keys)
		for _, it := range items {
			found[attrKey(s.idAttr(it))] = true
		}
		keys = keys[:0]
		return err
	}
	asked := map[string]bool{}
	for i, id := range ids {
		k := attrKey(s.KeyAttr(id))
		if !asked[k] {
			asked[k] = true
			keys = append(keys, s.key(id))
		}
		if len(keys) == MaxBatch || i == len(ids)-1 && len(keys) > 0 {
			if err := flush(); err != nil {
				for j := range ids {
					errs[j] = wrap(op, s.d.Aggregate, ids[j], err)
				}
				return errs
			}
		}
	}
	reqs := make([]types.WriteRequest, len(ids))
	for i, id := range ids {
		k := attrKey(s.KeyAttr(id))
		if !found[k] {
			errs[i] = runtime.Fail(op, s.d.Aggregate, id, runtime.ErrNotFound, nil)
			continue
		}
		found[k] = false // a key given again finds no block
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: s.key(id)}}
	}
	s.batchWrite(ctx, op, func(i int) K { return ids[i] }, reqs, errs)
	return errs
}

// plain reports whether a Put needs no condition and no other table: no
// lookups (index table), version, counter or created timestamp.
func (s *Store[T, K]) plain() bool {
	return s.index == "" && s.d.Version == nil && s.d.Counter == nil && s.d.Created == nil
}

// ordered returns the reasons the single calls of a batch of ts must run
// in order (nil: none): a key given twice, a unique lookup. (The keys to
// allocate of a batch with a counter are allocated before: counted.)
func (s *Store[T, K]) ordered(ts []*T) []string {
	var why []string
	for _, l := range s.d.Lookups {
		if l.Unique {
			why = append(why, "unique lookup "+l.Name)
		}
	}
	seen := make(map[K]bool, len(ts))
	for _, t := range ts {
		if t == nil {
			continue
		}
		id := *s.d.ID(t)
		if seen[id] {
			why = append(why, "a key given twice")
		}
		seen[id] = true
	}
	return why
}

// each runs one single call per item, in order when ordered is set,
// batchParallel at a time otherwise. An item whose turn comes after the
// context ended gets the context's error, unsent.
func (s *Store[T, K]) each(ctx context.Context, ordered bool, n int, call func(int) error) []error {
	errs := make([]error, n)
	if ordered {
		for i := range n {
			errs[i] = call(i)
		}
		return errs
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, batchParallel)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = call(i)
		}()
	}
	wg.Wait()
	return errs
}

// batchWrite sends the requests reqs (nil where errs is set already) with
// BatchWriteItem, MaxBatchWrite a request and a key at most once per
// request (a later one goes in a later request: the order stays), sending
// the unprocessed ones again until the context ends. It sets the error of
// each item it could not write.
func (s *Store[T, K]) batchWrite(ctx context.Context, op string, id func(int) K, reqs []types.WriteRequest, errs []error) {
	var chunk []int
	inChunk := map[string]bool{}
	send := func() {
		if len(chunk) == 0 {
			return
		}
		s.writeChunk(ctx, op, id, chunk, reqs, errs)
		chunk, inChunk = chunk[:0], map[string]bool{}
	}
	for i := range reqs {
		if errs[i] != nil {
			continue
		}
		k := attrKey(s.KeyAttr(id(i)))
		if inChunk[k] || len(chunk) == MaxBatchWrite {
			send()
		}
		chunk, inChunk[k] = append(chunk, i), true
	}
	send()
}

// writeChunk writes the requests of items chunk (distinct keys, at most
// MaxBatchWrite) with BatchWriteItem.
func (s *Store[T, K]) writeChunk(ctx context.Context, op string, id func(int) K, chunk []int, reqs []types.WriteRequest, errs []error) {
	left := make(map[string]int, len(chunk)) // key -> item
	pending := make([]types.WriteRequest, 0, len(chunk))
	for _, i := range chunk {
		left[attrKey(s.KeyAttr(id(i)))] = i
		pending = append(pending, reqs[i])
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if err := backoff(ctx, attempt); err != nil {
			for _, i := range left {
				errs[i] = runtime.NotSent(op, s.d.Aggregate, id(i), err, nil)
			}
			return
		}
		out, err := s.c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{s.table: pending}})
		if err != nil {
			for _, i := range left {
				if ambiguous(err) {
					errs[i] = runtime.FailAt(op, s.d.Aggregate, id(i), "(outcome unknown: the BatchWriteItem may have been applied)", runtime.ErrUnknownOutcome, err)
				} else {
					errs[i] = wrap(op, s.d.Aggregate, id(i), err)
				}
			}
			return
		}
		pending = out.UnprocessedItems[s.table]
		still := make(map[string]int, len(pending))
		for _, r := range pending {
			var k types.AttributeValue
			if r.PutRequest != nil {
				k = s.idAttr(r.PutRequest.Item)
			} else if r.DeleteRequest != nil {
				k = s.idAttr(r.DeleteRequest.Key)
			}
			ks := attrKey(k)
			still[ks] = left[ks]
		}
		left = still
	}
}

// attrKey is a map key of a block key attribute.
func attrKey(v types.AttributeValue) string {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S" + v.Value
	case *types.AttributeValueMemberB:
		return "B" + string(v.Value)
	case *types.AttributeValueMemberN:
		return "N" + v.Value
	}
	return ""
}
