package refinereview_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mullhq/mull/jobs/refinereview"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// A session's events map to the trajectory's turns: messages with text,
// tool results (failed ones marked), errors (always failures), feedback,
// turn ends (an error end is a failure) and compactions; usage events add
// their prompt cache hits instead; bookkeeping and unparsable events are
// left out.
func TestTurns(t *testing.T) {
	ev := func(typ, payload string) store.Event {
		return store.Event{Type: typ, Time: t0, Payload: json.RawMessage(payload)}
	}
	turns, cache := refinereview.Turns([]store.Event{
		ev("session_start", `{"title":"t"}`),
		ev("user_message", `{"text":"fix the pager","source":"user"}`),
		ev("assistant_message", `{"text":"","reasoning":"thinking"}`),
		ev("tool_result", `{"tool":"bash","command":"go test","exit_code":1,"is_error":true,"output":"FAIL"}`),
		ev("tool_result", `{"tool":"read","command":"{\"path\":\"a.go\"}","is_error":false}`),
		ev("tool_result", `{"tool":"fs","is_error":true,"error_code":"FS_NOT_FOUND"}`),
		ev("error", `{"message":"provider timeout","code":"ETIMEDOUT"}`),
		ev("feedback", `{"rating":"down","text":"wrong file"}`),
		ev("usage", `{"input_tokens":10,"cache_read_tokens":700,"output_tokens":5}`),
		ev("usage", `{"input_tokens":10,"cache_read_tokens":300,"output_tokens":5}`),
		ev("turn_end", `{"turn":3,"reason":"error","error":"max steps"}`),
		ev("compaction_end", `{}`),
		ev("fs_observed", `{"path":"a.go","op":"modify"}`),
		ev("user_message", `not json`),
	})
	want := []harness.Turn{
		{At: t0, Type: "user_message", Text: "fix the pager"},
		{At: t0, Type: "tool_result", Text: "bash go test (exit 1): FAIL", Failed: true},
		{At: t0, Type: "tool_result", Text: `read {"path":"a.go"}`},
		{At: t0, Type: "tool_result", Text: "fs (FS_NOT_FOUND)", Failed: true},
		{At: t0, Type: "error", Text: "ETIMEDOUT: provider timeout", Failed: true},
		{At: t0, Type: "feedback", Text: "rating down: wrong file"},
		{At: t0, Type: "turn_end", Text: "turn 3 error: max steps", Failed: true},
		{At: t0, Type: "compaction_end", Text: "context compacted"},
	}
	if !reflect.DeepEqual(turns, want) || cache != 1000 {
		t.Fatalf("turns %+v\ncache reads %d\nwant %+v and 1000", turns, cache, want)
	}
}
