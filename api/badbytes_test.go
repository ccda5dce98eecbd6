package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/tasks"
	"github.com/mullhq/mull/wsconfig"
)

// inputRoute is one route with a request it would take: its path values
// (by wildcard name), query and JSON body. The bad-bytes test spoils each
// string in it, one at a time. A new route or field: add it here.
type inputRoute struct {
	pattern string            // as registered: "POST /v1/memories/{id}/invalidate"
	path    map[string]string // wildcard → a good value
	query   map[string]string
	body    string
}

func (r inputRoute) method() string { m, _, _ := strings.Cut(r.pattern, " "); return m }

// target builds the URL with the path values and query given, already
// escaped.
func (r inputRoute) target(path, query map[string]string) string {
	_, p, _ := strings.Cut(r.pattern, " ")
	for name, v := range path {
		p = strings.Replace(strings.Replace(p, "{"+name+"...}", v, 1), "{"+name+"}", v, 1)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range query {
			if !yield(k) {
				return
			}
		}
	})
	var q []string
	for _, k := range keys {
		q = append(q, k+"="+query[k])
	}
	if len(q) > 0 {
		p += "?" + strings.Join(q, "&")
	}
	return p
}

// everyEvent is a batch with one event of every type, every string field
// of each payload filled in.
func everyEvent() string {
	return batchJSON(
		eventJSON("b1", "session_start", `{"title":"fix the build","primary":true}`),
		eventJSON("b2", "user_message", `{"text":"hi","source":"user"}`),
		eventJSON("b3", "assistant_message", `{"text":"hello"}`),
		eventJSON("b4", "turn_end", `{"turn":1,"reason":"error","error":"boom"}`),
		eventJSON("b5", "task_open", `{"task_id":"t1","goal":"build","expected_result":"a binary"}`),
		eventJSON("b6", "task_close", `{"task_id":"t1","status":"succeeded","result":"built"}`),
		eventJSON("b7", "tool_result", `{"call_id":"c1","tool":"bash","command":"go test","error_code":"E","output":"ok","is_error":true,"exit_code":1}`),
		eventJSON("b8", "error", `{"message":"boom","code":"E1"}`),
		eventJSON("b9", "feedback", `{"rating":"down","text":"no"}`),
		eventJSON("b10", "compaction_end", `{}`),
		eventJSON("b11", "fs_observed", `{"path":"/w/a","op":"create"}`),
		eventJSON("b12", "session_end", `{"reason":"completed"}`),
	)
}

