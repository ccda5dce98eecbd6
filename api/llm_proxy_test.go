package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/benchcap"
	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// proxyRig is a server with the LLM proxy over a fake DeepSeek, a budget
// ledger, an admin token and a clock the test moves, and one memory run
// whose cell job, running (its first attempt), is noted.
type proxyRig struct {
	t      *testing.T
	s      *store.Store
	srv    *api.Server
	fake   *fakeds.Server
	ledger *budget.Ledger
	c      *engine.Client
	reg    *engine.Registry
	run    runBody
	job    *storetest.Job
	offset atomic.Int64
}

const (
	realKey   = "sk-real-deepseek"
	adminTok  = "adm"
	generalTk = "tok"
)

func newProxyRig(t *testing.T, s *store.Store) *proxyRig {
	t.Helper()
	p := &proxyRig{t: t, s: s, fake: fakeds.New(fakeds.Options{APIKey: realKey})}
	ds := httptest.NewServer(p.fake)
	t.Cleanup(ds.Close)
	cfg := enginetest.Config()
	cfg.APIToken, cfg.AdminToken = generalTk, adminTok
	cfg.LLM.APIKey, cfg.LLM.BaseURL = realKey, ds.URL+"/v1"
	var err error
	if p.ledger, err = budget.New(s, cfg.Budget); err != nil {
		t.Fatal(err)
	}
	client := llm.New(llm.Options{Config: cfg.LLM, Ledger: p.ledger, Calls: s, Logger: enginetest.Logger()})
	p.reg = engine.NewRegistry(nil)
	registerRefine(p.reg, s, cfg)
	mem := memories.New(s, cfg.Memory, cfg.Digest)
	hs := harnesses.New(s, cfg.Harness, enginetest.Logger())
	b := registerBench(p.reg, s, cfg, hs, mem)
	p.c = enginetest.NewClient(t, s, p.reg, cfg, false)
	p.srv, err = api.New(t.Context(), api.Deps{Store: s, Client: p.c, Registry: p.reg, Logger: enginetest.Logger(),
		AdminToken: adminTok, Config: cfg, Harness: hs, Memories: mem, Bench: b, LLM: client,
		Now: func() time.Time { return time.Now().Add(time.Duration(p.offset.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, serve(p.srv, "POST", "/v1/admin/bench/cases/import", demoCases, bearer(adminTok)), http.StatusCreated, nil)
	expect(t, serve(p.srv, "POST", "/v1/admin/bench/freeze", `{"set":"demo"}`, bearer(adminTok)), http.StatusOK, nil)
	expect(t, serve(p.srv, "POST", "/v1/admin/bench/memory", `{"workspace":"/w","set":"demo","runs":1}`, bearer(adminTok)),
		http.StatusAccepted, &p.run)
	p.job = storetest.StartJob(t, s, "bench_cell")
	if err := b.NoteCellJob(t.Context(), p.run.Run.ID, p.job.Row.ID); err != nil {
		t.Fatal(err)
	}
	return p
}

// capability mints the capability of the run's candidate cell of case
// build, for snapshot (the candidate's when ""), as its job's running
// attempt would, expiring in 5 minutes.
func (p *proxyRig) capability(snapshot string) string {
	p.t.Helper()
	return p.capabilityFor(snapshot, "deepseek-v4-flash")
}

// capabilityFor is capability with the cell's model.
func (p *proxyRig) capabilityFor(snapshot, model string) string {
	p.t.Helper()
	if snapshot == "" {
		snapshot = p.run.Run.Candidate
	}
	tok, err := benchcap.NewKeyring(p.s).Mint(p.t.Context(), benchcap.Claims{Run: p.run.Run.ID, Side: bench.Candidate, Case: "build",
		Iteration: 1, Snapshot: snapshot, Job: p.job.Row.ID, Attempt: p.job.Row.Attempt, Started: p.job.Row.AttemptedAt.UnixMilli(), Kind: "bench_cell", Workspace: "/w", Model: model, Expires: time.Now().Add(5 * time.Minute).Unix()})
	if err != nil {
		p.t.Fatal(err)
	}
	return tok
}

// chat is a DSH-like request: streamed, with usage asked for, no
// max_tokens (DSH's default is far above what a cell may spend).
const chat = `{"model":"deepseek-v4-flash","messages":[{"role":"system","content":"You are a coding agent."},
	{"role":"user","content":[{"type":"text","text":"Benchmark case: Build the binary"}]}],"stream":true,"tools":[{"type":"function","function":{"name":"bash","parameters":{}}}]}`

func (p *proxyRig) post(body string, opts ...reqOpt) *httptest.ResponseRecorder {
	return serve(p.srv, "POST", "/v1/llm/proxy/chat/completions", body, opts...)
}

// proxyErr is the proxy's refusal: DeepSeek's error shape, which DSH shows.
func proxyErr(t *testing.T, rec *httptest.ResponseRecorder, status int, want string) {
	t.Helper()
	var body struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	expect(t, rec, status, &body)
	if !strings.Contains(body.Error.Message, want) {
		t.Fatalf("error %q does not contain %q", body.Error.Message, want)
	}
}

// A cell's call through the proxy reaches DeepSeek with mull's key (never
// the capability), streamed back as it came, its max_tokens capped at
// bench.phase_max_tokens and its usage asked for; it is recorded as an
// llm_calls row of the cell's job, settled on the run's budget keys, and
// counted in the run's tokens. A non-streamed call is relayed too.
func TestLLMProxyRelaysAndAccounts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		p := newProxyRig(t, s)
		capTok := p.capability("")
		rec := p.post(chat, bearer(capTok), header("X-Deepseek-Harness-Session-Id", "session-1"))
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") ||
			!strings.HasSuffix(rec.Body.String(), "data: [DONE]\n\n") {
			t.Fatalf("streamed: %d %q\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
		reqs := p.fake.Requests()
		if len(reqs) != 1 {
			t.Fatalf("DeepSeek got %d requests, want 1", len(reqs))
		}
		got := reqs[0]
		var sent struct {
			StreamOptions map[string]bool `json:"stream_options"`
			Tools         []any           `json:"tools"`
		}
		_ = json.Unmarshal(got.Body, &sent)
		if got.Header.Get("Authorization") != "Bearer "+realKey || got.MaxTokens != 8000 || !sent.StreamOptions["include_usage"] ||
			len(sent.Tools) != 1 || got.Header.Get("X-Deepseek-Harness-Session-Id") != "session-1" || got.Kind != "bench_cell" {
			t.Errorf("sent: auth %q, max_tokens %d, stream_options %v, tools %d, session %q, kind %q", got.Header.Get("Authorization"),
				got.MaxTokens, sent.StreamOptions, len(sent.Tools), got.Header.Get("X-Deepseek-Harness-Session-Id"), got.Kind)
		}
		u := got.Usage
		spent := int64(u.PromptTokens + u.CompletionTokens)

		calls, err := s.ListLLMCalls(t.Context(), store.LLMCallFilter{JobID: p.job.Row.ID})
		if err != nil || len(calls) != 1 {
			t.Fatalf("calls of the cell's job: %+v %v", calls, err)
		}
		c := calls[0]
		if c.Outcome != "ok" || c.Kind != "bench_cell" || c.Workspace != "/w" || c.Model != "deepseek-v4-flash" ||
			c.PromptTokens != int64(u.PromptTokens) || c.CompletionTokens != int64(u.CompletionTokens) || c.CostNanoUSD <= 0 {
			t.Errorf("record %+v, usage %+v", c, u)
		}
		keys, err := p.ledger.Report(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"global", "kind:bench_cell", "workspace:/w"} {
			var k *budget.KeyReport
			for i := range keys {
				if keys[i].Key == want {
					k = &keys[i]
				}
			}
			if k == nil || k.SpentTokens != spent || k.ReservedTokens != 0 || k.Calls != 1 {
				t.Errorf("budget %s: %+v, want %d spent, none reserved", want, k, spent)
			}
		}
		var run runBody
		expect(t, serve(p.srv, "GET", "/v1/admin/bench/runs/"+p.run.Run.ID, "", bearer(adminTok)), http.StatusOK, &run)
		if run.Run.Tokens != spent || run.Run.CostUSD <= 0 {
			t.Errorf("run tokens %d cost %v, want the proxied call's %d", run.Run.Tokens, run.Run.CostUSD, spent)
		}

		plain := strings.Replace(chat, `"stream":true`, `"stream":false,"max_tokens":300`, 1)
		rec = p.post(plain, bearer(capTok))
		var out struct {
			Choices []any `json:"choices"`
			Usage   struct {
				PromptTokens int64 `json:"prompt_tokens"`
			} `json:"usage"`
		}
		expect(t, rec, http.StatusOK, &out)
		if len(out.Choices) != 1 || out.Usage.PromptTokens == 0 || p.fake.Requests()[1].MaxTokens != 300 {
			t.Errorf("non-streamed: %s (max_tokens sent %d)", rec.Body, p.fake.Requests()[1].MaxTokens)
		}
		if calls, _ := s.ListLLMCalls(t.Context(), store.LLMCallFilter{JobID: p.job.Row.ID}); len(calls) != 2 {
			t.Errorf("%d calls after the second, want 2", len(calls))
		}
	})
}

// The proxy refuses, sending nothing to DeepSeek: no capability, mull's
// general API token, an altered or expired capability (401); while the
// cell's LLM queue is paused (402, naming the pause); when the run's
// budget has no room (402, recorded as a budget refusal of the job). A
// 402 from DeepSeek is passed on and pauses the queue, as a job's does.
func TestLLMProxyRefuses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		p := newProxyRig(t, s)
		capTok := p.capability("")
		proxyErr(t, p.post(chat), http.StatusUnauthorized, "capability")
		proxyErr(t, p.post(chat, bearer(generalTk)), http.StatusUnauthorized, "capability")
		proxyErr(t, p.post(chat, bearer(capTok[:len(capTok)-4]+"AAAA")), http.StatusUnauthorized, "altered")
		p.offset.Store(int64(6 * time.Minute))
		proxyErr(t, p.post(chat, bearer(capTok)), http.StatusUnauthorized, "expired")
		p.offset.Store(0)

		spec, _ := p.reg.Spec("bench_cell")
		queue := spec.Queue
		if err := llm.PauseWithoutKey(t.Context(), p.c, s.Driver(), []string{queue}, time.Now()); err != nil {
			t.Fatal(err)
		}
		proxyErr(t, p.post(chat, bearer(capTok)), http.StatusPaymentRequired, "is paused ("+llm.NoKeyReason+")")
		if err := p.c.QueueResume(t.Context(), queue, nil); err != nil {
			t.Fatal(err)
		}

		// A limit below one call's worst case, then one another call
		// has filled.
		if err := p.ledger.SetLimit(t.Context(), "workspace:/w", 100, 0); err != nil {
			t.Fatal(err)
		}
		proxyErr(t, p.post(chat, bearer(capTok)), http.StatusPaymentRequired, `budget "workspace:/w" exhausted`)
		if err := p.ledger.SetLimit(t.Context(), "workspace:/w", 10000, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := p.ledger.Reserve(t.Context(), budget.Request{Workspace: "/w", Tokens: 5000}); err != nil {
			t.Fatal(err)
		}
		proxyErr(t, p.post(chat, bearer(capTok)), http.StatusPaymentRequired, "5000 tokens of 10000 tokens used")
		if n := len(p.fake.Requests()); n != 0 {
			t.Fatalf("DeepSeek got %d requests from refused calls", n)
		}
		calls, _ := s.ListLLMCalls(t.Context(), store.LLMCallFilter{JobID: p.job.Row.ID})
		if len(calls) != 2 || calls[0].ErrorReason != "budget" || calls[1].ErrorReason != "budget_too_small" {
			t.Errorf("calls %+v, want both budget refusals recorded, newest first", calls)
		}
		if err := p.ledger.UnsetLimit(t.Context(), "workspace:/w"); err != nil {
			t.Fatal(err)
		}

		if err := p.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultBalance}}}); err != nil {
			t.Fatal(err)
		}
		proxyErr(t, p.post(chat, bearer(capTok)), http.StatusPaymentRequired, "Insufficient Balance")
		q, err := p.c.QueueGet(t.Context(), queue)
		if err != nil || q.PausedAt == nil || llm.PausedReason(q) != llm.BalanceReason {
			t.Errorf("after DeepSeek's 402 the queue is %+v (%v), want paused for the balance", q, err)
		}
	})
}

