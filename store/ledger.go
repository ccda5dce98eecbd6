package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/learn/trust"
)

// The negative ledger's store (seed 003's SqliteLedgerStore, on both
// databases). Its guarantees come from the schema (migration 022), not
// from a process's memory, so they hold across processes sharing one
// database:
//   - one current fact per (scope, kind, fingerprint): the partial unique
//     index, with "insert ... on conflict do nothing" turning the loser of a
//     first-record race into a new evidence version of the winner's fact;
//   - one active lease per fact: ledger_leases' primary key is the fact, and
//     a lease is taken over only once expired, in one conditional upsert;
//   - a replayed request answered from its receipt: LedgerWrite claims the
//     request hash first, so two copies of one request serialize and the
//     second reads the first's response;
//   - counters exact: a counter moves only in the transaction that inserts
//     the event it counts, and an event is unique per (fact, tool call,
//     operation);
//   - optimistic concurrency: every write of a fact is "where id = ? and
//     revision = ?"; zero rows is ErrLedgerConflict, and the whole
//     transaction (a batch transition included) rolls back.
//
// The ledger's types are learn/ledger's: a pure leaf package, imported here
// for its data shapes only.

// ErrLedgerConflict is a fact that changed under a write (its revision is
// not the one the caller decided on). The caller re-reads and re-decides.
var ErrLedgerConflict = errors.New("ledger: the fact changed under this write")

// The ledger event operation kinds (ledger_events.operation_kind). With the
// fact and the tool call they make an event unique: the second of the same
// kind counts nothing.
const (
	LedgerOpDeny      = "deny"      // a denied call (calls_denied)
	LedgerOpDuplicate = "duplicate" // a repeat failure (duplicate_failures_observed)
	LedgerOpWarn      = "warn"      // a warning note (warnings_emitted)
	LedgerOpGranted   = "granted"   // a retry lease granted
	LedgerOpSettle    = "settle"    // a lease settled by its holder
	LedgerOpRecord    = "record"    // a fact recorded or a new evidence version
	LedgerOpStale     = "stale"     // a stale transition
	LedgerOpResolve   = "resolve"   // resolved without a lease
)

// LedgerOp identifies one ledger mutation: its receipt and its provenance.
type LedgerOp struct {
	// RequestHash keys the receipt; "" writes none.
	RequestHash string
	// Kind is the request's kind (check, observe, fs, record, resolve).
	Kind string
	// ToolCallID and Session are the call the mutation is about; events
	// are keyed by ToolCallID (when empty, by the request hash).
	ToolCallID string
	Session    string
}

// LedgerTx is one ledger transaction, inside LedgerWrite. Its methods are
// the store seam's primitives; the service composes them.
type LedgerTx struct {
	s   *Store
	tx  *sql.Tx
	ctx context.Context
	op  LedgerOp
	// Now is the transaction's time (the store's clock, read once).
	Now time.Time
}

// errReplay ends LedgerWrite's attempt when the receipt already exists.
var errReplay = errors.New("ledger: replay")

