package reflecttask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/reflecttask"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// hookEnv ingests events through the turn-end hook, with a client that
// does not work jobs (the fallback's jobs are inspected, not run).
type hookEnv struct {
	t      *testing.T
	s      *store.Store
	svc    *ingest.Service
	client *engine.Client
	n      int
}

func newHookEnv(t *testing.T, s *store.Store, fallback bool) *hookEnv {
	t.Helper()
	s.SetClock(func() time.Time { return t0.Add(time.Hour) })
	reg := engine.NewRegistry(nil)
	reflecttask.Register(reg, &reflecttask.Worker{Store: s, Logger: enginetest.Logger()},
		&reflecttask.TurnHook{Store: s, Logger: enginetest.Logger(), Nudge: reflection.DefaultNudge, Fallback: fallback})
	client := enginetest.NewClient(t, s, reg, enginetest.Config(), false)
	svc := ingest.New(s, ingest.Hooks{TurnEnded: reg.TurnEnded})
	svc.UseClient(client)
	return &hookEnv{t: t, s: s, svc: svc, client: client}
}

// ev is one event of session, a second after the one before.
func (h *hookEnv) ev(session string, typ events.Type, payload any) events.Event {
	h.n++
	raw, _ := json.Marshal(payload)
	return events.Event{ID: fmt.Sprintf("%s-e%d", session, h.n), Type: typ, SessionID: session, Workspace: "/w/app",
		Time: t0.Add(time.Duration(h.n) * time.Second), Payload: raw}
}

// start opens a session, primary or a subagent's.
func (h *hookEnv) start(session string, primary bool) {
	h.ingest(store.SourcePush, h.ev(session, events.SessionStart, events.SessionStartPayload{Primary: &primary}))
}

// turn is one turn: a request, the tool calls named (file tools with a
// path each), optionally a reply, and its turn_end.
type turnSpec struct {
	n      int
	tools  []string
	say    string
	failed bool
	source string
}

func (h *hookEnv) turn(session string, ts turnSpec) {
	h.t.Helper()
	batch := []events.Event{}
	if ts.say != "" {
		batch = append(batch, h.ev(session, events.UserMessage, events.MessagePayload{Text: "please " + ts.say, Source: "user", Turn: ts.n}))
	}
	for i, tool := range ts.tools {
		cmd := "ls"
		if tool == "edit" || tool == "write" {
			cmd = fmt.Sprintf(`{"path":"src/f%d.go"}`, i)
		}
		batch = append(batch, h.ev(session, events.ToolResult, events.ToolResultPayload{Tool: tool, Command: cmd, IsError: ts.failed, Turn: ts.n}))
	}
	if ts.say != "" {
		batch = append(batch, h.ev(session, events.AssistantMessage, events.MessagePayload{Text: "done: " + ts.say, Turn: ts.n}))
	}
	batch = append(batch, h.ev(session, events.TurnEnd, events.TurnEndPayload{Turn: ts.n, Reason: "completed"}))
	h.ingest(cmpOr(ts.source, store.SourcePush), batch...)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (h *hookEnv) ingest(source string, evs ...events.Event) {
	h.t.Helper()
	if _, err := h.svc.IngestBatch(context.Background(), evs, source); err != nil {
		h.t.Fatal(err)
	}
}

// nudges are the turns of session that got a nudge.
func (h *hookEnv) nudges(session string) []int {
	h.t.Helper()
	ns, err := h.s.ListSessionNotices(context.Background(), h.s.DB, session)
	if err != nil {
		h.t.Fatal(err)
	}
	out := []int{}
	for _, n := range ns {
		if n.Kind != "nudge" {
			h.t.Fatalf("notice of kind %q", n.Kind)
		}
		out = append(out, n.Turn)
	}
	return out
}

func calls(n int, name string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = name
	}
	return out
}

