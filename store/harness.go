package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/harness"
)

// The harness's store (seed 004, migration 023). Its guarantees come from
// the schema and the scope lock, so they hold across processes sharing one
// database:
//   - applies to one scope are serialized: LockHarnessScope holds the
//     scope's row (Postgres: select ... for update after an insert if
//     missing; SQLite: the write transaction), so what an apply reads as
//     current stays current until it commits;
//   - a refinement id is stored once (its primary key): a retried job
//     whose first attempt committed finds its id taken and applies
//     nothing;
//   - every version of every entry is a row, never updated, so "what did
//     the entry say at T" has an answer.
//
// The types are learn/harness's (a pure leaf package), imported here for
// their data shapes only.

// ErrHarnessRefinementExists is storing a refinement whose id is taken.
var ErrHarnessRefinementExists = errors.New("harness refinement exists")

// HarnessVersion is one stored version of an entry: the current row of
// harness_entries, or one of harness_entry_versions. A deleted entry is a
// tombstone: its last version, Deleted set.
type HarnessVersion struct {
	// ScopeKey is harness.Scope.Key(): "global" or "session:<id>".
	ScopeKey     string
	Entry        harness.Entry
	Deleted      bool
	RefinementID string
	// RecordedAt is the commit time of the refinement that wrote it
	// (the current row reads it as its UpdatedAt).
	RecordedAt time.Time
}

// LockHarnessScope takes the scope's lock row for the rest of tx,
// creating it when missing, and returns its revision (how many applies
// the scope has seen).
func (s *Store) LockHarnessScope(ctx context.Context, tx *sql.Tx, key string) (int64, error) {
	if _, err := tx.ExecContext(ctx, `insert into harness_scopes (scope_key, revision) values ($1, 0)
		on conflict (scope_key) do nothing`, key); err != nil {
		return 0, fmt.Errorf("lock harness scope %s: %w", key, err)
	}
	q := `select revision from harness_scopes where scope_key = $1`
	if s.Dialect == Postgres {
		q += ` for update`
	}
	var rev int64
	if err := tx.QueryRowContext(ctx, q, key).Scan(&rev); err != nil {
		return 0, fmt.Errorf("lock harness scope %s: %w", key, err)
	}
	return rev, nil
}

// BumpHarnessScope counts one apply of a locked scope.
func (s *Store) BumpHarnessScope(ctx context.Context, tx *sql.Tx, key string) error {
	if _, err := tx.ExecContext(ctx, `update harness_scopes set revision = revision + 1 where scope_key = $1`, key); err != nil {
		return fmt.Errorf("bump harness scope %s: %w", key, err)
	}
	return nil
}

const harnessEntryColumns = `scope_key, kind, id, version, content, title, description, protection, source_session,
	lifecycle, pinned, deleted, refinement_id, updated_at`

func scanHarnessVersion(row scanner, withRecorded bool) (HarnessVersion, error) {
	var v HarnessVersion
	var kind, protection, lifecycle string
	e := &v.Entry
	dest := []any{&v.ScopeKey, &kind, &e.ID, &e.Version, &e.Content, &e.Title, &e.Description, &protection,
		&e.Metadata.SourceSession, &lifecycle, &e.Metadata.Pinned, &v.Deleted, &v.RefinementID, &e.UpdatedAt}
	if withRecorded {
		dest = append(dest, &v.RecordedAt)
	}
	if err := row.Scan(dest...); err != nil {
		return v, err
	}
	e.Kind, e.Protection, e.Metadata.Lifecycle = harness.Kind(kind), harness.Protection(protection), harness.Lifecycle(lifecycle)
	e.UpdatedAt = e.UpdatedAt.UTC()
	if withRecorded {
		v.RecordedAt = v.RecordedAt.UTC()
	} else {
		v.RecordedAt = e.UpdatedAt
	}
	return v, nil
}

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func currentRow(r scanner) (HarnessVersion, error) { return scanHarnessVersion(r, false) }
func historyRow(r scanner) (HarnessVersion, error) { return scanHarnessVersion(r, true) }

// HarnessCurrent lists a scope's current entries by kind then id,
// tombstones included (Deleted set): a re-created entry continues after
// its tombstone's version.
func (s *Store) HarnessCurrent(ctx context.Context, q querier, key string) ([]HarnessVersion, error) {
	out, err := queryAll(ctx, q, currentRow, `select `+harnessEntryColumns+` from harness_entries
		where scope_key = $1 order by kind, id`, key)
	if err != nil {
		return nil, fmt.Errorf("read harness scope %s: %w", key, err)
	}
	return out, nil
}