// The inject route serves a cell's capability exactly its own snapshot:
// another snapshot is 403, an expired or altered capability 401. The
// admin reads any snapshot; mull's general API token, which ordinary
// sessions' plugins carry, reads none.
func TestBenchInjectCapability(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		p := newProxyRig(t, s)
		cand, ref := p.run.Run.Candidate, p.run.Run.Reference
		capTok := p.capability(cand)
		inject := func(id string, opts ...reqOpt) *httptest.ResponseRecorder {
			return serve(p.srv, "GET", "/v1/bench/snapshots/"+id+"/inject", "", opts...)
		}
		var inj api.BenchInject
		expect(t, inject(cand, bearer(capTok)), http.StatusOK, &inj)
		if inj.SnapshotID != cand {
			t.Errorf("inject: %+v", inj)
		}
		expectError(t, inject(ref, bearer(capTok)), http.StatusForbidden, "is for snapshot "+cand)
		expectError(t, inject(ref, bearer(strings.Replace(capTok, ".", ".x", 1))), http.StatusUnauthorized, "bench capability")
		p.offset.Store(int64(6 * time.Minute))
		expectError(t, inject(cand, bearer(capTok)), http.StatusUnauthorized, "expired")
		p.offset.Store(0)
		expect(t, inject(ref, bearer(adminTok)), http.StatusOK, &inj)
		expectError(t, inject(ref, bearer(generalTk)), http.StatusUnauthorized, "admin")
		expectError(t, inject(ref), http.StatusUnauthorized, "admin")
	})
}

