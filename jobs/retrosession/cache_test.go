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
	"github.com/mullhq/mull/llm/fakeds"
	memsvc "github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// cacheRetros is how many retros each measure runs after the digest is
// published; the first two warm the cache and are left out, the others run
// concurrently. cacheHistory is how many retros before them filled the
// workspace's library.
const (
	cacheRetros  = 20
	cacheWarm    = 2
	cacheHistory = 30
)

// TestCacheShare measures how much of the retros' input DeepSeek's prefix
// cache serves, with the fake emulating it as DeepSeek's guide describes
// (fakeds.prefixCache: units persisted at each request's ends, at the
// prefixes requests share once a second request reveals them, and at fixed
// intervals; hits in whole 64-token units). Print the figures with
//
//	go test ./jobs/retrosession -run TestCacheShare -v
//
// A retro's prompt is the fixed instructions, then the workspace's library
// as its digest last published it, then the excerpt. The measure is the
// steady state of one workspace: cacheHistory sessions' retros filled its
// library, DSH read its digest (which publishes it), and cacheRetros more
// sessions end. Their library is the same for all of them though each
// writes memories, since it is the one published at the watermark. The
// first of them finds the library new and the second reveals it as a
// common prefix (from then on DeepSeek serves it): they are logged and left
// out, and the others must hit at least the instructions and the library.
// Two measures: sessions of the fixtures' size (excerpts of a few hundred
// to ~1,500 characters), whose share must reach 85%; and sessions whose
// excerpt fills retro.DefaultCaps.MaxChars, logged.
func TestCacheShare(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := startWith(t, s, fakeds.Options{}, config.JobOverride{})
		svc := ingest.New(s, ingest.Hooks{})
		mem := memsvc.New(s, config.Memory{}, config.Digest{})
		typical := measureCache(t, e, svc, mem, "/home/dev/typical", typicalSession)
		full := measureCache(t, e, svc, mem, "/home/dev/full", fullSession)
		for _, m := range []cacheMeasure{typical, full} {
			t.Logf("%-8s excerpts: cache hits %d of %d prompt tokens over retros %d..%d = %.1f%% (%.1f%% with the %d warming ones); "+
				"instructions and library %d tokens (%d library ids), %d of them cacheable; input %d tokens a call on average",
				m.name, m.hit, m.prompt, cacheWarm+1, cacheRetros, 100*m.share(), 100*m.shareAll(), cacheWarm,
				m.fixed, m.ids, m.prefix, m.prompt/int64(cacheRetros-cacheWarm))
			// Full excerpts share long runs of section text, so which units
			// the cache holds (and so one retro's hit) depends on the order
			// concurrent retros arrive in: logged, not held to it.
			if m.minHit < int64(m.prefix) && m.name == "full" {
				t.Logf("%s: one retro hit only %d cached tokens (instructions and library %d): an earlier prompt's unit ended before them", m.name, m.minHit, m.prefix)
			} else if m.minHit < int64(m.prefix) {
				t.Errorf("%s: a retro hit %d cached tokens, fewer than the instructions and library's %d: they are not a stable prefix", m.name, m.minHit, m.prefix)
			}
			if m.ids < cacheHistory/2 {
				t.Errorf("%s: the library shows %d ids; the history's retros wrote more", m.name, m.ids)
			}
		}
		if typical.share() < 0.85 {
			t.Errorf("cache-hit share of typical steady-state retros %.3f, want >= 0.85", typical.share())
		}
	})
}

// cacheMeasure sums the llm_calls of the retros after the warming ones.
type cacheMeasure struct {
	name        string
	hit, prompt int64
	// warmHit and warmPrompt are the warming retros'.
	warmHit, warmPrompt int64
	// minHit is the fewest cache-hit tokens of one call.
	minHit int64
	// fixed is the tokens of the instructions and the library (and the
	// user message's begin and role), prefix its whole units, ids the
	// library's size.
	fixed, prefix, ids int
}

func (m cacheMeasure) share() float64 { return float64(m.hit) / float64(m.prompt) }

func (m cacheMeasure) shareAll() float64 {
	return float64(m.hit+m.warmHit) / float64(m.prompt+m.warmPrompt)
}

// measureCache fills workspace's library with cacheHistory retros, has its
// digest published, then runs cacheRetros retros of new sessions: the
// warming ones one by one, then the others at once. It sums their
// llm_calls.
func measureCache(t *testing.T, e *env, svc *ingest.Service, mem *memsvc.Service, workspace string, events func(i int) []cacheEvent) cacheMeasure {
	t.Helper()
	ctx := context.Background()
	name := workspace[strings.LastIndex(workspace, "/")+1:]
	run := func(from, n int) []int64 {
		var params []river.InsertManyParams
		for i := from; i < from+n; i++ {
			id := fmt.Sprintf("%s-%02d", name, i)
			ingestCacheSession(t, svc, workspace, id, events(i))
			params = append(params, river.InsertManyParams{Args: retrosession.Args{SessionID: id}})
		}
		res, err := e.client.InsertMany(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, len(res))
		for i, r := range res {
			ids[i] = r.Job.ID
		}
		waitCompleted(t, e, ids...)
		return ids
	}
	run(0, cacheHistory)
	d, err := mem.Digest(ctx, workspace) // DSH's next session reads it: published
	if err != nil {
		t.Fatal(err)
	}
	warm := map[int64]bool{}
	for i := range cacheWarm {
		warm[run(cacheHistory+i, 1)[0]] = true
	}
	measured := run(cacheHistory+cacheWarm, cacheRetros-cacheWarm)
	calls, err := e.s.ListLLMCalls(ctx, store.LLMCallFilter{Kind: "retro_session", Workspace: workspace, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != cacheHistory+cacheRetros {
		t.Fatalf("%s: %d calls recorded, want %d", name, len(calls), cacheHistory+cacheRetros)
	}
	m := cacheMeasure{name: name, minHit: -1}
	in := map[int64]bool{}
	for _, id := range measured {
		in[id] = true
	}
	for _, c := range calls {
		switch {
		case warm[c.JobID]:
			m.warmHit += c.CacheHitTokens
			m.warmPrompt += c.PromptTokens
		case in[c.JobID]:
			m.hit += c.CacheHitTokens
			m.prompt += c.PromptTokens
			if m.minHit < 0 || c.CacheHitTokens < m.minHit {
				m.minHit = c.CacheHitTokens
			}
		}
	}
	// The library every measured retro was shown: the one published.
	lib := publishedLibrary(t, e.s, workspace, d.Watermark)
	msgs := retrosession.Messages(lib, "")
	m.ids = len(lib.Shown)
	m.fixed = fakeds.PromptTokens([]fakeds.Message{{Role: msgs[0].Role, Content: msgs[0].Content}, {Role: msgs[1].Role, Content: msgs[1].Content}}) + 2
	m.prefix = m.fixed / 64 * 64
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
