package store

import (
	"context"
	"fmt"

	"github.com/mullhq/mull/learn/ledger"
)

// LedgerEventCounts counts a scope's ledger events of the kinds the three
// counters count (deny, duplicate, warn), for audits and for the tests that
// check the counters on the facts are exactly their events, whatever
// crashed.
func (s *Store) LedgerEventCounts(ctx context.Context, scope string) (ledger.Savings, error) {
	var c ledger.Savings
	err := s.DB.QueryRowContext(ctx, `select
			coalesce(sum(case when e.operation_kind = $2 then 1 else 0 end), 0),
			coalesce(sum(case when e.operation_kind = $3 then 1 else 0 end), 0),
			coalesce(sum(case when e.operation_kind = $4 then 1 else 0 end), 0)
		from ledger_events e join ledger_facts f on f.id = e.fact_id where `+s.scopeIs("f.", "$1"),
		scope, LedgerOpDuplicate, LedgerOpWarn, LedgerOpDeny).Scan(&c.DuplicateFailuresObserved, &c.WarningsEmitted, &c.CallsDenied)
	if err != nil {
		return ledger.Savings{}, fmt.Errorf("ledger: count events of %s: %w", scope, err)
	}
	return c, nil
}
