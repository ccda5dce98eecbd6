package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/harness"
)

// The benchmark's store (seed 004's benchmark, migration 024): cases,
// snapshots, runs and cells. What must not change once written is refused
// by the schema's triggers as well as here: a frozen case (any update or
// delete), a snapshot, a recorded cell, a decided run. The types are
// learn/bench's, imported for their data shapes only.

// Errors of the benchmark's writes.
var (
	// ErrBenchCaseExists: a case id is taken.
	ErrBenchCaseExists = errors.New("bench case exists")
	// ErrBenchSnapshotExists: a snapshot id is taken.
	ErrBenchSnapshotExists = errors.New("bench snapshot exists")
)

// DefaultBenchSet is the set a case without one belongs to.
const DefaultBenchSet = "default"

const benchCaseColumns = `id, set_name, title, statement, rubric, capability, state, case_hash, created_at, frozen_at`

func scanBenchCase(row scanner) (bench.Case, error) {
	var c bench.Case
	var state string
	var frozen sql.NullTime
	if err := row.Scan(&c.ID, &c.Set, &c.Title, &c.Statement, &c.Rubric, &c.Capability, &state, &c.Hash,
		&c.CreatedAt, &frozen); err != nil {
		return c, err
	}
	c.State, c.CreatedAt, c.FrozenAt = bench.CaseState(state), c.CreatedAt.UTC(), utcPtr(frozen)
	return c, nil
}

