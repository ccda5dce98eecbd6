package store

import (
	"context"
	"fmt"
)

// BenchCount is one group of a BenchCounts count: (status, "") for runs,
// (side, status) for cells.
type BenchCount struct {
	A, B string
	N    int64
}

// BenchCounts are what the bench metrics report, read at scrape time: the
// cells are recorded by the worker processes' bench_cell jobs, so a
// process-local counter would miss most.
type BenchCounts struct {
	// Runs by status. A run the columns still call running whose workflow
	// failed or was cancelled counts as that.
	Runs []BenchCount
	// Cells by side (reference, candidate) and status (ok, failed).
	Cells []BenchCount
}

// BenchCounts counts benchmark runs and cells (the metrics').
func (s *Store) BenchCounts(ctx context.Context) (BenchCounts, error) {
	var out BenchCounts
	for _, q := range []struct {
		into *[]BenchCount
		sql  string
	}{
		{&out.Runs, `select case when r.status = 'running' and w.status in ('failed', 'cancelled') then w.status else r.status end,
			'', count(*) from bench_runs r left join workflow_runs w on w.id = r.workflow_run_id group by 1`},
		{&out.Cells, `select side, status, count(*) from bench_cells group by 1, 2`},
	} {
		if err := s.benchCount(ctx, q.sql, q.into); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (s *Store) benchCount(ctx context.Context, query string, into *[]BenchCount) error {
	rows, err := s.DB.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("bench counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c BenchCount
		if err := rows.Scan(&c.A, &c.B, &c.N); err != nil {
			return fmt.Errorf("bench counts: %w", err)
		}
		*into = append(*into, c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("bench counts: %w", err)
	}
	return nil
}
