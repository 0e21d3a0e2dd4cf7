package mongostore

import (
	"context"
	"errors"
	"time"
)

// DeleteExpired: placeholder until the expiry branch lands (issue 26).
func (s *Store[T, K]) DeleteExpired(ctx context.Context, id K, now time.Time) (bool, error) {
	return false, errors.New("mongostore: DeleteExpired not implemented")
}
