package retrosession_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

const ws = "/home/dev/proj"

type env struct {
	s      *store.Store
	fake   *fakeds.Server
	worker *retrosession.Worker
	client *engine.Client
	events <-chan *river.Event
}

// fast retries a failed retro at once, and only once.
var fast = config.JobOverride{Backoff: config.Duration(10 * time.Millisecond), MaxAttempts: 2}

// start runs retro_session jobs against the fake DeepSeek with a ledger on s.
func start(t *testing.T, s *store.Store, script *fakeds.Script) *env {
	t.Helper()
	return startRetros(t, s, retros{llm: llmtest.Options{Fake: fakeds.Options{Script: script}}, jobs: fast})
}

// retros says what startRetros runs: the fake and the llm client, the
// override of each retro kind, and the workers' memory scope.
type retros struct {
	llm  llmtest.Options
	jobs config.JobOverride
	// withError works retro_error jobs too, with the same override.
	withError bool
	scope     memory.Scope
	tempDirs  []string
	// beforeApply holds each retro_session between its answer and its
	// apply (retrosession.SetBeforeApply).
	beforeApply func()
	// noGate turns the precedent gate off (reflection.precedent_gate false).
	noGate bool
}

// startRetros starts a working client for retro_session jobs, and
// retro_error jobs if asked, against the fake DeepSeek with a ledger on s.
func startRetros(t *testing.T, s *store.Store, r retros) *env {
	t.Helper()
	l := llmtest.New(t, s, r.llm)
	overrides := map[string]config.JobOverride{"retro_session": r.jobs}
	if r.withError {
		overrides["retro_error"] = r.jobs
	}
	reg := engine.NewRegistry(overrides)
	w := &retrosession.Worker{Store: s, LLM: l.LLM, Logger: enginetest.Logger(), Scope: r.scope, TempDirs: r.tempDirs,
		NoPrecedentGate: r.noGate}
	if r.beforeApply != nil {
		retrosession.SetBeforeApply(w, r.beforeApply)
	}
	engine.Add(reg, retrosession.Spec, w)
	if r.withError {
		engine.Add(reg, retroerror.Spec, &retroerror.Worker{Store: s, LLM: l.LLM, Logger: enginetest.Logger(), Scope: r.scope, TempDirs: r.tempDirs})
	}
	client := enginetest.NewClient(t, s, reg, l.Config, true)
	e := &env{s: s, fake: l.Fake, worker: w, client: client, events: enginetest.Events(t, client)}
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	return e
}

// session stores a primary session with a failing go test and its end.
func session(t *testing.T, s *store.Store, id string) {
	t.Helper()
	ingestSession(t, ingest.New(s, ingest.Hooks{}), id, true)
}

func ingestSession(t *testing.T, svc *ingest.Service, id string, primary bool) {
	t.Helper()
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	mk := func(n int, typ events.Type, payload string) events.Event {
		return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: ws,
			Time: t0.Add(time.Duration(n) * time.Second), Payload: json.RawMessage(payload)}
	}
	batch := []events.Event{
		mk(0, events.SessionStart, fmt.Sprintf(`{"title":"fix the build","primary":%t}`, primary)),
		mk(1, events.UserMessage, `{"text":"run the tests"}`),
		mk(2, events.ToolResult, `{"tool":"bash","command":"go test ./...","exit_code":1,"is_error":true,"output":"no required module provides package"}`),
		mk(3, events.SessionEnd, `{"reason":"completed"}`),
	}
	if _, err := svc.IngestBatch(context.Background(), batch, store.SourcePush); err != nil {
		t.Fatal(err)
	}
}

