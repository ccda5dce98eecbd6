package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// maxResponseBody caps what one response may hold.
const maxResponseBody = 32 << 20

// callState travels in the request context from the client to the
// transport: what to add to the request, and what came back that go-openai
// does not expose (DeepSeek's cache split, Retry-After).
type callState struct {
	extra  map[string]any
	header http.Header

	status     int
	retryAfter time.Duration
	raw        []byte
}

type stateKey struct{}

func withState(ctx context.Context, st *callState) context.Context {
	return context.WithValue(ctx, stateKey{}, st)
}

// transport is the go-openai HTTPDoer. It adds body fields go-openai has no
// field for (thinking, user_id, a zero temperature its omitempty drops) and
// keeps the raw response body so usage can be read in full.
type transport struct {
	hc *http.Client
}

func (t *transport) Do(req *http.Request) (*http.Response, error) {
	st, _ := req.Context().Value(stateKey{}).(*callState)
	if st == nil {
		return t.hc.Do(req)
	}
	if err := rewriteBody(req, st.extra); err != nil {
		return nil, err
	}
	for k, v := range st.header {
		req.Header[k] = v
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, err
	}
	st.status = resp.StatusCode
	st.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	st.raw = b
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

func rewriteBody(req *http.Request, extra map[string]any) error {
	if req.Body == nil || len(extra) == 0 {
		return nil
	}
	b, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(b, &body); err != nil {
		return fmt.Errorf("rewrite request body: %w", err)
	}
	for k, v := range extra {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		body[k] = raw
	}
	if b, err = json.Marshal(body); err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.ContentLength = int64(len(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return nil
}

// parseRetryAfter reads seconds or an HTTP date; zero when absent or bad.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// rawUsage is the usage object as DeepSeek sends it.
type rawUsage struct {
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		CacheHit         int64 `json:"prompt_cache_hit_tokens"`
		CacheMiss        int64 `json:"prompt_cache_miss_tokens"`
	} `json:"usage"`
}

// usageFrom reads usage from a raw body. A provider without the cache split
// counts every prompt token as a miss.
func usageFrom(raw []byte) (Usage, bool) {
	var r rawUsage
	if err := json.Unmarshal(bytes.TrimSpace(raw), &r); err != nil || r.Usage == nil {
		return Usage{}, false
	}
	u := Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens,
		CacheHitTokens: r.Usage.CacheHit, CacheMissTokens: r.Usage.CacheMiss}
	if u.CacheHitTokens+u.CacheMissTokens != u.PromptTokens {
		u.CacheHitTokens = min(u.CacheHitTokens, u.PromptTokens)
		u.CacheMissTokens = u.PromptTokens - u.CacheHitTokens
	}
	return u, true
}
