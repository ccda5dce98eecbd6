package store_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Migration 025 applies to runs started before it: their dependency edges
// are listed, each step waits for its dependencies that have not
// succeeded, and each run for its leaves that have not, so they finish
// under the new bookkeeping.
func TestMigration025OnExistingRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := s.DB.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		for _, q := range []string{`drop table workflow_waits`, `drop table workflow_edges`,
			`alter table workflow_steps drop column waiting`, `alter table workflow_runs drop column open_leaves`,
			`delete from mull_migrations where version = 25`} {
			exec(q)
		}
		// wf_old: a and b succeeded, c waits for both, d for c. wf_done
		// finished.
		for _, id := range []string{"wf_old", "wf_done"} {
			exec(`insert into workflow_runs (id, name, status, created_at, updated_at) values ($1, 'old', 'running', $2, $2)`, id, s.Now())
		}
		for _, st := range []struct{ run, name, deps, status string }{
			{"wf_old", "a", `[]`, "succeeded"}, {"wf_old", "b", `["a"]`, "succeeded"},
			{"wf_old", "c", `["a","b"]`, "pending"}, {"wf_old", "d", `["c"]`, "pending"},
			{"wf_done", "a", `[]`, "succeeded"},
		} {
			exec(`insert into workflow_steps (run_id, name, position, kind, args, deps, status) values ($1, $2, 0, 'k', '{}', $3, $4)`,
				st.run, st.name, st.deps, st.status)
		}
		planned, err := s.Migrate(ctx, false)
		if err != nil || len(planned) != 1 || planned[0].Version != 25 {
			t.Fatalf("migrate = %+v, %v; want 025 alone", planned, err)
		}
		var edges int
		if err := s.DB.QueryRowContext(ctx, `select count(*) from workflow_edges`).Scan(&edges); err != nil || edges != 4 {
			t.Fatalf("%d edges, %v; want 4", edges, err)
		}
		run, err := s.GetWorkflowRun(ctx, "wf_old")
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range run.Steps {
			if want := map[string]int{"d": 1}[st.Name]; st.Waiting != want {
				t.Errorf("step %s waits for %d buckets; want %d", st.Name, st.Waiting, want)
			}
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			// c's success unblocks d; d's, a leaf's, finishes the run.
			if u, err := s.UnblockWorkflowDependents(ctx, tx, "wf_old", "c"); err != nil || u != (store.Unblocked{Dependents: 1, Ready: 1}) {
				t.Errorf("after c: %+v, %v; want d ready", u, err)
			}
			if u, err := s.UnblockWorkflowDependents(ctx, tx, "wf_old", "d"); err != nil || u.Dependents != 0 {
				t.Errorf("after d: %+v, %v; want a leaf", u, err)
			}
			for run, want := range map[string]int{"wf_old": 0, "wf_done": -1} {
				if open, _, err := s.CloseWorkflowLeaf(ctx, tx, run); err != nil || open != want {
					t.Errorf("%s: %d leaves open after closing one, %v; want %d", run, open, err, want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