func (e *env) run(t *testing.T, sessionID string) int64 {
	t.Helper()
	res, err := e.client.Insert(context.Background(), retrosession.Args{SessionID: sessionID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if row := enginetest.WaitFinal(t, e.events, res.Job.ID); row.State != rivertype.JobStateCompleted {
		t.Fatalf("retro job %d ended %s: %v", res.Job.ID, row.State, row.Errors)
	}
	return res.Job.ID
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var answer = retro.Output{
	Lessons:   []retro.Entry{{Text: "go test failed with 'no required module provides package' -> ran outside the module root -> cd to the directory holding go.mod first", Importance: 7}},
	Facts:     []retro.Entry{{Text: "the repo uses pnpm, not npm"}},
	Methods:   []retro.Entry{{Text: "Flaky integration test -> rerun it alone with -count=1 -> separates shared state from timing."}},
	Handoff:   []string{"Fixed the module path.", "Tests pass on SQLite.", "Next: run them on Postgres."},
	Supersede: []retro.Supersede{{Kind: "facts", Text: "the repo uses npm"}},
	Playbooks: []retro.Playbook{{Slug: "fix-module-root", Steps: []string{"cd to the directory holding go.mod", "go test ./..."}}},
	Proposal:  retro.Proposals{{Summary: "run go test from the module root in the agent's test command"}},
}

func script(content, finish string) *fakeds.Script {
	return &fakeds.Script{Rules: []fakeds.Rule{{Kind: "retro_session", Response: &fakeds.Response{Content: content, FinishReason: finish}}}}
}

func seed(t *testing.T, s *store.Store, kind, text string) int64 {
	t.Helper()
	id, err := s.InsertMemory(context.Background(), s.DB, store.Memory{Workspace: ws, Kind: kind, Text: text,
		TextNorm: strings.ToLower(text), Origin: "tool", RecordedAt: time.Now().UTC().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func memories(t *testing.T, s *store.Store) []store.Memory {
	t.Helper()
	ms, err := s.ListMemories(context.Background(), s.DB, store.MemoryFilter{Workspaces: []string{ws}, All: true, Oldest: true})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// One retro adds its entries with origin retro, bumps a duplicate,
// supersedes with a reason and a link, and leaves the handoff; running the
// same job again changes nothing; a second session's retro saying the same
// bumps instead of adding and replaces the handoff.
func TestRetroAppliesOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := start(t, s, script(mustJSON(answer), ""))
		oldFact := seed(t, s, "fact", "the repo uses npm")
		method := seed(t, s, "method", "flaky integration test -> rerun it alone with -count=1 -> separates shared state from timing")
		session(t, s, "session-1")
		id := e.run(t, "session-1")

		ms := memories(t, s)
		byText := map[string]store.Memory{}
		for _, m := range ms {
			byText[m.Text] = m
		}
		if len(ms) != 4 {
			t.Fatalf("%d memories, want 4 (2 seeded, a lesson and a fact added): %+v", len(ms), ms)
		}
		lesson, fact := byText[storedLesson(t, answer.Lessons[0].Text)], byText[answer.Facts[0].Text]
		for _, m := range []store.Memory{lesson, fact} {
			if m.ID == 0 || m.Origin != "retro" || m.JobID != id || m.SessionID != "session-1" || m.Uses != 0 {
				t.Fatalf("added memory %+v", m)
			}
		}
		if m := byText["flaky integration test -> rerun it alone with -count=1 -> separates shared state from timing"]; m.ID != method || m.Uses != 1 {
			t.Fatalf("duplicate method not bumped: %+v", m)
		}
		// The bump's row in the use log: the retro, its job and session.
		if us, err := s.MemoryUses(ctx, s.DB, store.MemoryUseFilter{MemoryID: method}); err != nil || len(us) != 1 ||
			us[0].Cause != store.UseRetro || us[0].JobID != id || us[0].SessionID != "session-1" || us[0].Workspace != ws {
			t.Fatalf("use log of the bumped method: %+v, %v", us, err)
		}
		if m := byText["the repo uses npm"]; m.ID != oldFact || m.InvalidAt.IsZero() || m.InvalidReason != retro.SupersedeReason(retro.Source{SessionID: "session-1", JobID: id}) || m.SupersededBy != fact.ID {
			t.Fatalf("superseded fact %+v, want invalid, linked to %d", m, fact.ID)
		}
		h, ok, err := s.GetHandoff(ctx, s.DB, ws)
		if !ok || err != nil || h.Text != strings.Join(answer.Handoff, "\n") || h.SessionID != "session-1" || h.JobID != id {
			t.Fatalf("handoff %+v, %v, %v", h, ok, err)
		}
		if pbs, err := s.ListPlaybooks(ctx, s.DB, ws); err != nil || len(pbs) != 1 || pbs[0].Slug != "fix-module-root" || pbs[0].JobID != id {
			t.Fatalf("playbooks %+v, %v", pbs, err)
		}
		if ps, err := s.ListProposals(ctx, s.DB, ws); err != nil || len(ps) != 1 || ps[0].Status != store.ProposalPending || ps[0].JobID != id {
			t.Fatalf("proposals %+v, %v", ps, err)
		}
		run, ok, err := s.GetRetroRun(ctx, s.DB, id)
		if !ok || err != nil || !strings.Contains(run.Counts, `"added":2`) || !strings.Contains(run.Counts, `"bumped":1`) {
			t.Fatalf("retro run %+v, %v, %v", run, ok, err)
		}

		// Killed after the commit, before River noticed: the rerun changes
		// nothing and asks nothing.
		calls := len(e.fake.Requests())
		job := &river.Job[retrosession.Args]{JobRow: &rivertype.JobRow{ID: id, Kind: "retro_session", Attempt: 2},
			Args: retrosession.Args{SessionID: "session-1"}}
		if err := e.worker.Work(ctx, job); err != nil {
			t.Fatal(err)
		}
		if got := memories(t, s); fmt.Sprint(got) != fmt.Sprint(ms) || len(e.fake.Requests()) != calls {
			t.Fatalf("rerun changed memories or called the model:\n%+v\n%+v", got, ms)
		}

		// Another session says the same: bumps, no copies; its handoff wins.
		session(t, s, "session-2")
		id2 := e.run(t, "session-2")
		got := memories(t, s)
		if len(got) != 4 {
			t.Fatalf("%d memories after the second retro, want still 4: %+v", len(got), got)
		}
		for _, m := range got {
			if (m.ID == lesson.ID || m.ID == fact.ID) && m.Uses != 1 {
				t.Fatalf("duplicate not bumped: %+v", m)
			}
		}
		if h, _, _ := s.GetHandoff(ctx, s.DB, ws); h.SessionID != "session-2" || h.JobID != id2 {
			t.Fatalf("handoff not replaced: %+v", h)
		}
		if ps, _ := s.ListProposals(ctx, s.DB, ws); len(ps) != 1 {
			t.Fatalf("a second proposal was stored while one is pending: %+v", ps)
		}
		if pbs, _ := s.ListPlaybooks(ctx, s.DB, ws); len(pbs) != 1 || pbs[0].JobID != id2 {
			t.Fatalf("playbook not upserted: %+v", pbs)
		}
	})
}

// A truncated answer applies only its additive sections: the cut supersede
// and the playbook are dropped.
func TestTruncatedAppliesAdditiveOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		content := mustJSON(answer)
		cut := content[:strings.Index(content, `"supersede"`)+len(`"supersede":[{"kind":"facts","text":"the re`)]
		e := start(t, s, script(cut, "length"))
		oldFact := seed(t, s, "fact", "the repo uses npm")
		session(t, s, "session-1")
		id := e.run(t, "session-1")

		ms := memories(t, s)
		if len(ms) != 4 {
			t.Fatalf("%d memories, want 4 (the seed plus lesson, fact, method): %+v", len(ms), ms)
		}
		for _, m := range ms {
			if m.ID == oldFact && !m.InvalidAt.IsZero() {
				t.Fatalf("a truncated answer superseded %+v", m)
			}
			if m.ID != oldFact && m.Origin != "retro" {
				t.Fatalf("added %+v", m)
			}
		}
		if h, ok, _ := s.GetHandoff(ctx, s.DB, ws); !ok || h.JobID != id {
			t.Fatalf("handoff %+v", h)
		}
		if pbs, _ := s.ListPlaybooks(ctx, s.DB, ws); len(pbs) != 0 {
			t.Fatalf("a truncated answer stored playbooks %+v", pbs)
		}
		if run, _, _ := s.GetRetroRun(ctx, s.DB, id); !strings.Contains(run.Counts, `"truncated":true`) {
			t.Fatalf("retro run %+v", run)
		}
	})
}

// The default fake reply (no script) is applied end to end.
func TestDefaultFakeReply(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, nil)
		session(t, s, "session-1")
		e.run(t, "session-1")
		ms := memories(t, s)
		if len(ms) != 2 || !strings.Contains(ms[0].Text+ms[1].Text, "go test ./...") {
			t.Fatalf("memories %+v", ms)
		}
	})
}

