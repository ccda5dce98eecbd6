package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LedgerDigestChanges is how the negative ledger's facts of a workspace
// changed after a digest's publication: facts recorded, and facts that
// left force (resolved, superseded, stale). A fact's counters or a new
// evidence version of an active fact are not a change here: they show at
// the next publication, so a deny does not reset DSH's cached prompt.
type LedgerDigestChanges struct {
	Count int
	// Oldest is the earliest of those changes (zero when Count is 0).
	Oldest time.Time
}

// LedgerChangesSince counts the digest-relevant changes to scope's facts
// after since (see LedgerDigestChanges). Facts are stamped with the
// store's clock, like the digest's published_at.
func (s *Store) LedgerChangesSince(ctx context.Context, scope string, since time.Time) (LedgerDigestChanges, error) {
	var ch LedgerDigestChanges
	at := utcMicro(since)
	fail := func(err error) (LedgerDigestChanges, error) {
		return LedgerDigestChanges{}, fmt.Errorf("ledger changes of %q since %s: %w", scope, since.Format(time.RFC3339Nano), err)
	}
	isScope := s.scopeIs("", "$1")
	left := isScope + ` and updated_at > $2 and status <> 'active'`
	if err := s.DB.QueryRowContext(ctx, `select count(*) from ledger_facts where `+isScope+` and (created_at > $2 or (`+left+`))`,
		scope, at).Scan(&ch.Count); err != nil {
		return fail(err)
	}
	if ch.Count == 0 {
		return ch, nil
	}
	// Each stamp is read as its column, which both drivers scan as a time.
	for _, q := range []string{
		`select created_at from ledger_facts where ` + isScope + ` and created_at > $2 order by created_at limit 1`,
		`select updated_at from ledger_facts where ` + left + ` order by updated_at limit 1`,
	} {
		var t time.Time
		err := s.DB.QueryRowContext(ctx, q, scope, at).Scan(&t)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fail(err)
		case ch.Oldest.IsZero() || t.Before(ch.Oldest):
			ch.Oldest = t.UTC()
		}
	}
	return ch, nil
}
