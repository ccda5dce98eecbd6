package memories

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mullhq/mull/store"
)

// UseTotals is a running total and how much of it the use log lists
// (store/uselog.go): Unlogged were counted before mull kept the log or,
// for a memory, carried over when it was written (a move, a promotion, a merge, an
// import).
type UseTotals struct {
	Total    int `json:"total"`
	Logged   int `json:"logged"`
	Unlogged int `json:"unlogged"`
}

func useTotals(total, logged int) UseTotals {
	return UseTotals{Total: total, Logged: logged, Unlogged: max(total-logged, 0)}
}

// MemoryUse is one logged use of a memory: its cause (store.Use*), the
// workspace that used it, and its job and session when there is one.
type MemoryUse struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	Cause     string    `json:"cause"`
	Workspace string    `json:"workspace"`
	JobID     int64     `json:"job_id,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	Origin    string    `json:"origin,omitempty"`
}

// MemoryUses is a page of a memory's use log, newest first, with its
// totals (the admin API's and mull memory uses' answer).
type MemoryUses struct {
	MemoryID int64       `json:"memory_id"`
	Uses     UseTotals   `json:"uses"`
	Rows     []MemoryUse `json:"rows"`
	// Next is the offset of the next page; 0 on the last.
	Next int `json:"next,omitempty"`
}

// Uses reads a page of memory id's use log (limit rows from offset, newest
// first) and its totals. An unknown memory wraps store.ErrNotFound.
func (s *Service) Uses(ctx context.Context, id int64, limit, offset int) (MemoryUses, error) {
	if limit < 1 {
		return MemoryUses{}, fmt.Errorf("memory uses: limit %d: want 1 or more", limit)
	}
	out := MemoryUses{MemoryID: id, Rows: []MemoryUse{}}
	var rows []store.MemoryUse
	// One snapshot: a search committing between the total and its rows
	// would make them disagree.
	err := s.store.ReadTx(ctx, func(tx *sql.Tx) error {
		m, err := s.store.GetMemory(ctx, tx, id)
		if err != nil {
			return err
		}
		f := store.MemoryUseFilter{MemoryID: id}
		logged, err := s.store.CountMemoryUses(ctx, tx, f)
		if err != nil {
			return err
		}
		out.Uses = useTotals(m.Uses, logged)
		f.Limit, f.Offset = limit+1, offset
		rows, err = s.store.MemoryUses(ctx, tx, f)
		return err
	})
	if err != nil {
		return out, err
	}
	if len(rows) > limit {
		rows, out.Next = rows[:limit], offset+limit
	}
	for _, u := range rows {
		out.Rows = append(out.Rows, MemoryUse{ID: u.ID, At: u.At, Cause: u.Cause, Workspace: u.Workspace, JobID: u.JobID,
			SessionID: u.SessionID, Origin: u.Origin})
	}
	return out, nil
}

// PlaybookUse is one logged use of a playbook.
type PlaybookUse struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	Slug       string    `json:"slug"`
	Success    bool      `json:"success"`
	ReportedBy string    `json:"reported_by"`
	SessionID  string    `json:"session_id,omitempty"`
}

// PlaybookUses is a page of a workspace's playbook use log, newest first,
// with the totals of the playbooks it covers.
type PlaybookUses struct {
	Workspace string        `json:"workspace"`
	Slug      string        `json:"slug,omitempty"`
	Outcome   string        `json:"outcome,omitempty"`
	Uses      UseTotals     `json:"uses"`
	Rows      []PlaybookUse `json:"rows"`
	Next      int           `json:"next,omitempty"`
}

// PlaybookUses reads a page of the use log of f.Workspace's playbooks (of
// f.Slug when set, of one outcome when f.Outcome is set), newest first,
// from f.Offset, f.Limit rows; its totals are the playbooks' uses,
// successes or fails. An unknown slug wraps store.ErrNotFound; a bad
// outcome is an error naming it.
func (s *Service) PlaybookUses(ctx context.Context, f store.PlaybookUseFilter) (PlaybookUses, error) {
	out := PlaybookUses{Workspace: f.Workspace, Slug: f.Slug, Outcome: f.Outcome, Rows: []PlaybookUse{}}
	switch {
	case f.Workspace == "":
		return out, fmt.Errorf("playbook uses: no workspace")
	case f.Limit < 1:
		return out, fmt.Errorf("playbook uses: limit %d: want 1 or more", f.Limit)
	}
	limit, offset := f.Limit, f.Offset
	var rows []store.PlaybookUse
	// One snapshot: a use reported between the totals and the rows would
	// make them disagree.
	err := s.store.ReadTx(ctx, func(tx *sql.Tx) error {
		pbs, err := s.store.ListPlaybooks(ctx, tx, f.Workspace)
		if err != nil {
			return err
		}
		total, found := 0, f.Slug == ""
		for _, pb := range pbs {
			if f.Slug != "" && pb.Slug != f.Slug {
				continue
			}
			found = true
			switch f.Outcome {
			case store.OutcomeSuccess:
				total += pb.Successes
			case store.OutcomeFail:
				total += pb.Fails
			default:
				total += pb.Uses
			}
		}
		if !found {
			return fmt.Errorf("playbook %s of %q: %w", f.Slug, f.Workspace, store.ErrNotFound)
		}
		f.Limit, f.Offset = 0, 0
		logged, err := s.store.CountPlaybookUses(ctx, tx, f)
		if err != nil {
			return err
		}
		out.Uses = useTotals(total, logged)
		f.Limit, f.Offset = limit+1, offset
		rows, err = s.store.PlaybookUses(ctx, tx, f)
		return err
	})
	if err != nil {
		return out, err
	}
	if len(rows) > limit {
		rows, out.Next = rows[:limit], offset+limit
	}
	for _, u := range rows {
		out.Rows = append(out.Rows, PlaybookUse{ID: u.ID, At: u.At, Slug: u.Slug, Success: u.Success, ReportedBy: u.ReportedBy, SessionID: u.SessionID})
	}
	return out, nil
}
