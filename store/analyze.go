package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

// tableName is what Analyze takes as a table: mull's own, lower-case
// snake_case, never a value from outside.
var tableName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ImportTables are the tables a DSH import fills: the events, their
// sessions and how far each log was read.
var ImportTables = []string{"events", "sessions", "dsh_import_files"}

// Analyze refreshes the planner's statistics of tables after a bulk write
// (Postgres ANALYZE; on SQLite it does nothing). Autovacuum would, within
// a minute or so; until then the planner reads a table that grew by
// thousands of rows as the small one it was, and may scan where an index
// serves. Run it outside the write's transaction, once the rows are
// committed: ANALYZE samples what it can see.
func (s *Store) Analyze(ctx context.Context, tables ...string) error {
	for _, t := range tables {
		if !tableName.MatchString(t) {
			return fmt.Errorf("store: analyze: %q is not a table name", t)
		}
	}
	if s.Dialect != Postgres || len(tables) == 0 {
		return nil
	}
	if _, err := s.DB.ExecContext(ctx, "analyze "+strings.Join(tables, ", ")); err != nil {
		return fmt.Errorf("store: analyze %s: %w", strings.Join(tables, ", "), err)
	}
	return nil
}