// LedgerWrite runs fn in one transaction. When op has a request hash, the
// receipt is claimed first: if that request was already answered, fn does
// not run and the first response is returned with replay true (nothing is
// written). Otherwise fn's response, marshalled to JSON, is stored as the
// receipt with everything fn wrote, and returned. An error from fn rolls
// everything back (receipt included), so a retry re-decides.
func (s *Store) LedgerWrite(ctx context.Context, op LedgerOp, fn func(lt *LedgerTx) (any, error)) (response []byte, replay bool, err error) {
	err = s.InTx(ctx, func(tx *sql.Tx) error {
		lt := &LedgerTx{s: s, tx: tx, ctx: ctx, op: op, Now: s.Now()}
		if op.RequestHash != "" {
			res, err := tx.ExecContext(ctx, `insert into ledger_operations (request_hash, kind, response, created_at)
				values ($1, $2, '', $3) on conflict (request_hash) do nothing`, op.RequestHash, op.Kind, lt.Now)
			if err != nil {
				return fmt.Errorf("ledger: claim receipt: %w", err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				if err := tx.QueryRowContext(ctx, `select response from ledger_operations where request_hash = $1`,
					op.RequestHash).Scan(&response); err != nil {
					return fmt.Errorf("ledger: read receipt: %w", err)
				}
				return errReplay
			}
		}
		v, err := fn(lt)
		if err != nil {
			return err
		}
		if response, err = json.Marshal(v); err != nil {
			return fmt.Errorf("ledger: marshal response: %w", err)
		}
		if op.RequestHash != "" {
			if _, err := tx.ExecContext(ctx, `update ledger_operations set response = $2 where request_hash = $1`,
				op.RequestHash, string(response)); err != nil {
				return fmt.Errorf("ledger: store receipt: %w", err)
			}
		}
		return FailpointError(FailpointLedgerCommit)
	})
	if errors.Is(err, errReplay) {
		return response, true, nil
	}
	if err != nil && retryable(err) {
		return nil, false, fmt.Errorf("%w: %w", ErrLedgerConflict, err)
	}
	if err != nil {
		return nil, false, err
	}
	return response, false, nil
}

// retryable: Postgres gave up on the transaction (a deadlock, a
// serialization failure) or SQLite stayed busy; re-deciding is the answer.
func retryable(err error) bool {
	s := err.Error()
	return strings.Contains(s, "40P01") || strings.Contains(s, "40001") || strings.Contains(s, "SQLITE_BUSY") ||
		strings.Contains(s, "database is locked")
}

// LedgerReceipt is the stored response of a request, if it was answered.
func (s *Store) LedgerReceipt(ctx context.Context, requestHash string) ([]byte, bool, error) {
	var resp []byte
	err := s.DB.QueryRowContext(ctx, `select response from ledger_operations where request_hash = $1 and response <> ''`,
		requestHash).Scan(&resp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledger: read receipt: %w", err)
	}
	return resp, true, nil
}

const ledgerFactColumns = `f.id, f.scope, f.kind, f.fingerprint_key, f.fingerprint, f.claim, f.preview, f.evidence, f.retry,
	f.status, f.revision, f.is_current, f.source, f.superseded_by, f.created_at, f.updated_at, f.last_transition,
	f.duplicate_failures_observed, f.warnings_emitted, f.calls_denied, l.lease_id, l.owner, l.expires_at`

const ledgerFactFrom = ` from ledger_facts f left join ledger_leases l on l.fact_id = f.id `

// scanLedgerFact scans ledgerFactColumns, then extra (columns a query
// selects after them).
func scanLedgerFact(row scanner, extra ...any) (ledger.Fact, error) {
	var f ledger.Fact
	var kind, status, fp, evidence string
	var retry, last, leaseID, leaseOwner sql.NullString
	var leaseExp sql.NullTime
	if err := row.Scan(append([]any{&f.ID, &f.Scope, &kind, &f.Key, &fp, &f.Claim, &f.Preview, &evidence, &retry,
		&status, &f.Revision, &f.Current, &f.Source, &f.SupersededBy, &f.CreatedAt, &f.UpdatedAt, &last,
		&f.Savings.DuplicateFailuresObserved, &f.Savings.WarningsEmitted, &f.Savings.CallsDenied,
		&leaseID, &leaseOwner, &leaseExp}, extra...)...); err != nil {
		return f, err
	}
	f.Kind, f.Status = ledger.Kind(kind), ledger.Status(status)
	f.CreatedAt, f.UpdatedAt = f.CreatedAt.UTC(), f.UpdatedAt.UTC()
	if err := json.Unmarshal([]byte(fp), &f.Fingerprint); err != nil {
		return f, fmt.Errorf("ledger fact %d: fingerprint: %w", f.ID, err)
	}
	if err := json.Unmarshal([]byte(evidence), &f.Evidence); err != nil {
		return f, fmt.Errorf("ledger fact %d: evidence: %w", f.ID, err)
	}
	if retry.Valid && retry.String != "" {
		f.Retry = new(ledger.RetryCondition)
		if err := json.Unmarshal([]byte(retry.String), f.Retry); err != nil {
			return f, fmt.Errorf("ledger fact %d: retry: %w", f.ID, err)
		}
	}
	if last.Valid && last.String != "" {
		f.LastTransition = new(ledger.Transition)
		if err := json.Unmarshal([]byte(last.String), f.LastTransition); err != nil {
			return f, fmt.Errorf("ledger fact %d: last transition: %w", f.ID, err)
		}
	}
	if leaseID.Valid {
		// Shown as the tool call holding it; CurrentLease has the caller.
		f.Lease = &ledger.Lease{ID: leaseID.String, Owner: LedgerCallerCallID(decodeObsKey(leaseOwner.String)), ExpiresAt: leaseExp.Time.UTC()}
	}
	return f, nil
}

// LedgerCurrentFact is the current fact of (scope, kind, key), with its
// lease: one indexed read, Check's hot path. ok is false when there is none.
func (s *Store) LedgerCurrentFact(ctx context.Context, scope string, kind ledger.Kind, key string) (ledger.Fact, bool, error) {
	return ledgerCurrent(ctx, s.DB, scope, kind, key, "")
}

func ledgerCurrent(ctx context.Context, q querier, scope string, kind ledger.Kind, key, lock string) (ledger.Fact, bool, error) {
	f, err := scanLedgerFact(q.QueryRowContext(ctx, `select `+ledgerFactColumns+ledgerFactFrom+
		`where f.fingerprint_hash = $1 and f.is_current`+lock, LedgerFingerprintHash(scope, kind, key)))
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Fact{}, false, nil
	}
	if err != nil {
		return ledger.Fact{}, false, fmt.Errorf("ledger: read current fact: %w", err)
	}
	if f.Scope != scope || f.Kind != kind {
		return ledger.Fact{}, false, fmt.Errorf("ledger: fingerprint hash of %s names fact %d of %s", scope, f.ID, f.Scope)
	}
	return f, true, nil
}

// LedgerFingerprintHash is a fact's lookup key: sha256 (hex) of scope,
// kind and fingerprint key. Facts are matched on it, never on the stored
// key, which is shown and so has its credentials redacted.
func LedgerFingerprintHash(scope string, kind ledger.Kind, key string) string {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// obsHash is an observation key's lookup key in a scope (ledger_observations,
// ledger_fact_keys).
func obsHash(scope, key string) string {
	h := sha256.New()
	h.Write([]byte(scope))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil))
}

// redacted is a text as it may be shown: credentials replaced by the trust
// gate's marker (learn/trust).
func redacted(s string) string { return trust.Check(s).Text }

// redactedFingerprint is a fingerprint as stored and shown.
func redactedFingerprint(fp ledger.Fingerprint) ledger.Fingerprint {
	for _, f := range []*string{&fp.Tool, &fp.CommandLine, &fp.Path, &fp.Cwd, &fp.TaskHash, &fp.Endpoint} {
		if *f != "" {
			*f = redacted(*f)
		}
	}
	return fp
}

// LedgerFact is one fact by id (ErrNotFound when there is none).
func (s *Store) LedgerFact(ctx context.Context, id int64) (ledger.Fact, error) {
	return ledgerByID(ctx, s.DB, id)
}