var inputRoutes = []inputRoute{
	{pattern: "GET /healthz"},
	{pattern: "GET /metrics"},
	{pattern: "GET /v1/admin/dlq", query: map[string]string{"kind": "apitest", "since": "24h", "limit": "5"}},
	{pattern: "GET /v1/admin/dlq/{id}", path: map[string]string{"id": "1"}},
	{pattern: "POST /v1/admin/dlq/retry", body: `{"kind":"apitest","dry_run":true}`},
	{pattern: "POST /v1/admin/dlq/purge", body: `{"older_than":"720h","kind":"apitest","dry_run":true}`},
	{pattern: "GET /v1/admin/llm/calls", query: map[string]string{"kind": "retro_session", "workspace": "/w", "job": "1", "since": "24h", "until": "2026-12-01T00:00:00Z", "limit": "5"}},
	{pattern: "GET /v1/admin/llm/usage", query: map[string]string{"by": "day"}},
	{pattern: "GET /v1/admin/budget", query: map[string]string{"day": "2026-12-01"}},
	{pattern: "GET /v1/admin/consolidate", query: map[string]string{"workspace": "/w"}},
	{pattern: "POST /v1/admin/consolidate", body: `{"workspace":"/w","dry_run":true}`},
	{pattern: "POST /v1/events", body: everyEvent()},
	{pattern: "GET /v1/sessions", query: map[string]string{"workspace": "/w", "status": "open", "limit": "5"}},
	{pattern: "GET /v1/sessions/{id}", path: map[string]string{"id": "session-1"}, query: map[string]string{"events": "5"}},
	{pattern: "GET /v1/digest", query: map[string]string{"workspace": "/w", "session": "session-1"}},
	{pattern: "GET /v1/notices", query: map[string]string{"workspace": "/w", "session": "session-1", "after": "0"}},
	{pattern: "POST /v1/memories", body: `{"workspace":"/w","kind":"fact","text":"the build uses make","importance":5,"src":"user","session_id":"session-1"}`},
	{pattern: "GET /v1/memories/search", query: map[string]string{"workspace": "/w", "session": "session-1", "q": "make", "limit": "5"}},
	{pattern: "POST /v1/memories/{id}/invalidate", path: map[string]string{"id": "1"}, body: `{"reason":"moved to bun","superseded_by":0}`},
	{pattern: "POST /v1/memories/{id}/verify", path: map[string]string{"id": "1"}},
	{pattern: "POST /v1/admin/memories/{id}/verify", path: map[string]string{"id": "1"}},
	{pattern: "GET /v1/playbooks", query: map[string]string{"workspace": "/w", "session": "session-1"}},
	{pattern: "POST /v1/playbooks/{slug}/use", path: map[string]string{"slug": "deploy"}, query: map[string]string{"workspace": "/w"}, body: `{"workspace":"/w","success":true,"session_id":"session-1"}`},
	{pattern: "GET /v1/admin/memories/{id}/uses", path: map[string]string{"id": "1"}, query: map[string]string{"limit": "5", "offset": "0"}},
	{pattern: "GET /v1/admin/playbooks/uses", query: map[string]string{"workspace": "/w", "slug": "deploy", "outcome": "success", "limit": "5", "offset": "0"}},
	{pattern: "GET /v1/admin/proposals", query: map[string]string{"workspace": "/w", "status": "pending"}},
	{pattern: "GET /v1/admin/proposals/{id}", path: map[string]string{"id": "p1"}},
	{pattern: "POST /v1/admin/proposals/{id}/accept", path: map[string]string{"id": "p1"}, body: `{"note":"fine"}`},
	{pattern: "POST /v1/admin/proposals/{id}/reject", path: map[string]string{"id": "p1"}, body: `{"note":"no"}`},
	{pattern: "GET /v1/memory/status", query: map[string]string{"workspace": "/w"}},
	{pattern: "GET /v1/proposals", query: map[string]string{"workspace": "/w", "status": "pending"}},
	{pattern: "POST /v1/proposals/{id}/accept", path: map[string]string{"id": "p1"}, body: `{"note":"fine"}`},
	{pattern: "POST /v1/proposals/{id}/reject", path: map[string]string{"id": "p1"}, body: `{"note":"no"}`},
	{pattern: "POST /v1/memories/forget", body: `{"workspace":"/w","keywords":"the build uses make","confirm":false,"confirm_token":""}`},
	{pattern: "POST /v1/memories/promote", body: `{"workspace":"/w","ids":[1]}`},
	{pattern: "POST /v1/sessions/{id}/retro", path: map[string]string{"id": "session-1"}},
	{pattern: "GET /v1/admin/workers"},
	{pattern: "GET /v1/admin/llm/calls/{id}", path: map[string]string{"id": "call_1"}},
	{pattern: "GET /riverui/{path...}", path: map[string]string{"path": "jobs"}}, // a prefix route: its wildcard is "path",
	{pattern: "GET /riverui"},
	{pattern: "GET /v1/admin/report/overhead", query: map[string]string{"workspace": "/w", "since": "7d", "until": "2026-12-01"}},
	{pattern: "POST /v1/tasks", body: `{"session_id":"session-1","workspace":"/w","goal":"fix the build","expected_result":"green CI"}`},
	{pattern: "GET /v1/tasks/{id}", path: map[string]string{"id": "task-1"}},
	{pattern: "POST /v1/tasks/{id}/end", path: map[string]string{"id": "task-1"}, body: `{"status":"failed","result":"still red"}`},
	{pattern: "POST /v1/tasks/{id}/reflect", path: map[string]string{"id": "task-1"},
		body: `{"task_id":"task-1","assessment":"the lockfile","source":"the log","lessons":[{"relation":"new","problem":"npm install fails","correction":"use pnpm install here","boundary":"this repo","conflicts":[{"with":"3","kind":"goal","note":"n"}]}]}`},
	{pattern: "GET /v1/admin/tasks", query: map[string]string{"session": "session-1", "workspace": "/w", "status": "open", "limit": "5"}},
	{pattern: "GET /login", query: map[string]string{"next": "/riverui/"}},
	{pattern: "POST /login"},
	{pattern: "POST /logout"},
	{pattern: "GET /v1/lessons/{id}/lookup", path: map[string]string{"id": "L1"}},
	{pattern: "GET /v1/admin/lessons", query: map[string]string{"workspace": "/w", "session": "session-1", "all": "false"}},
	{pattern: "POST /v1/admin/lessons", body: `{"kind":"lesson","scope":"workspace","workspace":"/w","session":"","fields":{"problem":"go test hangs","correction":"use a short timeout for go test","applies_when":"db tests","confidence":"high","boundary":"this repo"}}`},
	{pattern: "GET /v1/admin/lessons/check"},
	{pattern: "GET /v1/admin/lessons/stats", query: map[string]string{"workspace": "/w"}},
	{pattern: "GET /v1/admin/lessons/deprecated", query: map[string]string{"workspace": "/w"}},
	{pattern: "POST /v1/admin/lessons/{id}/move", path: map[string]string{"id": "L999"}, body: `{"to":"global","boundary":"every repo"}`},
	{pattern: "POST /v1/admin/lessons/{id}/remove", path: map[string]string{"id": "L999"}, body: `{"yes":false,"reason":"wrong"}`},
	{pattern: "POST /v1/admin/lessons/{id}/deprecate", path: map[string]string{"id": "L999"}, body: `{"reason":"outdated"}`},
	{pattern: "POST /v1/ledger/check", body: `{"tool_call_id":"c1","tool":"bash","args":{"command":"make test","workdir":"/w/sub"},"cwd":"/w","session":"session-1","workspace":"/w"}`},
	{pattern: "POST /v1/ledger/observe", body: `{"tool_call_id":"c1","tool":"bash","args":{"command":"make test"},"cwd":"/w","session":"session-1","workspace":"/w",` +
		`"outcome":{"status":"failed","exit_code":2,"error_code":"EXIT","stderr":"boom"},"lease_id":"","checked_at":"2026-12-01T12:00:00Z"}`},
	{pattern: "POST /v1/ledger/fs", body: `{"session":"session-1","workspace":"/w","cwd":"/w","observations":[{"path":"a.go","display_path":"/w/a.go","observed":"present","version":"v1","tool_call_id":"c1"}]}`},
	{pattern: "POST /v1/ledger/facts", body: `{"operation_id":"op-1","session":"session-1","workspace":"/w","fingerprint":{"kind":"api_unavailable","endpoint":"https://api.example/v1"},` +
		`"claim":"the example API answers 503","evidence":[{"role":"outcome","kind":"error-code","code":"HTTP_503"}]}`},
	{pattern: "GET /v1/ledger/policy", query: map[string]string{"workspace": "/w"}},
	{pattern: "GET /v1/admin/ledger/facts", query: map[string]string{"workspace": "/w", "status": "active", "limit": "5"}},
	{pattern: "GET /v1/admin/ledger/facts/{id}", path: map[string]string{"id": "1"}},
	{pattern: "GET /v1/admin/ledger/stale", query: map[string]string{"workspace": "/w"}},
	{pattern: "GET /v1/admin/ledger/stats", query: map[string]string{"workspace": "/w"}},
	{pattern: "POST /v1/admin/ledger/facts/{id}/resolve", path: map[string]string{"id": "999"}, body: `{"reason":"fixed upstream"}`},
	{pattern: "GET /v1/harness/projection", query: map[string]string{"session": "session-1", "query": "build"}},
	{pattern: "POST /v1/harness/injections", body: `{"session":"session-1","keys":["global:memory:m"]}`},
	{pattern: "GET /v1/harness/skills", query: map[string]string{"session": "session-1"}},
	{pattern: "POST /v1/harness/refine", body: `{"session":"session-1","mode":"rollback","instruction":"focus","rollback_id":"r1","scope":"local"}`},
	{pattern: "GET /v1/harness/refine/{job_id}", path: map[string]string{"job_id": "1"}, query: map[string]string{"session": "session-1"}},
	{pattern: "GET /v1/harness/wrapup", query: map[string]string{"session": "session-1"}},
	{pattern: "POST /v1/harness/promote", body: `{"session":"session-1","id":"m"}`},
	{pattern: "GET /v1/admin/harness/entries", query: map[string]string{"session": "session-1", "kind": "memory", "archived": "1"}},
	{pattern: "GET /v1/admin/harness/entries/{id}", path: map[string]string{"id": "m"},
		query: map[string]string{"session": "session-1", "kind": "memory", "at": "2026-12-01T00:00:00Z", "versions": "1"}},
	{pattern: "POST /v1/admin/harness/entries/{id}/archive", path: map[string]string{"id": "m"}, body: `{"session":"session-1","kind":"memory","reason":"old","restore":false}`},
	{pattern: "POST /v1/admin/harness/entries/{id}/pin", path: map[string]string{"id": "m"}, body: `{"session":"session-1","kind":"memory","reason":"key","pin":true}`},
	{pattern: "GET /v1/admin/harness/refinements", query: map[string]string{"session": "session-1", "scope": "local", "limit": "5"}},
	{pattern: "GET /v1/admin/harness/refinements/{id}", path: map[string]string{"id": "r1"}},
	{pattern: "POST /v1/admin/harness/refinements/{id}/rollback", path: map[string]string{"id": "r1"}},
	{pattern: "GET /v1/admin/harness/reviews", query: map[string]string{"session": "session-1", "limit": "5"}},
	{pattern: "POST /v1/admin/harness/refine", body: `{"session":"session-1","global":false,"instruction":"focus"}`},
	{pattern: "POST /v1/admin/harness/apply", body: `{"session":"session-1","automatic":false,"baseline":{"memory/m":1},"proposal":{"id":"p","summary":"s",` +
		`"edits":[{"action":"update","kind":"memory","id":"m","content":"c","title":"t","description":"d","reason":"r","blast_radius":"general"}]}}`},
	{pattern: "POST /v1/admin/bench/cases", body: `{"id":"c1","set":"demo","title":"t","statement":"s","rubric":"r","capability":"cap"}`},
	{pattern: "POST /v1/admin/bench/cases/import", body: `{"set":"demo","cases":[{"id":"c2","set":"demo","title":"t","statement":"s","rubric":"r","capability":"cap"}]}`},
	{pattern: "PATCH /v1/admin/bench/cases/{id}", path: map[string]string{"id": "c1"}, body: `{"id":"c1","set":"demo","title":"t","statement":"s","rubric":"r","capability":"cap"}`},
	{pattern: "POST /v1/admin/bench/cases/{id}/freeze", path: map[string]string{"id": "c1"}},
	{pattern: "POST /v1/admin/bench/freeze", body: `{"set":"demo"}`},
	{pattern: "GET /v1/admin/bench/cases", query: map[string]string{"set": "demo", "state": "draft"}},
	{pattern: "POST /v1/admin/bench/snapshots", body: `{"id":"snap-1","session":"session-1"}`},
	{pattern: "GET /v1/admin/bench/snapshots", query: map[string]string{"limit": "5"}},
	{pattern: "GET /v1/admin/bench/snapshots/{id}", path: map[string]string{"id": "snap-1"}},
	{pattern: "POST /v1/admin/bench/runs", body: `{"refinement_id":"r1","reference_snapshot_id":"snap-1","set":"demo","runs":1,"workspace":"/w"}`},
	{pattern: "POST /v1/admin/bench/memory", body: `{"workspace":"/w","set":"demo","runs":1}`},
	{pattern: "GET /v1/admin/bench/runs", query: map[string]string{"kind": "memory", "status": "running", "limit": "5"}},
	{pattern: "GET /v1/admin/bench/runs/{id}", path: map[string]string{"id": "bench_1"}},
	{pattern: "POST /v1/harness/benchmark", body: `{"session":"session-1","action":"add-case","case_id":"c3","title":"t","statement":"s","rubric":"r",` +
		`"capability":"cap","snapshot_id":"snap-2","reference_snapshot_id":"snap-1","refinement_id":"r1","run_id":"bench_1","runs":1,"provider":"p","model":"m"}`},
	{pattern: "GET /v1/bench/snapshots/{id}/inject", path: map[string]string{"id": "snap-1"}, query: map[string]string{"query": "build"}},
	{pattern: "GET /v1/workspaces/{ws}/config", path: map[string]string{"ws": "%2Fw"}},
	{pattern: "PUT /v1/workspaces/{ws}/config", path: map[string]string{"ws": "%2Fw"}, body: `{"scope":"both"}`},
	{pattern: "GET /v1/admin/workspaces/{ws}/config", path: map[string]string{"ws": "%2Fw"}},
	{pattern: "PUT /v1/admin/workspaces/{ws}/config", path: map[string]string{"ws": "%2Fw"},
		body: `{"scope":"both","ledger.mode":"warn","budget":1000,"retro":true,"digest.quotas.facts":"300"}`},
}

