package api_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestAdminLLMCallShow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		ctx := context.Background()
		msgs := []store.LLMMessage{{Role: "system", Content: "fixed"}, {Role: "user", Content: "token [redacted:ghs]"}}
		for _, c := range []store.LLMCall{
			{ID: "call_kept", Kind: "retro_session", Model: "m", Outcome: "ok", Messages: msgs},
			{ID: "call_bare", Kind: "retro_session", Model: "m", Outcome: "ok"},
		} {
			if err := s.InsertLLMCall(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		var got store.LLMCallDetail
		expect(t, f.do("GET", "/v1/admin/llm/calls/call_kept", ""), http.StatusOK, &got)
		if got.ID != "call_kept" || !reflect.DeepEqual(got.Messages, msgs) {
			t.Fatalf("kept call = %+v", got)
		}
		got = store.LLMCallDetail{}
		expect(t, f.do("GET", "/v1/admin/llm/calls/call_bare", ""), http.StatusOK, &got)
		if got.Messages == nil || len(got.Messages) != 0 {
			t.Fatalf("bare call's messages = %#v, want []", got.Messages)
		}
		expectError(t, f.do("GET", "/v1/admin/llm/calls/call_nope", ""), http.StatusNotFound, "no such llm call")
		// The list stays light: no messages.
		var list struct {
			Calls []map[string]any `json:"calls"`
		}
		expect(t, f.do("GET", "/v1/admin/llm/calls", ""), http.StatusOK, &list)
		for _, c := range list.Calls {
			if _, ok := c["messages"]; ok {
				t.Fatalf("list shows messages: %v", c)
			}
		}
	})
}