func ledgerByID(ctx context.Context, q querier, id int64) (ledger.Fact, error) {
	f, err := scanLedgerFact(q.QueryRowContext(ctx, `select `+ledgerFactColumns+ledgerFactFrom+`where f.id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Fact{}, fmt.Errorf("ledger fact %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return ledger.Fact{}, fmt.Errorf("ledger fact %d: %w", id, err)
	}
	return f, nil
}

// LedgerFilter selects facts for LedgerFacts. Zero fields match all.
type LedgerFilter struct {
	Scope string
	// Statuses keeps these statuses.
	Statuses []ledger.Status
	// CurrentOnly leaves out superseded versions.
	CurrentOnly bool
	// Limit caps the rows (0: 100).
	Limit int
}

// LedgerFacts lists facts, newest first: the first page of f (100 when
// f.Limit is 0).
func (s *Store) LedgerFacts(ctx context.Context, f LedgerFilter) ([]ledger.Fact, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	return s.LedgerFactsPage(ctx, LedgerPage{Scope: f.Scope, Statuses: f.Statuses, CurrentOnly: f.CurrentOnly, Limit: limit})
}

// LedgerSummary is the three counters summed over a scope ("" for all),
// with how many facts there are, how many are current and how many were
// hit (a deny, warning or duplicate failure).
func (s *Store) LedgerSummary(ctx context.Context, scope string) (ledger.Summary, error) {
	var sum ledger.Summary
	err := s.DB.QueryRowContext(ctx, `select count(*),
		coalesce(sum(case when is_current then 1 else 0 end), 0),
		coalesce(sum(case when duplicate_failures_observed + warnings_emitted + calls_denied > 0 then 1 else 0 end), 0),
		coalesce(sum(duplicate_failures_observed), 0), coalesce(sum(warnings_emitted), 0), coalesce(sum(calls_denied), 0)
		from ledger_facts where ($1 = '' or `+s.scopeIs("", "$1")+`)`, scope).Scan(&sum.Facts, &sum.Current, &sum.FactsHit,
		&sum.DuplicateFailuresObserved, &sum.WarningsEmitted, &sum.CallsDenied)
	if err != nil {
		return sum, fmt.Errorf("ledger: summary: %w", err)
	}
	return sum, nil
}

// LedgerObservation is the latest observed state of one file key.
type LedgerObservation struct {
	Key        string
	Observed   string // ledger.Present or ledger.Absent
	Version    string
	ObservedAt time.Time
	ToolCallID string
}

// LedgerObservations are the latest observations of keys in a scope, by key
// (a key never observed is absent from the map: unknown).
func (s *Store) LedgerObservations(ctx context.Context, scope string, keys []string) (map[string]LedgerObservation, error) {
	return ledgerObservations(ctx, s.DB, scope, keys)
}

func ledgerObservations(ctx context.Context, q querier, scope string, keys []string) (map[string]LedgerObservation, error) {
	out := map[string]LedgerObservation{}
	if len(keys) == 0 {
		return out, nil
	}
	args := []any{scope}
	var in []string
	for _, k := range keys {
		args = append(args, obsHash(scope, k))
		in = append(in, fmt.Sprintf("$%d", len(args)))
	}
	rows, err := q.QueryContext(ctx, `select key, observed, version, observed_at, tool_call_id from ledger_observations
		where key_hash in (`+strings.Join(in, ", ")+`) and scope = $1`, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: read observations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o LedgerObservation
		if err := rows.Scan(&o.Key, &o.Observed, &o.Version, &o.ObservedAt, &o.ToolCallID); err != nil {
			return nil, fmt.Errorf("ledger: read observations: %w", err)
		}
		o.Key = decodeObsKey(o.Key)
		o.ObservedAt = o.ObservedAt.UTC()
		out[o.Key] = o
	}
	return out, rows.Err()
}

// Current is the current fact of (scope, kind, key) as this transaction
// sees it, its row held until the transaction ends (Postgres: for update;
// a SQLite transaction holds the whole database already), so what the
// caller decides on it cannot change under it: concurrent requests about
// one fact take turns instead of conflicting.
func (lt *LedgerTx) Current(scope string, kind ledger.Kind, key string) (ledger.Fact, bool, error) {
	return ledgerCurrent(lt.ctx, lt.tx, scope, kind, key, lt.forUpdate())
}

func (lt *LedgerTx) forUpdate() string {
	if lt.s.Dialect == Postgres {
		return " for update of f"
	}
	return ""
}

func (lt *LedgerTx) forUpdateRow() string {
	if lt.s.Dialect == Postgres {
		return " for update"
	}
	return ""
}

// LockFacts holds the rows of facts (in id order, the order every
// multi-fact lock takes, so two never deadlock) until the transaction
// ends, and returns them as they are now. A fact that no longer exists is
// left out.
func (lt *LedgerTx) LockFacts(ids []int64) ([]ledger.Fact, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var out []ledger.Fact
	for _, id := range ids {
		f, err := scanLedgerFact(lt.tx.QueryRowContext(lt.ctx, `select `+ledgerFactColumns+ledgerFactFrom+`where f.id = $1`+lt.forUpdate(), id))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ledger fact %d: lock: %w", id, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Fact is one fact by id as this transaction sees it.
func (lt *LedgerTx) Fact(id int64) (ledger.Fact, error) { return ledgerByID(lt.ctx, lt.tx, id) }

// Observations are the latest observations of keys, as this transaction
// sees them.
func (lt *LedgerTx) Observations(scope string, keys []string) (map[string]LedgerObservation, error) {
	return ledgerObservations(lt.ctx, lt.tx, scope, keys)
}

// writeFactKeys indexes the file keys a fact's preconditions name
// (ledger_fact_keys), replacing what its previous evidence named.
func (lt *LedgerTx) writeFactKeys(factID int64, scope string, evidence []ledger.Witness) error {
	if _, err := lt.tx.ExecContext(lt.ctx, `delete from ledger_fact_keys where fact_id = $1`, factID); err != nil {
		return fmt.Errorf("ledger fact %d: keys: %w", factID, err)
	}
	seen := map[string]bool{}
	for _, w := range evidence {
		if w.Role != ledger.Precondition || w.Kind != ledger.WitnessFileState || w.Path == "" {
			continue
		}
		h := obsHash(scope, w.Path)
		if seen[h] {
			continue
		}
		seen[h] = true
		if _, err := lt.tx.ExecContext(lt.ctx, `insert into ledger_fact_keys (key_hash, fact_id) values ($1, $2)`, h, factID); err != nil {
			return fmt.Errorf("ledger fact %d: keys: %w", factID, err)
		}
	}
	return nil
}

// FactsNaming are the ids of the facts whose preconditions name one of the
// file keys in scope (ledger_fact_keys: no scan of the scope's facts).
func (lt *LedgerTx) FactsNaming(scope string, keys []string) ([]int64, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var args []any
	var in []string
	for _, k := range keys {
		args = append(args, obsHash(scope, k))
		in = append(in, fmt.Sprintf("$%d", len(args)))
	}
	rows, err := lt.tx.QueryContext(lt.ctx, `select distinct fact_id from ledger_fact_keys where key_hash in (`+strings.Join(in, ", ")+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: facts naming keys: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// TrimObservations keeps a scope's newest max observations, dropping the
// oldest (a key no longer observed is unknown: it stales nothing). It
// returns how many went.
func (lt *LedgerTx) TrimObservations(scope string, max int) (int, error) {
	var n int
	if err := lt.tx.QueryRowContext(lt.ctx, `select count(*) from ledger_observations where `+lt.s.scopeIs("", "$1"), scope).Scan(&n); err != nil {
		return 0, fmt.Errorf("ledger: count observations: %w", err)
	}
	if n <= max {
		return 0, nil
	}
	res, err := lt.tx.ExecContext(lt.ctx, `delete from ledger_observations where key_hash in
		(select key_hash from ledger_observations where `+lt.s.scopeIs("", "$1")+` order by observed_at, key_hash limit $2)`, scope, n-max)
	if err != nil {
		return 0, fmt.Errorf("ledger: trim observations: %w", err)
	}
	gone, err := res.RowsAffected()
	return int(gone), err
}

// LockExplicit holds, until the transaction ends, the right to add an
// explicit fact to scope: on Postgres a transaction-scoped advisory lock
// on the scope, so two requests adding different facts at once count in
// turn and the cap holds (read committed would let both count 99 and both
// insert); a SQLite write transaction holds the whole database already.
func (lt *LedgerTx) LockExplicit(scope string) error {
	if lt.s.Dialect != Postgres {
		return nil
	}
	h := sha256.Sum256([]byte("ledger.explicit\x00" + scope))
	key := int64(binary.BigEndian.Uint64(h[:8]))
	if _, err := lt.tx.ExecContext(lt.ctx, `select pg_advisory_xact_lock($1)`, key); err != nil {
		return fmt.Errorf("ledger: lock explicit facts of %s: %w", scope, err)
	}
	return nil
}

// CountExplicit is how many current, unresolved explicit facts (source
// api) a scope holds, as this transaction sees it.
func (lt *LedgerTx) CountExplicit(scope string) (int, error) {
	var n int
	err := lt.tx.QueryRowContext(lt.ctx, `select count(*) from ledger_facts where `+lt.s.scopeIs("", "$1")+` and is_current
		and source = $2 and status in ('active', 'stale')`, scope, ledger.SourceAPI).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("ledger: count explicit facts: %w", err)
	}
	return n, nil
}

// LedgerCaller is the identity of a tool call across sessions: DSH's call
// ids (call_0, ...) repeat from session to session, so a lease's owner and
// an event's call are the session and the call id together.
func LedgerCaller(session, toolCallID string) string {
	if session == "" {
		return toolCallID
	}
	return session + "\x00" + toolCallID
}

// LedgerCallerCallID is the tool call id part of a LedgerCaller identity
// (what a message shows).
func LedgerCallerCallID(caller string) string {
	if _, call, ok := strings.Cut(caller, "\x00"); ok {
		return call
	}
	return caller
}

func (lt *LedgerTx) callID() string { return ledgerCallID(lt.op, lt.Now) }

// ledgerCallID is the call an operation's events are keyed by: its tool
// call, else its request, else its time.
func ledgerCallID(op LedgerOp, now time.Time) string {
	if op.ToolCallID != "" {
		return LedgerCaller(op.Session, op.ToolCallID)
	}
	if op.RequestHash != "" {
		return "op:" + op.RequestHash
	}
	return "at:" + now.Format(time.RFC3339Nano)
}

// event inserts the (fact, tool call, kind) event and says whether it is
// new: an old one counts nothing.
func (lt *LedgerTx) event(factID int64, kind string) (bool, error) {
	res, err := lt.tx.ExecContext(lt.ctx, `insert into ledger_events (fact_id, tool_call_id, operation_kind, session, at)
		values ($1, $2, $3, $4, $5) on conflict (fact_id, tool_call_id, operation_kind) do nothing`,
		factID, encodeObsKey(lt.callID()), kind, lt.op.Session, lt.Now)
	if err != nil {
		return false, fmt.Errorf("ledger fact %d: event %s: %w", factID, kind, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// lock checks the fact is current at revision and, on Postgres, holds its
// row until the transaction ends, so what is decided against that revision
// commits against it.
func (lt *LedgerTx) lock(factID, revision int64) error {
	// A row lock, not a write: "select ... for update" on Postgres (no dead
	// tuple, no WAL); a SQLite write transaction holds the database.
	var one int
	err := lt.tx.QueryRowContext(lt.ctx, `select 1 from ledger_facts where id = $1 and revision = $2 and is_current`+lt.forUpdateRow(),
		factID, revision).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("ledger fact %d revision %d: %w", factID, revision, ErrLedgerConflict)
	}
	if err != nil {
		return fmt.Errorf("ledger fact %d: %w", factID, err)
	}
	return nil
}

// Deny counts a denied call against the fact at revision: calls_denied+1
// and a deny event, once per tool call (a second deny of the same call
// counts nothing; counted says which).
func (lt *LedgerTx) Deny(factID, revision int64) (counted bool, err error) {
	if err := lt.lock(factID, revision); err != nil {
		return false, err
	}
	if counted, err = lt.event(factID, LedgerOpDeny); err != nil || !counted {
		return false, err
	}
	_, err = lt.tx.ExecContext(lt.ctx, `update ledger_facts set calls_denied = calls_denied + 1 where id = $1`, factID)
	return err == nil, err
}

// LeaseResult is AcquireLease's answer.
type LeaseResult struct {
	// Granted: this call holds the lease (newly, by takeover, or already).
	Granted bool
	Lease   ledger.Lease
	// TookOver: an expired lease of another call was replaced.
	TookOver bool
}

// AcquireLease competes for the fact's retry lease at revision: granted
// when there is no lease, when the call already holds it, or when the one
// there expired (taken over); otherwise the holder's lease is returned with
// Granted false. One conditional upsert decides, so of N concurrent calls
// in any number of processes exactly one wins.
func (lt *LedgerTx) AcquireLease(factID, revision int64, leaseID string, ttl time.Duration) (LeaseResult, error) {
	if err := lt.lock(factID, revision); err != nil {
		return LeaseResult{}, err
	}
	owner := lt.callID()
	cur, ok, err := lt.lease(factID)
	if err != nil {
		return LeaseResult{}, err
	}
	if ok && cur.Owner == owner && cur.ExpiresAt.After(lt.Now) {
		return LeaseResult{Granted: true, Lease: cur}, nil
	}
	exp := lt.Now.Add(ttl)
	var got string
	err = lt.tx.QueryRowContext(lt.ctx, `insert into ledger_leases (fact_id, lease_id, owner, fact_revision, expires_at, acquired_at)
		values ($1, $2, $3, $4, $5, $6)
		on conflict (fact_id) do update set lease_id = excluded.lease_id, owner = excluded.owner,
			fact_revision = excluded.fact_revision, expires_at = excluded.expires_at, acquired_at = excluded.acquired_at
			where ledger_leases.expires_at <= $6
		returning lease_id`, factID, leaseID, encodeObsKey(owner), revision, exp, lt.Now).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		cur, ok, err := lt.lease(factID)
		if err != nil {
			return LeaseResult{}, err
		}
		if !ok {
			return LeaseResult{}, fmt.Errorf("ledger fact %d: lease vanished: %w", factID, ErrLedgerConflict)
		}
		return LeaseResult{Lease: cur}, nil
	}
	if err != nil {
		return LeaseResult{}, fmt.Errorf("ledger fact %d: acquire lease: %w", factID, err)
	}
	Failpoint(FailpointLedgerLease)
	if _, err := lt.event(factID, LedgerOpGranted); err != nil {
		return LeaseResult{}, err
	}
	return LeaseResult{Granted: true, TookOver: ok, Lease: ledger.Lease{ID: leaseID, Owner: owner, ExpiresAt: exp}}, nil
}

// CurrentLease is the fact's lease as this transaction reads it now (nil
// for none; its Owner the tool call id, as a fact shows it) and the
// caller holding it (LedgerCaller: session and call). Read it after the
// fact's row is held: on Postgres (read committed) a row lock taken after
// a wait refetches the fact, not a lease joined to it.
func (lt *LedgerTx) CurrentLease(factID int64) (*ledger.Lease, string, error) {
	l, ok, err := lt.lease(factID)
	if err != nil || !ok {
		return nil, "", err
	}
	caller := l.Owner
	l.Owner = LedgerCallerCallID(caller)
	return &l, caller, nil
}

func (lt *LedgerTx) lease(factID int64) (ledger.Lease, bool, error) {
	var l ledger.Lease
	err := lt.tx.QueryRowContext(lt.ctx, `select lease_id, owner, expires_at from ledger_leases where fact_id = $1`, factID).
		Scan(&l.ID, &l.Owner, &l.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("ledger fact %d: read lease: %w", factID, err)
	}
	l.ExpiresAt, l.Owner = l.ExpiresAt.UTC(), decodeObsKey(l.Owner)
	return l, true, nil
}

// FactInput is a fact as recorded: a new fact, or a new evidence version
// of the current one.
type FactInput struct {
	Scope       string
	Fingerprint ledger.Fingerprint
	// Key is Fingerprint.Key().
	Key      string
	Claim    string
	Preview  string
	Evidence []ledger.Witness
	Retry    *ledger.RetryCondition
	// Source is auto, api or operator.
	Source string
}

func (in FactInput) check() error {
	switch {
	case strings.TrimSpace(in.Scope) == "":
		return errors.New("scope is required")
	case in.Fingerprint.Kind == "":
		return errors.New("fingerprint kind is required")
	case in.Key == "":
		return errors.New("fingerprint key is required")
	case strings.TrimSpace(in.Claim) == "":
		return errors.New("claim is required")
	case in.Source == "":
		return errors.New("source is required")
	}
	return nil
}

// RecordFlags say what a recorded failure also counts.
type RecordFlags struct {
	// Duplicate: it repeated a current intercepting fact's failure
	// (duplicate_failures_observed+1).
	Duplicate bool
	// Warn: a warning note goes with it (warnings_emitted+1).
	Warn bool
}

// NoCurrentFact is RecordFact's expectRevision for a decision made on
// there being no current fact.
const NoCurrentFact = -1

// RecordResult is what RecordFact did.
type RecordResult struct {
	Fact ledger.Fact
	// New: a new fact (Superseded names the resolved one it replaced);
	// otherwise a new evidence version of the current fact.
	New        bool
	Superseded int64
	// Replayed: this tool call already recorded on this fact; nothing
	// changed.
	Replayed bool
	// Counted are the flags that counted (an already-counted call counts
	// nothing twice).
	Counted RecordFlags
}

// RecordFact records a failure. With no current fact (or a resolved one,
// which becomes superseded), it inserts a new current fact; with an active
// or stale one, it writes a new evidence version (revision+1, status
// active, the new evidence and retry condition). Of two processes inserting
// the same first fact at once, the loser's insert does nothing and becomes a
// new evidence version of the winner's fact. expectRevision, when not 0, is
// the revision of the current fact the caller decided on: another is
// ErrLedgerConflict; NoCurrentFact says the caller decided on there being
// none, so one there (or one another process inserted first) is
// ErrLedgerConflict, and the caller re-decides with it.
func (lt *LedgerTx) RecordFact(in FactInput, expectRevision int64, flags RecordFlags) (RecordResult, error) {
	if err := in.check(); err != nil {
		return RecordResult{}, fmt.Errorf("ledger: record fact: %w", err)
	}
	fp, err := json.Marshal(redactedFingerprint(in.Fingerprint))
	if err != nil {
		return RecordResult{}, err
	}
	ev, err := json.Marshal(nonNilWitnesses(in.Evidence))
	if err != nil {
		return RecordResult{}, err
	}
	retry, err := nullJSON(in.Retry)
	if err != nil {
		return RecordResult{}, err
	}
	for round := 0; round < 2; round++ {
		cur, ok, err := lt.Current(in.Scope, in.Fingerprint.Kind, in.Key)
		if err != nil {
			return RecordResult{}, err
		}
		if ok && expectRevision == NoCurrentFact {
			return RecordResult{}, fmt.Errorf("ledger fact %d is current now: %w", cur.ID, ErrLedgerConflict)
		}
		if ok && expectRevision != 0 && cur.Revision != expectRevision {
			return RecordResult{}, fmt.Errorf("ledger fact %d revision %d (now %d): %w", cur.ID, expectRevision, cur.Revision, ErrLedgerConflict)
		}
		if ok && (cur.Status == ledger.Active || cur.Status == ledger.Stale) {
			return lt.newVersion(cur, in, ev, retry, flags)
		}
		var superseded int64
		if ok {
			// Resolved: the new failure is a new fact; the resolved one is
			// history.
			res, err := lt.tx.ExecContext(lt.ctx, `update ledger_facts set is_current = false, status = 'superseded', updated_at = $3
				where id = $1 and revision = $2 and is_current`, cur.ID, cur.Revision, lt.Now)
			if err != nil {
				return RecordResult{}, fmt.Errorf("ledger fact %d: supersede: %w", cur.ID, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return RecordResult{}, err
			} else if n == 0 {
				return RecordResult{}, fmt.Errorf("ledger fact %d: supersede: %w", cur.ID, ErrLedgerConflict)
			}
			superseded = cur.ID
		}
		var id int64
		err = lt.tx.QueryRowContext(lt.ctx, `insert into ledger_facts (scope, kind, fingerprint_hash, fingerprint_key, fingerprint, claim, preview,
			evidence, retry, status, revision, is_current, source, created_at, updated_at)
			values ($1, $2, $11, $3, $4, $5, $6, $7, $8, 'active', 1, true, $9, $10, $10)
			on conflict (fingerprint_hash) where is_current do nothing returning id`,
			in.Scope, string(in.Fingerprint.Kind), redacted(in.Key), string(fp), in.Claim, in.Preview, string(ev), retry, in.Source, lt.Now,
			LedgerFingerprintHash(in.Scope, in.Fingerprint.Kind, in.Key)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			// Another process recorded it first (committed now): apply
			// this failure to its fact.
			if superseded != 0 || expectRevision == NoCurrentFact {
				return RecordResult{}, fmt.Errorf("ledger: another process recorded %s first: %w", in.Key, ErrLedgerConflict)
			}
			expectRevision = 0
			continue
		}
		if err != nil {
			return RecordResult{}, fmt.Errorf("ledger: insert fact: %w", err)
		}
		if err := lt.writeFactKeys(id, in.Scope, in.Evidence); err != nil {
			return RecordResult{}, err
		}
		Failpoint(FailpointLedgerRecord)
		if superseded != 0 {
			if _, err := lt.tx.ExecContext(lt.ctx, `update ledger_facts set superseded_by = $2 where id = $1`, superseded, id); err != nil {
				return RecordResult{}, fmt.Errorf("ledger fact %d: superseded_by: %w", superseded, err)
			}
		}
		if _, err := lt.event(id, LedgerOpRecord); err != nil {
			return RecordResult{}, err
		}
		f, err := lt.Fact(id)
		return RecordResult{Fact: f, New: true, Superseded: superseded}, err
	}
	return RecordResult{}, fmt.Errorf("ledger: record fact: %w", ErrLedgerConflict)
}

func (lt *LedgerTx) newVersion(cur ledger.Fact, in FactInput, ev []byte, retry sql.NullString, flags RecordFlags) (RecordResult, error) {
	fresh, err := lt.event(cur.ID, LedgerOpRecord)
	if err != nil {
		return RecordResult{}, err
	}
	if !fresh {
		// This tool call already recorded on this fact: idempotent.
		return RecordResult{Fact: cur, Replayed: true}, lt.lock(cur.ID, cur.Revision)
	}
	var counted RecordFlags
	dup, warn := 0, 0
	if flags.Duplicate {
		if counted.Duplicate, err = lt.event(cur.ID, LedgerOpDuplicate); err != nil {
			return RecordResult{}, err
		}
	}
	if flags.Warn {
		if counted.Warn, err = lt.event(cur.ID, LedgerOpWarn); err != nil {
			return RecordResult{}, err
		}
	}
	if counted.Duplicate {
		dup = 1
	}
	if counted.Warn {
		warn = 1
	}
	res, err := lt.tx.ExecContext(lt.ctx, `update ledger_facts set claim = $3, preview = $4, evidence = $5, retry = $6,
		status = 'active', revision = revision + 1, updated_at = $7, last_transition = null,
		duplicate_failures_observed = duplicate_failures_observed + $8, warnings_emitted = warnings_emitted + $9
		where id = $1 and revision = $2 and is_current`,
		cur.ID, cur.Revision, in.Claim, in.Preview, string(ev), retry, lt.Now, dup, warn)
	if err != nil {
		return RecordResult{}, fmt.Errorf("ledger fact %d: new evidence version: %w", cur.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return RecordResult{}, err
	} else if n == 0 {
		return RecordResult{}, fmt.Errorf("ledger fact %d revision %d: %w", cur.ID, cur.Revision, ErrLedgerConflict)
	}
	if err := lt.writeFactKeys(cur.ID, cur.Scope, in.Evidence); err != nil {
		return RecordResult{}, err
	}
	Failpoint(FailpointLedgerRecord)
	f, err := lt.Fact(cur.ID)
	return RecordResult{Fact: f, Counted: counted}, err
}

// Settlement is how a lease's holder ended.
type Settlement string

// The settlements.
const (
	SettleSucceeded Settlement = "succeeded"
	SettleFailed    Settlement = "failed"
	SettleReleased  Settlement = "released"
)

// SettleResult is SettleLease's answer.
type SettleResult struct {
	// Applied: the holder settled the fact. Otherwise the lease was not
	// this call's active lease (another took it over, or none) and the
	// fact is unchanged.
	Applied bool
	Fact    ledger.Fact
}

// SettleLease settles the fact's lease held by this tool call under
// leaseID: succeeded resolves the fact, failed writes failure as its new
// evidence version, released only drops the lease. A lease that is not
// this call's (none, another's, taken over) is not active: nothing
// changes. A lease bound to an older revision (the fact changed under it)
// is dropped and the fact left as it is.
func (lt *LedgerTx) SettleLease(factID int64, leaseID string, how Settlement, failure *FactInput) (SettleResult, error) {
	// The fact's row first, then its lease, the order every path takes
	// (AcquireLease, TransitionFacts), so two of them never deadlock.
	var fpHash string
	if err := lt.tx.QueryRowContext(lt.ctx, `select fingerprint_hash from ledger_facts where id = $1`+lt.forUpdateRow(), factID).Scan(&fpHash); err != nil {
		return SettleResult{}, fmt.Errorf("ledger fact %d: %w", factID, err)
	}
	var owner string
	var rev int64
	err := lt.tx.QueryRowContext(lt.ctx, `select owner, fact_revision from ledger_leases where fact_id = $1 and lease_id = $2`,
		factID, leaseID).Scan(&owner, &rev)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && decodeObsKey(owner) != lt.callID()) {
		f, err := lt.Fact(factID)
		return SettleResult{Fact: f}, err
	}
	if err != nil {
		return SettleResult{}, fmt.Errorf("ledger fact %d: read lease: %w", factID, err)
	}
	if _, err := lt.tx.ExecContext(lt.ctx, `delete from ledger_leases where fact_id = $1 and lease_id = $2`, factID, leaseID); err != nil {
		return SettleResult{}, fmt.Errorf("ledger fact %d: drop lease: %w", factID, err)
	}
	Failpoint(FailpointLedgerSettle)
	f, err := lt.Fact(factID)
	if err != nil {
		return SettleResult{}, err
	}
	if f.Revision != rev || !f.Current {
		return SettleResult{Fact: f}, nil
	}
	if _, err := lt.event(factID, LedgerOpSettle); err != nil {
		return SettleResult{}, err
	}
	switch how {
	case SettleReleased:
		f.Lease = nil
		return SettleResult{Applied: true, Fact: f}, nil
	case SettleSucceeded:
		tr := ledger.Transition{Kind: ledger.Resolved, At: lt.Now, Via: lt.op.ToolCallID}
		if err := lt.transition(factID, rev, ledger.Resolved, tr); err != nil {
			return SettleResult{}, err
		}
	case SettleFailed:
		if failure == nil {
			return SettleResult{}, fmt.Errorf("ledger fact %d: a failed settlement needs the failure", factID)
		}
		if LedgerFingerprintHash(failure.Scope, failure.Fingerprint.Kind, failure.Key) != fpHash {
			return SettleResult{}, fmt.Errorf("ledger fact %d: the failure is not the leased fact's", factID)
		}
		ev, err := json.Marshal(nonNilWitnesses(failure.Evidence))
		if err != nil {
			return SettleResult{}, err
		}
		retry, err := nullJSON(failure.Retry)
		if err != nil {
			return SettleResult{}, err
		}
		if _, err := lt.event(factID, LedgerOpRecord); err != nil {
			return SettleResult{}, err
		}
		if _, err := lt.newVersionAt(f, *failure, ev, retry); err != nil {
			return SettleResult{}, err
		}
	default:
		return SettleResult{}, fmt.Errorf("ledger fact %d: settlement %q is not succeeded, failed or released", factID, how)
	}
	f, err = lt.Fact(factID)
	return SettleResult{Applied: true, Fact: f}, err
}

func (lt *LedgerTx) newVersionAt(cur ledger.Fact, in FactInput, ev []byte, retry sql.NullString) (int64, error) {
	res, err := lt.tx.ExecContext(lt.ctx, `update ledger_facts set claim = $3, preview = $4, evidence = $5, retry = $6,
		status = 'active', revision = revision + 1, updated_at = $7, last_transition = null
		where id = $1 and revision = $2 and is_current`,
		cur.ID, cur.Revision, in.Claim, in.Preview, string(ev), retry, lt.Now)
	if err != nil {
		return 0, fmt.Errorf("ledger fact %d: new evidence version: %w", cur.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		return 0, fmt.Errorf("ledger fact %d revision %d: %w", cur.ID, cur.Revision, ErrLedgerConflict)
	}
	if err := lt.writeFactKeys(cur.ID, cur.Scope, in.Evidence); err != nil {
		return 0, err
	}
	return cur.Revision + 1, nil
}

func (lt *LedgerTx) transition(factID, revision int64, to ledger.Status, tr ledger.Transition) error {
	b, err := json.Marshal(tr)
	if err != nil {
		return err
	}
	res, err := lt.tx.ExecContext(lt.ctx, `update ledger_facts set status = $3, revision = revision + 1, updated_at = $4,
		last_transition = $5 where id = $1 and revision = $2 and is_current`, factID, revision, string(to), lt.Now, string(b))
	if err != nil {
		return fmt.Errorf("ledger fact %d: %s: %w", factID, to, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("ledger fact %d revision %d: %w", factID, revision, ErrLedgerConflict)
	}
	return nil
}

// TransitionItem is one fact of a batch transition.
type TransitionItem struct {
	FactID           int64
	ExpectedRevision int64
	// Transition.Kind is ledger.Stale or ledger.Resolved.
	Transition ledger.Transition
}

// TransitionFacts moves every item's fact (stale or resolved), revision+1
// each, all or nothing: one revision conflict is ErrLedgerConflict and,
// returned from LedgerWrite's fn, rolls back the whole batch. A resolved
// fact's lease is dropped with it.
func (lt *LedgerTx) TransitionFacts(items []TransitionItem) error {
	for i, it := range items {
		if i == 1 {
			Failpoint(FailpointLedgerTransition)
		}
		kind := it.Transition.Kind
		if kind != ledger.Stale && kind != ledger.Resolved {
			return fmt.Errorf("ledger fact %d: transition %q is not stale or resolved", it.FactID, kind)
		}
		if it.Transition.At.IsZero() {
			it.Transition.At = lt.Now
		}
		if err := lt.transition(it.FactID, it.ExpectedRevision, kind, it.Transition); err != nil {
			return err
		}
		op := LedgerOpStale
		if kind == ledger.Resolved {
			op = LedgerOpResolve
			if _, err := lt.tx.ExecContext(lt.ctx, `delete from ledger_leases where fact_id = $1`, it.FactID); err != nil {
				return fmt.Errorf("ledger fact %d: drop lease: %w", it.FactID, err)
			}
		}
		if _, err := lt.event(it.FactID, op); err != nil {
			return err
		}
	}
	return nil
}

// UpsertObservations stores each observation as the latest state of its
// key in scope (of one key given twice, the later wins). Rows are written
// in key order, so two requests never deadlock over them.
func (lt *LedgerTx) UpsertObservations(scope string, obs []LedgerObservation) error {
	obs = slices.Clone(obs)
	slices.SortStableFunc(obs, func(a, b LedgerObservation) int { return strings.Compare(a.Key, b.Key) })
	for _, o := range obs {
		if o.Observed != ledger.Present && o.Observed != ledger.Absent {
			return fmt.Errorf("ledger observation %q: observed %q is not present or absent", o.Key, o.Observed)
		}
		at := o.ObservedAt
		if at.IsZero() {
			at = lt.Now
		}
		if _, err := lt.tx.ExecContext(lt.ctx, `insert into ledger_observations (key_hash, scope, key, observed, version, observed_at, tool_call_id)
			values ($7, $1, $2, $3, $4, $5, $6) on conflict (key_hash) do update set observed = excluded.observed,
			version = excluded.version, observed_at = excluded.observed_at, tool_call_id = excluded.tool_call_id`,
			scope, encodeObsKey(o.Key), o.Observed, o.Version, utcMicro(at), o.ToolCallID, obsHash(scope, o.Key)); err != nil {
			return fmt.Errorf("ledger observation %q: %w", o.Key, err)
		}
	}
	return nil
}

// Warned is what a session remembers of its last warning about a fact.
type Warned struct {
	// Found: remembered; then At and Evidence (the evidence digest it was
	// warned about) are set.
	Found    bool
	At       time.Time
	Evidence string
	// Entries is how many facts the session remembers warnings for.
	Entries int
}

// LastWarned is what (session, fact)'s last warning was, as this
// transaction sees it.
func (lt *LedgerTx) LastWarned(session string, factID int64) (Warned, error) {
	var w Warned
	err := lt.tx.QueryRowContext(lt.ctx, `select count(*) from ledger_warnings where session = $1`, session).Scan(&w.Entries)
	if err != nil {
		return w, fmt.Errorf("ledger warnings of %s: %w", session, err)
	}
	err = lt.tx.QueryRowContext(lt.ctx, `select warned_at, evidence from ledger_warnings where session = $1 and fact_id = $2`,
		session, factID).Scan(&w.At, &w.Evidence)
	if errors.Is(err, sql.ErrNoRows) {
		return w, nil
	}
	if err != nil {
		return w, fmt.Errorf("ledger warnings of %s: %w", session, err)
	}
	w.Found, w.At = true, w.At.UTC()
	return w, nil
}

// RememberWarning records that (session, fact) was warned now about
// evidence (a digest), keeping at most max entries per session (the oldest
// go first).
func (lt *LedgerTx) RememberWarning(session string, factID int64, evidence string, max int) error {
	if _, err := lt.tx.ExecContext(lt.ctx, `insert into ledger_warnings (session, fact_id, warned_at, evidence) values ($1, $2, $3, $4)
		on conflict (session, fact_id) do update set warned_at = excluded.warned_at, evidence = excluded.evidence`,
		session, factID, lt.Now, evidence); err != nil {
		return fmt.Errorf("ledger warnings of %s: %w", session, err)
	}
	if max <= 0 {
		return nil
	}
	_, err := lt.tx.ExecContext(lt.ctx, `delete from ledger_warnings where session = $1 and fact_id not in
		(select fact_id from ledger_warnings where session = $1 order by warned_at desc, fact_id desc limit $2)`, session, max)
	if err != nil {
		return fmt.Errorf("ledger warnings of %s: %w", session, err)
	}
	return nil
}

// ForgetWarnings forgets every session's warning about a fact (a
// verification retry settled it: a later repeat warns again).
func (lt *LedgerTx) ForgetWarnings(factID int64) error {
	if _, err := lt.tx.ExecContext(lt.ctx, `delete from ledger_warnings where fact_id = $1`, factID); err != nil {
		return fmt.Errorf("ledger fact %d: forget warnings: %w", factID, err)
	}
	return nil
}

// LedgerReleaseExpiredLeases drops every lease expired at now, and returns
// how many. A lease's holder that comes back after this settles nothing.
func (s *Store) LedgerReleaseExpiredLeases(ctx context.Context, now time.Time) (int, error) {
	res, err := s.DB.ExecContext(ctx, `delete from ledger_leases where expires_at <= $1`, utcMicro(now))
	if err != nil {
		return 0, fmt.Errorf("ledger: release expired leases: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// LedgerCountDue counts the current active facts whose after condition is
// met at now (a TTL expired: the next verify-retry may run).
func (s *Store) LedgerCountDue(ctx context.Context, now time.Time) (int, error) {
	rows, err := s.DB.QueryContext(ctx, `select retry from ledger_facts where is_current and status = 'active' and retry is not null`)
	if err != nil {
		return 0, fmt.Errorf("ledger: due facts: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return 0, err
		}
		var rc ledger.RetryCondition
		if json.Unmarshal([]byte(raw), &rc) == nil && rc.Type == ledger.RetryAfter && !rc.At.After(now) {
			n++
		}
	}
	return n, rows.Err()
}

// LedgerPrune deletes bookkeeping older than before: receipts, file
// observations and warning dedupe rows. It returns how many of each.
func (s *Store) LedgerPrune(ctx context.Context, receiptsBefore, observationsBefore, warningsBefore time.Time) (receipts, observations, warnings int, err error) {
	del := func(q string, t time.Time) (int, error) {
		if t.IsZero() {
			return 0, nil
		}
		res, err := s.DB.ExecContext(ctx, q, utcMicro(t))
		if err != nil {
			return 0, fmt.Errorf("ledger: prune: %w", err)
		}
		n, err := res.RowsAffected()
		return int(n), err
	}
	if receipts, err = del(`delete from ledger_operations where created_at < $1`, receiptsBefore); err != nil {
		return
	}
	if observations, err = del(`delete from ledger_observations where observed_at < $1`, observationsBefore); err != nil {
		return
	}
	warnings, err = del(`delete from ledger_warnings where warned_at < $1`, warningsBefore)
	return
}

// LedgerPruneFacts deletes, with their events, leases, keys and warning
// rows, the facts resolved or superseded before before (at most 1000 a
// call; the sweep runs again). It returns how many facts went.
func (s *Store) LedgerPruneFacts(ctx context.Context, before time.Time) (int, error) {
	if before.IsZero() {
		return 0, nil
	}
	n := 0
	err := s.InTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `select id from ledger_facts where status in ('resolved', 'superseded') and updated_at < $1
			order by id limit 1000`, utcMicro(before))
		if err != nil {
			return err
		}
		var ids []any
		var in []string
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			in = append(in, fmt.Sprintf("$%d", len(ids)))
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(ids) == 0 {
			return err
		}
		list := strings.Join(in, ", ")
		for _, q := range []string{
			`delete from ledger_events where fact_id in (` + list + `)`,
			`delete from ledger_leases where fact_id in (` + list + `)`,
			`delete from ledger_fact_keys where fact_id in (` + list + `)`,
			`delete from ledger_warnings where fact_id in (` + list + `)`,
			`delete from ledger_facts where id in (` + list + `)`,
		} {
			if _, err := tx.ExecContext(ctx, q, ids...); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: prune facts: %w", err)
	}
	return n, nil
}

// Observation keys hold a NUL (ledger.ObservationKey: cwd, NUL, path),
// which a Postgres text column cannot: both dialects store them escaped
// (a backslash doubled, NUL as backslash-0), reversibly.
var (
	obsKeyEncoder = strings.NewReplacer("\\", "\\\\", "\x00", "\\0")
	obsKeyDecoder = strings.NewReplacer("\\\\", "\\", "\\0", "\x00")
)

func encodeObsKey(k string) string { return obsKeyEncoder.Replace(k) }
func decodeObsKey(k string) string { return obsKeyDecoder.Replace(k) }

func nonNilWitnesses(w []ledger.Witness) []ledger.Witness {
	if w == nil {
		return []ledger.Witness{}
	}
	return w
}

func nullJSON(v *ledger.RetryCondition) (sql.NullString, error) {
	if v == nil {
		return sql.NullString{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return sql.NullString{}, err
	}
	return sql.NullString{String: string(b), Valid: true}, nil
}