// TestEveryRouteIsListed reads the routes api registers from its source,
// so a new one without a row in inputRoutes fails here.
func TestEveryRouteIsListed(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	re := regexp.MustCompile(`s\.mux\.Handle(?:Func)?\("([^"]+)"`)
	listed := map[string]bool{
		// The LLM proxy stores nothing of its body but the call's record,
		// whose messages are JSON-encoded and redacted: it relays what DSH
		// sends (a tool's output with a NUL in it too) as DeepSeek would
		// take it. TestLLMProxyRelaysBadBytes.
		"/v1/llm/proxy/chat/completions": true,
	}
	for _, r := range inputRoutes {
		_, p, _ := strings.Cut(r.pattern, " ")
		listed[strings.TrimSuffix(p, "{path...}")] = true
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			n++
			p := m[1]
			if _, after, ok := strings.Cut(p, " "); ok {
				p = after
			}
			if !listed[p] {
				t.Errorf("route %q (%s) has no row in inputRoutes", m[1], f)
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d routes in the source: the pattern no longer matches", n)
	}
}

// spoils are the bad strings every field gets, as raw JSON string
// literals (for bodies) and as escaped URL text (for paths and queries).
var spoils = []struct {
	name, json, url, want string
}{
	{"NUL", `"a\u0000b"`, "a%00b", "NUL"},
	{"invalid UTF-8", "\"a\xffb\"", "a%FFb", "UTF-8"},
	{"lone surrogate", `"a\ud800b"`, "", "surrogate"},
}

// spoiledBody is one body with one string replaced.
type spoiledBody struct {
	path, body string
}

// spoilBody lists, for each string leaf of a JSON body, the body with that
// leaf replaced by spoil (a raw JSON literal), and the leaf's path.
func spoilBody(t *testing.T, body, spoil string) []spoiledBody {
	t.Helper()
	var doc any
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("route body %s: %v", body, err)
	}
	const mark = "@@SPOIL@@"
	var out []spoiledBody
	var walk func(v any, path string, set func(any))
	walk = func(v any, path string, set func(any)) {
		switch x := v.(type) {
		case string:
			set(mark)
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			set(x)
			out = append(out, spoiledBody{path, strings.Replace(string(b), `"`+mark+`"`, spoil, 1)})
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k], strings.TrimPrefix(path+"."+k, "."), func(nv any) { x[k] = nv })
			}
		case []any:
			for i := range x {
				walk(x[i], path+"["+strconv.Itoa(i)+"]", func(nv any) { x[i] = nv })
			}
		}
	}
	walk(doc, "", nil)
	return out
}

