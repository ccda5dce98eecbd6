package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// The panel's benchmark reads (web/bench.go): the run list a page at a
// time (the service's list has a limit, no offset), narrowed by the
// refinement a run tests. Read-only.

// PanelBenchRunFilter narrows PanelBenchRuns; empty fields match
// everything.
type PanelBenchRunFilter struct {
	Kind   string
	Status string
	// RefinementID: the runs that test that refinement.
	RefinementID string
	// Limit defaults to 50 and is capped at 1000; Offset skips rows.
	Limit, Offset int
}

// PanelBenchRuns lists runs newest first, a page at a time; Status is
// matched against the status readers see (a failed workflow's run is
// failed).
func (s *Store) PanelBenchRuns(ctx context.Context, f PanelBenchRunFilter) ([]BenchRun, error) {
	where, args := []string{"1 = 1"}, []any{}
	for _, c := range []struct{ col, v string }{{"kind", f.Kind}, {"eff_status", f.Status}, {"refinement_id", f.RefinementID}} {
		if c.v != "" {
			args = append(args, c.v)
			where = append(where, c.col+" = $"+strconv.Itoa(len(args)))
		}
	}
	args = append(args, clampLimit(f.Limit), max(f.Offset, 0))
	out, err := queryAll(ctx, s.DB, scanBenchRun, `select * from (`+benchRunSelect+`) x where `+strings.Join(where, " and ")+`
		order by created_at desc, id desc limit $`+strconv.Itoa(len(args)-1)+` offset $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list bench runs: %w", err)
	}
	return out, nil
}