// The nudge is the seed's: a turn of 8 work calls gets it and one of 7
// does not (task tools not counted, so 7 + task_reflect does not either);
// one file change is substantive; a turn that used task_start, or that an
// open task spans, gets none; at most 2 per session. Subagents and
// imported history get none.
func TestNudge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHookEnv(t, s, false)
		const a = "session-a"
		h.start(a, true)
		h.turn(a, turnSpec{n: 1, tools: calls(7, "bash")})
		h.turn(a, turnSpec{n: 2, tools: append(calls(7, "bash"), "task_reflect", "lessons_lookup")})
		h.turn(a, turnSpec{n: 3, tools: append(calls(8, "read"), "task_start")})
		if got := h.nudges(a); len(got) != 0 {
			t.Fatalf("nudges %v after 7 calls, 7 + task tools and a task_start turn; want none", got)
		}
		h.turn(a, turnSpec{n: 4, tools: calls(8, "bash")})
		if got := h.nudges(a); fmt.Sprint(got) != "[4]" {
			t.Fatalf("nudges %v; want turn 4's (8 calls)", got)
		}
		h.turn(a, turnSpec{n: 5, tools: []string{"edit"}})
		h.turn(a, turnSpec{n: 6, tools: calls(20, "bash")})
		if got := h.nudges(a); fmt.Sprint(got) != "[4 5]" {
			t.Fatalf("nudges %v; want turns 4 and 5 (a file change), then none past the cap of 2", got)
		}
		if sess, _ := s.GetSession(context.Background(), a); sess.Nudges != 2 {
			t.Fatalf("session counts %d nudges", sess.Nudges)
		}

		// A turn inside an open task: none, and the count is untouched.
		const b = "session-b"
		h.start(b, true)
		if err := s.InsertTask(context.Background(), s.DB, store.Task{ID: "task-open", Kind: store.TaskKindTask, SessionID: b,
			Workspace: "/w/app", Goal: "a task spanning turns", OpenedAt: t0, Environment: `{"count":0}`}); err != nil {
			t.Fatal(err)
		}
		h.turn(b, turnSpec{n: 1, tools: calls(30, "bash")})
		if got := h.nudges(b); len(got) != 0 {
			t.Fatalf("a turn inside an open task got nudges %v", got)
		}

		// A subagent's turn, and history imported that mull never had pushed.
		h.start("session-sub", false)
		h.turn("session-sub", turnSpec{n: 1, tools: calls(30, "bash")})
		h.turn("session-old", turnSpec{n: 1, tools: calls(30, "bash"), source: store.SourceImport})
		if got := append(h.nudges("session-sub"), h.nudges("session-old")...); len(got) != 0 {
			t.Fatalf("subagent or imported turns got nudges %v", got)
		}
	})
}

// The nudge reaches its session once, through GET /v1/notices' service,
// with the seed's statement; another session never sees it.
func TestNudgeIsServedOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		h := newHookEnv(t, s, false)
		h.start("session-a", true)
		h.start("session-b", true)
		h.turn("session-a", turnSpec{n: 1, tools: calls(8, "bash")})
		mem := memories.New(s, config.Default().Memory, config.Default().Digest)
		if n, err := mem.NoticesFor(ctx, "/w/app", "session-b", 0); err != nil || len(n.Notices) != 0 {
			t.Fatalf("session-b's notices %+v, %v", n, err)
		}
		n, err := mem.NoticesFor(ctx, "/w/app", "session-a", 0)
		if err != nil || len(n.Notices) != 1 || n.Notices[0].Kind != "nudge" {
			t.Fatalf("notices %+v, %v; want the nudge", n, err)
		}
		text := n.Notices[0].Text
		for _, want := range []string{"8 tool calls", "no task covers it", "Not opening a task is your choice", "not a request to open a task after the fact"} {
			if !strings.Contains(text, want) {
				t.Errorf("nudge %q lacks %q", text, want)
			}
		}
		if again, _ := mem.NoticesFor(ctx, "/w/app", "session-a", n.Cursor); len(again.Notices) != 0 {
			t.Fatalf("served twice: %+v", again)
		}
	})
}

