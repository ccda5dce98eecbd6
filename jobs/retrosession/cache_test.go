package retrosession_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// cacheRetros is how many retros each measure runs; the first warms the
// cache and is left out, the others run concurrently.
const cacheRetros = 20

// TestCacheShare measures how much of the retros' input DeepSeek's prefix
// cache serves, with the fake emulating it (64-token units, one cache per
// model): retro.Prompt comes first and byte-identical, so from the second
// retro on, every call should hit at least its whole units. Print the
// figures with
//
//	go test ./jobs/retrosession -run TestCacheShare -v
//
// Two measures, each over retros 2..20 of different sessions: sessions of
// the fixtures' size (excerpts of a few hundred to ~1,500 characters), where
// the prompt is most of the input and more than half must hit; and sessions
// whose excerpt fills retro.DefaultCaps.MaxChars, where the excerpt weighs
// as much as the prompt: that share is logged, and only the prompt's units
// are required to hit.
func TestCacheShare(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := startWith(t, s, fakeds.Options{}, config.JobOverride{})
		svc := ingest.New(s, ingest.Hooks{})
		system := fakeds.PromptTokens([]fakeds.Message{{Role: "system", Content: retro.Prompt}})
		// The prompt's whole units: its tokens and the user message's begin
		// and role tokens are the prefix every retro shares.
		prefix := (system + 2) / 64 * 64

		typical := measureCache(t, e, svc, "/home/dev/typical", typicalSession)
		full := measureCache(t, e, svc, "/home/dev/full", fullSession)
		for _, m := range []cacheMeasure{typical, full} {
			t.Logf("%-8s excerpts: cache hits %d of %d prompt tokens over retros 2..%d = %.1f%% (prompt %d tokens, %d of them cacheable; input %d tokens a call on average)",
				m.name, m.hit, m.prompt, cacheRetros, 100*m.share(), system, prefix, m.prompt/int64(cacheRetros-1))
			if m.minHit < int64(prefix) {
				t.Errorf("%s: a retro hit %d cached tokens, fewer than the prompt's %d: the prompt is not a stable prefix", m.name, m.minHit, prefix)
			}
		}
		if typical.share() <= 0.5 {
			t.Errorf("cache-hit share of typical retros %.3f, want > 0.5", typical.share())
		}
	})
}

// cacheMeasure sums the llm_calls of retros 2..N of one workspace.
type cacheMeasure struct {
	name        string
	hit, prompt int64
	// minHit is the fewest cache-hit tokens of one call.
	minHit int64
}

func (m cacheMeasure) share() float64 { return float64(m.hit) / float64(m.prompt) }

// measureCache runs cacheRetros retros of different sessions in workspace:
// the first alone, to warm the cache, then the others at once; and it sums
// the others' llm_calls.
func measureCache(t *testing.T, e *env, svc *ingest.Service, workspace string, events func(i int) []cacheEvent) cacheMeasure {
	t.Helper()
	ctx := context.Background()
	name := workspace[strings.LastIndex(workspace, "/")+1:]
	var params []river.InsertManyParams
	for i := range cacheRetros {
		id := fmt.Sprintf("%s-%02d", name, i)
		ingestCacheSession(t, svc, workspace, id, events(i))
		params = append(params, river.InsertManyParams{Args: retrosession.Args{SessionID: id}})
	}
	res, err := e.client.InsertMany(ctx, params[:1])
	if err != nil {
		t.Fatal(err)
	}
	warm := res[0].Job.ID
	waitCompleted(t, e, warm)
	if res, err = e.client.InsertMany(ctx, params[1:]); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	waitCompleted(t, e, ids...)
	calls, err := e.s.ListLLMCalls(ctx, store.LLMCallFilter{Kind: "retro_session", Workspace: workspace, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != cacheRetros {
		t.Fatalf("%s: %d calls recorded, want %d", name, len(calls), cacheRetros)
	}
	m := cacheMeasure{name: name, minHit: -1}
	for _, c := range calls {
		if c.JobID == warm {
			continue
		}
		m.hit += c.CacheHitTokens
		m.prompt += c.PromptTokens
		if m.minHit < 0 || c.CacheHitTokens < m.minHit {
			m.minHit = c.CacheHitTokens
		}
	}
	return m
}

// waitCompleted waits until every job of ids completed; one that ends
// otherwise fails the test.
func waitCompleted(t *testing.T, e *env, ids ...int64) {
	t.Helper()
	left := map[int64]bool{}
	for _, id := range ids {
		left[id] = true
	}
	for len(left) > 0 {
		ev := enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			return left[ev.Job.ID] && ev.Job.FinalizedAt != nil
		})
		if ev.Job.State != rivertype.JobStateCompleted {
			t.Fatalf("retro job %d ended %s: %v", ev.Job.ID, ev.Job.State, ev.Job.Errors)
		}
		delete(left, ev.Job.ID)
	}
}

