package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
)

// Many sessions ending at once in many workspaces, each workspace with
// room of its own: budget.global still bounds what they spend together.
// The retros that do not fit wait (snoozed until the day resets).
func TestGlobalCapBoundsManyWorkspaces(t *testing.T) {
	const sessions = 12
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience(t))
			defer cancel()
			url := migratedDB(t, ctx, dialect)
			fake := fakeds.New(fakeds.Options{})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			const global = 15000 // a retro reserves its prompt + 3000 tokens: a few fit
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			t.Setenv("MULL_BUDGET_GLOBAL", fmt.Sprint(global))
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")

			a := openWorking(t, ctx, url)
			defer stopWorking(t, a)
			evs, stop := a.client.Subscribe(river.EventKindJobCompleted, river.EventKindJobSnoozed, river.EventKindJobFailed)
			defer stop()
			now := time.Now().UTC().Truncate(time.Second)
			var batch []events.Event
			for i := range sessions {
				id, ws := fmt.Sprintf("session-cap-%02d", i), fmt.Sprintf("/home/dev/ws-%02d", i)
				ev := func(n int, typ events.Type, payload string) events.Event {
					return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: ws,
						Time: now.Add(time.Duration(n-10) * time.Second), Payload: json.RawMessage(payload)}
				}
				batch = append(batch,
					ev(0, events.SessionStart, `{"title":"fix the build"}`),
					ev(1, events.UserMessage, `{"text":"run the tests"}`),
					ev(2, events.SessionEnd, `{"reason":"completed"}`))
			}
			if _, err := a.ingest.IngestBatch(ctx, batch, store.SourcePush); err != nil {
				t.Fatal(err)
			}
			seen := map[int64]string{}
			for len(seen) < sessions {
				select {
				case e := <-evs:
					if e.Job != nil && e.Job.Kind == "retro_session" {
						if _, ok := seen[e.Job.ID]; !ok {
							seen[e.Job.ID] = string(e.Kind)
						}
					}
				case <-ctx.Done():
					t.Fatalf("%d of %d retros finished or waited: %v", len(seen), sessions, ctx.Err())
				}
			}
			completed := 0
			for _, k := range seen {
				if k == string(river.EventKindJobCompleted) {
					completed++
				}
			}
			rows, err := a.ledger.Report(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range rows {
				if r.Key == "global" {
					found = true
					if r.LimitTokens != global || r.SpentTokens == 0 || r.SpentTokens+r.ReservedTokens > global {
						t.Fatalf("global: %+v", r)
					}
				}
			}
			if !found {
				t.Fatalf("no global key in the report: %+v", rows)
			}
			calls := len(fake.Requests())
			t.Logf("%d retros ran, %d waited; %d calls", completed, sessions-completed, calls)
			if completed == 0 || completed == sessions || calls != completed {
				t.Fatalf("%d of %d retros ran with %d calls under a global cap of %d tokens", completed, sessions, calls, global)
			}
		})
	}
}
