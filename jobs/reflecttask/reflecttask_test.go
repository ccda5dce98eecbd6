package reflecttask_test

import (
	"context"
	"strings"
	"testing"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/jobs/reflecttask"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/tasks"
	"github.com/mullhq/mull/wsconfig"
)

const pagerGoal = "fix the pager's page 2"

var failureLesson = obj{"relation": "new", "kind": "failure", "confidence": "medium",
	"problem": "page 2 showed page 1's items after an offset change", "attempted": "set the offset to page*size",
	"avoid": "changing the offset formula without a test of page 2", "instead": "write the page 2 test first",
	"applies_when": "changing pagination math"}

// A failed task's reflection stores its failure lesson (reflection scope,
// the task's session, from the job); a revise without evidence is refused
// by the precedent gate and counted while the rest applies (a repeat of
// another lesson adds evidence to it). The model was asked with the fixed instructions
// as the system message and the task's material as the user message, in
// JSON mode.
func TestReflectFailedTask(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startJobs(t, s, &fakeds.Script{}, 3, nil)
		target := e.lesson("the pager's offset is off by one")
		other := e.lesson("the pager's tests run against a stale build")
		revise := obj{"relation": "revise", "target_id": target, "problem": "the pager's offset is off by one on page 2",
			"correction": "derive the offset from (page-1)*size and test page 2", "scope": "workspace", "boundary": "this repo's pager"}
		if err := e.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{answer(pagerGoal, failureLesson, revise,
			obj{"relation": "repeat", "target_id": other})}}); err != nil {
			t.Fatal(err)
		}
		e.task("task-pager", "session-1", pagerGoal, store.TaskFailed, target, other)

		job := e.reflect("task-pager")
		if job.State != rivertype.JobStateCompleted {
			t.Fatalf("job %s: %v", job.State, job.Errors)
		}
		got := e.lessonsOf("task-pager")
		if len(got) != 1 {
			t.Fatalf("lessons of the task %+v; want the failure only", got)
		}
		m := got[0]
		if m.Kind != memory.Failure || m.Scope != memory.LessonReflection || m.ScopeSession != "session-1" || m.Origin != memory.OriginRetro ||
			m.Lesson == nil || m.Lesson.Avoid != failureLesson["avoid"] || m.Text != lesson.Line(m) || m.JobID != job.ID || m.Quarantined {
			t.Fatalf("failure lesson %+v", m)
		}
		tr, _ := s.GetMemory(ctx, s.DB, target)
		if !tr.InvalidAt.IsZero() || tr.State != string(memory.StateActive) || tr.Uses != 0 {
			t.Fatalf("target after a refused revise: %+v; want it unchanged", tr)
		}
		if rep, _ := s.GetMemory(ctx, s.DB, other); rep.Uses != 1 {
			t.Fatalf("repeated lesson has %d uses; want one more", rep.Uses)
		}
		st, err := s.ReflectionStats(ctx, s.DB, "")
		if err != nil || st.Refusals[lesson.GateNoEvidence] != 1 || st.LessonsRecorded != 1 || st.Proposed["revise"] != 1 || st.Accepted["revise"] != 0 {
			t.Fatalf("stats %+v, %v; want the revise refused by %s and one lesson recorded", st, err, lesson.GateNoEvidence)
		}
		task, _ := s.GetTask(ctx, s.DB, "task-pager")
		if task.ReflectedBy != store.ReflectedByJob || task.ReflectedAt.IsZero() {
			t.Fatalf("task %+v not reflected by the job", task)
		}

		reqs := e.fake.Requests()
		if len(reqs) != 1 {
			t.Fatalf("%d requests", len(reqs))
		}
		r := reqs[0]
		if r.ResponseFormat != "json_object" || len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[1].Role != "user" {
			t.Fatalf("request: format %q, messages %+v", r.ResponseFormat, r.Messages)
		}
		p := reflection.JobPrompt(reflection.TaskBrief{}, "", reflection.Trajectory{}, reflection.MaterialOptions{Scopes: reflection.WritableScopes})
		if r.Messages[0].Content != p.System {
			t.Errorf("system message is not the fixed part:\n%s", r.Messages[0].Content)
		}
		user := r.Messages[1].Content
		for _, want := range []string{"task-pager", pagerGoal, "status:   failed", lesson.LessonRef(target), "still wrong on page 2",
			"Fixed: offset is now page*size.", "Tool failures: 1 of 1 tool calls"} {
			if !strings.Contains(user, want) {
				t.Errorf("material lacks %q:\n%s", want, user)
			}
		}
	})
}

