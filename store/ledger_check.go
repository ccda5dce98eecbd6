package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mullhq/mull/learn/ledger"
)

// Check's hot path, in as few round trips as the guarantees allow: it is
// called before every tool call, and its goal is p99 under 5 ms at 500
// checks a second on either database.

// SessionWorkspace is the workspace mull knows a session under.
type SessionWorkspace struct {
	// Known: the session exists (its first event arrived).
	Known     bool
	Workspace string
}

// LedgerCheckRead is LedgerCurrentFact and the session's workspace in one
// read (a fact that intercepts needs both; no fact needs neither, and
// reads no session).
func (s *Store) LedgerCheckRead(ctx context.Context, scope string, kind ledger.Kind, key, session string) (ledger.Fact, bool, SessionWorkspace, error) {
	var ws sql.NullString
	f, err := scanLedgerFact(s.DB.QueryRowContext(ctx, `select `+ledgerFactColumns+`,
		(select workspace from sessions where id = $2)`+ledgerFactFrom+
		`where f.fingerprint_hash = $1 and f.is_current`, LedgerFingerprintHash(scope, kind, key), session), &ws)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Fact{}, false, SessionWorkspace{}, nil
	}
	if err != nil {
		return ledger.Fact{}, false, SessionWorkspace{}, fmt.Errorf("ledger: read current fact: %w", err)
	}
	if f.Scope != scope || f.Kind != kind {
		return ledger.Fact{}, false, SessionWorkspace{}, fmt.Errorf("ledger: fingerprint hash of %s names fact %d of %s", scope, f.ID, f.Scope)
	}
	return f, true, SessionWorkspace{Known: ws.Valid, Workspace: ws.String}, nil
}

// LedgerDeny counts a denied call against the fact at revision and stores
// response as op's receipt: what LedgerWrite with LedgerTx.Deny does, for
// a decision that depends on the fact's row alone (its revision; no lease,
// no observation), made before the call. It answers like LedgerWrite: the
// response stored, replay true when op's receipt was there first (the
// first answer, nothing counted), ErrLedgerConflict when the fact is no
// longer current at revision (nothing written: re-decide).
//
// On Postgres it is one statement, so one round trip instead of a
// transaction's seven: the fact's row held at revision, the receipt
// claimed, the deny event inserted and, only when the event is new, the
// counter moved, all or nothing as a statement is. A second copy of the
// request waits on the receipt's key and reads the first's answer; another
// request of the same call finds its event and counts nothing. SQLite,
// in process, keeps LedgerWrite's transaction.
func (s *Store) LedgerDeny(ctx context.Context, op LedgerOp, factID, revision int64, response any) ([]byte, bool, error) {
	if s.Dialect != Postgres {
		return s.LedgerWrite(ctx, op, func(lt *LedgerTx) (any, error) {
			if _, err := lt.Deny(factID, revision); err != nil {
				return nil, err
			}
			return response, nil
		})
	}
	if op.RequestHash == "" {
		return nil, false, errors.New("ledger: a deny needs its request hash (its receipt)")
	}
	resp, err := json.Marshal(response)
	if err != nil {
		return nil, false, fmt.Errorf("ledger: marshal response: %w", err)
	}
	// The statement is the transaction: the commit failpoint comes before
	// it, where an error leaves nothing written, as a rollback would.
	if err := FailpointError(FailpointLedgerCommit); err != nil {
		return nil, false, err
	}
	now := s.Now()
	var held, claimed bool
	err = s.DB.QueryRowContext(ctx, ledgerDenySQL, factID, revision, op.RequestHash, op.Kind, string(resp), now,
		encodeObsKey(ledgerCallID(op, now)), op.Session).Scan(&held, &claimed)
	if err != nil && retryable(err) {
		return nil, false, fmt.Errorf("%w: %w", ErrLedgerConflict, err)
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledger fact %d: deny: %w", factID, err)
	}
	switch {
	case !held:
		return nil, false, fmt.Errorf("ledger fact %d revision %d: %w", factID, revision, ErrLedgerConflict)
	case !claimed:
		// The first copy committed its receipt before this one's insert
		// gave way to it.
		var first []byte
		if err := s.DB.QueryRowContext(ctx, `select response from ledger_operations where request_hash = $1`,
			op.RequestHash).Scan(&first); err != nil {
			return nil, false, fmt.Errorf("ledger: read receipt: %w", err)
		}
		return first, true, nil
	}
	return resp, false, nil
}

// ledgerDenySQL: $1 fact, $2 revision, $3 request hash, $4 request kind,
// $5 response, $6 now, $7 the call (escaped), $8 session. Each step reads
// the one before it, so nothing is written unless the fact is held at its
// revision, and the counter moves only with a new event. The counter's
// update re-reads the row it holds (read committed), so concurrent denies
// of one fact add up exactly.
const ledgerDenySQL = `with f as materialized (
	select id from ledger_facts where id = $1 and revision = $2 and is_current for update
), receipt as (
	insert into ledger_operations (request_hash, kind, response, created_at)
	select $3, $4, $5, $6 from f
	on conflict (request_hash) do nothing
	returning request_hash
), ev as (
	insert into ledger_events (fact_id, tool_call_id, operation_kind, session, at)
	select f.id, $7, '` + LedgerOpDeny + `', $8, $6 from f, receipt
	on conflict (fact_id, tool_call_id, operation_kind) do nothing
	returning fact_id
), counted as (
	update ledger_facts set calls_denied = calls_denied + 1 where id in (select fact_id from ev)
	returning id
)
select exists (select 1 from f), exists (select 1 from receipt)`

// scopeIs is the condition "the row's scope is param" on a ledger table
// (alias "" or "f."): on Postgres through the scope's md5 first, which
// the scope indexes lead with (migration 024: a raw scope can be longer
// than a btree entry), then the scope itself.
func (s *Store) scopeIs(alias, param string) string {
	if s.Dialect == Postgres {
		return "(" + alias + "scope_hash = md5(" + param + "::text) and " + alias + "scope = " + param + ")"
	}
	return alias + "scope = " + param
}