// cacheEvent is one event of a synthetic session, before its ids and times.
type cacheEvent struct {
	typ     events.Type
	payload any
}

// typicalSession is session i of the fixtures' size: a task, one to three
// failed go test runs with a few lines of output, and the agent's notes.
func typicalSession(i int) []cacheEvent {
	pkg := fmt.Sprintf("internal/pkg%02d", i)
	evs := []cacheEvent{{events.UserMessage, events.MessagePayload{Text: fmt.Sprintf("Task %d: the tests of %s fail since the last merge; find out why and fix them.", i, pkg)}}}
	for k := range 1 + i%3 {
		exit := 1
		evs = append(evs,
			cacheEvent{events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: fmt.Sprintf("go test ./%s/... -run Test%d", pkg, k),
				ExitCode: &exit, IsError: true, Output: strings.Repeat(fmt.Sprintf("--- FAIL: TestCase%d_%d (0.0%ds)\n", i, k, k), 2+i%4)}},
			cacheEvent{events.AssistantMessage, events.MessagePayload{Text: fmt.Sprintf("Attempt %d on %s: the fixture path changed; updating it.", k+1, pkg)}})
	}
	return append(evs, cacheEvent{events.AssistantMessage, events.MessagePayload{Text: fmt.Sprintf("Fixed %s: the tests pass again.", pkg)}})
}

// fullSession is session i with more evidence than an excerpt holds: its
// excerpt is cut to retro.DefaultCaps.MaxChars.
func fullSession(i int) []cacheEvent {
	var evs []cacheEvent
	for k := range 12 {
		exit := 2
		evs = append(evs,
			cacheEvent{events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: fmt.Sprintf("make -C service%02d test%d", i, k),
				ExitCode: &exit, IsError: true, Output: strings.Repeat(fmt.Sprintf("service%02d step %d: connection refused to db:5432; ", i, k), 8)}},
			cacheEvent{events.AssistantMessage, events.MessagePayload{Text: strings.Repeat(fmt.Sprintf("Session %d, try %d: the database is not up yet, retrying after starting it. ", i, k), 4)}})
	}
	return evs
}

// ingestCacheSession stores a primary session of evs, started and ended.
func ingestCacheSession(t *testing.T, svc *ingest.Service, workspace, id string, evs []cacheEvent) {
	t.Helper()
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	mk := func(n int, typ events.Type, payload any) events.Event {
		b, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: workspace,
			Time: t0.Add(time.Duration(n) * time.Second), Payload: b}
	}
	batch := []events.Event{mk(0, events.SessionStart, events.SessionStartPayload{Title: id})}
	for _, ev := range evs {
		batch = append(batch, mk(len(batch), ev.typ, ev.payload))
	}
	batch = append(batch, mk(len(batch), events.SessionEnd, events.SessionEndPayload{Reason: "completed"}))
	if _, err := svc.IngestBatch(context.Background(), batch, store.SourcePush); err != nil {
		t.Fatal(err)
	}
}
