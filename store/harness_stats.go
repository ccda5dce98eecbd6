package store

import (
	"context"
	"fmt"
)

// HarnessCount is one group of a HarnessStats count.
type HarnessCount struct {
	// A and B are the group's labels: (scope, source) for refinements,
	// (result, "") for edits, (outcome, "") for reviews, (kind, scope)
	// for entries. A scope is "global" or "local".
	A, B string
	N    int64
}

// HarnessStatCounts are what /metrics reports of the harness, counted in
// the database so every process reports the shared store.
type HarnessStatCounts struct {
	Refinements []HarnessCount
	// Edits are the applied edits of every refinement, by result
	// ("applied" or "rejected").
	Edits   []HarnessCount
	Reviews []HarnessCount
	// Entries are the entries now (tombstones excluded, archived ones
	// included).
	Entries []HarnessCount
}

// harnessScopeLabel maps a scope key to the scope label.
const harnessScopeLabel = `case when scope_key = 'global' then 'global' else 'local' end`

// HarnessStats counts refinements, their edits, reviews and entries, each
// in one grouped statement.
func (s *Store) HarnessStats(ctx context.Context) (HarnessStatCounts, error) {
	// The counts are columns written at insert: no scrape walks the
	// applied edits' JSON.
	edits := `select 'applied', '', coalesce(sum(applied_count), 0) from harness_refinements
		union all select 'rejected', '', coalesce(sum(rejected_count), 0) from harness_refinements`
	var out HarnessStatCounts
	for _, q := range []struct {
		into *[]HarnessCount
		sql  string
	}{
		{&out.Refinements, `select ` + harnessScopeLabel + `, source, count(*) from harness_refinements group by 1, 2`},
		{&out.Edits, edits},
		{&out.Reviews, `select outcome, '', count(*) from harness_reviews group by 1`},
		{&out.Entries, `select kind, ` + harnessScopeLabel + `, count(*) from harness_entries where not deleted group by 1, 2`},
	} {
		rows, err := s.DB.QueryContext(ctx, q.sql)
		if err != nil {
			return out, fmt.Errorf("harness stats: %w", err)
		}
		for rows.Next() {
			var c HarnessCount
			if err := rows.Scan(&c.A, &c.B, &c.N); err != nil {
				rows.Close()
				return out, fmt.Errorf("harness stats: %w", err)
			}
			*q.into = append(*q.into, c)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return out, fmt.Errorf("harness stats: %w", err)
		}
	}
	return out, nil
}
