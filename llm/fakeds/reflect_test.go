package fakeds_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/llm/fakeds"
)

// The default reflect_task reply passes learn/reflection's schema and the
// lesson rules: a failed task gets one new workspace failure whose one-line
// text names the step its result names; a succeeded one gets a none. The
// call is told by its prompt type, from the system message's marker or,
// without one, from the job kind header; neither, and it is no reflection.
func TestReflectTaskDefaultReply(t *testing.T) {
	_, ts := start(t, fakeds.Options{})
	const cmd = "ls /definitely-missing-build-dir"
	material := func(status, result string) string {
		return reflection.Material(reflection.TaskBrief{ID: "task-0f3a", Goal: "List the build output", Expected: "the file names",
			Status: status, Result: result}, "", reflection.Trajectory{ToolCalls: 1, ToolFailures: 1}, reflection.MaterialOptions{Mode: reflection.ModeJob})
	}
	const system = "You reflect on a coding agent's closed task for mull."
	byKind := http.Header{"X-Mull-Job-Kind": {"reflect_task"}}
	ask := func(t *testing.T, system, user string, header http.Header) string {
		t.Helper()
		body := map[string]any{"model": "deepseek-v4-flash", "response_format": map[string]any{"type": "json_object"},
			"thinking": map[string]any{"type": "disabled"}, "messages": []map[string]any{msg("system", system), msg("user", user)}}
		resp, out := post(t, ts, "/v1/chat/completions", body, header)
		var got wireToolAnswer
		if err := json.Unmarshal([]byte(out), &got); err != nil || resp.StatusCode != 200 || len(got.Choices) != 1 {
			t.Fatalf("status %d body %s (%v)", resp.StatusCode, out, err)
		}
		return got.Choices[0].Message.Content
	}
	failure := func(t *testing.T, reply string) reflection.Item {
		t.Helper()
		r, err := reflection.Parse([]byte(reply), reflection.Options{})
		if err != nil {
			t.Fatalf("reply %s: %v", reply, err)
		}
		if r.TaskID != "task-0f3a" || len(r.Lessons) != 1 {
			t.Fatalf("reflection %+v: want task-0f3a and one lesson", r)
		}
		it := r.Lessons[0]
		if it.Relation != reflection.New || it.Kind != memory.Failure || it.Scope != memory.LessonWorkspace {
			t.Fatalf("lesson %+v: want a new workspace failure", it)
		}
		if err := lesson.ValidateFields(it.Kind, it.Scope, it.Fields); err != nil {
			t.Fatalf("lesson %+v: %v", it.Fields, err)
		}
		return it
	}

	t.Run("failed, told by the job kind", func(t *testing.T) {
		it := failure(t, ask(t, system, material("failed", cmd+" failed with exit code 2"), byKind))
		if line := lesson.OneLine(it.Fields, it.Kind); !strings.Contains(line, cmd) {
			t.Fatalf("one-line text %q does not name the failed step", line)
		}
		if !strings.Contains(it.Fields.Problem, cmd) || it.Fields.Attempted != "List the build output" || it.Fields.Boundary == "" {
			t.Fatalf("fields %+v", it.Fields)
		}
	})
	t.Run("aborted, told by the prompt marker", func(t *testing.T) {
		failure(t, ask(t, "mull-prompt: reflect_task v1\n"+system, material("aborted", cmd), nil))
	})
	t.Run("a long result is cut to the lesson field limit", func(t *testing.T) {
		it := failure(t, ask(t, system, material("failed", cmd+" "+strings.Repeat("x", 900)), byKind))
		if n := utf8.RuneCountInString(it.Fields.Avoid); n != lesson.MaxFieldRunes {
			t.Fatalf("avoid is %d runes; want it cut to lesson.MaxFieldRunes (%d)", n, lesson.MaxFieldRunes)
		}
	})
	t.Run("succeeded: nothing stored", func(t *testing.T) {
		reply := ask(t, system, material("succeeded", "listed 3 files"), byKind)
		r, err := reflection.Parse([]byte(reply), reflection.Options{})
		if err != nil || len(r.Lessons) != 1 || r.Lessons[0].Relation != reflection.None || r.Storing() != 0 {
			t.Fatalf("reply %s: %+v, %v; want one none", reply, r, err)
		}
	})
	t.Run("no marker, no kind: not a reflection", func(t *testing.T) {
		if reply := ask(t, system, material("failed", cmd), nil); reply != `{"ok":true}` {
			t.Fatalf("reply %s; want the plain JSON reply", reply)
		}
	})
	t.Run("a marker of another type wins over the kind", func(t *testing.T) {
		if reply := ask(t, "mull-prompt: llm_probe\nReply in json.", "hi", byKind); !strings.Contains(reply, `"echo":"hi"`) {
			t.Fatalf("reply %s; want llm_probe's", reply)
		}
	})
}
