package fakeds_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/llm/fakeds"
)

// call sends a non-streaming request and returns the usage it carried.
func call(t *testing.T, srv *testServer, model, system, user string, extra map[string]any) fakeds.Usage {
	t.Helper()
	u, _ := converse(t, srv, model, []map[string]any{{"role": "system", "content": system}, {"role": "user", "content": user}}, extra)
	return u
}

// converse sends messages and returns the usage and the answer's content.
func converse(t *testing.T, srv *testServer, model string, msgs []map[string]any, extra map[string]any) (fakeds.Usage, string) {
	t.Helper()
	body := map[string]any{"model": model, "messages": msgs}
	for k, v := range extra {
		body[k] = v
	}
	resp, out := post(t, srv.ts, "/chat/completions", body, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	c := decodeCompletion(t, out)
	checkUsage(t, c.Usage)
	return c.Usage, c.Choices[0].Message.Content
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

// The rules of DeepSeek's guide (api-docs.deepseek.com/guides/kv_cache):
// a request hits only a persisted unit it matches fully; a prefix two
// requests share is persisted when the second reveals it, so it is the
// third that hits it (the guide's example 2: A+B, then A+C misses, then
// A+D hits A).
func TestPrefixCacheSplit(t *testing.T) {
	srv := newTestServer(t, fakeds.Options{CacheUnit: 64})
	system := strings.Repeat("Fixed instructions, schema and examples. ", 40) // 1640 bytes: 410 tokens
	first := call(t, srv, "deepseek-v4-flash", system, "question one", nil)
	if first.PromptCacheHitTokens != 0 || first.PromptTokens != (3+410)+(3+3) {
		t.Fatalf("first usage %+v: want all miss and %d prompt tokens", first, (3+410)+(3+3))
	}

	// A+C after A+B: no unit of the first request is a prefix of this one.
	second := call(t, srv, "deepseek-v4-flash", system, "question two, longer", nil)
	if second.PromptCacheHitTokens != 0 {
		t.Fatalf("second usage %+v: the shared prefix is not persisted yet, want all miss", second)
	}

	// A+D: the common prefix the second revealed is the system message
	// (413 tokens) plus the user message's begin and role (2): 415 tokens,
	// found at unit boundaries, so its 6 whole units of 64 hit.
	third := call(t, srv, "deepseek-v4-flash", system, "question three", nil)
	if third.PromptCacheHitTokens != 6*64 || third.PromptCacheMissTokens != third.PromptTokens-6*64 {
		t.Fatalf("third usage %+v: want %d cache-hit tokens", third, 6*64)
	}

	// The very same prompt again: its input's end is a unit, so all of its
	// whole units hit.
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

// The guide's example 1, a multi-round conversation: the second round
// matches the unit at the end of the first round's output.
func TestPrefixCacheNextRound(t *testing.T) {
	srv := newTestServer(t, fakeds.Options{})
	sys := map[string]any{"role": "system", "content": strings.Repeat("You are a helpful assistant. ", 20)}
	q1 := map[string]any{"role": "user", "content": "What is the capital of China?"}
	u1, a1 := converse(t, srv, "deepseek-v4-flash", []map[string]any{sys, q1}, nil)
	round1 := fakeds.PromptTokens([]fakeds.Message{{Role: "system", Content: sys["content"].(string)}, {Role: "user", Content: q1["content"].(string)},
		{Role: "assistant", Content: a1}})
	u2, _ := converse(t, srv, "deepseek-v4-flash", []map[string]any{sys, q1, {"role": "assistant", "content": a1},
		{"role": "user", "content": "And of the United States?"}}, nil)
	if u1.PromptCacheHitTokens != 0 || u2.PromptCacheHitTokens != round1/64*64 {
		t.Fatalf("rounds %+v then %+v: want the second to hit the first round's %d tokens in whole units", u1, u2, round1)
	}
}

// Long prefixes are persisted at fixed intervals too, so a second request
// sharing a long one hits its whole intervals.
func TestPrefixCacheInterval(t *testing.T) {
	system := strings.Repeat("z", 4*600) // 603 tokens with framing
	for _, c := range []struct {
		interval, want int
	}{{128, 512}, {-1, 0}, {0, 0}} { // 0: the default, 1024, is longer than the prompt
		srv := newTestServer(t, fakeds.Options{CacheInterval: c.interval})
		call(t, srv, "deepseek-v4-flash", system, "a", nil)
		if u := call(t, srv, "deepseek-v4-flash", system, "b", nil); u.PromptCacheHitTokens != c.want {
			t.Errorf("interval %d: usage %+v, want %d cache-hit tokens", c.interval, u, c.want)
		}
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
	call(t, srv, "deepseek-v4-flash", short, "b", nil)
	if u := call(t, srv, "deepseek-v4-flash", short, "c", nil); u.PromptCacheHitTokens != 48 {
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
