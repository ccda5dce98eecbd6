package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
)

// A per-workspace budget set through the admin route holds on that
// workspace's next retro (snoozed by the budget, without a restart) while
// another workspace's retro runs.
func TestWorkspaceBudgetHoldsOnNextRetro(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience(t))
			defer cancel()
			dbu := migratedDB(t, ctx, dialect)
			fake := fakeds.New(fakeds.Options{})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")

			a := openWorking(t, ctx, dbu)
			defer stopWorking(t, a)
			apiSrv, err := api.New(ctx, api.Deps{Store: a.store, Client: a.client, Registry: a.reg, Logger: a.log,
				Config: a.cfg, Budget: a.ledger, Workspaces: a.workspaces})
			if err != nil {
				t.Fatal(err)
			}
			const limited, free = "/home/dev/ws-limited", "/home/dev/ws-free"
			req := httptest.NewRequest("PUT", "/v1/admin/workspaces/"+url.PathEscape(limited)+"/config", strings.NewReader(`{"budget": 100000}`))
			req.RemoteAddr, req.Host = "127.0.0.1:40000", "127.0.0.1:7788"
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			apiSrv.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("PUT budget: %d %s", rec.Code, rec.Body)
			}
			// Earlier today the workspace spent nearly all of it.
			r, err := a.ledger.Reserve(ctx, budget.Request{Workspace: limited, Kind: "retro_session", Tokens: 99000})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.ledger.Settle(ctx, r, budget.Usage{PromptTokens: 99000}); err != nil {
				t.Fatal(err)
			}

			evs, stop := a.client.Subscribe(river.EventKindJobCompleted, river.EventKindJobSnoozed, river.EventKindJobFailed, river.EventKindJobCancelled)
			defer stop()
			now := time.Now().UTC().Truncate(time.Second)
			var batch []events.Event
			for _, ws := range []string{limited, free} {
				id := "session" + strings.ReplaceAll(ws, "/", "-")
				ev := func(n int, typ events.Type, payload string) events.Event {
					return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: ws,
						Time: now.Add(time.Duration(n-10) * time.Second), Payload: json.RawMessage(payload)}
				}
				batch = append(batch, ev(0, events.SessionStart, `{"title":"fix the build"}`),
					ev(1, events.UserMessage, `{"text":"run the tests"}`), ev(2, events.SessionEnd, `{"reason":"completed"}`))
			}
			if _, err := a.ingest.IngestBatch(ctx, batch, store.SourcePush); err != nil {
				t.Fatal(err)
			}
			outcome := map[string]river.EventKind{}
			for len(outcome) < 2 {
				select {
				case e := <-evs:
					if e.Job == nil || e.Job.Kind != "retro_session" {
						continue
					}
					var args struct {
						SessionID string `json:"session_id"`
					}
					_ = json.Unmarshal(e.Job.EncodedArgs, &args)
					ws := limited
					if strings.Contains(args.SessionID, "free") {
						ws = free
					}
					if _, ok := outcome[ws]; !ok {
						outcome[ws] = e.Kind
					}
				case <-ctx.Done():
					t.Fatalf("retros: %v (%v)", outcome, ctx.Err())
				}
			}
			if outcome[limited] != river.EventKindJobSnoozed || outcome[free] != river.EventKindJobCompleted {
				t.Fatalf("outcomes %v: want %s's retro snoozed by its budget and %s's completed", outcome, limited, free)
			}
			rep, err := a.ledger.Report(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			refused := false
			for _, k := range rep {
				if k.Key == "workspace:"+limited && k.Refused > 0 {
					refused = true
				}
			}
			if !refused {
				t.Fatalf("no refusal counted on workspace:%s: %+v", limited, rep)
			}
		})
	}
}
