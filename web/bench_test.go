package web_test

import (
	"context"
	"html"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// No runs yet: the page says how to make the first one (the README's
// commands).
func TestPanelBenchEmpty(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.httpClient(true)
		code, body := e.get(c, "/bench")
		if code != http.StatusOK {
			t.Fatalf("/bench: %d\n%s", code, body)
		}
		wantIn(t, "/bench", body, "No benchmark runs yet", "mull bench cases add --file examples/bench-cases.json",
			"mull bench cases freeze --set demo", "mull bench memory --cases demo --wait")
		_, body = e.get(c, "/bench?status=running")
		wantIn(t, "filtered /bench", body, "No benchmark run matches")
		e.wantRefused(t, c, http.StatusBadRequest, "/bench?status=nope")
		e.wantRefused(t, c, http.StatusNotFound, "/bench/nope", "bench run nope")
	})
}

// A memory A/B run on the fake DeepSeek, worked to its decision by the
// real bench_cell and bench_decide jobs: the list shows it decided with
// its cells, tokens and cost; its page shows the case × side × iteration
// grid (the failing case's cells "failed" with their reason, no score, no
// mean), the decision with its reasons, the frozen cases' hashes and both
// snapshots; a cell's page shows its evidence.
func TestPanelBenchRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s, benchEnvOpts)
		run := benchFixture(t, e)
		c := e.httpClient(true)

		code, body := e.get(c, "/bench")
		if code != http.StatusOK {
			t.Fatalf("/bench: %d\n%s", code, body)
		}
		wantIn(t, "/bench", body, `href="/bench/`+run.ID+`"`, "decided", string(run.Decision.Status), ">4/4</a>",
			`href="/bench/`+run.ID+`#failures">2</a>`, "memory of")
		runLLM := "/llm?run=" + run.ID
		wantLinked(t, "/bench", body, runLLM, commas(run.Tokens), runLLM, dollars(run.CostUSD))
		_, body = e.get(c, "/bench?kind=refinement")
		wantIn(t, "refinement runs", body, "No benchmark run matches")

		code, body = e.get(c, "/bench/"+run.ID)
		if code != http.StatusOK {
			t.Fatalf("run page: %d\n%s", code, body)
		}
		d := run.Decision
		if d.Status != bench.Rejected || len(d.Reasons) == 0 {
			t.Fatalf("the fixture's decision: %+v", d)
		}
		ok := run.Cells[0]
		if ok.CaseID != "run-one-test" || ok.Score == nil {
			t.Fatalf("first cell %+v", ok)
		}
		wantIn(t, "run page", body, "REJECTED", html.EscapeString(d.Reasons[0]), "run-one-test", "broken-case", "malformed-executor-json",
			`href="/bench/`+run.ID+`/cells/broken-case/candidate/1"`, `href="/bench/`+run.ID+`/cells/run-one-test/reference/1"`,
			"Frozen cases", run.Reference, run.Candidate, "Reference", "Candidate")
		wantLinked(t, "run page", body, runLLM, commas(run.Tokens), runLLM, dollars(run.CostUSD),
			"#cases", strconv.Itoa(len(run.CaseIDs))+" frozen cases", "#grid", commas(int64(run.Done))+" / "+commas(int64(run.Total)))
		// The tokens' link lists the calls they sum, and only those.
		calls, err := s.LLMCallPage(context.Background(), store.LLMCallFilter{BenchRunID: run.ID, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var tokens int64
		for _, call := range calls {
			tokens += call.PromptTokens + call.CompletionTokens
		}
		if tokens != run.Tokens || len(calls) == 0 {
			t.Fatalf("run %s: %d calls of %d tokens; its page says %d tokens", run.ID, len(calls), tokens, run.Tokens)
		}
		_, llmBody := e.get(c, runLLM)
		wantIn(t, runLLM, llmBody, `href="/bench/`+run.ID+`"`, commas(int64(len(calls)))+" calls")
		for _, call := range calls[:min(len(calls), 50)] {
			wantIn(t, runLLM, llmBody, `href="/llm/`+call.ID+`"`)
		}
		for _, c := range run.Cells {
			if c.CaseHash == "" || !strings.Contains(body, c.CaseHash) {
				t.Fatalf("the page lacks case %s's hash %q", c.CaseID, c.CaseHash)
			}
		}
		// A failed cell is "failed", never a 0, and the case has no mean.
		row := body[strings.Index(body, `<span class="mono">broken-case</span>`):]
		row = row[:strings.Index(row, "</tr>")]
		if strings.Count(row, `<span class="badge bad">failed</span>`) != 2 || strings.Contains(row, ">0<") || strings.Count(row, "—") != 3 {
			t.Fatalf("the failing case's row:\n%s", row)
		}

		code, body = e.get(c, "/bench/"+run.ID+"/cells/run-one-test/reference/1")
		if code != http.StatusOK {
			t.Fatalf("cell page: %d\n%s", code, body)
		}
		wantIn(t, "ok cell", body, ok.Evidence.Summary, "read the captured snapshot", ok.Feedback, ok.StateHash)
		code, body = e.get(c, "/bench/"+run.ID+"/cells/broken-case/candidate/1")
		if code != http.StatusOK {
			t.Fatalf("failed cell page: %d\n%s", code, body)
		}
		wantIn(t, "failed cell", body, "malformed-executor-json", "No evidence: the executor failed")
		e.wantRefused(t, c, http.StatusNotFound, "/bench/"+run.ID+"/cells/run-one-test/reference/9")

		// A refinement's run: the refinement's page lists it, the list
		// filters by it, and the run's page names it and its candidate's
		// derivation.
		ref := refinementRun(t, e)
		_, body = e.get(c, "/harness/refinements/"+ref.RefinementID)
		wantIn(t, "the tested refinement", body, `href="/bench/`+ref.ID+`"`, "/bench?refinement="+ref.RefinementID)
		_, body = e.get(c, "/bench?refinement="+ref.RefinementID)
		if !strings.Contains(body, `href="/bench/`+ref.ID+`"`) || strings.Contains(body, `href="/bench/`+run.ID+`"`) {
			t.Fatalf("runs of %s:\n%s", ref.RefinementID, body)
		}
		_, body = e.get(c, "/bench/"+ref.ID)
		wantIn(t, "refinement run", body, "Does refinement", `href="/harness/refinements/`+ref.RefinementID+`"`, "derived", "before")
	})
}

// refinementRun captures the global store as "before", applies a
// refinement and runs it against that reference to its decision.
func refinementRun(t *testing.T, e *env) benches.Run {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Bench.Capture(ctx, benches.CaptureRequest{ID: "before"}); err != nil {
		t.Fatal(err)
	}
	note := "Scope `go test -run` to `./config`."
	out, err := e.Harn.Apply(ctx, harnesses.ApplyRequest{Scope: harness.Global, Proposal: harness.Proposal{Summary: "test scoping",
		Edits: []harness.Edit{{Action: harness.Create, Kind: harness.KindPrompt, ID: "test-scope", Content: &note}}}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := e.Bench.StartRun(ctx, e.Client, benches.RunRequest{Refinement: out.Refinement.ID, Reference: "before", Set: "demo", Runs: 1, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, e.Events, func(ev *river.Event) bool {
		return ev.Job.Kind == "bench_decide" && ev.Kind == river.EventKindJobCompleted
	})
	return run
}
