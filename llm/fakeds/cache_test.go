package fakeds_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/llm/fakeds"
)

// call sends a non-streaming request and returns the usage it carried.
func call(t *testing.T, srv *testServer, model, system, user string, extra map[string]any) fakeds.Usage {
	t.Helper()
	body := map[string]any{
		"model":    model,
		"messages": []map[string]any{{"role": "system", "content": system}, {"role": "user", "content": user}},
	}
	for k, v := range extra {
		body[k] = v
	}
	resp, out := post(t, srv.ts, "/chat/completions", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	u := decodeCompletion(t, out).Usage
	checkUsage(t, u)
	return u
}

func TestTokenCountingRule(t *testing.T) {
	msgs := []fakeds.Message{{Role: "system", Content: strings.Repeat("x", 401)}, {Role: "user", Content: "hi"}}
	// Each message: 3 framing tokens + ceil(bytes/4).
	if got, want := fakeds.PromptTokens(msgs), (3+101)+(3+1); got != want {
		t.Fatalf("PromptTokens %d, want %d", got, want)
	}
	if fakeds.TextTokens("") != 0 || fakeds.TextTokens("abcd") != 1 || fakeds.TextTokens("abcde") != 2 {
		t.Fatal("TextTokens is not ceil(bytes/4)")
	}
}

func TestPrefixCacheSplit(t *testing.T) {
	srv := newTestServer(t, fakeds.Options{CacheUnit: 64})
	system := strings.Repeat("Fixed instructions, schema and examples. ", 40) // 1640 bytes: 410 tokens
	first := call(t, srv, "deepseek-v4-flash", system, "question one", nil)
	if first.PromptCacheHitTokens != 0 || first.PromptTokens != (3+410)+(3+3) {
		t.Fatalf("first usage %+v: want all miss and %d prompt tokens", first, (3+410)+(3+3))
	}

	// Same system prompt: the shared prefix is the system message (413
	// tokens) plus the user message's begin and role (2): 415 tokens, of
	// which 6 whole units of 64 hit.
	second := call(t, srv, "deepseek-v4-flash", system, "question two, longer", nil)
	if second.PromptCacheHitTokens != 6*64 || second.PromptCacheMissTokens != second.PromptTokens-6*64 {
		t.Fatalf("second usage %+v: want %d cache-hit tokens", second, 6*64)
	}

	// The very same prompt again: every whole unit hits.
	again := call(t, srv, "deepseek-v4-flash", system, "question two, longer", nil)
	if again.PromptCacheHitTokens != again.PromptTokens/64*64 {
		t.Fatalf("repeat usage %+v: want every whole unit to hit", again)
	}

	// Another prompt, and the same prompt on another model: all miss.
	if u := call(t, srv, "deepseek-v4-flash", "Other. "+system, "question one", nil); u.PromptCacheHitTokens != 0 {
		t.Fatalf("different prompt usage %+v: want all miss", u)
	}
	if u := call(t, srv, "deepseek-v4-pro", system, "question one", nil); u.PromptCacheHitTokens != 0 {
		t.Fatalf("other model usage %+v: want all miss", u)
	}

	// Reset forgets the cache.
	srv.fake.Reset()
	if u := call(t, srv, "deepseek-v4-flash", system, "question one", nil); u.PromptCacheHitTokens != 0 {
		t.Fatalf("after Reset usage %+v: want all miss", u)
	}
}

func TestPrefixCacheNeedsAWholeUnit(t *testing.T) {
	srv := newTestServer(t, fakeds.Options{CacheUnit: 64})
	short := strings.Repeat("s", 200) // 50 tokens + framing: under one unit
	call(t, srv, "deepseek-v4-flash", short, "a", nil)
	if u := call(t, srv, "deepseek-v4-flash", short, "a", nil); u.PromptCacheHitTokens != 0 {
		t.Fatalf("usage %+v: a prompt shorter than a unit never hits", u)
	}
	srv = newTestServer(t, fakeds.Options{CacheUnit: 8})
	call(t, srv, "deepseek-v4-flash", short, "a", nil)
	if u := call(t, srv, "deepseek-v4-flash", short, "b", nil); u.PromptCacheHitTokens != 48 {
		t.Fatalf("usage %+v: with a unit of 8, the shared 55 tokens give 48 hits", u)
	}
}

func TestPrefixCachePerUser(t *testing.T) {
	system := strings.Repeat("y", 1024)
	for _, perUser := range []bool{false, true} {
		srv := newTestServer(t, fakeds.Options{CachePerUser: perUser})
		call(t, srv, "deepseek-v4-flash", system, "q", map[string]any{"user_id": "mull:retro_session:1"})
		u := call(t, srv, "deepseek-v4-flash", system, "q", map[string]any{"user_id": "mull:retro_session:2"})
		if hit := u.PromptCacheHitTokens > 0; hit == perUser {
			t.Fatalf("CachePerUser=%t: usage %+v across two user_ids", perUser, u)
		}
	}
}
