package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
)

// TestRetroSurvivesSIGKILL kills a `mull worker` in the middle of a retro's
// LLM call, and then another one just after the fake answered a second
// session's retro (before or after the apply committed: at random), and
// checks each retro is applied exactly once by the workers started after:
// one retro_runs row, the lesson and the fact once, the scripted handoff.
func TestRetroSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills worker processes")
	}
	answer, err := json.Marshal(learnAnswer)
	if err != nil {
		t.Fatal(err)
	}
	script := &fakeds.Script{Rules: []fakeds.Rule{
		{Kind: "retro_session", Marker: "SLOW-RETRO", Times: 1, Fault: fakeds.FaultSlow, Delay: 1500 * time.Millisecond},
		{Kind: "retro_session", Response: &fakeds.Response{Content: string(answer)}},
	}}
	label := func(_ *http.Request, body []byte) string {
		for _, m := range []string{"SLOW-RETRO", "FAST-RETRO"} {
			if bytes.Contains(body, []byte(m)) {
				return m
			}
		}
		return "other"
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			start := time.Now()
			r := newKillRig(t, dialect, script, label)
			seedEndedSessions(t, r.store, "slow", "fast")
			a, rng := r.manage(t), killRNG(t)
			w := r.retroKilledMidCall(t, a, rng)
			w = r.retroKilledAfterAnswer(t, a, rng, w)
			r.stop(t, w)
			t.Logf("%s took %s", dialect, time.Since(start).Round(time.Millisecond))
		})
	}
}

// retroKilledMidCall kills the worker in the middle of the slow session's
// retro call: the next worker's watchdog rescues the job, which asks again
// and applies once. It returns the worker left running.
func (r *killRig) retroKilledMidCall(t *testing.T, a *app, rng *rand.Rand) *exec.Cmd {
	t.Helper()
	id := r.enqueueRetro(t, "session-slow")
	w := r.start(t)
	waitSignal(t, r.tap.arrived, "SLOW-RETRO")
	after := randomDelay(rng, time.Second)
	kill(t, w)
	t.Logf("killed %s into the slow retro call", after)
	w = r.start(t)
	job := waitJob(t, a, id)
	if job.State != rivertype.JobStateCompleted || job.Attempt != 2 || len(job.Errors) != 1 ||
		!strings.Contains(job.Errors[0].Error, "job rescued by mull's watchdog") {
		t.Fatalf("slow retro job ended %s at attempt %d with errors %+v; want completed at attempt 2 after the watchdog's rescue",
			job.State, job.Attempt, job.Errors)
	}
	r.checkRetro(t, id, "slow")
	// The killed call never returned: its record, written as the request
	// went out, stays running (and its budget reservation reserved) until
	// the budget sweep marks it lost past llm.call_timeout plus a minute.
	// The retry's call is the job's one ok record.
	outcomes := map[string]int{}
	for _, c := range r.llmCalls(t, id) {
		outcomes[c.Outcome]++
	}
	if len(outcomes) != 2 || outcomes["ok"] != 1 || outcomes[store.LLMCallRunning]+outcomes[store.LLMCallLost] != 1 {
		t.Fatalf("llm calls of the slow job by outcome %v, want the killed one running (or lost) and one ok", outcomes)
	}
	if asked := r.asked(t, "SLOW-RETRO"); asked != 2 {
		t.Fatalf("the fake was asked the slow retro %d times, want 2 (killed, retried)", asked)
	}
	return w
}

// retroKilledAfterAnswer kills worker w at random just after the fake
// answered the fast session's retro: before the apply committed, the next
// worker asks again; after, the job is done. Either way it applies once.
// It returns the worker left running.
func (r *killRig) retroKilledAfterAnswer(t *testing.T, a *app, rng *rand.Rand, w *exec.Cmd) *exec.Cmd {
	t.Helper()
	id := r.enqueueRetro(t, "session-fast")
	waitSignal(t, r.tap.answered, "FAST-RETRO")
	after := randomDelay(rng, 150*time.Millisecond)
	kill(t, w)
	w = r.start(t)
	if job := waitJob(t, a, id); job.State != rivertype.JobStateCompleted {
		t.Fatalf("fast retro job ended %s: %+v", job.State, job.Errors)
	}
	asked := r.asked(t, "FAST-RETRO")
	t.Logf("killed %s after the fast retro's answer; asked %d times (%s)", after, asked,
		map[int]string{1: "it had committed", 2: "the kill beat the commit"}[asked])
	r.checkRetro(t, id, "fast")
	ok := 0
	for _, c := range r.llmCalls(t, id) {
		if c.Outcome == "ok" {
			ok++
		}
	}
	// A kill between the answer and its record leaves the call running: only
	// finished calls are ok.
	if asked < 1 || asked > 2 || ok < 1 || ok > asked || asked == 1 && ok != 1 {
		t.Fatalf("fast retro asked %d times with %d ok calls recorded", asked, ok)
	}
	return w
}

