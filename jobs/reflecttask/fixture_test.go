package reflecttask_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/jobs"
	"github.com/mullhq/mull/jobs/reflecttask"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
	"github.com/mullhq/mull/wsconfig"
)

// jobEnv is the app's wiring (jobs.Register) over a test store with a
// working client and a fake DeepSeek: reflect_task runs as in production.
type jobEnv struct {
	t      *testing.T
	s      *store.Store
	fake   *fakeds.Server
	client *engine.Client
	events <-chan *river.Event
	wiring jobs.Wiring
	n      int
}

// startJobs starts the app's jobs with the fake's script, reflect_task
// retried at once up to attempts times, and edit applied to the config.
func startJobs(t *testing.T, s *store.Store, sc *fakeds.Script, attempts int, edit func(*config.Config)) *jobEnv {
	t.Helper()
	return startJobsWith(t, s, sc, attempts, edit, nil)
}

// startJobsWith is startJobs with per-workspace settings (nil: none).
func startJobsWith(t *testing.T, s *store.Store, sc *fakeds.Script, attempts int, edit func(*config.Config), ws *wsconfig.Service) *jobEnv {
	t.Helper()
	s.SetClock(func() time.Time { return t0.Add(time.Hour) })
	l := llmtest.New(t, s, llmtest.Options{Fake: fakeds.Options{Script: sc}, Edit: func(c *config.Config) {
		c.Jobs = map[string]config.JobOverride{"reflect_task": {MaxAttempts: attempts, Backoff: config.Duration(time.Millisecond)}}
		if edit != nil {
			edit(c)
		}
	}})
	reg := engine.NewRegistry(l.Config.Jobs)
	w := jobs.Register(reg, jobs.Deps{Store: s, Logger: enginetest.Logger(), LLM: l.LLM, Ledger: l.Ledger,
		Runner: workflows.New(s, enginetest.Logger()), Config: l.Config, Workspaces: ws})
	client := enginetest.NewClient(t, s, reg, l.Config, true)
	evs := enginetest.Events(t, client)
	if err := client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.Stop(ctx)
	})
	return &jobEnv{t: t, s: s, fake: l.Fake, client: client, events: evs, wiring: w}
}

// lesson stores an active workspace lesson of /w/app.
func (e *jobEnv) lesson(problem string) int64 {
	e.t.Helper()
	m := memory.Memory{Workspace: "/w/app", Kind: memory.Lesson, Scope: memory.LessonWorkspace, Origin: memory.OriginPanel,
		Lesson: &memory.LessonFields{Problem: problem, Correction: "read the project's notes first, then handle " + problem,
			Confidence: memory.ConfidenceHigh, Boundary: "seen in this workspace"}}
	m, _, err := lesson.New(m, e.s.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	id, err := e.s.InsertMemory(context.Background(), e.s.DB, memories.ToRow(m))
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// task stores a task of session that the agent worked on (a request, a
// failed tool call, a reply, a correction), closed with status, its
// environment holding the lessons env.
func (e *jobEnv) task(id, session, goal, status string, env ...int64) store.Task {
	e.t.Helper()
	ctx := context.Background()
	var ms []memory.Memory
	for _, l := range env {
		r, err := e.s.GetMemory(ctx, e.s.DB, l)
		if err != nil {
			e.t.Fatal(err)
		}
		ms = append(ms, memories.FromRow(r))
	}
	e.ingest(session, events.SessionStart, events.SessionStartPayload{})
	open, _ := e.s.LastEventSeq(ctx, e.s.DB, session)
	snap, _ := json.Marshal(lesson.BuildSnapshot(ms, e.s.Now(), e.s.Now()))
	if err := e.s.InsertTask(ctx, e.s.DB, store.Task{ID: id, Kind: store.TaskKindTask, SessionID: session, Workspace: "/w/app",
		Goal: goal, Expected: "the pager shows items 11-20 on page 2", OpenedAt: e.s.Now(), OpenSeq: open, Environment: string(snap)}); err != nil {
		e.t.Fatal(err)
	}
	e.ingest(session, events.UserMessage, events.MessagePayload{Text: goal, Source: "user", Turn: 1})
	e.ingest(session, events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: "go test ./...", IsError: true, Turn: 1})
	e.ingest(session, events.AssistantMessage, events.MessagePayload{Text: "Fixed: offset is now page*size.", Turn: 1})
	e.ingest(session, events.UserMessage, events.MessagePayload{Text: "still wrong on page 2", Source: "user", Turn: 1})
	end, _ := e.s.LastEventSeq(ctx, e.s.DB, session)
	t, err := e.s.CloseTask(ctx, e.s.DB, id, store.TaskClose{Status: status, Result: "page 2 still shows page 1's items",
		At: e.s.Now(), CloseSeq: end, ReflectMode: "job"})
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

func (e *jobEnv) ingest(session string, typ events.Type, payload any) {
	e.t.Helper()
	e.n++
	raw, _ := json.Marshal(payload)
	ev := events.Event{ID: fmt.Sprintf("%s-%d", session, e.n), Type: typ, SessionID: session,
		Workspace: "/w/app", Time: t0.Add(time.Duration(e.n) * time.Second), Payload: raw}
	if _, err := e.wiring.Ingest.IngestBatch(context.Background(), []events.Event{ev}, store.SourcePush); err != nil {
		e.t.Fatal(err)
	}
}

// reflect enqueues reflect_task for a task and waits until it is final.
func (e *jobEnv) reflect(taskID string) *rivertype.JobRow {
	e.t.Helper()
	res, err := e.client.Insert(context.Background(), reflecttask.Args{TaskID: taskID}, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.waitFinal(res.Job.ID)
}

// waitFinal waits until job id is final and reads its row.
func (e *jobEnv) waitFinal(id int64) *rivertype.JobRow {
	e.t.Helper()
	enginetest.WaitFinal(e.t, e.events, id)
	row, err := e.client.JobGet(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return row
}

// lessonsOf lists the lessons written for a task.
func (e *jobEnv) lessonsOf(taskID string) []memory.Memory {
	e.t.Helper()
	rows, err := e.s.ListMemories(context.Background(), e.s.DB, store.MemoryFilter{All: true, Oldest: true})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []memory.Memory
	for _, r := range rows {
		if r.TaskID == taskID {
			out = append(out, memories.FromRow(r))
		}
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type obj = map[string]any

// answer is a reflection the fake gives for the task whose goal holds marker.
func answer(marker string, lessons ...obj) fakeds.Rule {
	ls := []any{}
	for _, l := range lessons {
		ls = append(ls, l)
	}
	return fakeds.Rule{Kind: "reflect_task", Marker: marker, Response: &fakeds.Response{Content: mustJSON(obj{
		"assessment": "the offset fix did not address page 2", "source": "the failed test run and the user's correction", "lessons": ls})}}
}