// inputServer serves every route: ingest, memories, admin (loopback).
func inputServer(t *testing.T, s *store.Store) *api.Server {
	t.Helper()
	cfg := enginetest.Config()
	// The agent's proposal decisions answer a rule's 403 otherwise, which
	// the guard test would read as the guard's; with it on they reach the
	// handler's own checks.
	cfg.Proposals.AgentMayDecide = true
	reg := engine.NewRegistry(nil)
	registerRefine(reg, s, cfg) // POST /v1/admin/harness/refine enqueues one
	mem := memories.New(s, cfg.Memory, cfg.Digest)
	hs := harnesses.New(s, cfg.Harness, enginetest.Logger())
	bs := registerBench(reg, s, cfg, hs, mem)                                                       // POST /v1/admin/bench/memory starts one
	engine.Add(reg, retrosession.Spec, &retrosession.Worker{Store: s, Logger: enginetest.Logger()}) // POST /v1/sessions/{id}/retro enqueues one
	client := enginetest.NewClient(t, s, reg, cfg, false)
	svc := ingest.New(s, ingest.Hooks{})
	svc.UseClient(client)
	ws := wsconfig.NewStatic(s, config.Config{}, nil, enginetest.Logger())
	if err := ws.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := api.New(ctx, api.Deps{Store: s, Client: client, Registry: engine.NewRegistry(nil), Logger: enginetest.Logger(),
		Config: cfg, Ingest: svc, Memories: mem, Tasks: tasks.New(s, mem, svc, cfg.Reflection), Now: time.Now,
		Negledger: negledger.New(s, cfg.Ledger, enginetest.Logger()), Harness: hs, Bench: bs, Workspaces: ws})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// badBody is any 400's body: the field, and for POST /v1/events the index.
type badBody struct {
	Error string `json:"error"`
	Field string `json:"field"`
	Index *int   `json:"index"`
}

// TestBadBytesEveryRoute sends NUL, invalid UTF-8 and a lone surrogate in
// every string of every route's path, query and body, and wants a 400
// naming that string, with nothing stored, on both databases.
func TestBadBytesEveryRoute(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := inputServer(t, s)
		ctx := context.Background()
		tries := 0
		for _, rt := range inputRoutes {
			t.Run(rt.pattern, func(t *testing.T) {
				before, err := s.RowCounts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				try := func(what, target, body, field, want string) {
					t.Helper()
					tries++
					rec := serve(srv, rt.method(), target, body)
					var got badBody
					_ = json.Unmarshal(rec.Body.Bytes(), &got)
					name := got.Field
					if got.Index != nil {
						name = "events[" + strconv.Itoa(*got.Index) + "]." + got.Field
					}
					if rec.Code != http.StatusBadRequest || name != field || !strings.Contains(got.Error, want) {
						t.Errorf("%s: %d %s; want 400 naming %q with …%s…", what, rec.Code, bytes.TrimSpace(rec.Body.Bytes()), field, want)
					}
				}
				for _, sp := range spoils {
					if sp.url != "" {
						for name := range rt.path {
							path := map[string]string{}
							for k, v := range rt.path {
								path[k] = v
							}
							path[name] = sp.url
							try(sp.name+" in path value "+name, rt.target(path, rt.query), rt.body, name, sp.want)
						}
						for key := range rt.query {
							q := map[string]string{}
							for k, v := range rt.query {
								q[k] = v
							}
							q[key] = sp.url
							try(sp.name+" in ?"+key, rt.target(rt.path, q), rt.body, key, sp.want)
						}
						if len(rt.query) == 0 { // a parameter the route does not read is refused too
							try(sp.name+" in ?x", rt.target(rt.path, map[string]string{"x": sp.url}), rt.body, "x", sp.want)
						}
					}
					if rt.body == "" {
						continue
					}
					for _, b := range spoilBody(t, rt.body, sp.json) {
						try(sp.name+" in body "+b.path, rt.target(rt.path, rt.query), b.body, b.path, sp.want)
					}
				}
				after, err := s.RowCounts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for table, n := range after {
					if before[table] != n {
						t.Errorf("table %s: %d rows before the bad requests, %d after", table, before[table], n)
					}
				}
				rec := serve(srv, rt.method(), rt.target(rt.path, rt.query), rt.body)
				if rec.Code == http.StatusBadRequest || rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
					t.Errorf("the good request: %d %s", rec.Code, rec.Body)
				}
			})
		}
		t.Logf("%d bad requests", tries)
		if tries < 250 {
			t.Fatalf("only %d bad requests: the table lost its fields", tries)
		}
	})
}