// PutHarnessVersion writes a new version of an entry: the version row and
// the current row, inside tx (the scope locked). A version number stored
// already is an error: versions are never rewritten.
func (s *Store) PutHarnessVersion(ctx context.Context, tx *sql.Tx, v HarnessVersion) error {
	e := v.Entry
	lifecycle := e.Metadata.Lifecycle
	if lifecycle == "" {
		lifecycle = harness.Active
	}
	args := []any{v.ScopeKey, string(e.Kind), e.ID, e.Version, e.Content, e.Title, e.Description, string(e.Protection),
		e.Metadata.SourceSession, string(lifecycle), e.Metadata.Pinned, v.Deleted, v.RefinementID, utcMicro(e.UpdatedAt)}
	if _, err := tx.ExecContext(ctx, `insert into harness_entry_versions (`+harnessEntryColumns+`, recorded_at)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		append(args, utcMicro(v.RecordedAt))...); err != nil {
		return fmt.Errorf("store version %d of harness %s %s/%s: %w", e.Version, v.ScopeKey, e.Kind, e.ID, err)
	}
	_, err := tx.ExecContext(ctx, `insert into harness_entries (`+harnessEntryColumns+`)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		on conflict (scope_key, kind, id) do update set version = excluded.version, content = excluded.content,
		title = excluded.title, description = excluded.description, protection = excluded.protection,
		source_session = excluded.source_session, lifecycle = excluded.lifecycle, pinned = excluded.pinned,
		deleted = excluded.deleted, refinement_id = excluded.refinement_id, updated_at = excluded.updated_at`, args...)
	if err != nil {
		return fmt.Errorf("store harness %s %s/%s: %w", v.ScopeKey, e.Kind, e.ID, err)
	}
	return nil
}

// HarnessVersions lists every version of an entry, oldest first.
func (s *Store) HarnessVersions(ctx context.Context, q querier, key string, kind harness.Kind, id string) ([]HarnessVersion, error) {
	out, err := queryAll(ctx, q, historyRow, `select `+harnessEntryColumns+`, recorded_at from harness_entry_versions
		where scope_key = $1 and kind = $2 and id = $3 order by version`, key, string(kind), id)
	if err != nil {
		return nil, fmt.Errorf("read versions of harness %s %s/%s: %w", key, kind, id, err)
	}
	return out, nil
}

// HarnessVersionAt is the version of an entry in force at at: the latest
// recorded at or before it (ok false when none was; a tombstone is
// returned with Deleted set).
func (s *Store) HarnessVersionAt(ctx context.Context, q querier, key string, kind harness.Kind, id string, at time.Time) (HarnessVersion, bool, error) {
	out, err := queryAll(ctx, q, historyRow, `select `+harnessEntryColumns+`, recorded_at from harness_entry_versions
		where scope_key = $1 and kind = $2 and id = $3 and recorded_at <= $4 order by version desc limit 1`,
		key, string(kind), id, utcMicro(at))
	if err != nil {
		return HarnessVersion{}, false, fmt.Errorf("read harness %s %s/%s at %s: %w", key, kind, id, at.Format(time.RFC3339), err)
	}
	if len(out) == 0 {
		return HarnessVersion{}, false, nil
	}
	return out[0], true, nil
}

// HarnessKindsOf lists the kinds an id has (had) entries of in a scope,
// tombstones included.
func (s *Store) HarnessKindsOf(ctx context.Context, q querier, key, id string) ([]harness.Kind, error) {
	out, err := queryAll(ctx, q, func(r scanner) (harness.Kind, error) {
		var k string
		err := r.Scan(&k)
		return harness.Kind(k), err
	}, `select distinct kind from harness_entry_versions where scope_key = $1 and id = $2 order by kind`, key, id)
	if err != nil {
		return nil, fmt.Errorf("read kinds of harness %s %s: %w", key, id, err)
	}
	return out, nil
}

// HarnessRefinement is one stored refinement with its provenance.
type HarnessRefinement struct {
	// Refinement's Scope is left zero: ScopeKey says it.
	Refinement   harness.Refinement
	ScopeKey     string
	SessionID    string
	Source       string
	JobID        int64
	Automatic    bool
	RolledBackBy string
}

const harnessRefinementColumns = `id, scope_key, session_id, summary, rollback_of, applied_edits, committed_at, source,
	job_id, automatic, rolled_back_by`

// InsertHarnessRefinement stores a refinement; an id stored already is
// ErrHarnessRefinementExists and writes nothing (the transaction stays
// usable: the insert does nothing on conflict).
func (s *Store) InsertHarnessRefinement(ctx context.Context, tx *sql.Tx, r HarnessRefinement) error {
	edits := r.Refinement.Edits
	if edits == nil {
		edits = []harness.AppliedEdit{}
	}
	js, err := json.Marshal(edits)
	if err != nil {
		return fmt.Errorf("store harness refinement %s: %w", r.Refinement.ID, err)
	}
	applied, rejected := r.Refinement.Counts()
	res, err := tx.ExecContext(ctx, `insert into harness_refinements (`+harnessRefinementColumns+`,
		applied_count, rejected_count) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '', $11, $12)
		on conflict (id) do nothing`,
		r.Refinement.ID, r.ScopeKey, r.SessionID, r.Refinement.Summary, r.Refinement.RollbackOf, string(js),
		utcMicro(r.Refinement.CommittedAt), r.Source, r.JobID, r.Automatic, applied, rejected)
	if err != nil {
		return fmt.Errorf("store harness refinement %s: %w", r.Refinement.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("refinement %s: %w", r.Refinement.ID, ErrHarnessRefinementExists)
	}
	return nil
}

func scanHarnessRefinement(row scanner) (HarnessRefinement, error) {
	var r HarnessRefinement
	var edits string
	f := &r.Refinement
	if err := row.Scan(&f.ID, &r.ScopeKey, &r.SessionID, &f.Summary, &f.RollbackOf, &edits, &f.CommittedAt, &r.Source,
		&r.JobID, &r.Automatic, &r.RolledBackBy); err != nil {
		return r, err
	}
	f.CommittedAt = f.CommittedAt.UTC()
	if err := json.Unmarshal([]byte(edits), &f.Edits); err != nil {
		return r, fmt.Errorf("harness refinement %s: applied edits: %w", f.ID, err)
	}
	return r, nil
}

// GetHarnessRefinement reads one refinement, or an error wrapping
// ErrNotFound.
func (s *Store) GetHarnessRefinement(ctx context.Context, q querier, id string) (HarnessRefinement, error) {
	r, err := scanHarnessRefinement(q.QueryRowContext(ctx, `select `+harnessRefinementColumns+`
		from harness_refinements where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("refinement %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("read harness refinement %s: %w", id, err)
	}
	return r, nil
}

