package api_test

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// GET /v1/notices with a session serves that session's own notices (the
// missed-task nudge) once, beside the memory notices, and to no other
// session.
func TestNoticesServeASessionsNudgeOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		srv := memoryServer(t, s, apiToken)
		auth := bearer(apiToken)
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			for _, id := range []string{"session-1", "session-2"} {
				if _, _, err := s.LockSession(ctx, tx, id, "/w", time.Now()); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.InsertSessionNotice(ctx, s.DB, store.SessionNotice{SessionID: "session-1", Kind: store.NoticeNudge,
			Text: "This turn did substantive work (8 tool calls) and no task covers it.", Turn: 3, RecordedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		var n memories.Notices
		expect(t, serve(srv, "GET", "/v1/notices?workspace=/w&session=session-2&after=0", "", auth), http.StatusOK, &n)
		if len(n.Notices) != 0 {
			t.Fatalf("session-2 got %+v", n.Notices)
		}
		expect(t, serve(srv, "GET", "/v1/notices?workspace=/w&session=session-1&after=0", "", auth), http.StatusOK, &n)
		if len(n.Notices) != 1 || n.Notices[0].Kind != "nudge" || n.Notices[0].Text == "" {
			t.Fatalf("session-1's notices %+v; want its nudge", n.Notices)
		}
		expect(t, serve(srv, "GET", "/v1/notices?workspace=/w&session=session-1&after=0", "", auth), http.StatusOK, &n)
		if len(n.Notices) != 0 {
			t.Fatalf("the nudge was served twice: %+v", n.Notices)
		}
	})
}
