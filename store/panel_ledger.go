package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/ledger"
)

// The panel's reads of the negative ledger (web/ledger.go): a page of
// facts, a fact's events, and the workspaces that have facts.

// LedgerPage selects a page of facts for LedgerFactsPage. Zero fields
// match all.
type LedgerPage struct {
	Scope    string
	Statuses []ledger.Status
	// CurrentOnly leaves out superseded versions.
	CurrentOnly bool
	// Hit keeps the facts one of the three counters counted: LedgerOpDeny
	// (calls_denied), LedgerOpWarn (warnings_emitted), LedgerOpDuplicate
	// (duplicate_failures_observed), or "any" for one of them.
	Hit           string
	Limit, Offset int
}

// hitColumn is the counter a LedgerPage.Hit keeps.
var hitColumn = map[string]string{
	LedgerOpDeny:      "f.calls_denied > 0",
	LedgerOpWarn:      "f.warnings_emitted > 0",
	LedgerOpDuplicate: "f.duplicate_failures_observed > 0",
	"any":             "f.calls_denied + f.warnings_emitted + f.duplicate_failures_observed > 0",
}

// LedgerFactsPage lists a page of facts, newest change first, with their
// leases.
func (s *Store) LedgerFactsPage(ctx context.Context, f LedgerPage) ([]ledger.Fact, error) {
	where := []string{"1 = 1"}
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if f.Scope != "" {
		where = append(where, s.scopeIs("f.", arg(f.Scope)))
	}
	if len(f.Statuses) > 0 {
		var in []string
		for _, st := range f.Statuses {
			in = append(in, arg(string(st)))
		}
		where = append(where, "f.status in ("+strings.Join(in, ", ")+")")
	}
	if f.CurrentOnly {
		where = append(where, "f.is_current")
	}
	if f.Hit != "" {
		c, ok := hitColumn[f.Hit]
		if !ok {
			return nil, fmt.Errorf("ledger: list facts: no counter %q", f.Hit)
		}
		where = append(where, c)
	}
	q := `select ` + ledgerFactColumns + ledgerFactFrom + `where ` + strings.Join(where, " and ") +
		` order by f.updated_at desc, f.id desc limit ` + arg(max(f.Limit, 1)) + ` offset ` + arg(max(f.Offset, 0))
	out, err := queryAll(ctx, s.DB, func(r scanner) (ledger.Fact, error) { return scanLedgerFact(r) }, q, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: list a page of facts: %w", err)
	}
	return out, nil
}

// LedgerEvent is one entry of a fact's audit stream.
type LedgerEvent struct {
	ID     int64
	FactID int64
	// Operation is one of the LedgerOp… kinds (deny, warn, duplicate,
	// granted, settle, record, stale, resolve).
	Operation string
	// ToolCallID is the call that caused it (DSH's callId), or the
	// request ("op:…") or time ("at:…") when there was no call.
	ToolCallID string
	Session    string
	At         time.Time
}

// LedgerFactEvents lists a fact's events, newest first: a page of limit
// from offset.
func (s *Store) LedgerFactEvents(ctx context.Context, factID int64, limit, offset int) ([]LedgerEvent, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (LedgerEvent, error) {
		var e LedgerEvent
		if err := r.Scan(&e.ID, &e.FactID, &e.Operation, &e.ToolCallID, &e.Session, &e.At); err != nil {
			return e, err
		}
		e.ToolCallID, e.At = LedgerCallerCallID(decodeObsKey(e.ToolCallID)), e.At.UTC()
		return e, nil
	}, `select id, fact_id, operation_kind, tool_call_id, session, at from ledger_events where fact_id = $1
		order by at desc, id desc limit $2 offset $3`, factID, max(limit, 1), max(offset, 0))
	if err != nil {
		return nil, fmt.Errorf("ledger fact %d: list events: %w", factID, err)
	}
	return out, nil
}

// LedgerScopes lists the workspaces that have facts, by name, at most
// limit.
func (s *Store) LedgerScopes(ctx context.Context, limit int) ([]string, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (string, error) {
		var w string
		return w, r.Scan(&w)
	}, `select distinct scope from ledger_facts order by scope limit $1`, max(limit, 1))
	if err != nil {
		return nil, fmt.Errorf("ledger: list workspaces: %w", err)
	}
	return out, nil
}