// TestOverlongAndSearchCaps: capped fields and the search's word cap are
// 400s naming the field, on both databases, with nothing stored.
func TestOverlongAndSearchCaps(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := inputServer(t, s)
		before, _ := s.RowCounts(context.Background())
		words := func(n int) string {
			w := make([]string, n)
			for i := range w {
				w[i] = "w" + strconv.Itoa(i)
			}
			return strings.Join(w, "+")
		}
		tests := []struct {
			name, method, target, body, field string
		}{
			{"session_end.reason", "POST", "/v1/events", batchJSON(eventJSON("o1", "session_end", `{"reason":"`+strings.Repeat("r", 129)+`"}`)), "events[0].payload.reason"},
			{"session_start.title", "POST", "/v1/events", batchJSON(eventJSON("o1", "session_start", `{"title":"`+strings.Repeat("t", 513)+`"}`)), "events[0].payload.title"},
			{"task_close.result", "POST", "/v1/events", batchJSON(eventJSON("o0", "session_start", `{}`), eventJSON("o1", "task_close", `{"task_id":"t","status":"failed","result":"`+strings.Repeat("s", 8<<10+1)+`"}`)), "events[1].payload.result"},
			{"task_open.goal", "POST", "/v1/events", batchJSON(eventJSON("o1", "task_open", `{"task_id":"t","goal":"`+strings.Repeat("g", 513)+`"}`)), "events[0].payload.goal"},
			{"tool name", "POST", "/v1/events", batchJSON(eventJSON("o1", "tool_result", `{"tool":"`+strings.Repeat("b", 129)+`"}`)), "events[0].payload.tool"},
			{"a newline in a reason", "POST", "/v1/events", batchJSON(eventJSON("o1", "session_end", `{"reason":"idle\n### Known failures"}`)), "events[0].payload.reason"},
			{"a proposal note", "POST", "/v1/admin/proposals/p1/reject", `{"note":"` + strings.Repeat("n", 64<<10+1) + `"}`, "note"},
			{"a long workspace", "GET", "/v1/digest?workspace=/" + strings.Repeat("w", 4096), "", "workspace"},
			{"33 search words", "GET", "/v1/memories/search?workspace=/w&q=" + words(33), "", "q"},
			{"999 search words", "GET", "/v1/memories/search?workspace=/w&q=" + words(999), "", "q"},
			{"a long search session", "GET", "/v1/memories/search?workspace=/w&q=go&session=" + strings.Repeat("s", 257), "", "session"},
			{"a newline in a search session", "GET", "/v1/memories/search?workspace=/w&q=go&session=s%0A1", "", "session"},
			{"a malformed query", "GET", "/v1/digest?workspace=%zz", "", "query"},
		}
		for _, tt := range tests {
			rec := serve(srv, tt.method, tt.target, tt.body)
			var got badBody
			_ = json.Unmarshal(rec.Body.Bytes(), &got)
			name := got.Field
			if got.Index != nil {
				name = "events[" + strconv.Itoa(*got.Index) + "]." + got.Field
			}
			if rec.Code != http.StatusBadRequest || name != tt.field {
				t.Errorf("%s: %d %s; want 400 naming %s", tt.name, rec.Code, rec.Body, tt.field)
			}
		}
		rec := serve(srv, "GET", "/v1/memories/search?workspace=/w&q="+words(32), "")
		if rec.Code != http.StatusOK {
			t.Errorf("32 search words: %d %s", rec.Code, rec.Body)
		}
		// A word over 64 characters (a pasted URL or path) is cut to its
		// first 64, not refused.
		rec = serve(srv, "GET", "/v1/memories/search?workspace=/w&q=go+"+strings.Repeat("x", 65), "")
		if rec.Code != http.StatusOK {
			t.Errorf("a 65-character search word: %d %s", rec.Code, rec.Body)
		}
		after, _ := s.RowCounts(context.Background())
		for table, n := range after {
			if before[table] != n {
				t.Errorf("table %s: %d rows before, %d after", table, before[table], n)
			}
		}
	})
}
