package reflecttask_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestReflectReasoningOnly: a task window where the agent said nothing
// outward, only reasoned between tool calls (assistant_message events with
// reasoning and no text, as the importer and the plugin store them), gives
// the reflection its reasoning excerpts, read back from the stored events.
func TestReflectReasoningOnly(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startJobs(t, s, &fakeds.Script{Rules: []fakeds.Rule{answer(pagerGoal, failureLesson)}}, 3, nil)
		const session = "session-quiet"
		e.ingest(session, events.SessionStart, events.SessionStartPayload{})
		open, _ := s.LastEventSeq(ctx, s.DB, session)
		snap, _ := json.Marshal(lesson.BuildSnapshot(nil, s.Now(), s.Now()))
		if err := s.InsertTask(ctx, s.DB, store.Task{ID: "task-quiet", Kind: store.TaskKindTask, SessionID: session, Workspace: "/w/app",
			Goal: pagerGoal, OpenedAt: s.Now(), OpenSeq: open, Environment: string(snap)}); err != nil {
			t.Fatal(err)
		}
		e.ingest(session, events.UserMessage, events.MessagePayload{Text: pagerGoal, Source: "user", Turn: 1})
		e.ingest(session, events.AssistantMessage, events.MessagePayload{Turn: 1, MessageID: "m1", Reasoning: "Run the pager tests first to see what fails."})
		e.ingest(session, events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: "go test ./...", IsError: true, Turn: 1})
		e.ingest(session, events.AssistantMessage, events.MessagePayload{Turn: 1, MessageID: "m2", Reasoning: "The offset uses page*size; page 2 needs (page-1)*size."})
		end, _ := s.LastEventSeq(ctx, s.DB, session)
		if _, err := s.CloseTask(ctx, s.DB, "task-quiet", store.TaskClose{Status: store.TaskFailed, Result: "stopped", At: s.Now(), CloseSeq: end, ReflectMode: "job"}); err != nil {
			t.Fatal(err)
		}

		if job := e.reflect("task-quiet"); job.State != rivertype.JobStateCompleted {
			t.Fatalf("job %s: %v", job.State, job.Errors)
		}
		reqs := e.fake.Requests()
		if len(reqs) != 1 || len(reqs[0].Messages) != 2 {
			t.Fatalf("%d requests", len(reqs))
		}
		user := reqs[0].Messages[1].Content
		label := "REASONING (excerpt; the agent said nothing outward)\n" + reflection.Gutter
		for _, want := range []string{label + "Run the pager tests first to see what fails.\n",
			label + "The offset uses page*size; page 2 needs (page-1)*size.\n", "Tool failures: 1 of 1 tool calls"} {
			if !strings.Contains(user, want) {
				t.Errorf("material lacks %q:\n%s", want, user)
			}
		}
	})
}
