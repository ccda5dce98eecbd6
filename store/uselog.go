package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The use log: one row per step of a running total (a memory's uses, a
// playbook's uses, successes and fails), written in the transaction that
// moves the total, so that the panel can list the rows behind a number.
// Totals counted before the log existed (or carried into a memory when it
// was written: a move, a merge, an import) have no rows; readers say so.

// The causes of a memory use (MemoryUse.Cause).
const (
	// UseSearch: a search (the agent's, through the API) returned it.
	UseSearch = "search"
	// UseWrite: a write of the same text was folded into it (a duplicate).
	UseWrite = "write"
	// UseMove: a memory moved to its library repeated it.
	UseMove = "move"
	// UseRetro: a retro named it as repeated by the session.
	UseRetro = "retro"
	// UseReflection: a task's reflection repeated it (or wrote it again).
	UseReflection = "reflection"
)

// MemoryUse is one row of the use log of a memory: what used it, when,
// from which workspace, and the job and session when there is one.
type MemoryUse struct {
	ID        int64
	MemoryID  int64
	At        time.Time
	Cause     string
	Workspace string
	JobID     int64
	SessionID string
	// Origin is the writer's origin (memory.Origin) of a UseWrite.
	Origin string
}

// BumpUses gives each memory of ids one more use, caused by use (its
// MemoryID is ignored; a zero At is the store's now), and logs one row per
// memory bumped, in tx: the total and its rows move together. Ids of no
// memory change nothing; an id given twice counts once.
func (s *Store) BumpUses(ctx context.Context, tx *sql.Tx, use MemoryUse, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	if use.Cause == "" {
		return fmt.Errorf("bump memory uses: no cause: say what used the memories (store.Use*)")
	}
	if use.At.IsZero() {
		use.At = s.Now()
	}
	in, idArgs := idList(ids, 0)
	if _, err := tx.ExecContext(ctx, `update memories set uses = uses + 1 where id in (`+in+`)`, idArgs...); err != nil {
		return fmt.Errorf("bump memory uses: %w", err)
	}
	args := append([]any{utcMicro(use.At), use.Cause, use.Workspace, use.JobID, use.SessionID, use.Origin}, idArgs...)
	in, _ = idList(ids, 6)
	if _, err := tx.ExecContext(ctx, `insert into memory_uses (memory_id, at, cause, workspace, job_id, session_id, origin)
		select id, $1, $2, $3, $4, $5, $6 from memories where id in (`+in+`) order by id`, args...); err != nil {
		return fmt.Errorf("log memory uses: %w", err)
	}
	return nil
}

// MemoryUseFilter narrows MemoryUses: one memory's, or one job's.
type MemoryUseFilter struct {
	MemoryID int64
	JobID    int64
	// Limit caps the rows (0: no cap); Offset skips the newest.
	Limit, Offset int
}

const memoryUseColumns = `id, memory_id, at, cause, workspace, job_id, session_id, origin`

// MemoryUses lists the logged uses of a memory (or of a job), newest
// first.
func (s *Store) MemoryUses(ctx context.Context, q querier, f MemoryUseFilter) ([]MemoryUse, error) {
	where, args := memoryUseWhere(f)
	query := `select ` + memoryUseColumns + ` from memory_uses where ` + where + ` order by id desc`
	query, args = pageClause(query, args, f.Limit, f.Offset)
	out, err := queryAll(ctx, q, scanMemoryUse, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list memory uses: %w", err)
	}
	return out, nil
}

// CountMemoryUses counts the logged uses MemoryUses lists (the page aside).
func (s *Store) CountMemoryUses(ctx context.Context, q querier, f MemoryUseFilter) (int, error) {
	where, args := memoryUseWhere(f)
	var n int
	if err := q.QueryRowContext(ctx, `select count(*) from memory_uses where `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count memory uses: %w", err)
	}
	return n, nil
}

func memoryUseWhere(f MemoryUseFilter) (string, []any) {
	conds, args := []string{"true"}, []any{}
	if f.MemoryID != 0 {
		args = append(args, f.MemoryID)
		conds = append(conds, "memory_id = $"+strconv.Itoa(len(args)))
	}
	if f.JobID != 0 {
		args = append(args, f.JobID)
		// "job_id <> 0" lets the planner use the partial index on a
		// parameter it cannot see is non-zero.
		conds = append(conds, "job_id = $"+strconv.Itoa(len(args))+" and job_id <> 0")
	}
	return strings.Join(conds, " and "), args
}

// pageClause appends limit and offset to query when limit is positive.
func pageClause(query string, args []any, limit, offset int) (string, []any) {
	if limit <= 0 {
		return query, args
	}
	args = append(args, limit, max(offset, 0))
	return query + " limit $" + strconv.Itoa(len(args)-1) + " offset $" + strconv.Itoa(len(args)), args
}

func scanMemoryUse(r scanner) (MemoryUse, error) {
	var u MemoryUse
	err := r.Scan(&u.ID, &u.MemoryID, &u.At, &u.Cause, &u.Workspace, &u.JobID, &u.SessionID, &u.Origin)
	u.At = u.At.UTC()
	return u, err
}

// Who reported a playbook use (PlaybookUse.ReportedBy).
const (
	// PlaybookByAgent: the agent's playbook_use tool, through the API.
	PlaybookByAgent = "agent (api)"
)

// PlaybookUse is one reported use of a playbook: UsePlaybook's input and a
// row of its log.
type PlaybookUse struct {
	ID        int64
	Workspace string
	Slug      string
	At        time.Time
	Success   bool
	// ReportedBy says who reported it (PlaybookBy*); SessionID the
	// session that used it, when the report named one.
	ReportedBy string
	SessionID  string
}

// PlaybookUseFilter narrows PlaybookUses: a workspace's (required), one
// playbook's, one outcome's ("success", "fail"; "" both).
type PlaybookUseFilter struct {
	Workspace string
	Slug      string
	Outcome   string
	// Limit caps the rows (0: no cap); Offset skips the newest.
	Limit, Offset int
}

// The outcomes PlaybookUseFilter.Outcome takes.
const (
	OutcomeSuccess = "success"
	OutcomeFail    = "fail"
)

const playbookUseColumns = `id, workspace, slug, at, success, reported_by, session_id`

// logPlaybookUse adds u to the log, in the transaction that counts it.
func (s *Store) logPlaybookUse(ctx context.Context, tx *sql.Tx, u PlaybookUse) error {
	_, err := tx.ExecContext(ctx, `insert into playbook_uses (workspace, slug, at, success, reported_by, session_id)
		values ($1, $2, $3, $4, $5, $6)`, u.Workspace, u.Slug, utcMicro(u.At), u.Success, u.ReportedBy, u.SessionID)
	if err != nil {
		return fmt.Errorf("log use of playbook %s of %q: %w", u.Slug, u.Workspace, err)
	}
	return nil
}

// PlaybookUses lists a workspace's logged playbook uses, newest first.
func (s *Store) PlaybookUses(ctx context.Context, q querier, f PlaybookUseFilter) ([]PlaybookUse, error) {
	where, args, err := playbookUseWhere(f)
	if err != nil {
		return nil, err
	}
	query, args := pageClause(`select `+playbookUseColumns+` from playbook_uses where `+where+` order by id desc`, args, f.Limit, f.Offset)
	out, err := queryAll(ctx, q, scanPlaybookUse, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list playbook uses of %q: %w", f.Workspace, err)
	}
	return out, nil
}

// CountPlaybookUses counts the rows PlaybookUses lists (the page aside).
func (s *Store) CountPlaybookUses(ctx context.Context, q querier, f PlaybookUseFilter) (int, error) {
	where, args, err := playbookUseWhere(f)
	if err != nil {
		return 0, err
	}
	var n int
	if err := q.QueryRowContext(ctx, `select count(*) from playbook_uses where `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count playbook uses of %q: %w", f.Workspace, err)
	}
	return n, nil
}

func playbookUseWhere(f PlaybookUseFilter) (string, []any, error) {
	where, args := "workspace = $1", []any{f.Workspace}
	if f.Slug != "" {
		args = append(args, f.Slug)
		where += " and slug = $2"
	}
	switch f.Outcome {
	case "":
	case OutcomeSuccess, OutcomeFail:
		args = append(args, f.Outcome == OutcomeSuccess)
		where += " and success = $" + strconv.Itoa(len(args))
	default:
		return "", nil, fmt.Errorf("playbook uses: outcome %q: want %s or %s", f.Outcome, OutcomeSuccess, OutcomeFail)
	}
	return where, args, nil
}

func scanPlaybookUse(r scanner) (PlaybookUse, error) {
	var u PlaybookUse
	err := r.Scan(&u.ID, &u.Workspace, &u.Slug, &u.At, &u.Success, &u.ReportedBy, &u.SessionID)
	u.At = u.At.UTC()
	return u, err
}

// ErrorRetroSchedule is one retro_error job scheduled for a session: a row
// behind ErrorRetro.Count.
type ErrorRetroSchedule struct {
	ID        int64
	SessionID string
	// At is when it was scheduled, Due when the job may run.
	At    time.Time
	JobID int64
	Due   time.Time
	// Folded: the session's end folded it into its session retro (the job
	// was deleted and the count taken back).
	Folded bool
}

// LogErrorRetro records a retro_error job scheduled for a session, in the
// transaction that counts it (PutErrorRetro).
func (s *Store) LogErrorRetro(ctx context.Context, tx *sql.Tx, r ErrorRetroSchedule) error {
	_, err := tx.ExecContext(ctx, `insert into error_retro_schedules (session_id, at, job_id, due) values ($1, $2, $3, $4)`,
		r.SessionID, utcMicro(r.At), r.JobID, utcMicro(r.Due))
	if err != nil {
		return fmt.Errorf("log error retro of session %s: %w", r.SessionID, err)
	}
	return nil
}

// FoldErrorRetros marks the session's scheduled retro_error jobs of jobIDs
// folded, in the transaction that takes them off its count.
func (s *Store) FoldErrorRetros(ctx context.Context, tx *sql.Tx, sessionID string, jobIDs ...int64) error {
	if len(jobIDs) == 0 {
		return nil
	}
	in, args := idList(jobIDs, 1)
	if _, err := tx.ExecContext(ctx, `update error_retro_schedules set folded = true where session_id = $1 and job_id in (`+in+`)`,
		append([]any{sessionID}, args...)...); err != nil {
		return fmt.Errorf("fold error retros of session %s: %w", sessionID, err)
	}
	return nil
}

// ErrorRetroSchedules lists a session's scheduled retro_error jobs, newest
// first, at most limit (0: all; a session has a few, Rules.MaxPerSession).
func (s *Store) ErrorRetroSchedules(ctx context.Context, q querier, sessionID string, limit int) ([]ErrorRetroSchedule, error) {
	query, args := pageClause(`select id, session_id, at, job_id, due, folded from error_retro_schedules where session_id = $1 order by id desc`,
		[]any{sessionID}, limit, 0)
	out, err := queryAll(ctx, q, func(r scanner) (ErrorRetroSchedule, error) {
		var e ErrorRetroSchedule
		err := r.Scan(&e.ID, &e.SessionID, &e.At, &e.JobID, &e.Due, &e.Folded)
		e.At, e.Due = e.At.UTC(), e.Due.UTC()
		return e, err
	}, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list error retros of session %s: %w", sessionID, err)
	}
	return out, nil
}