// seedEndedSessions stores one ended primary session per name, in a
// workspace of its own, whose request quotes a marker the fake matches:
// "slow" → SLOW-RETRO.
func seedEndedSessions(t *testing.T, s *store.Store, names ...string) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	var batch []events.Event
	for _, name := range names {
		id, ws := "session-"+name, "/home/dev/"+name
		ev := func(n int, typ events.Type, payload string) events.Event {
			return events.Event{ID: fmt.Sprintf("%s-%d", id, n), Type: typ, SessionID: id, Workspace: ws,
				Time: now.Add(time.Duration(n-10) * time.Second), Payload: json.RawMessage(payload)}
		}
		batch = append(batch,
			ev(0, events.SessionStart, `{"title":"fix the build"}`),
			ev(1, events.UserMessage, `{"text":"`+strings.ToUpper(name)+`-RETRO run the tests"}`),
			ev(2, events.ToolResult, `{"tool":"bash","command":"go test ./...","exit_code":1,"is_error":true,"output":"no required module provides package"}`),
			ev(3, events.SessionEnd, `{"reason":"completed"}`))
	}
	if _, err := ingest.New(s, ingest.Hooks{}).IngestBatch(context.Background(), batch, store.SourcePush); err != nil {
		t.Fatal(err)
	}
}

// enqueueRetro enqueues a session's retro with `mull retro run --no-wait`.
func (r *killRig) enqueueRetro(t *testing.T, session string) int64 {
	t.Helper()
	code, out, errOut := mull(t, context.Background(), append(r.base, "retro", "run", session, "--no-wait")...)
	if code != 0 {
		t.Fatalf("retro run --no-wait: exit %d\n%s%s", code, out, errOut)
	}
	id, err := strconv.ParseInt(enqueuedID(t, out), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// checkRetro checks a retro job applied exactly once: its retro_runs row,
// the answer's lesson and fact once each in the session's workspace, never
// bumped by a second application, and its handoff.
func (r *killRig) checkRetro(t *testing.T, jobID int64, name string) {
	t.Helper()
	ctx := context.Background()
	ws, session := "/home/dev/"+name, "session-"+name
	run, ok, err := r.store.GetRetroRun(ctx, r.store.DB, jobID)
	if err != nil || !ok || run.SessionID != session || !strings.Contains(run.Counts, `"added":2,"bumped":0`) {
		t.Fatalf("retro run of job %d: %+v, %v, %v; want one applied run that added 2", jobID, run, ok, err)
	}
	ms, err := r.store.ListMemories(ctx, r.store.DB, store.MemoryFilter{Workspaces: []string{ws}, All: true, Oldest: true})
	if err != nil {
		t.Fatal(err)
	}
	// The lesson is stored structured (retro.Structure's one-line text).
	lesson, _, err := retro.Structure(memory.Memory{Kind: memory.Lesson, Workspace: ws, Origin: memory.OriginRetro, Text: learnAnswer.Lessons[0].Text}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{lesson.Text: "lesson", learnAnswer.Facts[0].Text: "fact"}
	for _, m := range ms {
		if want[m.Text] != m.Kind || m.JobID != jobID || m.Uses != 0 || !m.InvalidAt.IsZero() {
			t.Errorf("unexpected memory %+v", m)
		}
		delete(want, m.Text)
	}
	if len(ms) != 2 || len(want) != 0 {
		t.Fatalf("%d memories in %s, want the lesson and the fact once each: %+v", len(ms), ws, ms)
	}
	h, ok, err := r.store.GetHandoff(ctx, r.store.DB, ws)
	if err != nil || !ok || h.Text != strings.Join(learnAnswer.Handoff, "\n") || h.JobID != jobID || h.SessionID != session {
		t.Fatalf("handoff of %s: %+v, %v, %v", ws, h, ok, err)
	}
}

func (r *killRig) llmCalls(t *testing.T, jobID int64) []store.LLMCall {
	t.Helper()
	calls, err := r.store.ListLLMCalls(context.Background(), store.LLMCallFilter{JobID: jobID})
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

// asked counts the requests the fake got whose messages hold marker.
func (r *killRig) asked(t *testing.T, marker string) int {
	t.Helper()
	n := 0
	for _, req := range r.fake.Requests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, marker) {
				n++
				break
			}
		}
	}
	return n
}

// killWS is the consolidated workspace.
const killWS = "/home/dev/library"
