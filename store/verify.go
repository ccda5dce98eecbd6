package store

import (
	"context"
	"fmt"
	"time"
)

// VerifyMemory records that by (an actor: ActorPanel, ActorAPI, ActorCLI
// or ActorAgent; a blank or unknown one is refused) confirmed a live
// memory at at: verified_at becomes at (again, when it was verified
// before), verified_by becomes by, and src becomes src, the one who vouches
// for it. ok is false, and nothing changes, when the memory does not exist,
// is invalidated or is quarantined; the caller reads it to tell which.
func (s *Store) VerifyMemory(ctx context.Context, q querier, id int64, at time.Time, src, by string) (ok bool, err error) {
	what := fmt.Sprintf("verify memory %d", id)
	if err := CheckActor(what, by); err != nil {
		return false, err
	}
	res, err := q.ExecContext(ctx, `update memories set verified_at = $2, src = $3, verified_by = $4
		where id = $1 and invalid_at is null and not quarantined`, id, utcMicro(at), src, by)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
