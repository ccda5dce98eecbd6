package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestDSHImportFiles(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		s.SetClock(func() time.Time { return now })
		if got, err := s.DSHImportFiles(ctx); err != nil || len(got) != 0 {
			t.Fatalf("empty table: %v, %v", got, err)
		}
		mtime := time.Date(2026, 11, 29, 11, 59, 58, 123456789, time.UTC) // nanoseconds survive
		f := store.DSHImportFile{
			Path: "/home/dev/.dsh/sessions/--home-dev-app--/session-1/session.jsonl.zstd", SessionID: "session-1",
			Workspace: "/home/dev/app", Offset: 4096, FrameSkip: 312, Lines: 40, LastSeq: 77, Turn: 2,
			PendingCalls: `{"call_1":{"tool":"bash","command":"go test"}}`, Events: 12, Size: 5000, ModTime: mtime,
			Error: "line 41: bad JSON", Damage: []string{"zstd frame at byte 100: does not decode", "zstd frame at byte 900: not a zstd frame"},
			Tail: "the zstd frame at byte 4096 is cut short: the file ends at byte 5000", Waiting: true,
		}
		if err := s.SaveDSHImportFile(ctx, f); err != nil {
			t.Fatal(err)
		}
		f.UpdatedAt = now
		requireFiles(t, s, f)

		// An update replaces every field; an unset mtime and pending list read back as zero and {}.
		now = now.Add(time.Minute)
		g := store.DSHImportFile{Path: f.Path, SessionID: "session-1", Workspace: "/home/dev/app", Offset: 9000, Lines: 80, LastSeq: 150}
		if err := s.SaveDSHImportFile(ctx, g); err != nil {
			t.Fatal(err)
		}
		g.PendingCalls, g.UpdatedAt = "{}", now
		other := store.DSHImportFile{Path: "/a/session.jsonl", LastSeq: -1}
		if err := s.SaveDSHImportFile(ctx, other); err != nil {
			t.Fatal(err)
		}
		other.PendingCalls, other.UpdatedAt = "{}", now
		requireFiles(t, s, other, g)
	})
}

func requireFiles(t *testing.T, s *store.Store, want ...store.DSHImportFile) {
	t.Helper()
	got, err := s.DSHImportFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d files, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("file %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// A session's import state is the worst of its files', with their reasons;
// a session mull never read a log of has none.
func TestSessionImport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		s.SetClock(func() time.Time { return now })
		if got, err := s.SessionImport(ctx, "pushed-only"); err != nil || got != nil {
			t.Fatalf("no file: %+v, %v", got, err)
		}
		save := func(f store.DSHImportFile) {
			t.Helper()
			if err := s.SaveDSHImportFile(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		check := func(want store.SessionImport) {
			t.Helper()
			got, err := s.SessionImport(ctx, "s1")
			if err != nil || got == nil || *got != want {
				t.Fatalf("import %+v, %v; want %+v", got, err, want)
			}
		}
		save(store.DSHImportFile{Path: "/h/a/session.jsonl.zstd", SessionID: "s1"})
		check(store.SessionImport{State: store.ImportComplete, CheckedAt: now})

		now = now.Add(time.Minute)
		tail := "the zstd frame at byte 10 is cut short: the file ends at byte 20"
		save(store.DSHImportFile{Path: "/h/a/session.jsonl.zstd", SessionID: "s1", Tail: tail, Waiting: true})
		check(store.SessionImport{State: store.ImportWaiting, Reason: "DSH is still writing it: " + tail, CheckedAt: now})

		save(store.DSHImportFile{Path: "/h/a/session.jsonl.zstd", SessionID: "s1", Tail: tail})
		check(store.SessionImport{State: store.ImportIncomplete, Reason: "the log is cut short: " + tail, CheckedAt: now})

		// Damage stays incomplete, whatever the tail does; a second file adds its reason.
		bad := "/h/a/session.jsonl.zstd: zstd frame at byte 4: not a zstd frame"
		save(store.DSHImportFile{Path: "/h/a/session.jsonl.zstd", SessionID: "s1", Damage: []string{bad}, Tail: tail, Waiting: true})
		save(store.DSHImportFile{Path: "/h/b/session.jsonl", SessionID: "s1", Error: "line 3: bad JSON"})
		save(store.DSHImportFile{Path: "/h/c/session.jsonl", SessionID: "other", Error: "line 1: bad JSON"})
		check(store.SessionImport{State: store.ImportIncomplete, Reason: bad + "; line 3: bad JSON", CheckedAt: now})
	})
}
