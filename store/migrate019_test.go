package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// unmigrate019 takes migration 019 back out by hand: the database is then
// as 018 left it.
func unmigrate019(t *testing.T, s *store.Store) {
	t.Helper()
	qs := []string{`drop table reflection_items`, `drop table reflections`, `drop table task_lessons`, `drop table tasks`,
		`drop table memory_links`, `drop index memories_state_kind`, `drop index memories_task`, `drop index events_session_seq`,
		// Later migrations' indexes on 019's columns (SQLite will not drop
		// a column an index names).
		`drop index memories_panel_counts`, `drop index memories_promoted_from`}
	if s.Dialect == store.SQLite {
		qs = append(qs, `drop index memories_live_workspace`)
	}
	if s.Dialect == store.Postgres {
		qs = append(qs, `drop function tasks_environment_written_once()`, `drop function task_lessons_written_once()`)
	}
	for _, col := range []string{"scope", "scope_session", "lesson", "task_id", "state", "promoted_from_id"} {
		qs = append(qs, `alter table memories drop column `+col)
	}
	qs = append(qs, `alter table events drop column seq`, `alter table sessions drop column nudges`,
		`delete from mull_migrations where version = 19`)
	for _, q := range qs {
		if _, err := s.DB.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Migration 019 applies to a database that has data: events are numbered
// per session by (time, id), invalidated memories get the state their
// invalidation meant, and the rest is kept.
func TestMigration019OnExistingData(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		unmigrate019(t, s)
		t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := s.DB.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		for _, id := range []string{"session-1", "session-2"} {
			exec(`insert into sessions (id, workspace, status, first_event_at, last_event_at, created_at, updated_at, event_count)
				values ($1, '/w', 'open', $2, $2, $2, $2, 0)`, id, t0)
		}
		// session-1's order by (time, id): b, c (same time, id breaks the
		// tie), then a; insertion order and ids alone say otherwise.
		for _, e := range []struct {
			id, session string
			at          time.Duration
		}{{"a", "session-1", 2 * time.Minute}, {"c", "session-1", time.Minute}, {"z", "session-2", 0}, {"b", "session-1", time.Minute}} {
			exec(`insert into events (id, session_id, workspace, type, time, payload, source, recorded_at)
				values ($1, $2, '/w', 'user_message', $3, '{}', 'push', $4)`, e.id, e.session, t0.Add(e.at), t0)
		}
		mem := func(text string, invalid bool, supersededBy int64, quarantined bool) {
			var at any
			if invalid {
				at = t0.Add(time.Hour)
			}
			exec(`insert into memories (workspace, kind, text, text_norm, origin, recorded_at, invalid_at, superseded_by, quarantined)
				values ('/w', 'lesson', $1, $1, 'retro', $2, $3, $4, $5)`, text, t0, at, supersededBy, quarantined)
		}
		mem("live", false, 0, false)
		mem("superseded", true, 1, false)
		mem("forgotten", true, 0, false)
		mem("quarantined", false, 0, true)

		planned, err := s.Migrate(ctx, true)
		if err != nil || len(planned) != 1 || planned[0].Version != 19 || planned[0].Name != "lessons" {
			t.Fatalf("dry run %+v, %v; want mull 019_lessons alone", planned, err)
		}
		if _, err := s.Migrate(ctx, false); err != nil {
			t.Fatal(err)
		}

		for sess, want := range map[string]string{"session-1": "b:1 c:2 a:3", "session-2": "z:1"} {
			evs, err := s.EventsBySeq(ctx, s.DB, sess, 0, 10, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, fmt.Sprintf("%s:%d", e.ID, e.Seq))
			}
			if strings.Join(got, " ") != want {
				t.Errorf("%s: %s; want %s", sess, strings.Join(got, " "), want)
			}
		}
		all, err := s.ListMemories(ctx, s.DB, store.MemoryFilter{All: true, Oldest: true})
		if err != nil || len(all) != 4 {
			t.Fatalf("memories %+v, %v", all, err)
		}
		var got []string
		for _, m := range all {
			got = append(got, m.Text+":"+m.State)
			if m.Scope != "" || m.Lesson != "" || m.TaskID != "" || m.PromotedFromID != 0 {
				t.Errorf("%s: new columns not empty: %+v", m.Text, m)
			}
		}
		if want := "live:active superseded:superseded forgotten:deleted quarantined:active"; strings.Join(got, " ") != want {
			t.Fatalf("states %s; want %s", strings.Join(got, " "), want)
		}
		if live, _ := s.ListMemories(ctx, s.DB, store.MemoryFilter{}); len(live) != 1 || live[0].Text != "live" {
			t.Fatalf("live after 019: %+v", live)
		}
		if sess, err := s.GetSession(ctx, "session-1"); err != nil || sess.Nudges != 0 {
			t.Fatalf("session after 019: %+v, %v", sess, err)
		}
	})
}
