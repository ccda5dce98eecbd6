package store_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestSubagentSessions: the non-primary sessions whose session_start names
// the parent (not a fork, which is primary), in its workspace, oldest
// first, the newest limit of them.
func TestSubagentSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		start := func(id, ws, payload string, at time.Time) {
			t.Helper()
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				sess, _, err := s.LockSession(ctx, tx, id, ws, at)
				if err != nil {
					return err
				}
				sess.Primary = !strings.Contains(payload, `"primary":false`) // as ingest sets it
				if err := s.SaveSession(ctx, tx, &sess); err != nil {
					return err
				}
				_, err = s.InsertEvents(ctx, tx, []store.Event{{ID: id + ":start", SessionID: id, Workspace: ws, Type: "session_start",
					Time: at, Payload: []byte(payload), Source: store.SourceImport, RecordedAt: at}})
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		start("parent", "/w", `{"primary":true}`, t0)
		start("child-b", "/w", `{"primary":false,"parent":"parent"}`, t0.Add(2*time.Minute))
		start("child-a", "/w", `{"primary":false,"parent":"parent"}`, t0.Add(time.Minute))
		start("other-child", "/w", `{"primary":false,"parent":"another"}`, t0.Add(time.Minute))
		start("elsewhere", "/x", `{"primary":false,"parent":"parent"}`, t0.Add(time.Minute))
		start("named", "/w", `{"title":"parent"}`, t0.Add(time.Minute))
		start("fork", "/w", `{"primary":true,"parent":"parent"}`, t0.Add(3*time.Minute)) // its own retro reads its failures

		got, err := s.SubagentSessions(ctx, "parent", "/w", 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []string{"child-a", "child-b"}) {
			t.Errorf("subagents %q, want child-a, child-b", got)
		}
		if got, _ := s.SubagentSessions(ctx, "parent", "/w", 1); !slices.Equal(got, []string{"child-b"}) {
			t.Errorf("limit 1 gave %q, want the newest", got)
		}
		if got, _ := s.SubagentSessions(ctx, "child-a", "/w", 0); len(got) != 0 {
			t.Errorf("a childless session has %q", got)
		}
	})
}