// A capability works only while the job attempt that minted it runs,
// on the proxy and the inject route alike: once a retry has started the
// job's next attempt, the first attempt's capability is refused (401,
// naming both attempts) and the new one's works; once the job completed,
// that one is refused too ("no longer running (state completed)"),
// however far its expiry. Nothing refused reaches DeepSeek.
func TestCellCapabilityEndsWithItsJob(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		p := newProxyRig(t, s)
		cand := p.run.Run.Candidate
		inject := func(tok string) *httptest.ResponseRecorder {
			return serve(p.srv, "GET", "/v1/bench/snapshots/"+cand+"/inject", "", bearer(tok))
		}
		first := p.capability("")
		expect(t, p.post(chat, bearer(first)), http.StatusOK, nil)
		expect(t, inject(first), http.StatusOK, nil)

		p.job.Retry()
		second := p.capability("")
		stale := fmt.Sprintf("this capability is for attempt 1 of this cell's job %d, which is now on attempt 2", p.job.Row.ID)
		proxyErr(t, p.post(chat, bearer(first)), http.StatusUnauthorized, stale)
		expectError(t, inject(first), http.StatusUnauthorized, stale)
		expect(t, p.post(chat, bearer(second)), http.StatusOK, nil)
		expect(t, inject(second), http.StatusOK, nil)

		p.job.Complete()
		ended := fmt.Sprintf("this cell's job %d is no longer running (state completed)", p.job.Row.ID)
		proxyErr(t, p.post(chat, bearer(second)), http.StatusUnauthorized, ended)
		expectError(t, inject(second), http.StatusUnauthorized, ended)
		if n := len(p.fake.Requests()); n != 2 {
			t.Errorf("DeepSeek got %d requests, want the 2 made while an attempt ran", n)
		}
	})
}

