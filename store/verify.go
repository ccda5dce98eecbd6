package store

import (
	"context"
	"fmt"
	"time"
)

// VerifyMemory records that someone confirmed a live memory at at:
// verified_at becomes at (again, when it was verified before) and src
// becomes src, the one who vouches for it. ok is false, and nothing
// changes, when the memory does not exist, is invalidated or is
// quarantined; the caller reads it to tell which.
func (s *Store) VerifyMemory(ctx context.Context, q querier, id int64, at time.Time, src string) (ok bool, err error) {
	res, err := q.ExecContext(ctx, `update memories set verified_at = $2, src = $3
		where id = $1 and invalid_at is null and not quarantined`, id, utcMicro(at), src)
	if err != nil {
		return false, fmt.Errorf("verify memory %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
