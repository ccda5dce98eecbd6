package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DSHImportFile is how far mull has read one DSH session log: where to
// resume, and the mapping state the next line needs.
type DSHImportFile struct {
	// Path is the log's path as found under the DSH home.
	Path      string `json:"path"`
	SessionID string `json:"session_id"`
	Workspace string `json:"workspace"`
	// Offset is where reading resumes: the next unread line of a plain log,
	// or the zstd frame holding it; FrameSkip is how much of that frame's
	// decompressed data was read already.
	Offset    int64 `json:"offset"`
	FrameSkip int64 `json:"frame_skip"`
	// Lines is how many complete lines were read; LastSeq the highest row
	// seq among them (-1 before any).
	Lines   int64 `json:"lines"`
	LastSeq int64 `json:"last_seq"`
	// Turn is the turn in progress; PendingCalls the tool calls waiting for
	// their results, as a JSON object by call id.
	Turn         int    `json:"turn"`
	PendingCalls string `json:"pending_calls"`
	// SeedLength is the header's seedLength: a fork's leading rows that are
	// its parent's history, skipped on every run.
	SeedLength int64 `json:"seed_length,omitempty"`
	// Events is how many events this file has handed to ingest.
	Events int64 `json:"events"`
	// Size and ModTime are the file's when it was last read.
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
	// Error is why the last read stopped early; empty if it did not.
	Error string `json:"error,omitempty"`
	// Damage lists the corrupt zstd frames skipped, each named with its
	// byte offset: their lines are lost. Kept until the file is read again
	// from its start.
	Damage []string `json:"damage,omitempty"`
	// Tail is what the data past Offset is when it does not parse (a line
	// without its newline, a frame the file ends inside), "" when the file
	// ends cleanly; Waiting says the file had changed within import.settle
	// when that was seen, so DSH is still writing it.
	Tail      string    `json:"tail,omitempty"`
	Waiting   bool      `json:"waiting,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Import states of a session log, and of the session it holds.
const (
	// ImportComplete: read to a clean end, nothing skipped.
	ImportComplete = "complete"
	// ImportWaiting: it ends in a partial line or frame that DSH is still
	// writing.
	ImportWaiting = "waiting"
	// ImportIncomplete: some of it could not be imported, and that will not
	// change by waiting: a corrupt frame was skipped, a line stops the
	// reading, or the file was left cut short.
	ImportIncomplete = "incomplete"
)

// State is the file's import state, and why it is not complete.
func (f DSHImportFile) State() (state, reason string) {
	var why []string
	if f.Error != "" {
		why = append(why, f.Error)
	}
	why = append(why, f.Damage...)
	switch {
	case f.Tail != "" && !f.Waiting:
		why = append(why, "the log is cut short: "+f.Tail)
	case len(why) == 0 && f.Tail != "":
		return ImportWaiting, "DSH is still writing it: " + f.Tail
	}
	if len(why) > 0 {
		return ImportIncomplete, strings.Join(why, "; ")
	}
	return ImportComplete, ""
}

const dshImportColumns = `path, session_id, workspace, read_offset, frame_skip, lines, last_seq,
	turn, pending_calls, events, size, mtime_ns, last_error, damage, tail, tail_waiting, seed_length, updated_at`

// DSHImportFiles lists every session log mull has read, by path.
func (s *Store) DSHImportFiles(ctx context.Context) ([]DSHImportFile, error) {
	rows, err := s.DB.QueryContext(ctx, `select `+dshImportColumns+` from dsh_import_files order by path`)
	if err != nil {
		return nil, fmt.Errorf("dsh import files: %w", err)
	}
	defer rows.Close()
	var out []DSHImportFile
	for rows.Next() {
		var f DSHImportFile
		var mtime int64
		var damage string
		if err := rows.Scan(&f.Path, &f.SessionID, &f.Workspace, &f.Offset, &f.FrameSkip, &f.Lines, &f.LastSeq,
			&f.Turn, &f.PendingCalls, &f.Events, &f.Size, &mtime, &f.Error, &damage, &f.Tail, &f.Waiting, &f.SeedLength, &f.UpdatedAt); err != nil {
			return nil, fmt.Errorf("dsh import files: %w", err)
		}
		if err := unmarshalDamage(damage, &f); err != nil {
			return nil, err
		}
		if mtime != 0 {
			f.ModTime = time.Unix(0, mtime).UTC()
		}
		f.UpdatedAt = f.UpdatedAt.UTC()
		out = append(out, f)
	}
	return out, rows.Err()
}

// SaveDSHImportFile records how far a log was read, stamping UpdatedAt.
// Call it only after the events read up to there are committed.
func (s *Store) SaveDSHImportFile(ctx context.Context, f DSHImportFile) error {
	if f.PendingCalls == "" {
		f.PendingCalls = "{}"
	}
	damage, err := json.Marshal(f.Damage)
	if err != nil || f.Damage == nil {
		damage = []byte("[]")
	}
	_, err = s.DB.ExecContext(ctx, `insert into dsh_import_files (`+dshImportColumns+`)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		on conflict (path) do update set session_id = excluded.session_id, workspace = excluded.workspace,
			read_offset = excluded.read_offset, frame_skip = excluded.frame_skip, lines = excluded.lines,
			last_seq = excluded.last_seq, turn = excluded.turn, pending_calls = excluded.pending_calls,
			events = excluded.events, size = excluded.size, mtime_ns = excluded.mtime_ns,
			last_error = excluded.last_error, damage = excluded.damage, tail = excluded.tail,
			tail_waiting = excluded.tail_waiting, seed_length = excluded.seed_length, updated_at = excluded.updated_at`,
		f.Path, f.SessionID, f.Workspace, f.Offset, f.FrameSkip, f.Lines, f.LastSeq,
		f.Turn, f.PendingCalls, f.Events, f.Size, unixNano(f.ModTime), f.Error, string(damage), f.Tail, f.Waiting, f.SeedLength, s.Now())
	if err != nil {
		return fmt.Errorf("save dsh import file %s: %w", f.Path, err)
	}
	return nil
}

// SessionImport is how a session's import from DSH's logs stands: the
// worst state among its log files (a subagent's log is its own session's).
type SessionImport struct {
	// State is ImportComplete, ImportWaiting or ImportIncomplete.
	State string `json:"state"`
	// Reason says what is missing, naming each file and place.
	Reason string `json:"reason,omitempty"`
	// CheckedAt is when a file of the session was last looked at.
	CheckedAt time.Time `json:"checked_at"`
}

// SessionImport is the import state of a session, nil when mull never read
// a DSH log of it (its events were all pushed).
func (s *Store) SessionImport(ctx context.Context, sessionID string) (*SessionImport, error) {
	rows, err := s.DB.QueryContext(ctx, `select path, last_error, damage, tail, tail_waiting, updated_at
		from dsh_import_files where session_id = $1 order by path`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("session import %s: %w", sessionID, err)
	}
	defer rows.Close()
	var files []DSHImportFile
	for rows.Next() {
		var f DSHImportFile
		var damage string
		if err := rows.Scan(&f.Path, &f.Error, &damage, &f.Tail, &f.Waiting, &f.UpdatedAt); err != nil {
			return nil, fmt.Errorf("session import %s: %w", sessionID, err)
		}
		if err := unmarshalDamage(damage, &f); err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if err := rows.Err(); err != nil || len(files) == 0 {
		return nil, err
	}
	return summarizeImport(files), nil
}

// summarizeImport folds the files' states into the worst, with the reasons
// of the files in it.
func summarizeImport(files []DSHImportFile) *SessionImport {
	rank := []string{ImportComplete, ImportWaiting, ImportIncomplete}
	out := &SessionImport{State: ImportComplete}
	var reasons []string
	for _, f := range files {
		if f.UpdatedAt.After(out.CheckedAt) {
			out.CheckedAt = f.UpdatedAt.UTC()
		}
		st, why := f.State()
		switch c := slices.Index(rank, st) - slices.Index(rank, out.State); {
		case c > 0:
			out.State, reasons = st, []string{why}
		case c == 0 && why != "":
			reasons = append(reasons, why)
		}
	}
	out.Reason = strings.Join(reasons, "; ")
	return out
}

func unmarshalDamage(s string, f *DSHImportFile) error {
	if err := json.Unmarshal([]byte(s), &f.Damage); err != nil {
		return fmt.Errorf("dsh import file %s: damage: %w", f.Path, err)
	}
	if len(f.Damage) == 0 {
		f.Damage = nil
	}
	return nil
}

// unixNano is t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