// With reflection.turn_fallback, a substantive turn no closed task covers
// becomes a closed task of kind turn with its reflect_task job; an empty
// turn (calls only: no dialogue, no failure), a turn a task closed in and
// a replayed turn_end get none. Off, no turn gets one.
func TestTurnFallback(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		off := newHookEnv(t, s, false)
		off.start("session-off", true)
		off.turn("session-off", turnSpec{n: 1, tools: calls(9, "bash"), say: "fix the build"})

		h := newHookEnv(t, s, true)
		const a = "session-a"
		h.start(a, true)
		h.turn(a, turnSpec{n: 1, tools: calls(9, "bash")})                               // empty: calls only
		h.turn(a, turnSpec{n: 2, tools: calls(3, "bash"), say: "look"})                  // not substantive
		h.turn(a, turnSpec{n: 3, tools: append(calls(9, "bash"), "task_end"), say: "x"}) // a task closed in it
		h.turn(a, turnSpec{n: 4, tools: calls(9, "bash"), say: "fix the build"})
		h.turn(a, turnSpec{n: 5, tools: calls(8, "bash"), failed: true}) // failures: not empty

		ts, err := s.ListTasks(ctx, s.DB, store.TaskFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, task := range ts {
			ids = append(ids, task.ID)
			if task.Kind != store.TaskKindTurn || task.Status == store.TaskOpen || task.ReflectMode != "job" || task.ReflectJobID == 0 {
				t.Errorf("turn task %+v", task)
			}
		}
		want := []string{reflection.TurnID(a, 4), reflection.TurnID(a, 5)}
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("turn tasks %v; want %v", ids, want)
		}
		task, _ := s.GetTask(ctx, s.DB, want[0])
		if evs, _ := s.EventsBySeq(ctx, s.DB, a, task.OpenSeq, task.CloseSeq, 0); len(evs) != 12 || evs[0].Type != "user_message" || evs[11].Type != "turn_end" {
			t.Fatalf("turn 4's window holds %d events; want its 12, request first and turn_end last", len(evs))
		}
		jobs, err := h.client.JobList(ctx, river.NewJobListParams().Kinds("reflect_task"))
		if err != nil || len(jobs.Jobs) != 2 || jobs.Jobs[0].ID != task.ReflectJobID {
			t.Fatalf("reflect_task jobs %+v, %v; want one per turn task", jobs, err)
		}

		// The same turn_end again (a replay) adds nothing.
		evs, _ := s.EventsBySeq(ctx, s.DB, a, task.OpenSeq, task.CloseSeq, 0)
		var batch []events.Event
		for _, e := range evs {
			batch = append(batch, events.Event{ID: e.ID, Type: events.Type(e.Type), SessionID: e.SessionID, Workspace: e.Workspace, Time: e.Time, Payload: e.Payload})
		}
		h.ingest(store.SourcePush, batch...)
		if again, _ := h.client.JobList(ctx, river.NewJobListParams().Kinds("reflect_task")); len(again.Jobs) != 2 {
			t.Fatalf("a replay enqueued more: %d jobs", len(again.Jobs))
		}
	})
}

// reflection.nudge off: a turn of substantive work gets no notice.
func TestNudgeOff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		s.SetClock(func() time.Time { return t0.Add(time.Hour) })
		reg := engine.NewRegistry(nil)
		reflecttask.Register(reg, &reflecttask.Worker{Store: s, Logger: enginetest.Logger()},
			&reflecttask.TurnHook{Store: s, Logger: enginetest.Logger(), Nudge: reflection.DefaultNudge, NoNudge: true})
		client := enginetest.NewClient(t, s, reg, enginetest.Config(), false)
		svc := ingest.New(s, ingest.Hooks{TurnEnded: reg.TurnEnded})
		svc.UseClient(client)
		h := &hookEnv{t: t, s: s, svc: svc, client: client}
		h.start("session-a", true)
		h.turn("session-a", turnSpec{n: 1, tools: calls(20, "bash")})
		if got := h.nudges("session-a"); len(got) != 0 {
			t.Fatalf("nudges %v with reflection.nudge off", got)
		}
	})
}

// A second turn_end for a turn that already has its nudge spends none of
// the session's cap.
func TestNudgeOfARepeatedTurnNumber(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHookEnv(t, s, false)
		const a = "session-a"
		h.start(a, true)
		h.turn(a, turnSpec{n: 4, tools: calls(8, "bash")})
		h.turn(a, turnSpec{n: 4, tools: calls(8, "bash")})
		if sess, _ := s.GetSession(context.Background(), a); sess.Nudges != 1 {
			t.Fatalf("session counts %d nudges after one served, want 1", sess.Nudges)
		}
		h.turn(a, turnSpec{n: 5, tools: calls(8, "bash")})
		if got := h.nudges(a); fmt.Sprint(got) != "[4 5]" {
			t.Fatalf("nudges %v; want turns 4 and 5: the repeat spent nothing of the cap", got)
		}
	})
}
