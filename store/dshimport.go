package store

import (
	"context"
	"fmt"
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
	// Events is how many events this file has handed to ingest.
	Events int64 `json:"events"`
	// Size and ModTime are the file's when it was last read.
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
	// Error is why the last read stopped early; empty if it did not.
	Error     string    `json:"error,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

const dshImportColumns = `path, session_id, workspace, read_offset, frame_skip, lines, last_seq,
	turn, pending_calls, events, size, mtime_ns, last_error, updated_at`

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
		if err := rows.Scan(&f.Path, &f.SessionID, &f.Workspace, &f.Offset, &f.FrameSkip, &f.Lines, &f.LastSeq,
			&f.Turn, &f.PendingCalls, &f.Events, &f.Size, &mtime, &f.Error, &f.UpdatedAt); err != nil {
			return nil, fmt.Errorf("dsh import files: %w", err)
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
	_, err := s.DB.ExecContext(ctx, `insert into dsh_import_files (`+dshImportColumns+`)
		values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		on conflict (path) do update set session_id = excluded.session_id, workspace = excluded.workspace,
			read_offset = excluded.read_offset, frame_skip = excluded.frame_skip, lines = excluded.lines,
			last_seq = excluded.last_seq, turn = excluded.turn, pending_calls = excluded.pending_calls,
			events = excluded.events, size = excluded.size, mtime_ns = excluded.mtime_ns,
			last_error = excluded.last_error, updated_at = excluded.updated_at`,
		f.Path, f.SessionID, f.Workspace, f.Offset, f.FrameSkip, f.Lines, f.LastSeq,
		f.Turn, f.PendingCalls, f.Events, f.Size, unixNano(f.ModTime), f.Error, s.Now())
	if err != nil {
		return fmt.Errorf("save dsh import file %s: %w", f.Path, err)
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
