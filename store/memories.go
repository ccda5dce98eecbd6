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
)

// Memory is a row of the memories table: learn/memory.Memory as stored
// (store does not import learn; the memories package converts), plus the
// normalized text duplicates are found by. Zero times and ids are NULL or 0.
type Memory struct {
	ID         int64
	Workspace  string
	Kind       string
	Text       string
	TextNorm   string
	Importance int
	Src        string
	Origin     string
	Uses       int
	SessionID  string
	JobID      int64
	RecordedAt time.Time
	VerifiedAt time.Time
	// VerifiedBy is who made the last verification (an Actor, or
	// VerifiedByMerge); '' when never verified or verified before mull
	// recorded who verifies.
	VerifiedBy string
	TTLDays    int
	InvalidAt  time.Time
	// InvalidReason and SupersededBy say why InvalidAt was set.
	InvalidReason    string
	SupersededBy     int64
	Quarantined      bool
	QuarantineReason string
	PromotedFrom     string

	// The lesson model (seed 000). Scope is a structured lesson's scope
	// ('' for other kinds) and ScopeSession the session it names; Lesson is
	// its fields as JSON ('' none); TaskID the task whose reflection wrote
	// it; State its lifecycle ("" is stored as active); PromotedFromID the
	// lesson it was promoted from.
	Scope          string
	ScopeSession   string
	Lesson         string
	TaskID         string
	State          string
	PromotedFromID int64
}

// The memory states (learn/memory.State). Every state but StateActive sets
// invalid_at.
const (
	StateActive     = "active"
	StateSuperseded = "superseded"
	StateDeprecated = "deprecated"
	StateDeleted    = "deleted"
)

const memoryColumns = `id, workspace, kind, text, text_norm, importance, src, origin, uses, session_id, job_id,
	recorded_at, verified_at, ttl_days, invalid_at, invalid_reason, superseded_by, quarantined, quarantine_reason, promoted_from,
	scope, scope_session, lesson, task_id, state, promoted_from_id, verified_by`

// MemoryFilter narrows ListMemories.
type MemoryFilter struct {
	// Workspaces are the libraries to read ("" is the global one); nil
	// reads all of them.
	Workspaces []string
	// Kind, when set, keeps one kind.
	Kind string
	// All includes invalidated and quarantined memories; otherwise only the
	// live ones (what may be served) are listed.
	All bool
	// AfterID keeps memories with a larger id.
	AfterID int64
	// UpTo, when positive, keeps memories with an id at most this.
	UpTo int64
	// Limit caps the rows; 0 means no cap.
	Limit int
	// InForceAt, when set, keeps the memories in force then: recorded by
	// it, not invalidated until after it, and not quarantined (with All,
	// whatever their state now).
	InForceAt time.Time
	// Oldest lists by id ascending instead of newest first.
	Oldest bool
}

// InsertMemory stores a new memory and returns its id. RecordedAt must be
// set; the store never picks a memory's time on its own. A new memory is
// active: a later state is SetMemoryState's, which stamps invalid_at with it.
// A copy carries its verification along: VerifiedBy is refused unless it
// is empty, an actor or VerifiedByMerge, and with a VerifiedAt.
func (s *Store) InsertMemory(ctx context.Context, q querier, m Memory) (int64, error) {
	if m.State != "" && m.State != StateActive {
		return 0, fmt.Errorf("insert memory: state %q: a new memory is stored active; SetMemoryState changes it", m.State)
	}
	if err := checkLessonJSON(m.Lesson); err != nil {
		return 0, fmt.Errorf("insert memory: %w", err)
	}
	if err := checkVerifier(m); err != nil {
		return 0, fmt.Errorf("insert memory: %w", err)
	}
	var id int64
	err := q.QueryRowContext(ctx, `insert into memories (workspace, kind, text, text_norm, importance, src, origin, uses,
		session_id, job_id, recorded_at, verified_at, ttl_days, quarantined, quarantine_reason, promoted_from,
		scope, scope_session, lesson, task_id, state, promoted_from_id, verified_by)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23) returning id`,
		m.Workspace, m.Kind, m.Text, m.TextNorm, m.Importance, m.Src, m.Origin, m.Uses, m.SessionID, m.JobID,
		utcMicro(m.RecordedAt), nullTime(m.VerifiedAt), m.TTLDays, m.Quarantined, m.QuarantineReason, m.PromotedFrom,
		m.Scope, m.ScopeSession, m.Lesson, m.TaskID, StateActive, m.PromotedFromID, m.VerifiedBy).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert memory: %w", err)
	}
	return id, nil
}