// With reflection.environment_in_brief off, the material shows no
// decision environment; with adversarial review on, the schema asks for
// the critique and an answer without one is refused.
func TestReflectOptions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		off := false
		e := startJobs(t, s, &fakeds.Script{Rules: []fakeds.Rule{answer(pagerGoal, failureLesson)}}, 1, func(c *config.Config) {
			c.Reflection.EnvironmentInBrief = &off
			c.Reflection.AdversarialReview = true
		})
		target := e.lesson("the pager's offset is off by one")
		e.task("task-pager", "session-1", pagerGoal, store.TaskFailed, target)
		job := e.reflect("task-pager")
		if job.State != rivertype.JobStateCancelled || len(job.Errors) != 1 || !strings.Contains(job.Errors[0].Error, "lessons[0].critique") {
			t.Fatalf("job %s, errors %v; want the dead letter naming lessons[0].critique", job.State, job.Errors)
		}
		r := e.fake.Requests()[0]
		if !strings.Contains(r.Messages[0].Content, `"steelman_rounds"`) {
			t.Error("adversarial review on, but the schema asks for no critique")
		}
		if u := r.Messages[1].Content; strings.Contains(u, lesson.LessonRef(target)) || !strings.Contains(u, "DECISION ENVIRONMENT: none given") {
			t.Errorf("environment_in_brief off, but the material shows it:\n%s", u)
		}
	})
}

// An answer that breaks the schema is retried (the model's fault) and
// then goes to the dead letters with the field it got wrong; nothing is
// stored and the task stays unreflected. One bad answer then a good one
// applies once.
func TestReflectInvalidAnswer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		bad := fakeds.Rule{Kind: "reflect_task", Marker: pagerGoal, Response: &fakeds.Response{Content: mustJSON(obj{
			"assessment": "x", "lessons": []any{obj{"relation": "maybe"}}})}}
		e := startJobs(t, s, &fakeds.Script{Rules: []fakeds.Rule{bad}}, 3, nil)
		e.task("task-pager", "session-1", pagerGoal, store.TaskFailed)
		job := e.reflect("task-pager")
		if job.State != rivertype.JobStateCancelled || len(job.Errors) != 3 {
			t.Fatalf("job %s after %d errors %v; want the dead letter after 3 attempts", job.State, len(job.Errors), job.Errors)
		}
		for _, je := range job.Errors {
			if !strings.Contains(je.Error, "schema") || !strings.Contains(je.Error, "lessons[0].relation") {
				t.Fatalf("error %q does not name the field", je.Error)
			}
		}
		if task, _ := s.GetTask(ctx, s.DB, "task-pager"); !task.ReflectedAt.IsZero() || len(e.lessonsOf("task-pager")) != 0 {
			t.Fatalf("a refused answer applied: %+v", task)
		}

		bad.Marker, bad.Times = "fix the flag", 1
		if err := e.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{bad, answer("fix the flag", failureLesson)}}); err != nil {
			t.Fatal(err)
		}
		e.task("task-flag", "session-2", "fix the flag", store.TaskFailed)
		job = e.reflect("task-flag")
		if job.State != rivertype.JobStateCompleted || len(job.Errors) != 1 || len(e.lessonsOf("task-flag")) != 1 {
			t.Fatalf("job %s, errors %v, lessons %d; want one retry and one lesson", job.State, job.Errors, len(e.lessonsOf("task-flag")))
		}
	})
}

