package store

import (
	"context"
	"fmt"
	"github.com/mullhq/mull/learn/bench"
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

// benchRunJobs selects (run_id, job_id): every job a run's cells were
// attempted in (bench_jobs), and its workflow steps' current jobs (runs
// started before bench_jobs), for the runs whose id satisfies runCond (a
// condition on r.id). BenchRunProgress, BenchRunsProgress and the /llm
// page's run filter count the same jobs.
func benchRunJobs(runCond string) string {
	return `select j.run_id, j.job_id from bench_jobs j join bench_runs r on r.id = j.run_id where ` + runCond + `
		union select r.id, s.job_id from bench_runs r join workflow_steps s on s.run_id = r.workflow_run_id
		where ` + runCond + ` and s.job_id is not null`
}

// BenchRunsProgress is BenchRunProgress for many runs in one query, by run
// id; a run with no cell and no call is missing (its progress is zero).
func (s *Store) BenchRunsProgress(ctx context.Context, q querier, ids []string) (map[string]BenchProgress, error) {
	out := map[string]BenchProgress{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList("r.id", ids)
	type row struct {
		id string
		p  BenchProgress
	}
	rows, err := queryAll(ctx, q, func(sc scanner) (row, error) {
		var r row
		return r, sc.Scan(&r.id, &r.p.Done, &r.p.Failed, &r.p.Tokens, &r.p.CostNanoUSD)
	}, `with jobs as (`+benchRunJobs(in)+`),
		spend as (select j.run_id, sum(c.prompt_tokens + c.completion_tokens) as tokens, sum(c.cost_nano_usd) as cost
			from jobs j join llm_calls c on c.job_id = j.job_id group by j.run_id),
		cells as (select c.run_id, count(*) as done, sum(case when c.status = 'failed' then 1 else 0 end) as failed
			from bench_cells c join bench_runs r on r.id = c.run_id where `+in+` group by c.run_id)
		select r.id, coalesce(cells.done, 0), coalesce(cells.failed, 0), coalesce(spend.tokens, 0), coalesce(spend.cost, 0)
		from bench_runs r left join cells on cells.run_id = r.id left join spend on spend.run_id = r.id where `+in, args...)
	if err != nil {
		return nil, fmt.Errorf("progress of %d bench runs: %w", len(ids), err)
	}
	for _, r := range rows {
		out[r.id] = r.p
	}
	return out, nil
}

// GetBenchCases reads the cases of ids in one query, by id; an id with no
// case is missing from the map.
func (s *Store) GetBenchCases(ctx context.Context, q querier, ids []string) (map[string]bench.Case, error) {
	out := map[string]bench.Case{}
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList("id", ids)
	cases, err := queryAll(ctx, q, scanBenchCase, `select `+benchCaseColumns+` from bench_cases where `+in, args...)
	if err != nil {
		return nil, fmt.Errorf("read %d bench cases: %w", len(ids), err)
	}
	for _, c := range cases {
		out[c.ID] = c
	}
	return out, nil
}
