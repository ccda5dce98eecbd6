package store_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestConsolidateState(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 18, 30, 0, 0, time.UTC)
		if st, ok, err := s.GetConsolidateState(ctx, s.DB, "/w"); ok || err != nil || st.Workspace != "/w" || st.Watermark != 0 {
			t.Fatalf("state before any: %+v, %v, %v", st, ok, err)
		}
		var ids []int64
		for i, ws := range []string{"/w", "/w", "/v", ""} {
			id, err := s.InsertMemory(ctx, s.DB, store.Memory{Workspace: ws, Kind: "fact", Text: "fact " + string(rune('a'+i)),
				TextNorm: "fact", Origin: "tool", RecordedAt: t0})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		due, err := s.WorkspacesWithNewMemories(ctx, s.DB)
		if err != nil || !slices.Equal(due, []string{"", "/v", "/w"}) {
			t.Fatalf("due before any run: %q, %v", due, err)
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			st, err := s.LockConsolidateState(ctx, tx, "/w")
			if err != nil {
				return err
			}
			if st.Workspace != "/w" || st.RunID != "" || !st.LastStartedAt.IsZero() {
				t.Errorf("new state %+v", st)
			}
			st.Watermark, st.SessionsSince, st.RunID, st.LastStartedAt, st.LastJobID, st.LastNote = ids[1], 2, "run-1", t0, 42, "started run-1"
			st.LastRunID = "run-1"
			return s.PutConsolidateState(ctx, tx, st)
		})
		if err != nil {
			t.Fatal(err)
		}
		st, ok, err := s.GetConsolidateState(ctx, s.DB, "/w")
		if !ok || err != nil || st.Watermark != ids[1] || st.SessionsSince != 2 || st.RunID != "run-1" ||
			!st.LastStartedAt.Equal(t0) || !st.LastFinishedAt.IsZero() || st.LastCounts != "{}" || st.LastJobID != 42 || st.LastNote != "started run-1" ||
			st.LastRunID != "run-1" {
			t.Fatalf("state %+v, %v, %v", st, ok, err)
		}
		due, err = s.WorkspacesWithNewMemories(ctx, s.DB)
		if err != nil || !slices.Equal(due, []string{"", "/v"}) {
			t.Fatalf("due after /w's watermark: %q, %v", due, err)
		}
		all, err := s.ListConsolidateStates(ctx, s.DB)
		if err != nil || len(all) != 1 || all[0].Workspace != "/w" {
			t.Fatalf("states %+v, %v", all, err)
		}
		ms, err := s.MemoriesByID(ctx, s.DB, []int64{ids[2], ids[0], 999999})
		if err != nil || len(ms) != 2 || ms[0].ID != ids[0] || ms[1].ID != ids[2] {
			t.Fatalf("by id: %+v, %v", ms, err)
		}
	})
}

// Migration 018 fills last_run_id from the notes that name a run, and
// leaves it empty for the others.
func TestConsolidateLastRunBackfill(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, q := range []string{`alter table consolidate_state drop column last_run_id`,
			`delete from mull_migrations where version = 18`} {
			if _, err := s.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		notes := map[string]string{
			"/started":  "started run wf_0a1b: 12 live memories, 3 new since memory 40, 1 candidate clusters in 1 chunks",
			"/finished": "finished run wf_2c3d: merged 1 clusters (2 memories superseded), rejected 0; derived 0 principles",
			"/skipped":  "skipped: run wf_4e5f is still in flight",
			"/cooldown": "skipped: cooldown until 2026-11-29T17:00:00Z",
			"/dry":      "dry run: 12 live memories, 3 new since memory 40",
			"/none":     "",
		}
		for ws, note := range notes {
			if _, err := s.DB.ExecContext(ctx, `insert into consolidate_state (workspace, last_note) values ($1, $2)`, ws, note); err != nil {
				t.Fatal(err)
			}
		}
		if steps, err := s.Migrate(ctx, false); err != nil || len(steps) != 1 || steps[0].Version != 18 {
			t.Fatalf("migrate %+v, %v", steps, err)
		}
		want := map[string]string{"/started": "wf_0a1b", "/finished": "wf_2c3d"}
		for ws, note := range notes {
			st, _, err := s.GetConsolidateState(ctx, s.DB, ws)
			if err != nil {
				t.Fatal(err)
			}
			if st.LastRunID != want[ws] || st.LastNote != note {
				t.Errorf("%s: last_run_id %q (note %q), want %q", ws, st.LastRunID, st.LastNote, want[ws])
			}
		}
	})
}
