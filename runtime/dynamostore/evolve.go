package dynamostore

import (
	"context"
	"errors"

	"github.com/noamgen/noamgen/runtime"
)

// TEMPORARY (issue 23 in progress): the schema primitives of the store
// contract, replaced by the dynamo helper.

var errTODO = errors.New("dynamostore: schema primitives not written yet")

func (s *Store[T, K]) LoadSchema(ctx context.Context) ([]byte, error) { return nil, errTODO }

func (s *Store[T, K]) SaveSchema(ctx context.Context, old, rec []byte) error { return errTODO }

func (s *Store[T, K]) DropLookup(ctx context.Context, l runtime.LookupLayout) error { return errTODO }

func (s *Store[T, K]) MigrateBlocks(ctx context.Context, after []byte, n int, dryRun bool) ([]runtime.BlockMigration, []byte, bool, error) {
	return nil, nil, false, errTODO
}