// InsertBenchCase stores a draft case; a taken id is ErrBenchCaseExists
// and writes nothing.
func (s *Store) InsertBenchCase(ctx context.Context, q querier, c bench.Case) error {
	if c.Set == "" {
		c.Set = DefaultBenchSet
	}
	res, err := q.ExecContext(ctx, `insert into bench_cases (id, set_name, title, statement, rubric, capability, state,
		created_at) values ($1, $2, $3, $4, $5, $6, 'draft', $7) on conflict (id) do nothing`,
		c.ID, c.Set, c.Title, c.Statement, c.Rubric, c.Capability, utcMicro(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("store bench case %s: %w", c.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("bench case %s: %w", c.ID, ErrBenchCaseExists)
	}
	return nil
}

// UpdateBenchDraft rewrites a draft case's set and texts; ok is false when
// no draft has that id (missing, or frozen).
func (s *Store) UpdateBenchDraft(ctx context.Context, q querier, c bench.Case) (ok bool, err error) {
	if c.Set == "" {
		c.Set = DefaultBenchSet
	}
	res, err := q.ExecContext(ctx, `update bench_cases set set_name = $2, title = $3, statement = $4, rubric = $5,
		capability = $6 where id = $1 and state = 'draft'`, c.ID, c.Set, c.Title, c.Statement, c.Rubric, c.Capability)
	if err != nil {
		return false, fmt.Errorf("update bench case %s: %w", c.ID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// FreezeBenchCase freezes a draft case with its material hash; ok is false
// when no draft has that id.
func (s *Store) FreezeBenchCase(ctx context.Context, q querier, id, hash string, at time.Time) (ok bool, err error) {
	res, err := q.ExecContext(ctx, `update bench_cases set state = 'frozen', case_hash = $2, frozen_at = $3
		where id = $1 and state = 'draft'`, id, hash, utcMicro(at))
	if err != nil {
		return false, fmt.Errorf("freeze bench case %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// GetBenchCase reads one case, or an error wrapping ErrNotFound.
func (s *Store) GetBenchCase(ctx context.Context, q querier, id string) (bench.Case, error) {
	c, err := scanBenchCase(q.QueryRowContext(ctx, `select `+benchCaseColumns+` from bench_cases where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("bench case %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("read bench case %s: %w", id, err)
	}
	return c, nil
}

// ListBenchCases lists cases in the order they were added (created_at,
// then id), the seed's order: a run's cells, and so its decision's
// feedback, follow it. set and state ("" for any) narrow it.
func (s *Store) ListBenchCases(ctx context.Context, q querier, set string, state bench.CaseState) ([]bench.Case, error) {
	where, args := []string{"1 = 1"}, []any{}
	if set != "" {
		args = append(args, set)
		where = append(where, "set_name = $"+strconv.Itoa(len(args)))
	}
	if state != "" {
		args = append(args, string(state))
		where = append(where, "state = $"+strconv.Itoa(len(args)))
	}
	out, err := queryAll(ctx, q, scanBenchCase, `select `+benchCaseColumns+` from bench_cases where `+
		strings.Join(where, " and ")+` order by created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list bench cases: %w", err)
	}
	return out, nil
}

// snapshotBody is what a snapshot holds, stored as one JSON text. No
// field is omitted when empty, so a snapshot reads back exactly as it was
// hashed (an empty map stays empty, not nil).
type snapshotBody struct {
	Entries harness.State `json:"entries"`
	History []string      `json:"history"`
	Digest  string        `json:"digest"`
}

const benchSnapshotColumns = `id, kind, session, workspace, state_hash, refinement_id, reference, captured_at`

func scanBenchSnapshot(row scanner, withBody bool) (bench.Snapshot, error) {
	var sn bench.Snapshot
	var kind, body string
	dest := []any{&sn.ID, &kind, &sn.Session, &sn.Workspace, &sn.StateHash, &sn.RefinementID, &sn.Reference, &sn.CapturedAt}
	if withBody {
		dest = append(dest, &body)
	}
	if err := row.Scan(dest...); err != nil {
		return sn, err
	}
	sn.Kind, sn.CapturedAt = bench.SnapshotKind(kind), sn.CapturedAt.UTC()
	if withBody {
		var b snapshotBody
		if err := json.Unmarshal([]byte(body), &b); err != nil {
			return sn, fmt.Errorf("bench snapshot %s: body: %w", sn.ID, err)
		}
		sn.Entries, sn.History, sn.Digest = b.Entries, b.History, b.Digest
	}
	return sn, nil
}

// InsertBenchSnapshot stores a snapshot (written once); a taken id is
// ErrBenchSnapshotExists and writes nothing.
func (s *Store) InsertBenchSnapshot(ctx context.Context, q querier, sn bench.Snapshot) error {
	body, err := json.Marshal(snapshotBody{Entries: sn.Entries, History: sn.History, Digest: sn.Digest})
	if err != nil {
		return fmt.Errorf("store bench snapshot %s: %w", sn.ID, err)
	}
	res, err := q.ExecContext(ctx, `insert into bench_snapshots (id, kind, session, workspace, body, state_hash,
		refinement_id, reference, captured_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9) on conflict (id) do nothing`,
		sn.ID, string(sn.Kind), sn.Session, sn.Workspace, string(body), sn.StateHash, sn.RefinementID, sn.Reference,
		utcMicro(sn.CapturedAt))
	if err != nil {
		return fmt.Errorf("store bench snapshot %s: %w", sn.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("bench snapshot %s: %w", sn.ID, ErrBenchSnapshotExists)
	}
	return nil
}

// GetBenchSnapshot reads one snapshot with its body, or an error wrapping
// ErrNotFound.
func (s *Store) GetBenchSnapshot(ctx context.Context, q querier, id string) (bench.Snapshot, error) {
	sn, err := scanBenchSnapshot(q.QueryRowContext(ctx, `select `+benchSnapshotColumns+`, body from bench_snapshots
		where id = $1`, id), true)
	if errors.Is(err, sql.ErrNoRows) {
		return sn, fmt.Errorf("bench snapshot %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return sn, fmt.Errorf("read bench snapshot %s: %w", id, err)
	}
	return sn, nil
}

// ListBenchSnapshots lists snapshots newest first, at most limit (default
// 50, at most 1000), without their bodies (entries, history, digest),
// which can be large.
func (s *Store) ListBenchSnapshots(ctx context.Context, q querier, limit int) ([]bench.Snapshot, error) {
	out, err := queryAll(ctx, q, func(r scanner) (bench.Snapshot, error) { return scanBenchSnapshot(r, false) },
		`select `+benchSnapshotColumns+` from bench_snapshots order by captured_at desc, id desc limit $1`, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list bench snapshots: %w", err)
	}
	return out, nil
}

// HarnessCommit is one refinement's place in its scope's history.
type HarnessCommit struct {
	ID          string
	ScopeKey    string
	CommittedAt time.Time
	// Seq orders commits: applies to one scope are serialized, so within
	// a scope it is commit order.
	Seq int64
}

// HarnessCommits lists the refinements committed to the given scopes, in
// commit order: a benchmark snapshot's history, and what was committed to
// its stores after it was captured. committed_at alone can tie (one clock
// tick, or a test's clock), so the order is the commit sequence.
func (s *Store) HarnessCommits(ctx context.Context, q querier, keys []string) ([]HarnessCommit, error) {
	seq := "seq"
	if s.Dialect == SQLite {
		seq = "rowid"
	}
	where, args := inList("scope_key", keys)
	out, err := queryAll(ctx, q, func(r scanner) (HarnessCommit, error) {
		var c HarnessCommit
		err := r.Scan(&c.ID, &c.ScopeKey, &c.CommittedAt, &c.Seq)
		c.CommittedAt = c.CommittedAt.UTC()
		return c, err
	}, `select id, scope_key, committed_at, `+seq+` from harness_refinements where `+where+` order by `+seq, args...)
	if err != nil {
		return nil, fmt.Errorf("list harness commits: %w", err)
	}
	return out, nil
}