// A body with a NUL, a lone surrogate or invalid UTF-8 in a message (a
// tool's output can hold them) is relayed, not refused: the proxy stores
// none of it but the call's record, whose messages are JSON-encoded and
// redacted, which both databases keep. A model name with a NUL is
// refused before anything is sent or recorded.
func TestLLMProxyRelaysBadBytes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		p := newProxyRig(t, s)
		capTok := p.capability("")
		body := strings.Replace(chat, "Build the binary", `Build \u0000 the \ud800 binary `+"\xff", 1)
		expect(t, p.post(body, bearer(capTok)), http.StatusOK, nil)
		calls, err := s.ListLLMCalls(t.Context(), store.LLMCallFilter{JobID: p.job.Row.ID})
		if err != nil || len(calls) != 1 || calls[0].Outcome != "ok" {
			t.Fatalf("calls %+v %v", calls, err)
		}
		full, err := s.GetLLMCall(t.Context(), calls[0].ID)
		if err != nil || len(full.Messages) != 2 || !strings.Contains(full.Messages[1].Content, "binary") {
			t.Errorf("kept messages %+v (%v)", full.Messages, err)
		}
		proxyErr(t, p.post(strings.Replace(chat, "deepseek-v4-flash", `deep\u0000seek`, 1), bearer(capTok)), http.StatusBadRequest, "model")
		if n := len(p.fake.Requests()); n != 1 {
			t.Errorf("DeepSeek got %d requests, want 1", n)
		}
	})
}

