package mongostore

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/noamgen/noamgen/runtime"
)

// Expiry. The expires entry is a top-level date field of the document
// (under EAO too), and Ensure makes a TTL index on it
// (expireAfterSeconds 0) whose partial filter leaves out the zero time,
// a date in year 1 that the TTL monitor would delete at once: MongoDB
// deletes a document within about a minute after its time passes, by the
// server's clock. A server that refuses partial indexes (FerretDB v1, or
// the NoPartialIndexes option) gets no TTL index: the repository hides
// expired blocks all the same, and Sweep removes them. The TTL monitor
// removes a document with its native index entries; the entries of its
// index tables stay behind: reads verify them, a unique claim of a block
// that is gone is taken over by the lookup protocol once it is older than
// StaleAfter, and Repair removes them. DeleteExpired removes a block the
// repository's clock says has expired before the server does.

// ExpiresIndex names the TTL index on the expires field.
const ExpiresIndex = "noam_expires"

// expiredFilter matches block id while its expires field is set (after
// the zero time) and not after now.
func (s *Store[T, K]) expiredFilter(id K, now time.Time) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: s.d.Expires.Key, Value: bson.D{
		{Key: "$gt", Value: time.Time{}},
		{Key: "$lte", Value: now},
	}}}
}

// DeleteExpired removes block id and its index entries, as Delete does,
// if its expires entry is set and not after now: one deleteOne (or, with
// index tables, the findOneAndDelete of the lookup protocol's Delete)
// whose filter says so.
func (s *Store[T, K]) DeleteExpired(ctx context.Context, id K, now time.Time) (bool, error) {
	if s.d.Expires == nil {
		return false, nil
	}
	err := s.delete(ctx, "DeleteExpired", s.expiredFilter(id, now), id)
	if errors.Is(err, runtime.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ensureExpiry makes the TTL index on the expires field, with the partial
// filter that leaves out the zero time; a server that refuses it (no
// partial indexes) gets none.
func (s *Store[T, K]) ensureExpiry(ctx context.Context) error {
	if s.d.Expires == nil || s.noPartial {
		return nil
	}
	m := mongo.IndexModel{Keys: bson.D{{Key: s.d.Expires.Key, Value: 1}}, Options: options.Index().SetName(ExpiresIndex).
		SetExpireAfterSeconds(0).
		SetPartialFilterExpression(bson.D{{Key: s.d.Expires.Key, Value: bson.D{{Key: "$gt", Value: time.Time{}}}}})}
	runtime.RoundTrip(ctx)
	_, err := s.coll.Indexes().CreateOne(ctx, m)
	switch {
	case err == nil:
		return nil
	case notImplemented(err) || badValue(err) || isCode(err, 67):
		return nil // no partial (or TTL) indexes: Sweep removes expired blocks
	case isCode(err, 85) || isCode(err, 86):
		// An index of that name made otherwise (another expires field):
		// replaced.
		if err := s.dropIndex(ctx, ExpiresIndex); err != nil {
			return err
		}
		runtime.RoundTrip(ctx)
		if _, err = s.coll.Indexes().CreateOne(ctx, m); err == nil {
			return nil
		}
	}
	return runtime.FailAt("EnsureIndexes", s.d.Aggregate, nil, "(the TTL index "+ExpiresIndex+")", nil, err)
}

// notExpired fails with runtime.ErrNotFound when raw, read with the
// expires field projected, holds one that has passed by the store's
// clock.
func (s *Store[T, K]) notExpired(op string, id K, raw bson.Raw) error {
	v, err := raw.LookupErr(s.d.Expires.Key)
	if err != nil {
		return nil
	}
	return s.d.NotExpired(op, id, s.d.Expires, &rawDecoder{v: v}, s.now())
}
