package runtime

import (
	"context"
	"errors"
	"fmt"
)

// This file is the migration of blocks stored in an older layout
// (Store.MigrateBlocks), written once for every store: the loop over a
// batch of blocks, the retry of a block that changed between its read and
// its rewrite (bounded by MaxAttempts), what is reported per block and
// which failures stop the batch. A store provides the primitives
// (BlockMigrator): scanning raw blocks, telling the layout a block is
// stored in, and the conditional rewrite.

// ErrChangedSinceRead is what BlockMigrator.RewriteBlock answers when the
// block is no longer as read (written or deleted meanwhile): nothing was
// written, and the migration reads the block again.
var ErrChangedSinceRead = errors.New("block changed since it was read")

// ScannedBlock is one block of a BlockMigrator.ScanBlocks batch: its key
// and, when the scan read it (Read), the block as stored. A scan that
// lists keys alone (a listing) leaves Read false: MigrateBlocks reads the
// block with ReadBlock.
type ScannedBlock[K comparable, B any] struct {
	ID   K
	Raw  B
	Read bool
}

// BlockMigrator is what a store provides for MigrateBlocks: its commands,
// none of the migration's rules. B is the store's form of a block as read
// (a document, a hash, an item, a transaction's handle).
type BlockMigrator[K comparable, B any] interface {
	// ScanBlocks reads up to n blocks in listing order after block
	// after (nil: from the first), and whether more follow.
	ScanBlocks(ctx context.Context, after *K, n int) (blocks []ScannedBlock[K, B], more bool, err error)
	// ReadBlock reads block id as stored; found is false when it is
	// gone. attempt is 0 for the first read of a block the scan only
	// listed, the attempt's number (from 1) for a read again after
	// RewriteBlock found the block changed (a store may back off).
	ReadBlock(ctx context.Context, id K, attempt int) (b B, found bool, err error)
	// StoredLayout describes how block b is stored otherwise than the
	// descriptor's layout (DescribeDiffs; "" when it is current). err is
	// the block's own failure, which leaves it as it is: one that cannot
	// be read (ErrUnreadable).
	StoredLayout(id K, b B) (from string, err error)
	// RewriteBlock rewrites block b, stored in another layout, in the
	// descriptor's: its values as read, its version as stored, in one
	// atomic write conditional on the block being as read. It answers
	// ErrChangedSinceRead (nothing written) when it is not.
	RewriteBlock(ctx context.Context, id K, b B) error
}

// blockFailure reports the errors that are a block's own: MigrateBlocks
// reports them (BlockMigration.Err) and goes on with the next block. Any
// other failure (of the store, the context, the layout fence, a write
// whose outcome is unknown) stops the batch.
func blockFailure(err error) bool {
	return errors.Is(err, ErrUnreadable) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrInvalidValue)
}

// MigrateBlocks is Store.MigrateBlocks over a store's primitives m, for
// aggregate agg whose block keys keys encodes: it reads up to n blocks
// after position after (an encoded block key; nil: from the first) and
// rewrites each that is stored in another layout in the descriptor's, in
// one conditional write (RewriteBlock). A block that changed since it
// was read is read again and its migration starts over, up to
// MaxAttempts times (then it fails with Contended's error); one deleted
// meanwhile has nothing left to migrate (reported as current). A block
// that is gone when first read (a listing ahead of its blocks) is not
// reported. In a dry run nothing is written: a block to migrate is
// reported as migrated. A block's own failure (blockFailure) is reported
// in its BlockMigration; any other stops the batch: MigrateBlocks then
// returns what it did, the position of the last block done (a resumed
// run starts with the failed one) and more set.
func MigrateBlocks[K comparable, B any](ctx context.Context, agg string, keys KeyCodec[K], m BlockMigrator[K, B], after []byte, n int, dryRun bool) ([]BlockMigration, []byte, bool, error) {
	const op = "Migrate"
	var from *K
	if after != nil {
		r := NewKeyReader(after)
		k, err := keys.Read(r)
		if err == nil && !r.Done() {
			err = errors.New("trailing bytes")
		}
		if err != nil {
			return nil, nil, false, Fail(op, agg, nil, ErrBadCursor, fmt.Errorf("bad position: %w", err))
		}
		from = &k
	}
	blocks, more, err := m.ScanBlocks(ctx, from, n)
	if err != nil {
		return nil, nil, false, err
	}
	var res []BlockMigration
	var last []byte
	for _, b := range blocks {
		bm, found, err := migrateBlock(ctx, op, agg, m, b, dryRun)
		if err != nil {
			return res, last, true, err
		}
		if found {
			res = append(res, bm)
		}
		last = keys.Bytes(b.ID)
	}
	return res, last, more, nil
}

// migrateBlock migrates block b (see MigrateBlocks); found is false for a
// block that was gone when first read.
func migrateBlock[K comparable, B any](ctx context.Context, op, agg string, m BlockMigrator[K, B], b ScannedBlock[K, B], dryRun bool) (BlockMigration, bool, error) {
	bm := BlockMigration{ID: b.ID}
	raw := b.Raw
	for attempt := range MaxAttempts {
		if attempt > 0 || !b.Read {
			var found bool
			var err error
			raw, found, err = m.ReadBlock(ctx, b.ID, attempt)
			if err != nil {
				return bm, false, err
			}
			if !found {
				// Deleted meanwhile: nothing (left) to migrate.
				bm.From, bm.Migrated = "", false
				return bm, attempt > 0, nil
			}
		}
		from, err := m.StoredLayout(b.ID, raw)
		bm.From, bm.Migrated = from, false
		if err != nil {
			bm.Err = err
			return bm, true, nil
		}
		if from == "" {
			return bm, true, nil
		}
		if dryRun {
			bm.Migrated = true
			return bm, true, nil
		}
		err = m.RewriteBlock(ctx, b.ID, raw)
		switch {
		case err == nil:
			bm.Migrated = true
			return bm, true, nil
		case errors.Is(err, ErrChangedSinceRead):
			continue
		case blockFailure(err):
			bm.Err = err
			return bm, true, nil
		default:
			return bm, false, err
		}
	}
	bm.Err = Contended(op, agg, b.ID, "block")
	return bm, true, nil
}
