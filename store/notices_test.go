package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A session's notice is stored once per turn and kind, served once, oldest
// first, and only to its own session.
func TestSessionNotices(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			for _, id := range []string{"session-1", "session-2"} {
				if _, _, err := s.LockSession(ctx, tx, id, "/w", t0); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		add := func(session string, turn int, text string) bool {
			t.Helper()
			_, ok, err := s.InsertSessionNotice(ctx, s.DB, store.SessionNotice{SessionID: session, Kind: store.NoticeNudge,
				Text: text, Turn: turn, RecordedAt: t0.Add(time.Duration(turn) * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !add("session-1", 3, "third") || !add("session-1", 5, "fifth") || !add("session-2", 3, "other") {
			t.Fatal("a new notice was not stored")
		}
		if add("session-1", 3, "third again") {
			t.Fatal("a second nudge for turn 3 was stored")
		}
		got, err := s.TakeSessionNotices(ctx, s.DB, "session-1", t0.Add(time.Hour))
		if err != nil || len(got) != 2 || got[0].Text != "third" || got[1].Text != "fifth" || got[0].Turn != 3 ||
			got[0].Kind != store.NoticeNudge || !got[0].ServedAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("taken %+v, %v; want third then fifth, served now", got, err)
		}
		if again, err := s.TakeSessionNotices(ctx, s.DB, "session-1", t0.Add(2*time.Hour)); err != nil || len(again) != 0 {
			t.Fatalf("served twice: %+v, %v", again, err)
		}
		if other, _ := s.TakeSessionNotices(ctx, s.DB, "session-2", t0); len(other) != 1 || other[0].Text != "other" {
			t.Fatalf("session-2's notices %+v", other)
		}
		all, err := s.ListSessionNotices(ctx, s.DB, "session-1")
		if err != nil || len(all) != 2 || all[1].ServedAt.IsZero() {
			t.Fatalf("listed %+v, %v", all, err)
		}
		for _, bad := range []store.SessionNotice{{Kind: "nudge", Text: "x", RecordedAt: t0}, {SessionID: "session-1", Text: "x", RecordedAt: t0},
			{SessionID: "session-1", Kind: "nudge", RecordedAt: t0}, {SessionID: "session-1", Kind: "nudge", Text: "x"}} {
			if _, _, err := s.InsertSessionNotice(ctx, s.DB, bad); err == nil {
				t.Errorf("bad notice %+v stored", bad)
			}
		}
	})
}
