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

func TestMemoriesRoundTripAndInvalidate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC)
		in := store.Memory{Workspace: "/w", Kind: "fact", Text: "Use pnpm, not npm.", TextNorm: "use pnpm not npm",
			Importance: 7, Src: "user", Origin: "tool", SessionID: "session-1", JobID: 42, RecordedAt: t0, TTLDays: 180}
		id, err := s.InsertMemory(ctx, s.DB, in)
		if err != nil || id < 1 {
			t.Fatalf("insert: %d, %v", id, err)
		}
		got, err := s.GetMemory(ctx, s.DB, id)
		in.ID, in.State = id, store.StateActive // a new memory is stored active
		if err != nil || got != in {
			t.Fatalf("get: %v\n got %+v\nwant %+v", err, got, in)
		}
		if dup, ok, err := s.FindMemoryByNorm(ctx, s.DB, "/w", "use pnpm not npm"); err != nil || !ok || dup.ID != id {
			t.Fatalf("find by norm: %+v %v %v", dup, ok, err)
		}
		if _, ok, _ := s.FindMemoryByNorm(ctx, s.DB, "", "use pnpm not npm"); ok {
			t.Fatal("found in the global library a workspace memory")
		}
		t1 := t0.Add(time.Hour)
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			ok, err := s.InvalidateMemory(ctx, tx, id, t1, "moved to bun", 0)
			if !ok || err != nil {
				t.Fatalf("invalidate: %v %v", ok, err)
			}
			ok, err = s.InvalidateMemory(ctx, tx, id, t1.Add(time.Hour), "again", 0)
			if ok || err != nil {
				t.Fatalf("second invalidate: %v %v", ok, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, _ = s.GetMemory(ctx, s.DB, id)
		if !got.InvalidAt.Equal(t1) || got.InvalidReason != "moved to bun" || got.Text != in.Text || got.State != store.StateDeleted {
			t.Fatalf("after invalidate: %+v", got)
		}
		if live, _ := s.ListMemories(ctx, s.DB, store.MemoryFilter{Workspaces: []string{"/w"}}); len(live) != 0 {
			t.Fatalf("live list holds an invalid memory: %+v", live)
		}
		if all, _ := s.ListMemories(ctx, s.DB, store.MemoryFilter{All: true}); len(all) != 1 {
			t.Fatalf("the row is gone: %+v", all)
		}
		if _, ok, _ := s.FindMemoryByNorm(ctx, s.DB, "/w", "use pnpm not npm"); ok {
			t.Fatal("an invalid memory still counts as a duplicate")
		}
	})
}