// A relayed call's record keeps DeepSeek's answer as a job's call does
// (llm.keep_prompts, credentials redacted): a stream's content and
// reasoning deltas joined, or a whole answer's message; the admin API's
// call detail shows it.
func TestLLMProxyKeepsTheAnswer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		p := newProxyRig(t, s)
		capTok := p.capability("")
		tok := "ghp_RELAYEDQQQQQQQQQQQQQQQQQQQQQQQ"
		if err := p.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Kind: "bench_cell", Response: &fakeds.Response{
			Content: "Built it; the token " + tok + " was in the env.", ReasoningContent: "first run go build, then read the output"}}}}); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{chat, strings.Replace(chat, `"stream":true`, `"stream":false`, 1)} {
			expect(t, p.post(body, bearer(capTok)), http.StatusOK, nil)
		}
		calls, err := s.ListLLMCalls(t.Context(), store.LLMCallFilter{JobID: p.job.Row.ID})
		if err != nil || len(calls) != 2 {
			t.Fatalf("calls %+v %v", calls, err)
		}
		for _, c := range calls {
			var d store.LLMCallDetail
			expect(t, serve(p.srv, "GET", "/v1/admin/llm/calls/"+c.ID, "", bearer(adminTok)), http.StatusOK, &d)
			if d.Response == nil || d.Response.Content != "Built it; the token [redacted:ghp] was in the env." ||
				d.Response.Reasoning != "first run go build, then read the output" || len(d.Messages) != 2 {
				t.Errorf("call %s: response %+v, %d messages; want the answer kept, redacted", c.ID, d.Response, len(d.Messages))
			}
		}
		if strings.Contains(storetest.Dump(t, s), "RELAYED") {
			t.Error("a raw secret of the answer is stored")
		}
	})
}

// A client that leaves a streamed answer before its usage chunk (DSH
// killed, or a cell dropping every stream on purpose) does not spend for
// free: DeepSeek bills what it generated, so the call is charged its
// reservation on the run's budget keys and recorded as incomplete with
// that usage.
func TestLLMProxyChargesCutStream(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		p := newProxyRig(t, s)
		capTok := p.capability("")
		if err := p.fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Fault: fakeds.FaultHang}}}); err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(p.srv)
		defer ts.Close()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/llm/proxy/chat/completions", strings.NewReader(chat))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+capTok)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // the first chunk
			t.Fatal(err)
		}
		cancel()
		resp.Body.Close()
		ts.Close() // waits for the proxy's handler, which settles the call

		calls, err := s.ListLLMCalls(t.Context(), store.LLMCallFilter{JobID: p.job.Row.ID})
		if err != nil || len(calls) != 1 {
			t.Fatalf("calls of the cell's job: %+v %v", calls, err)
		}
		c := calls[0]
		if c.Outcome != string(llm.Retryable) || c.ErrorReason != "incomplete" || !strings.Contains(c.Error, "charged its reservation") ||
			c.CompletionTokens != 8000 || c.PromptTokens <= 0 || c.CostNanoUSD <= 0 {
			t.Errorf("record %+v, want incomplete, charged 8000 completion tokens", c)
		}
		keys, err := p.ledger.Report(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, k := range keys {
			found = found || k.Key == "workspace:/w"
			if k.Key == "workspace:/w" && (k.SpentTokens != c.PromptTokens+8000 || k.ReservedTokens != 0 || k.Calls != 1 || k.CostUSD <= 0) {
				t.Errorf("budget %s: %+v, want the reservation (%d tokens) spent", k.Key, k, c.PromptTokens+8000)
			}
		}
		if !found {
			t.Errorf("no budget key workspace:/w in %+v", keys)
		}
	})
}

// The cell's calls use the capability's model whatever the body asks
// (the body's is rewritten), and a model the pricing table does not know,
// which would reserve and settle at $0, is refused before anything is
// sent.
func TestLLMProxyForcesModel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		p := newProxyRig(t, s)
		pro := strings.Replace(chat, "deepseek-v4-flash", "deepseek-v4-pro", 1)
		expect(t, p.post(pro, bearer(p.capability(""))), http.StatusOK, nil)
		if reqs := p.fake.Requests(); len(reqs) != 1 || reqs[0].Model != "deepseek-v4-flash" {
			t.Fatalf("DeepSeek got %+v, want one request for the capability's model", reqs)
		}
		calls, err := s.ListLLMCalls(t.Context(), store.LLMCallFilter{JobID: p.job.Row.ID})
		if err != nil || len(calls) != 1 || calls[0].Model != "deepseek-v4-flash" {
			t.Fatalf("calls %+v %v", calls, err)
		}
		proxyErr(t, p.post(chat, bearer(p.capabilityFor("", "free-model"))), http.StatusBadRequest, `model "free-model" has no price`)
		proxyErr(t, p.post(chat, bearer(p.capabilityFor("", ""))), http.StatusUnauthorized, "names no model")
		if n := len(p.fake.Requests()); n != 1 {
			t.Errorf("DeepSeek got %d requests, want 1", n)
		}
	})
}
