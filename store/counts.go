package store

import (
	"context"
	"fmt"
	"strings"
)

// countedTables are the tables a request can write to: what tests count to
// show a refused request stored nothing. mull_workers is left out: its
// heartbeats change on their own.
var countedTables = []string{
	"workflow_runs", "workflow_steps", "workflow_edges", "workflow_waits", "budget_limits", "budget_usage", "budget_reservations", "llm_calls",
	"sessions", "events", "dsh_import_files", "memories", "digest_state", "handoffs", "retro_runs",
	"playbooks", "proposals", "error_retros", "consolidate_state", "river_job",
	"harness_scopes", "harness_entries", "harness_entry_versions", "harness_refinements", "harness_reviews",
	"harness_gates", "harness_injections", "bench_cases", "bench_snapshots", "bench_runs", "bench_cells", "bench_jobs",
	"workspace_settings",
}

// RowCounts counts the rows of every table a request or an import can
// write to, in one statement.
func (s *Store) RowCounts(ctx context.Context) (map[string]int64, error) {
	sub := make([]string, len(countedTables))
	for i, t := range countedTables {
		sub[i] = "(select count(*) from " + t + ")"
	}
	n := make([]int64, len(countedTables))
	dest := make([]any, len(n))
	for i := range n {
		dest[i] = &n[i]
	}
	if err := s.DB.QueryRowContext(ctx, "select "+strings.Join(sub, ", ")).Scan(dest...); err != nil {
		return nil, fmt.Errorf("count rows: %w", err)
	}
	out := make(map[string]int64, len(n))
	for i, t := range countedTables {
		out[t] = n[i]
	}
	return out, nil
}
