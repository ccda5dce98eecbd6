package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/reflecttask"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
)

// reflectAnswer is the reflection the fake answers: one failure lesson.
var reflectAnswer = map[string]any{"assessment": "the module path was wrong", "source": "the failed test run",
	"lessons": []any{map[string]any{"relation": "new", "kind": "failure", "confidence": "medium",
		"problem": "go test failed with 'no required module provides package'", "attempted": "ran go test from the repo root",
		"avoid": "running go test outside the directory holding go.mod", "applies_when": "running Go tests in a nested module"}}}

// TestReflectTaskSurvivesSIGKILL kills a `mull worker` in the middle of a
// reflect_task's LLM call, and then another one just after the fake
// answered a second task's reflection (before or after the apply
// committed: at random), and checks each task's lessons are applied
// exactly once by the workers started after: one reflection, one lesson,
// the task reflected on by the job.
func TestReflectTaskSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills worker processes")
	}
	answer, err := json.Marshal(reflectAnswer)
	if err != nil {
		t.Fatal(err)
	}
	script := &fakeds.Script{Rules: []fakeds.Rule{
		{Kind: "reflect_task", Marker: "SLOW-REFLECT", Times: 1, Fault: fakeds.FaultSlow, Delay: 1500 * time.Millisecond},
		{Kind: "reflect_task", Response: &fakeds.Response{Content: string(answer)}},
	}}
	label := func(_ *http.Request, body []byte) string {
		for _, m := range []string{"SLOW-REFLECT", "FAST-REFLECT"} {
			if bytes.Contains(body, []byte(m)) {
				return m
			}
		}
		return "other"
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			r := newKillRig(t, dialect, script, label)
			seedClosedTasks(t, r.store, "slow", "fast")
			a, rng := r.manage(t), killRNG(t)
			w := r.reflectKilledMidCall(t, a, rng)
			w = r.reflectKilledAfterAnswer(t, a, rng, w)
			r.stop(t, w)
		})
	}
}

func (r *killRig) reflectKilledMidCall(t *testing.T, a *app, rng *rand.Rand) *exec.Cmd {
	t.Helper()
	id := enqueueReflect(t, a, "task-slow")
	w := r.start(t)
	waitSignal(t, r.tap.arrived, "SLOW-REFLECT")
	after := randomDelay(rng, time.Second)
	kill(t, w)
	t.Logf("killed %s into the slow reflection's call", after)
	w = r.start(t)
	job := waitJob(t, a, id)
	if job.State != rivertype.JobStateCompleted || job.Attempt != 2 || len(job.Errors) != 1 ||
		!strings.Contains(job.Errors[0].Error, "job rescued by mull's watchdog") {
		t.Fatalf("slow reflection ended %s at attempt %d with errors %+v; want completed at attempt 2 after the watchdog's rescue",
			job.State, job.Attempt, job.Errors)
	}
	r.checkReflected(t, "task-slow", id)
	if asked := r.asked(t, "SLOW-REFLECT"); asked != 2 {
		t.Fatalf("the fake was asked the slow reflection %d times, want 2 (killed, retried)", asked)
	}
	return w
}

func (r *killRig) reflectKilledAfterAnswer(t *testing.T, a *app, rng *rand.Rand, w *exec.Cmd) *exec.Cmd {
	t.Helper()
	id := enqueueReflect(t, a, "task-fast")
	waitSignal(t, r.tap.answered, "FAST-REFLECT")
	after := randomDelay(rng, 150*time.Millisecond)
	kill(t, w)
	w = r.start(t)
	if job := waitJob(t, a, id); job.State != rivertype.JobStateCompleted {
		t.Fatalf("fast reflection ended %s: %+v", job.State, job.Errors)
	}
	asked := r.asked(t, "FAST-REFLECT")
	t.Logf("killed %s after the fast reflection's answer; asked %d times (%s)", after, asked,
		map[int]string{1: "it had committed", 2: "the kill beat the commit"}[asked])
	if asked < 1 || asked > 2 {
		t.Fatalf("fast reflection asked %d times", asked)
	}
	r.checkReflected(t, "task-fast", id)
	return w
}

// seedClosedTasks stores, per name, a primary session whose request
// quotes a marker the fake matches ("slow" → SLOW-REFLECT) and a failed
// task over it, closed, its reflection not yet enqueued.
func seedClosedTasks(t *testing.T, s *store.Store, names ...string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	for _, name := range names {
		id, ws := "session-"+name, "/home/dev/"+name
		ev := func(n int, typ events.Type, payload string) events.Event {
			return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: ws,
				Time: now.Add(time.Duration(n-10) * time.Second), Payload: json.RawMessage(payload)}
		}
		batch := []events.Event{ev(0, events.SessionStart, `{"title":"fix the build"}`),
			ev(1, events.UserMessage, `{"text":"`+strings.ToUpper(name)+`-REFLECT run the tests"}`),
			ev(2, events.ToolResult, `{"tool":"bash","command":"go test ./...","exit_code":1,"is_error":true}`),
			ev(3, events.AssistantMessage, `{"text":"The tests fail: no required module provides package."}`)}
		if _, err := ingest.New(s, ingest.Hooks{}).IngestBatch(ctx, batch, store.SourcePush); err != nil {
			t.Fatal(err)
		}
		task := "task-" + name
		if err := s.InsertTask(ctx, s.DB, store.Task{ID: task, Kind: store.TaskKindTask, SessionID: id, Workspace: ws,
			Goal: "make go test pass", OpenedAt: now, Environment: `{"count":0}`}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CloseTask(ctx, s.DB, task, store.TaskClose{Status: store.TaskFailed, Result: "still failing",
			At: now, CloseSeq: 4, ReflectMode: "job"}); err != nil {
			t.Fatal(err)
		}
	}
}

// enqueueReflect enqueues a task's reflect_task from the managing client.
func enqueueReflect(t *testing.T, a *app, task string) int64 {
	t.Helper()
	res, err := a.client.Insert(context.Background(), reflecttask.Args{TaskID: task}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Job.ID
}

// checkReflected checks the task was reflected on exactly once, by job:
// one reflection with one lesson recorded, one lesson from the task.
func (r *killRig) checkReflected(t *testing.T, task string, jobID int64) {
	t.Helper()
	ctx := context.Background()
	tk, err := r.store.GetTask(ctx, r.store.DB, task)
	if err != nil || tk.ReflectedBy != store.ReflectedByJob {
		t.Fatalf("task %s: %+v, %v; want reflected on by the job", task, tk, err)
	}
	refl, err := r.store.ListReflections(ctx, r.store.DB, task)
	if err != nil || len(refl) != 1 || refl[0].JobID != jobID || refl[0].LessonsRecorded != 1 {
		t.Fatalf("reflections of %s: %+v, %v; want one by job %d recording one lesson", task, refl, err, jobID)
	}
	ms, err := r.store.ListMemories(ctx, r.store.DB, store.MemoryFilter{All: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range ms {
		if m.TaskID == task {
			n++
			if m.Kind != "failure" || m.JobID != jobID || m.Uses != 0 {
				t.Errorf("lesson of %s: %+v", task, m)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d lessons from %s; want exactly one", n, task)
	}
}