// A session_end through ingest enqueues one retro_session job for a primary
// session, none for a subagent, and ending it again adds none (unique).
func TestSessionEndEnqueuesOneRetro(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		reg := engine.NewRegistry(nil)
		engine.Add(reg, retrosession.Spec, &retrosession.Worker{Store: s, Logger: enginetest.Logger()})
		client := enginetest.NewClient(t, s, reg, enginetest.Config(), false)
		svc := ingest.New(s, ingest.Hooks{SessionEnded: retrosession.SessionEnded})
		svc.UseClient(client)
		ingestSession(t, svc, "session-main", true)
		ingestSession(t, svc, "session-sub", false)
		sess, err := s.GetSession(ctx, "session-main")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.InTx(ctx, func(tx *sql.Tx) error { return retrosession.SessionEnded(ctx, tx, client, sess) }); err != nil {
			t.Fatal(err)
		}
		res, err := client.JobList(ctx, river.NewJobListParams().Kinds("retro_session"))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Jobs) != 1 || !strings.Contains(string(res.Jobs[0].EncodedArgs), `"session-main"`) ||
			res.Jobs[0].Queue != "llm" || res.Jobs[0].MaxAttempts != 5 {
			for _, j := range res.Jobs {
				t.Logf("job %d %s %s", j.ID, j.Queue, j.EncodedArgs)
			}
			t.Fatalf("%d retro_session jobs, want 1 for session-main on llm with 5 attempts", len(res.Jobs))
		}
	})
}
