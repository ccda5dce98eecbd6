package web_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// callsFixture records LLM calls as the llm client does: today and some
// days back, of two kinds, the newest with the prompt it kept.
func callsFixture(t *testing.T, e *env, n int) (newest store.LLMCall) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	for i := range n {
		kind := "retro_session"
		if i%3 == 2 {
			kind = "consolidate"
		}
		c := store.LLMCall{JobID: int64(1000 + i), Kind: kind, Workspace: "/work/proj", Model: "deepseek-v4-flash",
			PromptTokens: 1200, CacheHitTokens: 800, CacheMissTokens: 400, CompletionTokens: 300,
			CostNanoUSD: 250_000, LatencyMS: 900, Outcome: "ok",
			CreatedAt: now.Add(-time.Duration(i%4) * 24 * time.Hour).Add(-time.Duration(i) * time.Second)}
		if i == 0 {
			c.Messages = []store.LLMMessage{{Role: "system", Content: "mull-prompt: retro v1 <b>bold</b>"}, {Role: "user", Content: "the session excerpt"}}
			c.ID = "call_newest"
		}
		if i == 1 {
			c.Outcome, c.ErrorReason, c.Error = "retryable", "http_503", "DeepSeek is overloaded"
		}
		if err := e.S.InsertLLMCall(ctx, c); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			newest = c
		}
	}
	return newest
}

// workersFixture writes one live and one dead worker heartbeat.
func workersFixture(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	for _, w := range []store.Worker{
		{ClientID: "live", Host: "box-a", PID: 101, StartedAt: now.Add(-time.Hour), HeartbeatAt: now, Queues: []string{"default", "llm"}},
		{ClientID: "dead", Host: "box-b", PID: 202, StartedAt: now.Add(-3 * time.Hour), HeartbeatAt: now.Add(-2 * time.Hour), Queues: []string{"default"}},
	} {
		if err := e.S.Heartbeat(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
}

// The overview of a new mull says what to do next; with calls, workers, a
// paused queue and a dead letter, it shows each and links to the rows.
func TestPanelOverview(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		code, body := e.get(c, "/")
		if code != http.StatusOK {
			t.Fatalf("overview: %d\n%s", code, body)
		}
		wantIn(t, "empty overview", body, "No LLM calls yet", "mull dsh install", "nothing failed",
			"No worker process has a heartbeat", `href="/riverui/queues/llm"`, "database", "heartbeats")
		if strings.Contains(body, "data-chart") {
			t.Fatal("an overview without calls drew charts")
		}

		callsFixture(t, e, 9)
		workersFixture(t, e)
		if err := llm.PauseWithoutKey(context.Background(), e.Client, s.Driver(), []string{"maintenance"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		e.deadLetter(t, "overview")
		code, body = e.get(c, "/")
		if code != http.StatusOK {
			t.Fatalf("overview: %d\n%s", code, body)
		}
		today := time.Now().UTC().Format(time.DateOnly)
		wantIn(t, "overview", body, `data-chart=`, `class="chart"`, "retro_session", "consolidate",
			`href="/llm?day=`+today+`&amp;kind=retro_session"`, `1<span class="of"> live of 2`,
			`<span class="badge bad">paused</span>`, "no DEEPSEEK_API_KEY", "mull queues resume maintenance",
			`<a class="big" href="/dlq">1</a>`, `href="/dlq?kind=llm_probe"`, "box-a:101", ">dead<", "kind:llm_probe")
		if strings.Contains(body, "nothing failed") || strings.Contains(body, "No LLM calls yet") {
			t.Fatalf("a busy overview shows an empty state:\n%s", body)
		}
	})
}

// /llm lists call records with filters and pages; /llm/{id} shows one with
// its prompt, escaped; bad filters and unknown ids answer in place.
func TestPanelLLMCalls(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		code, body := e.get(c, "/llm")
		if code != http.StatusOK {
			t.Fatalf("/llm: %d\n%s", code, body)
		}
		wantIn(t, "empty /llm", body, "No LLM calls yet", "mull import")
		newest := callsFixture(t, e, 55)

		_, body = e.get(c, "/llm")
		wantIn(t, "/llm", body, `href="/llm/call_newest"`, "55 calls", `rel="next"`, "http_503")
		if n := strings.Count(body, `<a href="/llm/call_`); n != 50 {
			t.Fatalf("first page has %d calls, want 50", n)
		}
		_, body = e.get(c, "/llm?page=2")
		if n := strings.Count(body, `<a href="/llm/call_`); n != 5 || strings.Contains(body, `rel="next"`) {
			t.Fatalf("second page has %d calls (want 5) or a next link:\n%s", n, body)
		}
		today := time.Now().UTC().Format(time.DateOnly)
		_, body = e.get(c, "/llm?kind=consolidate&day="+today)
		if strings.Contains(body, ">retro_session<") || !strings.Contains(body, ">consolidate<") {
			t.Fatalf("kind and day filter:\n%s", body)
		}
		_, body = e.get(c, "/llm?kind=nothing")
		wantIn(t, "no match", body, "No LLM call matches these filters")

		code, body = e.get(c, "/llm/"+newest.ID)
		if code != http.StatusOK {
			t.Fatalf("/llm/%s: %d\n%s", newest.ID, code, body)
		}
		wantIn(t, "call", body, "mull-prompt: retro v1 &lt;b&gt;bold&lt;/b&gt;", "the session excerpt", `href="/riverui/jobs/1000"`)
		for path, want := range map[string]int{"/llm/call_nope": 404, "/llm?day=yesterday": 400, "/llm?since=soon": 400, "/llm?job=x": 400} {
			if code, body := e.get(c, path); code != want || !strings.Contains(body, `class="error"`) {
				t.Fatalf("%s: %d, want %d in place\n%s", path, code, want, body)
			}
		}
		if code, _ := e.get(e.httpClient(false), "/llm"); code != http.StatusSeeOther {
			t.Fatalf("/llm without a login: %d", code)
		}
	})
}

// The overview keeps the agent usage of its past days and reads them again
// when a usage event lands in one (an import of old logs), so a later
// visit counts every step: past day, today, and a late past one.
func TestPanelOverviewAgentDays(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		ctx := context.Background()
		now := time.Now().UTC()
		n := 0
		usage := func(at time.Time) {
			t.Helper()
			n++
			ev := store.Event{ID: fmt.Sprintf("usage-%d", n), SessionID: "sess-usage", Workspace: "/w/usage", Type: "usage", Time: at,
				Source: store.SourceImport, Payload: []byte(`{"model":"deepseek-v4-flash","input_tokens":1000,"cache_read_tokens":0,"output_tokens":10}`)}
			err := s.InTx(ctx, func(tx *sql.Tx) error {
				if _, _, err := s.LockSession(ctx, tx, ev.SessionID, ev.Workspace, now.AddDate(0, 0, -20)); err != nil {
					return err
				}
				_, err := s.InsertEvents(ctx, tx, []store.Event{ev})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		steps := func(want int) {
			t.Helper()
			code, body := e.get(c, "/")
			if code != http.StatusOK || !strings.Contains(body, fmt.Sprintf("the agent took %d model steps", want)) {
				t.Fatalf("overview, want %d steps: %d\n%s", want, code, body)
			}
		}
		usage(now.AddDate(0, 0, -3))
		usage(now.AddDate(0, 0, -3).Add(time.Minute))
		steps(2)
		steps(2) // kept
		usage(now)
		steps(3) // today, read afresh
		usage(now.AddDate(0, 0, -10))
		steps(4) // a late import into a past day
		usage(now.AddDate(0, 0, -40))
		steps(4) // before the window
	})
}
