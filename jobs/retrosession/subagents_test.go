package retrosession_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestRetroReadsSubagentFailures: a session's retro shows the failures of
// the subagent sessions started from it (their session_start names it as
// parent), marked as theirs, with the call that came next; a session of
// another parent is not read.
func TestRetroReadsSubagentFailures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := start(t, s, script(mustJSON(answer), ""))
		svc := ingest.New(s, ingest.Hooks{})
		session(t, s, "session-parent")
		t0 := time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Second)
		child := func(id, parent, command, output string) {
			mk := func(n int, typ events.Type, payload string) events.Event {
				return events.Event{ID: id + "-" + string(rune('a'+n)), Type: typ, SessionID: id, Workspace: ws,
					Time: t0.Add(time.Duration(n) * time.Second), Payload: json.RawMessage(payload)}
			}
			if _, err := svc.IngestBatch(context.Background(), []events.Event{
				mk(0, events.SessionStart, `{"primary":false,"parent":"`+parent+`"}`),
				mk(1, events.UserMessage, `{"text":"the delegated task","source":"user"}`),
				mk(2, events.ToolResult, `{"tool":"bash","command":"`+command+`","exit_code":2,"is_error":true,"output":"`+output+`"}`),
				mk(3, events.ToolResult, `{"tool":"bash","command":"`+command+`","exit_code":0,"is_error":false,"output":"collected 4 items, 4 passed"}`),
			}, store.SourcePush); err != nil {
				t.Fatal(err)
			}
		}
		child("session-child", "session-parent", "pytest -x", "ModuleNotFoundError: No module named 'app'")
		child("session-stranger", "session-other", "make lint", "lint exploded")
		e.run(t, "session-parent")

		var prompt string
		for _, r := range e.fake.Requests() {
			for _, m := range r.Messages {
				prompt += m.Content + "\n"
			}
		}
		for _, want := range []string{
			"(in subagent session-child) bash exit 2: pytest -x\n  | => ModuleNotFoundError: No module named 'app'",
			"next call on the same target, it passed:",
			"bash exit 1: go test ./...", // the parent's own
		} {
			if !strings.Contains(prompt, want) {
				t.Errorf("the retro's prompt lacks %q:\n%s", want, prompt)
			}
		}
		if strings.Contains(prompt, "lint exploded") || strings.Contains(prompt, "the delegated task") {
			t.Errorf("the retro read more than the parent's subagents' failures:\n%s", prompt)
		}
	})
}