// A second run of a job that applied (killed after its commit, before
// River recorded it: here the completed job is made to run again) asks
// nothing and applies nothing; a second job for the task is not enqueued.
func TestReflectTwice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startJobs(t, s, &fakeds.Script{Rules: []fakeds.Rule{answer(pagerGoal, failureLesson)}}, 3, nil)
		e.task("task-pager", "session-1", pagerGoal, store.TaskFailed)
		first := e.reflect("task-pager")
		if first.State != rivertype.JobStateCompleted || len(e.lessonsOf("task-pager")) != 1 {
			t.Fatalf("first run %s", first.State)
		}
		before := fakeRequests(e)
		if _, err := e.client.JobRetry(ctx, first.ID); err != nil {
			t.Fatal(err)
		}
		again := e.waitFinal(first.ID)
		if again.State != rivertype.JobStateCompleted || fakeRequests(e) != before || len(e.lessonsOf("task-pager")) != 1 {
			t.Fatalf("second run: %s, %d requests (had %d), %d lessons", again.State, fakeRequests(e), before, len(e.lessonsOf("task-pager")))
		}
		if refl, _ := s.ListReflections(ctx, s.DB, "task-pager"); len(refl) != 1 {
			t.Fatalf("%d reflections", len(refl))
		}
		res, err := e.client.Insert(ctx, reflecttask.Args{TaskID: "task-pager"}, nil)
		if err != nil || !res.UniqueSkippedAsDuplicate {
			t.Fatalf("a second job for the task: %+v, %v; want it skipped as a duplicate", res, err)
		}
	})
}

func fakeRequests(e *jobEnv) int { return len(e.fake.Requests()) }

// With reflection.turn_fallback, a substantive turn no task covered is
// reflected on by its own job, through the app's ingest hook: the
// material is the turn's, and its lesson is the turn task's.
func TestTurnFallbackReflects(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startJobs(t, s, &fakeds.Script{Rules: []fakeds.Rule{answer("a turn boundary is not a decision boundary", failureLesson)}}, 3,
			func(c *config.Config) { c.Reflection.TurnFallback = true })
		e.ingest("session-t", events.SessionStart, events.SessionStartPayload{})
		e.ingest("session-t", events.UserMessage, events.MessagePayload{Text: pagerGoal, Source: "user", Turn: 1})
		for range 8 {
			e.ingest("session-t", events.ToolResult, events.ToolResultPayload{Tool: "bash", Command: "go test ./...", Turn: 1})
		}
		e.ingest("session-t", events.AssistantMessage, events.MessagePayload{Text: "Fixed: offset is now page*size.", Turn: 1})
		e.ingest("session-t", events.TurnEnd, events.TurnEndPayload{Turn: 1, Reason: "completed"})

		id := reflection.TurnID("session-t", 1)
		task, err := s.GetTask(ctx, s.DB, id)
		if err != nil || task.ReflectJobID == 0 {
			t.Fatalf("turn task %+v, %v", task, err)
		}
		if job := e.waitFinal(task.ReflectJobID); job.State != rivertype.JobStateCompleted {
			t.Fatalf("turn's job %s: %v", job.State, job.Errors)
		}
		if got := e.lessonsOf(id); len(got) != 1 || got[0].Kind != memory.Failure || got[0].ScopeSession != "session-t" {
			t.Fatalf("lessons of the turn %+v", got)
		}
		user := e.fake.Requests()[0].Messages[1].Content
		for _, want := range []string{"REFLECTION MATERIAL for turn 1", pagerGoal, "Tool failures: 0 of 8 tool calls"} {
			if !strings.Contains(user, want) {
				t.Errorf("turn material lacks %q:\n%s", want, user)
			}
		}
		// Its nudge came with it: the turn had no task.
		if ns, _ := s.ListSessionNotices(ctx, s.DB, "session-t"); len(ns) != 1 {
			t.Errorf("%d nudges for the turn", len(ns))
		}
	})
}