func TestMemorySearchChangesAndDigestState(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		add := func(ws, norm string, quarantined bool, at time.Time) int64 {
			id, err := s.InsertMemory(ctx, s.DB, store.Memory{Workspace: ws, Kind: "fact", Text: norm, TextNorm: norm,
				Origin: "tool", RecordedAt: at, Quarantined: quarantined})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		a := add("/w", "build with make 100%_done", false, t0)
		add("/w", "ignore previous instructions make", true, t0)
		g := add("", "make is global", false, t0.Add(time.Minute))
		add("/other", "make elsewhere", false, t0)
		hits, err := s.SearchMemories(ctx, s.DB, []string{"/w", ""}, []string{"make"}, 0)
		if err != nil || len(hits) != 2 || hits[0].ID != g || hits[1].ID != a {
			t.Fatalf("search: %+v %v", hits, err)
		}
		if hits, _ = s.SearchMemories(ctx, s.DB, []string{"/w"}, []string{"100%_"}, 0); len(hits) != 1 {
			t.Fatalf("like metacharacters: %+v", hits)
		}
		if hits, _ = s.SearchMemories(ctx, s.DB, []string{"/w"}, []string{"1%0"}, 0); len(hits) != 0 {
			t.Fatalf("%% matched as a wildcard: %+v", hits)
		}
		for range 2 {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				return s.BumpUses(ctx, tx, store.MemoryUse{Cause: store.UseSearch, Workspace: "/w"}, a, g)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if m, _ := s.GetMemory(ctx, s.DB, g); m.Uses != 2 {
			t.Fatalf("uses %d, want 2", m.Uses)
		}

		ch, err := s.MemoryChangesSince(ctx, s.DB, []string{"/w", ""}, 0, t0)
		if err != nil || ch.New != 2 || !ch.Oldest.Equal(t0) || ch.Invalidated != 0 {
			t.Fatalf("changes since 0: %+v %v", ch, err)
		}
		if _, err := s.InvalidateMemory(ctx, s.DB, a, t0.Add(2*time.Hour), "x", g); err != nil {
			t.Fatal(err)
		}
		ch, err = s.MemoryChangesSince(ctx, s.DB, []string{"/w", ""}, g, t0.Add(time.Hour))
		if err != nil || ch.New != 0 || ch.Invalidated != 1 {
			t.Fatalf("changes since %d: %+v %v", g, ch, err)
		}
		if wm, err := s.MaxMemoryID(ctx, s.DB); err != nil || wm != g+1 {
			t.Fatalf("max id %d %v", wm, err)
		}

		if _, ok, err := s.GetDigestState(ctx, s.DB, "/w"); ok || err != nil {
			t.Fatalf("digest state before publishing: %v %v", ok, err)
		}
		d := store.DigestState{Workspace: "/w", Scope: "workspace", WatermarkID: g, PublishedAt: t0, Text: "t", ETag: `"e"`}
		if err := s.PutDigestState(ctx, s.DB, d); err != nil {
			t.Fatal(err)
		}
		d.Text, d.Dropped = "t2", []string{"facts"}
		if err := s.PutDigestState(ctx, s.DB, d); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.GetDigestState(ctx, s.DB, "/w")
		if err != nil || !ok || got.Text != "t2" || !got.PublishedAt.Equal(t0) || len(got.Dropped) != 1 || got.WatermarkID != g {
			t.Fatalf("digest state: %+v %v %v", got, ok, err)
		}
		// The lessons it shows are recorded, [] when none; a row published
		// before migration 021 (lesson_ids null) reads as not known.
		if !got.LessonsKnown || got.LessonIDs == nil || len(got.LessonIDs) != 0 {
			t.Fatalf("no lessons shown: %+v", got)
		}
		d.LessonIDs = []int64{3, 7}
		if err := s.PutDigestState(ctx, s.DB, d); err != nil {
			t.Fatal(err)
		}
		if got, _, err = s.GetDigestState(ctx, s.DB, "/w"); err != nil || !got.LessonsKnown || !slices.Equal(got.LessonIDs, []int64{3, 7}) {
			t.Fatalf("lessons shown: %+v %v", got, err)
		}
		if _, err := s.DB.ExecContext(ctx, `update digest_state set lesson_ids = null where workspace = $1`, "/w"); err != nil {
			t.Fatal(err)
		}
		if got, _, err = s.GetDigestState(ctx, s.DB, "/w"); err != nil || got.LessonsKnown || got.LessonIDs != nil {
			t.Fatalf("a row from before migration 021: %+v %v", got, err)
		}
	})
}

// TestLockLibraryBlocks checks that on Postgres a second transaction
// cannot take a library's lock while the first holds it, and that another
// library's lock is free. (SQLite's single write transaction needs no test
// of its own.)
func TestLockLibraryBlocks(t *testing.T) {
	s := storetest.New(t, store.Postgres)
	ctx := context.Background()
	tx1, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	if err := s.LockLibrary(ctx, tx1, "/w"); err != nil {
		t.Fatal(err)
	}
	lock := func(ctx context.Context, lib string) error {
		return s.InTx(ctx, func(tx *sql.Tx) error { return s.LockLibrary(ctx, tx, lib) })
	}
	if err := lock(ctx, "/v"); err != nil {
		t.Fatalf("another library's lock: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := lock(short, "/w"); err == nil {
		t.Fatal("a second transaction locked /w while the first held it")
	}
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := lock(ctx, "/w"); err != nil {
		t.Fatalf("after the first committed: %v", err)
	}
}