// ListHarnessRefinements lists the refinements of the given scopes (all
// when keys is empty), newest first, at most limit (default 50, at most
// 1000).
func (s *Store) ListHarnessRefinements(ctx context.Context, q querier, keys []string, limit int) ([]HarnessRefinement, error) {
	where, args := inList("scope_key", keys)
	args = append(args, clampLimit(limit))
	out, err := queryAll(ctx, q, scanHarnessRefinement, `select `+harnessRefinementColumns+` from harness_refinements
		where `+where+` order by committed_at desc, id desc limit $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list harness refinements: %w", err)
	}
	return out, nil
}

// HarnessRefinementLine is a refinement as the projection lists it: no
// applied edits, their counts.
type HarnessRefinementLine struct {
	ID, ScopeKey, Summary string
	Applied, Rejected     int
}

// RecentHarnessRefinements lists the newest limit refinements of the
// given scopes (all when keys is empty), newest first, reading only the
// columns the projection shows (it runs on every agent step).
func (s *Store) RecentHarnessRefinements(ctx context.Context, q querier, keys []string, limit int) ([]HarnessRefinementLine, error) {
	where, args := inList("scope_key", keys)
	args = append(args, clampLimit(limit))
	out, err := queryAll(ctx, q, func(r scanner) (HarnessRefinementLine, error) {
		var l HarnessRefinementLine
		err := r.Scan(&l.ID, &l.ScopeKey, &l.Summary, &l.Applied, &l.Rejected)
		return l, err
	}, `select id, scope_key, summary, applied_count, rejected_count from harness_refinements
		where `+where+` order by committed_at desc, id desc limit $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list recent harness refinements: %w", err)
	}
	return out, nil
}

