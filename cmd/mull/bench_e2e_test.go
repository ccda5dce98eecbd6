package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// mull bench end to end on both databases, as an operator uses it, with a
// worker and the fake DeepSeek (whose judge scores 40 + 15 per backquoted
// rubric term found in the evidence, and whose executor echoes the side's
// snapshot): the example case set is added and frozen; a memory A/B with
// the workspace's digest naming `make release` and `bin/app` is followed
// with --wait to its decision, the build case's delta positive; a
// refinement's run from a reference captured before it is decided; a
// second, unrelated change makes the same run refused before any cell
// (exit 1, benchmark:run:candidate-delta); list and show --json read the
// runs back, every cell scored once.
//
// Needs the benches service (slice B) and the job kinds with the fake's
// bench answers (slice C).
func TestBenchCommandsEndToEnd(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			ctx := context.Background()
			dir := t.TempDir()
			c := cli{t, ctx, []string{"--database-url", dbURL(db)}}
			m, must := c.run, c.must
			must("migrate")
			must("memory", "add", "--workspace", "/w", "--kind", "fact", "the release build is make release; it writes bin/app")
			out := must("bench", "cases", "add", "--file", "../../examples/bench-cases.json")
			if !strings.Contains(out, "3 draft cases added") {
				t.Fatalf("cases add:\n%s", out)
			}
			if code, _, errOut := m("bench", "cases", "add", "--file", "../../examples/bench-cases.json"); code != 1 ||
				!strings.Contains(errOut, "duplicate-id") {
				t.Fatalf("the set again: exit %d\n%s", code, errOut)
			}
			must("bench", "cases", "freeze", "--set", "demo")
			out = must("bench", "cases", "list", "--set", "demo")
			if strings.Count(out, " frozen ") != 3 {
				t.Fatalf("cases list:\n%s", out)
			}

			fake := fakeds.New(fakeds.Options{})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			stop := startWorker(t, c.base)
			defer stop()

			out = must("bench", "memory", "--cases", "demo", "--workspace", "/w", "--wait", "--timeout", "3m")
			for _, want := range []string{"= 6 cells", "cells 6/6 done, 0 failed", "decision: ", "CASE", "DELTA"} {
				if !strings.Contains(out, want) {
					t.Fatalf("memory run: want %q in\n%s", want, out)
				}
			}
			if !regexp.MustCompile(`build-release\s+\S+\s+\S+\s+\+[1-9]`).MatchString(out) {
				t.Errorf("memory run: the build case's delta should be positive:\n%s", out)
			}
			t.Logf("mull bench memory:\n%s", out)

			must("bench", "capture", "--id", "before")
			apply := proposalFile(t, dir, "release.json", `{"summary":"note the release build","edits":[
				{"action":"create","kind":"memory","id":"release","content":"release builds use make release and write bin/app","title":"Release"}]}`)
			refID := strings.Fields(must("harness", "apply", apply))[1]
			out = must("bench", "run", refID, "--reference", "before", "--set", "demo", "--runs", "2", "--wait", "--timeout", "3m")
			for _, want := range []string{"= 12 cells", "cells 12/12 done", "decision: "} {
				if !strings.Contains(out, want) {
					t.Fatalf("refinement run: want %q in\n%s", want, out)
				}
			}
			runID := regexp.MustCompile(`started (bench_\S+):`).FindStringSubmatch(out)[1]

			other := proposalFile(t, dir, "other.json", `{"summary":"unrelated","edits":[
				{"action":"create","kind":"prompt","id":"tone","content":"be brief","title":"Tone"}]}`)
			must("harness", "apply", other)
			code, out, errOut := m("bench", "run", refID, "--reference", "before")
			if code != 1 || !strings.Contains(errOut, bench.DeltaCode) {
				t.Fatalf("a second change: exit %d, want 1 and %s\n%s%s", code, bench.DeltaCode, out, errOut)
			}

			out = must("bench", "list")
			if strings.Count(out, "decided") != 2 {
				t.Errorf("list:\n%s", out)
			}
			var run benches.Run
			if err := json.Unmarshal([]byte(must("bench", "show", runID, "--json")), &run); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, c := range run.Cells {
				key := c.CaseID + "/" + string(c.Side) + "/" + string(rune('0'+c.Iteration))
				if seen[key] || c.Status != bench.CellOK || c.Score == nil || c.Evidence == nil {
					t.Errorf("cell %s: %+v (seen %v)", key, c, seen[key])
				}
				seen[key] = true
			}
			if len(run.Cells) != 12 || run.Decision == nil || run.Decision.AutoRollback {
				t.Errorf("show --json: %d cells, decision %+v", len(run.Cells), run.Decision)
			}
			out = must("bench", "show", runID)
			if !strings.Contains(out, "decision: "+string(run.Decision.Status)) {
				t.Errorf("show:\n%s", out)
			}
		})
	}
}
