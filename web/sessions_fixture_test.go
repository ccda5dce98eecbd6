package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/tasks"
)

// learnt is what learntSession made: a session mull has learnt from.
type learnt struct {
	Session, Workspace string
	Task               string
	// Target is the workspace lesson the reflection tried to revise
	// without evidence (the precedent gate refused it); Failure the
	// failure lesson it added.
	Target, Failure int64
	RetroJob        int64
	ReflectJob      int64
}

const learntGoal = "make the invoice tests pass again"

// learntSession ingests a primary session of /w/invoices with a task whose
// tool call failed, closes the task failed and waits for its reflection
// (the fake's answer adds a failure lesson and revises a lesson without
// evidence, which the precedent gate refuses), then ends the session and
// waits for its retro.
func (e *env) learntSession(t *testing.T) learnt {
	t.Helper()
	ctx := context.Background()
	l := learnt{Session: "session-panel-1", Workspace: "/w/invoices"}
	target, err := e.Mem.AddLesson(ctx, memories.LessonWrite{Kind: memory.Lesson, Scope: memory.LessonWorkspace, Workspace: l.Workspace,
		Fields: memory.LessonFields{Problem: "the invoice totals were rounded per line", Correction: "round the invoice total once, at the end",
			Confidence: memory.ConfidenceHigh, Boundary: "this repo's invoices"}}, memory.Provenance{Origin: memory.OriginPanel})
	if err != nil {
		t.Fatal(err)
	}
	l.Target = target.Memory.ID
	failure := map[string]any{"relation": "new", "kind": "failure", "scope": "workspace", "confidence": "medium",
		"problem": "go test failed on the discount after a formula change", "attempted": "changed the discount formula",
		"avoid": "changing the discount formula without running its test", "instead": "run go test ./invoice first",
		"applies_when": "changing invoice math", "boundary": "seen in this workspace's tasks"}
	revise := map[string]any{"relation": "revise", "target_id": l.Target, "problem": "the invoice totals were rounded per line and per tax",
		"correction": "round the invoice total once, after the tax", "scope": "workspace", "boundary": "this repo's invoices"}
	answer, _ := json.Marshal(map[string]any{"assessment": "the formula change broke the discount test",
		"source": "the failed test run", "lessons": []any{failure, revise}})
	if err := e.Fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Kind: "reflect_task", Marker: learntGoal,
		Response: &fakeds.Response{Content: string(answer)}}}}); err != nil {
		t.Fatal(err)
	}

	start := time.Now().Add(-10 * time.Minute)
	n := 0
	ev := func(typ events.Type, payload any) {
		t.Helper()
		n++
		raw, _ := json.Marshal(payload)
		e.ingestEvents(t, events.Event{ID: fmt.Sprintf("%s-%d", l.Session, n), Type: typ, SessionID: l.Session,
			Workspace: l.Workspace, Time: start.Add(time.Duration(n) * time.Second), Payload: raw})
	}
	ev(events.SessionStart, events.SessionStartPayload{Title: "Fix the invoice discount"})
	ev(events.UserMessage, events.MessagePayload{Text: learntGoal, Source: "user", Turn: 1})
	// The agent read its digest: the task's environment holds the lesson.
	if _, err := e.Mem.DigestFor(ctx, l.Workspace, l.Session); err != nil {
		t.Fatal(err)
	}
	opened, err := e.Tasks.Open(ctx, tasks.OpenRequest{SessionID: l.Session, Workspace: l.Workspace, Goal: learntGoal,
		ExpectedResult: "go test ./... passes"})
	if err != nil {
		t.Fatal(err)
	}
	l.Task = opened.Task.ID
	exit := 1
	ev(events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: "go test ./invoice", ExitCode: &exit, IsError: true,
		Output: "--- FAIL: TestDiscount (0.00s)", Turn: 1})
	ev(events.ToolResult, events.ToolResultPayload{Tool: "read", Command: `{"path":"invoice.go"}`, Turn: 1})
	ev(events.AssistantMessage, events.MessagePayload{Text: "The discount divides by 10 instead of 100.", Turn: 1})
	ev(events.TurnEnd, events.TurnEndPayload{Turn: 1, Reason: "completed"})
	closed, err := e.Tasks.Close(ctx, l.Task, store.TaskFailed, "the discount test still fails")
	if err != nil || closed.JobID == 0 {
		t.Fatalf("close the task: %+v, %v", closed, err)
	}
	l.ReflectJob = closed.JobID
	if job := enginetest.WaitFinal(t, e.Events, closed.JobID); job.State != rivertype.JobStateCompleted {
		t.Fatalf("reflect_task ended %s: %v", job.State, job.Errors)
	}
	ev(events.SessionEnd, events.SessionEndPayload{Reason: "completed"})
	retro := enginetest.WaitFor(t, e.Events, func(ev *river.Event) bool {
		return ev.Job.Kind == "retro_session" && ev.Job.State == rivertype.JobStateCompleted
	})
	l.RetroJob = retro.Job.ID
	mems, err := e.S.ListMemories(ctx, e.S.DB, store.MemoryFilter{Workspaces: []string{l.Workspace}, All: true, Kind: "failure"})
	if err != nil || len(mems) != 1 {
		t.Fatalf("failure lessons %+v, %v", mems, err)
	}
	l.Failure = mems[0].ID
	return l
}

func (e *env) ingestEvents(t *testing.T, evs ...events.Event) {
	t.Helper()
	if _, err := e.Ingest.IngestBatch(context.Background(), evs, store.SourcePush); err != nil {
		t.Fatal(err)
	}
}
