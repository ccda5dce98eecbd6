package store_test

import (
	"context"
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
			Error: "line 41: bad JSON",
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
		if got[i] != want[i] {
			t.Errorf("file %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}