// GetMemory reads one memory, or ErrNotFound.
func (s *Store) GetMemory(ctx context.Context, q querier, id int64) (Memory, error) {
	m, err := scanMemory(q.QueryRowContext(ctx, `select `+memoryColumns+` from memories where id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("memory %d: %w", id, ErrNotFound)
	}
	return m, err
}

// GetMemoryForUpdate is GetMemory inside a writer's transaction, holding
// the row until tx ends (select … for update on Postgres; SQLite's single
// writer already serializes), so what the writer checks stays true until
// it commits.
func (s *Store) GetMemoryForUpdate(ctx context.Context, tx *sql.Tx, id int64) (Memory, error) {
	lock := ""
	if s.Dialect == Postgres {
		lock = " for update"
	}
	m, err := scanMemory(tx.QueryRowContext(ctx, `select `+memoryColumns+` from memories where id = $1`+lock, id))
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("memory %d: %w", id, ErrNotFound)
	}
	return m, err
}

// ListMemories lists memories, newest first unless f.Oldest.
func (s *Store) ListMemories(ctx context.Context, q querier, f MemoryFilter) ([]Memory, error) {
	where, args := memoryWhere(f.Workspaces, !f.All)
	if f.Kind != "" {
		args = append(args, f.Kind)
		where += " and kind = $" + strconv.Itoa(len(args))
	}
	if f.AfterID > 0 {
		args = append(args, f.AfterID)
		where += " and id > $" + strconv.Itoa(len(args))
	}
	if f.UpTo > 0 {
		args = append(args, f.UpTo)
		where += " and id <= $" + strconv.Itoa(len(args))
	}
	if !f.InForceAt.IsZero() {
		args = append(args, utcMicro(f.InForceAt))
		n := "$" + strconv.Itoa(len(args))
		where += " and recorded_at <= " + n + " and (invalid_at is null or invalid_at > " + n + ") and not quarantined"
	}
	order := " order by recorded_at desc, id desc"
	if f.Oldest {
		order = " order by id"
	}
	if f.Limit > 0 {
		args = append(args, f.Limit)
		order += " limit $" + strconv.Itoa(len(args))
	}
	return s.queryMemories(ctx, q, `select `+memoryColumns+` from memories where `+where+order, args...)
}

// FindMemoryByNorm finds the live memory of a library with this normalized
// text, if there is one: a write of the same thing again is a duplicate.
func (s *Store) FindMemoryByNorm(ctx context.Context, q querier, workspace, norm string) (Memory, bool, error) {
	m, err := scanMemory(q.QueryRowContext(ctx, `select `+memoryColumns+` from memories
		where workspace = $1 and text_norm = $2 and `+liveCond+` order by id limit 1`, workspace, norm))
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	return m, err == nil, err
}

// InvalidateMemory marks a memory invalid at at, unless it already is: its
// first invalidation stands, and nothing is deleted. Its state becomes
// superseded when supersededBy names its replacement, deleted (a forget)
// otherwise. ok reports whether this call set it.
func (s *Store) InvalidateMemory(ctx context.Context, q querier, id int64, at time.Time, reason string, supersededBy int64) (ok bool, err error) {
	state := StateDeleted
	if supersededBy > 0 {
		state = StateSuperseded
	}
	res, err := q.ExecContext(ctx, `update memories set invalid_at = $2, invalid_reason = $3, superseded_by = $4, state = $5
		where id = $1 and invalid_at is null`, id, utcMicro(at), reason, supersededBy, state)
	if err != nil {
		return false, fmt.Errorf("invalidate memory %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// libraryLockClass is the first key of the Postgres advisory locks
// LockLibrary takes; the second is the library's hash. Two-key locks never
// meet the one-key lock migrations take.
const libraryLockClass = 0x6d656d // "mem"

// LockLibrary holds a library's write lock ("" is the global one) until tx
// ends, so writers that plan against the library's rows and then write (the
// retro jobs) take turns and each plans on what the other wrote: on
// Postgres a transaction-level advisory lock keyed by the library (two
// libraries whose names hash alike only wait for each other). SQLite needs
// none: its transactions are immediate, one writer at a time.
func (s *Store) LockLibrary(ctx context.Context, tx *sql.Tx, workspace string) error {
	if s.Dialect != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `select pg_advisory_xact_lock($1, hashtext($2))`, libraryLockClass, workspace); err != nil {
		return fmt.Errorf("lock library %q: %w", workspace, err)
	}
	return nil
}

// LockLibraries locks several libraries in the one order every writer
// takes them: the workspaces sorted, then the global library "" (the order
// a digest publication takes its workspace and global in), so two writers
// of overlapping libraries never wait on each other in a cycle.
func (s *Store) LockLibraries(ctx context.Context, tx *sql.Tx, workspaces ...string) error {
	var order []string
	global := false
	for _, w := range slices.Compact(slices.Sorted(slices.Values(workspaces))) {
		if w == "" {
			global = true
			continue
		}
		order = append(order, w)
	}
	if global {
		order = append(order, "")
	}
	for _, w := range order {
		if err := s.LockLibrary(ctx, tx, w); err != nil {
			return err
		}
	}
	return nil
}

// LockLibraryShared holds a library's lock in shared mode until tx ends:
// it waits for a writer holding LockLibrary to commit, and lets other
// readers through. A digest publication takes it so that it renders after
// an in-flight retro commits rather than before, with a publication time
// after the retro's stamps (which would hide its handoff until the next
// publication). SQLite needs none.
func (s *Store) LockLibraryShared(ctx context.Context, tx *sql.Tx, workspace string) error {
	if s.Dialect != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `select pg_advisory_xact_lock_shared($1, hashtext($2))`, libraryLockClass, workspace); err != nil {
		return fmt.Errorf("lock library %q shared: %w", workspace, err)
	}
	return nil
}

// MemoryChanges is what happened in some libraries since a digest was
// published.
type MemoryChanges struct {
	// New counts live memories with an id above the watermark; Oldest is
	// the earliest recorded_at among them (zero when New is 0).
	New    int
	Oldest time.Time
	// Invalidated counts memories at or below the watermark invalidated
	// since the digest was published (at the same microsecond too: counting
	// one twice only hastens the next publication; missing one would keep a
	// forgotten memory in the digest).
	Invalidated int
	// Lessons and LessonsInvalidated are the part of New and Invalidated
	// that are of the structured lesson kinds (lesson, directive,
	// failure): those batch by lessons.commit_every, the rest by
	// digest.watermark_items.
	Lessons            int
	LessonsInvalidated int
}

// MemoryChangesSince counts the changes to some libraries since a digest
// published at publishedAt with watermark id wm.
func (s *Store) MemoryChangesSince(ctx context.Context, q querier, workspaces []string, wm int64, publishedAt time.Time) (MemoryChanges, error) {
	var c MemoryChanges
	where, args := memoryWhere(workspaces, false)
	n := len(args)
	args = append(args, wm, utcMicro(publishedAt))
	err := q.QueryRowContext(ctx, fmt.Sprintf(`select
		coalesce(sum(case when id > $%[1]d and invalid_at is null then 1 else 0 end), 0),
		coalesce(sum(case when id <= $%[1]d and invalid_at >= $%[2]d then 1 else 0 end), 0),
		coalesce(sum(case when id > $%[1]d and invalid_at is null and kind in %[4]s then 1 else 0 end), 0),
		coalesce(sum(case when id <= $%[1]d and invalid_at >= $%[2]d and kind in %[4]s then 1 else 0 end), 0)
		from memories where %[3]s and not quarantined and (id > $%[1]d or invalid_at >= $%[2]d)`, n+1, n+2, where, lessonKindList),
		args...).Scan(&c.New, &c.Invalidated, &c.Lessons, &c.LessonsInvalidated)
	if err != nil || c.New == 0 {
		return c, err
	}
	where, args = memoryWhere(workspaces, true)
	args = append(args, wm)
	err = q.QueryRowContext(ctx, `select recorded_at from memories where `+where+` and id > $`+strconv.Itoa(len(args))+
		` order by recorded_at, id limit 1`, args...).Scan(&c.Oldest)
	c.Oldest = c.Oldest.UTC()
	return c, err
}

// MaxMemoryID is the largest memory id so far (0 when there are none): a
// digest rendered now holds everything up to it.
func (s *Store) MaxMemoryID(ctx context.Context, q querier) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `select coalesce(max(id), 0) from memories`).Scan(&id)
	return id, err
}

// DigestState is the digest published for one workspace (or, under scope
// global, for all: key ""), and its watermark.
type DigestState struct {
	Workspace string
	Scope     string
	// WatermarkID: every memory up to it that was live at PublishedAt is in
	// Text; newer ones are notices.
	WatermarkID int64
	PublishedAt time.Time
	Text        string
	ETag        string
	Dropped     []string
	// LessonIDs are the lessons Text shows (digest.Output.Lessons), never
	// nil when LessonsKnown. LessonsKnown is false on a row published
	// before mull recorded them (migration 021): its lessons are unknown,
	// and a reader falls back to every lesson in force at WatermarkID.
	// PutDigestState always records them.
	LessonIDs    []int64
	LessonsKnown bool
}

// GetDigestState reads a workspace's published digest; ok is false when
// none was published yet.
func (s *Store) GetDigestState(ctx context.Context, q querier, workspace string) (d DigestState, ok bool, err error) {
	var dropped string
	var lessons sql.NullString
	err = q.QueryRowContext(ctx, `select workspace, scope, watermark_id, published_at, text, etag, dropped, lesson_ids
		from digest_state where workspace = $1`, workspace).Scan(&d.Workspace, &d.Scope, &d.WatermarkID, &d.PublishedAt, &d.Text, &d.ETag, &dropped, &lessons)
	if errors.Is(err, sql.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("read digest state of %q: %w", workspace, err)
	}
	d.PublishedAt = d.PublishedAt.UTC()
	if err := json.Unmarshal([]byte(dropped), &d.Dropped); err != nil {
		return d, false, fmt.Errorf("digest state of %q: bad dropped %q: %w", workspace, dropped, err)
	}
	if lessons.Valid {
		if err := json.Unmarshal([]byte(lessons.String), &d.LessonIDs); err != nil {
			return d, false, fmt.Errorf("digest state of %q: bad lesson_ids %q: %w", workspace, lessons.String, err)
		}
		if d.LessonIDs == nil {
			d.LessonIDs = []int64{}
		}
		d.LessonsKnown = true
	}
	return d, true, nil
}

// PutDigestState publishes a workspace's digest, replacing the last one.
func (s *Store) PutDigestState(ctx context.Context, q querier, d DigestState) error {
	dropped, _ := json.Marshal(nonNilStrings(d.Dropped)) // a []string always marshals
	ids := d.LessonIDs
	if ids == nil {
		ids = []int64{}
	}
	lessons, _ := json.Marshal(ids) // an []int64 always marshals
	_, err := q.ExecContext(ctx, `insert into digest_state (workspace, scope, watermark_id, published_at, text, etag, dropped, lesson_ids)
		values ($1, $2, $3, $4, $5, $6, $7, $8) on conflict (workspace) do update set scope = excluded.scope,
		watermark_id = excluded.watermark_id, published_at = excluded.published_at, text = excluded.text,
		etag = excluded.etag, dropped = excluded.dropped, lesson_ids = excluded.lesson_ids`,
		d.Workspace, d.Scope, d.WatermarkID, utcMicro(d.PublishedAt), d.Text, d.ETag, string(dropped), string(lessons))
	if err != nil {
		return fmt.Errorf("publish digest of %q: %w", d.Workspace, err)
	}
	return nil
}

// memoryWhere selects the libraries (nil: all) and, with live, only
// memories that may be served. It returns the condition and its arguments,
// numbered from $1.
func memoryWhere(workspaces []string, live bool) (string, []any) {
	cond := "1 = 1"
	var args []any
	if workspaces != nil {
		ph := make([]string, len(workspaces))
		for i, w := range workspaces {
			args = append(args, w)
			ph[i] = "$" + strconv.Itoa(i+1)
		}
		cond = "workspace in (" + strings.Join(ph, ", ") + ")"
		if len(workspaces) == 0 {
			cond = "1 = 0"
		}
	}
	if live {
		cond += " and " + liveCond
	}
	return cond, args
}

// liveCond keeps the memories that may be served: active, not invalidated,
// not quarantined.
const liveCond = "state = 'active' and invalid_at is null and not quarantined"

func (s *Store) queryMemories(ctx context.Context, q querier, query string, args ...any) ([]Memory, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list memories: %w", err)
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func scanMemory(row scanner) (Memory, error) {
	var m Memory
	var verified, invalid sql.NullTime
	err := row.Scan(&m.ID, &m.Workspace, &m.Kind, &m.Text, &m.TextNorm, &m.Importance, &m.Src, &m.Origin, &m.Uses,
		&m.SessionID, &m.JobID, &m.RecordedAt, &verified, &m.TTLDays, &invalid, &m.InvalidReason, &m.SupersededBy,
		&m.Quarantined, &m.QuarantineReason, &m.PromotedFrom,
		&m.Scope, &m.ScopeSession, &m.Lesson, &m.TaskID, &m.State, &m.PromotedFromID, &m.VerifiedBy)
	if err != nil {
		return m, err
	}
	m.RecordedAt = m.RecordedAt.UTC()
	if verified.Valid {
		m.VerifiedAt = verified.Time.UTC()
	}
	if invalid.Valid {
		m.InvalidAt = invalid.Time.UTC()
	}
	return m, nil
}

func nullTime(t time.Time) sql.NullTime {
	if t.IsZero() {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: utcMicro(t), Valid: true}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// checkLessonJSON refuses a lesson that is neither ” nor a JSON object, so
// what reads it back never meets a corrupt row.
func checkLessonJSON(lesson string) error {
	if lesson == "" {
		return nil
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(lesson), &fields); err != nil || fields == nil {
		return fmt.Errorf("lesson %q is not a JSON object of lesson fields", cutForError(lesson))
	}
	return nil
}

func cutForError(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}