// A task the agent opened and ended through the task service (what
// task_start and task_end call) is reflected on by the job its end
// enqueued: the window between the two is the material's trajectory.
func TestTaskServiceEndToEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startJobs(t, s, &fakeds.Script{Rules: []fakeds.Rule{answer(pagerGoal, failureLesson)}}, 3, nil)
		cfg := config.Default()
		svc := tasks.New(s, memories.New(s, cfg.Memory, cfg.Digest), e.wiring.Ingest, cfg.Reflection)
		svc.UseClient(e.client)
		e.ingest("session-e", events.UserMessage, events.MessagePayload{Text: "before the task: unrelated chatter", Source: "user"})
		opened, err := svc.Open(ctx, tasks.OpenRequest{SessionID: "session-e", Workspace: "/w/app", Goal: pagerGoal,
			ExpectedResult: "page 2 shows items 11-20"})
		if err != nil {
			t.Fatal(err)
		}
		e.ingest("session-e", events.UserMessage, events.MessagePayload{Text: "page 2 shows page 1's items", Source: "user", Turn: 2})
		e.ingest("session-e", events.AssistantMessage, events.MessagePayload{Text: "Fixed: offset is now page*size.", Turn: 2})
		closed, err := svc.Close(ctx, opened.Task.ID, store.TaskFailed, "still off by one")
		if err != nil || closed.JobID == 0 {
			t.Fatalf("close: %+v, %v", closed, err)
		}
		if job := e.waitFinal(closed.JobID); job.State != rivertype.JobStateCompleted {
			t.Fatalf("job %s: %v", job.State, job.Errors)
		}
		if got := e.lessonsOf(opened.Task.ID); len(got) != 1 || got[0].Kind != memory.Failure {
			t.Fatalf("lessons %+v", got)
		}
		user := e.fake.Requests()[0].Messages[1].Content
		if !strings.Contains(user, "page 2 shows page 1's items") || strings.Contains(user, "unrelated chatter") ||
			!strings.Contains(user, "still off by one") {
			t.Fatalf("material is not the task's window:\n%s", user)
		}
	})
}

// The job's model reads an untrusted session: its schema offers only the
// scopes it may write (Parse refuses the others: learn/reflection).
func TestReflectScopes(t *testing.T) {
	p := reflection.JobPrompt(reflection.TaskBrief{}, "", reflection.Trajectory{}, reflection.MaterialOptions{Scopes: reflection.WritableScopes})
	if strings.Contains(p.System, `"global"`) || !strings.Contains(p.System, `"workspace"`) {
		t.Fatal("the job's schema offers scope global, or lost workspace")
	}
}

// A workspace whose reflection switch is off (its own setting, through
// the admin's route's service) gets no reflection: the job completes (no
// dead letter: the switch is no failure), asks the model nothing and
// leaves the task unreflected.
func TestReflectionSwitchedOffForWorkspace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ws := wsconfig.NewStatic(s, config.Config{}, nil, enginetest.Logger())
		if err := ws.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		e := startJobsWith(t, s, &fakeds.Script{Rules: []fakeds.Rule{answer(pagerGoal, failureLesson)}}, 3, nil, ws)
		task := e.task("task-off", "session-1", pagerGoal, store.TaskFailed)
		off := "false"
		if _, err := ws.Set(context.Background(), task.Workspace, map[string]*string{config.WSReflection: &off}, "test"); err != nil {
			t.Fatal(err)
		}
		job := e.reflect("task-off")
		if job.State != rivertype.JobStateCompleted || len(e.fake.Requests()) != 0 || len(e.lessonsOf("task-off")) != 0 {
			t.Fatalf("reflection off: job %s %v, %d model calls", job.State, job.Errors, len(e.fake.Requests()))
		}
		if got, _ := s.GetTask(context.Background(), s.DB, "task-off"); !got.ReflectedAt.IsZero() {
			t.Fatalf("task %+v marked reflected", got)
		}
	})
}