// MarkHarnessRolledBack records that rollback by reversed refinement id;
// ok is false when it was rolled back already (by another rollback).
func (s *Store) MarkHarnessRolledBack(ctx context.Context, tx *sql.Tx, id, by string) (ok bool, err error) {
	res, err := tx.ExecContext(ctx, `update harness_refinements set rolled_back_by = $2 where id = $1 and rolled_back_by = ''`, id, by)
	if err != nil {
		return false, fmt.Errorf("mark harness refinement %s rolled back: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// HarnessReview is one review verdict.
type HarnessReview struct {
	ID           int64
	At           time.Time
	SessionID    string
	Workspace    string
	ScopeKey     string
	Trigger      harness.Trigger
	Turns        int
	Outcome      harness.Outcome
	Rationale    string
	RefinementID string
	Rejected     []harness.Rejected
	JobID        int64
	Route        harness.Route
}

const harnessReviewColumns = `id, at, session_id, workspace, scope_key, trigger, turns, outcome, rationale,
	refinement_id, rejected, job_id, route`

// InsertHarnessReview stores a review verdict and returns its id.
func (s *Store) InsertHarnessReview(ctx context.Context, tx *sql.Tx, r HarnessReview) (int64, error) {
	rejected := r.Rejected
	if rejected == nil {
		rejected = []harness.Rejected{}
	}
	js, err := json.Marshal(rejected)
	if err != nil {
		return 0, fmt.Errorf("store harness review: %w", err)
	}
	var id int64
	err = tx.QueryRowContext(ctx, `insert into harness_reviews (at, session_id, workspace, scope_key, trigger, turns,
		outcome, rationale, refinement_id, rejected, job_id, route) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		returning id`, utcMicro(r.At), r.SessionID, r.Workspace, r.ScopeKey, string(r.Trigger), r.Turns, string(r.Outcome),
		r.Rationale, r.RefinementID, string(js), r.JobID, string(r.Route)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store harness review of session %s: %w", r.SessionID, err)
	}
	return id, nil
}

func scanHarnessReview(row scanner) (HarnessReview, error) {
	var r HarnessReview
	var trigger, outcome, rejected, route string
	if err := row.Scan(&r.ID, &r.At, &r.SessionID, &r.Workspace, &r.ScopeKey, &trigger, &r.Turns, &outcome, &r.Rationale,
		&r.RefinementID, &rejected, &r.JobID, &route); err != nil {
		return r, err
	}
	r.At, r.Trigger, r.Outcome, r.Route = r.At.UTC(), harness.Trigger(trigger), harness.Outcome(outcome), harness.Route(route)
	if err := json.Unmarshal([]byte(rejected), &r.Rejected); err != nil {
		return r, fmt.Errorf("harness review %d: rejected edits: %w", r.ID, err)
	}
	return r, nil
}

// ListHarnessReviews lists review verdicts, newest first: a session's
// ("" for all), a job's (0 for any), at most limit (default 50, at most
// 1000).
func (s *Store) ListHarnessReviews(ctx context.Context, q querier, session string, jobID int64, limit int) ([]HarnessReview, error) {
	where, args := []string{"1 = 1"}, []any{}
	if session != "" {
		args = append(args, session)
		where = append(where, "session_id = $"+strconv.Itoa(len(args)))
	}
	if jobID != 0 {
		args = append(args, jobID)
		where = append(where, "job_id = $"+strconv.Itoa(len(args)))
	}
	args = append(args, clampLimit(limit))
	out, err := queryAll(ctx, q, scanHarnessReview, `select `+harnessReviewColumns+` from harness_reviews where `+
		strings.Join(where, " and ")+` order by at desc, id desc limit $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list harness reviews: %w", err)
	}
	return out, nil
}

// HarnessInjection counts how often one entry reached one session's
// context.
type HarnessInjection struct {
	ScopeKey       string
	Kind           harness.Kind
	ID             string
	SessionID      string
	Count          int
	LastInjectedAt time.Time
}

// AddHarnessInjection counts one injection of an entry into a session.
func (s *Store) AddHarnessInjection(ctx context.Context, q querier, in HarnessInjection) error {
	_, err := q.ExecContext(ctx, `insert into harness_injections (scope_key, kind, id, session_id, count, last_injected_at)
		values ($1, $2, $3, $4, 1, $5) on conflict (scope_key, kind, id, session_id) do update
		set count = harness_injections.count + 1, last_injected_at = excluded.last_injected_at`,
		in.ScopeKey, string(in.Kind), in.ID, in.SessionID, utcMicro(in.LastInjectedAt))
	if err != nil {
		return fmt.Errorf("count harness injection of %s %s/%s: %w", in.ScopeKey, in.Kind, in.ID, err)
	}
	return nil
}

// HarnessInjections lists the injection counts of the given scopes (every
// scope's when keys is empty), per entry and session.
func (s *Store) HarnessInjections(ctx context.Context, q querier, keys []string) ([]HarnessInjection, error) {
	where, args := inList("scope_key", keys)
	out, err := queryAll(ctx, q, func(r scanner) (HarnessInjection, error) {
		var in HarnessInjection
		var kind string
		err := r.Scan(&in.ScopeKey, &kind, &in.ID, &in.SessionID, &in.Count, &in.LastInjectedAt)
		in.Kind, in.LastInjectedAt = harness.Kind(kind), in.LastInjectedAt.UTC()
		return in, err
	}, `select scope_key, kind, id, session_id, count, last_injected_at from harness_injections where `+where+`
		order by scope_key, kind, id, session_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list harness injections: %w", err)
	}
	return out, nil
}

// HarnessInjectionTotal is one entry's injections summed over sessions.
type HarnessInjectionTotal struct {
	ScopeKey       string
	Kind           harness.Kind
	ID             string
	Count          int
	LastInjectedAt time.Time
}

// HarnessInjectionTotals sums the injection counts of the given scopes'
// entries (every scope's when keys is empty) over every session, with the
// latest injection, grouped in SQL; kind and id, when not "", narrow it to
// one entry.
func (s *Store) HarnessInjectionTotals(ctx context.Context, q querier, keys []string, kind harness.Kind, id string) ([]HarnessInjectionTotal, error) {
	where, args := inList("scope_key", keys)
	if kind != "" {
		args = append(args, string(kind))
		where += " and kind = $" + strconv.Itoa(len(args))
	}
	if id != "" {
		args = append(args, id)
		where += " and id = $" + strconv.Itoa(len(args))
	}
	out, err := queryAll(ctx, q, func(r scanner) (HarnessInjectionTotal, error) {
		var in HarnessInjectionTotal
		var kind string
		var last any
		err := r.Scan(&in.ScopeKey, &kind, &in.ID, &in.Count, &last)
		if err != nil {
			return in, err
		}
		in.Kind = harness.Kind(kind)
		in.LastInjectedAt, err = aggregateTime(last)
		return in, err
	}, `select scope_key, kind, id, sum(count), max(last_injected_at) from harness_injections where `+where+`
		group by scope_key, kind, id order by scope_key, kind, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sum harness injections: %w", err)
	}
	return out, nil
}

// aggregateTime reads a max() of a timestamp column: a time on Postgres;
// on SQLite, which loses the column's type in an aggregate, the stored
// text.
func aggregateTime(v any) (time.Time, error) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), nil
	case string:
		return parseSQLiteTime(t)
	case []byte:
		return parseSQLiteTime(string(t))
	case nil:
		return time.Time{}, nil
	}
	return time.Time{}, fmt.Errorf("timestamp aggregate of type %T", v)
}

// inList is "col in ($1, ...)" over vals, or "1 = 1" when there are none.
func inList(col string, vals []string) (string, []any) {
	if len(vals) == 0 {
		return "1 = 1", nil
	}
	ph, args := make([]string, len(vals)), make([]any, len(vals))
	for i, v := range vals {
		ph[i], args[i] = "$"+strconv.Itoa(i+1), v
	}
	return col + " in (" + strings.Join(ph, ", ") + ")", args
}

func clampLimit(limit int) int {
	if limit <= 0 {
		return 50
	}
	return min(limit, 1000)
}

// SessionEventsOfType lists a session's latest limit events of one type
// (defaults to 50, at most 1000), oldest first.
func (s *Store) SessionEventsOfType(ctx context.Context, q querier, sessionID, typ string, limit int) ([]Event, error) {
	out, err := queryEvents(ctx, q, `select `+eventColumns+` from events where session_id = $1 and type = $2
		order by seq desc, time desc, id desc limit $3`, sessionID, typ, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list %s events of session %s: %w", typ, sessionID, err)
	}
	slices.Reverse(out)
	return out, nil
}

// parseSQLiteTime parses a timestamp as the SQLite driver stores it
// (_time_format=sqlite), and the other forms it reads.
func parseSQLiteTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", "2006-01-02T15:04:05.999999999-07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q: not a form the SQLite store writes", s)
}
