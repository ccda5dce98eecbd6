package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/llm/fakeds"
)

// harnessData is what harnessFixture made: a refinement the
// refine_review job applied on the fake DeepSeek (a create, with its
// review row), and an admin's update of that entry on top of it.
type harnessData struct {
	Created, Updated string
	// Entry is the entry both edited (kind memory).
	Entry string
	// Before and After are its content before and after the update.
	Before, After string
}

// updatedLine is the line the fixture's update adds.
const updatedLine = "Run one test first."

// harnessFixture runs a global refine_review job on the fake DeepSeek
// through the admin API (its planner creates a memory entry), then
// updates that entry through the service, as an admin's apply does.
func harnessFixture(t *testing.T, e *env) harnessData {
	t.Helper()
	ctx := context.Background()
	req, _ := http.NewRequest("POST", e.URL+"/v1/admin/harness/refine", strings.NewReader(`{"global":true}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var queued struct {
		JobID int64 `json:"job_id"`
	}
	err = json.NewDecoder(res.Body).Decode(&queued)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusAccepted || queued.JobID == 0 {
		t.Fatalf("admin refine: %d %+v %v", res.StatusCode, queued, err)
	}
	if ev := enginetest.WaitFinal(t, e.Events, queued.JobID); ev.State != rivertype.JobStateCompleted {
		t.Fatalf("refine_review job %d ended %s: %v", queued.JobID, ev.State, ev.Errors)
	}
	hist, err := e.Harn.History(ctx, harnesses.HistoryFilter{})
	if err != nil || len(hist) != 1 || len(hist[0].Edits) != 1 || !hist[0].Edits[0].Applied {
		t.Fatalf("history after the refine job: %+v %v", hist, err)
	}
	d := harnessData{Created: hist[0].ID, Entry: hist[0].Edits[0].ID, Before: *hist[0].Edits[0].After}
	d.After = d.Before + "\n" + updatedLine
	if len(d.After) > len(d.Before)*3/2 {
		t.Fatalf("fixture: the update grows %q past the growth cap", d.Before)
	}
	out, err := e.Harn.Apply(ctx, harnesses.ApplyRequest{Scope: harness.Global, Source: harnesses.ByAdmin, Proposal: harness.Proposal{
		Summary: "add the test-first line", Edits: []harness.Edit{{Action: harness.Update, Kind: harness.KindMemory, ID: d.Entry,
			Content: &d.After, Reason: "the operator's note"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := out.Refinement.Counts(); a != 1 {
		t.Fatalf("update: %+v", out.Refinement)
	}
	d.Updated = out.Refinement.ID
	return d
}

// entryContent is the global memory entry's content now.
func entryContent(t *testing.T, e *env, id string) (string, int) {
	t.Helper()
	v, err := e.Harn.Get(context.Background(), harnesses.EntryRef{Scope: harness.Global, Kind: harness.KindMemory, ID: id}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return v.Content, v.Version
}

// rolledBackBy is who rolled refinement id back ("" nobody).
func rolledBackBy(t *testing.T, e *env, id string) string {
	t.Helper()
	r, err := e.Harn.Refinement(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r.RolledBackBy
}

// benchEnvOpts makes a cell fail on its first attempt (no 10 s retries)
// so a run with a failed cell finishes at once.
var benchEnvOpts = envOpts{Edit: func(c *config.Config) {
	jobs := map[string]config.JobOverride{}
	for k, v := range c.Jobs {
		jobs[k] = v
	}
	jobs["bench_cell"] = config.JobOverride{MaxAttempts: 1}
	c.Jobs = jobs
}}

// failingCase is the statement word the fake answers malformed executor
// JSON for: every cell of that case fails.
const failingCase = "zebra-unparseable"

// benchFixture freezes two cases (the second one failing on the fake) and
// runs a memory A/B of them to its decision; it returns the run.
func benchFixture(t *testing.T, e *env) benches.Run {
	t.Helper()
	ctx := context.Background()
	if err := e.Fake.SetScript(&fakeds.Script{Rules: []fakeds.Rule{{Kind: "bench_cell", Marker: failingCase,
		Response: &fakeds.Response{Content: "the executor rambles instead of answering JSON"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Bench.AddCases(ctx, []benches.CaseInput{
		{ID: "run-one-test", Set: "demo", Title: "Run a single Go test", Statement: "Run only TestParseConfig in ./config.",
			Rubric: "Full marks for `go test -run` scoped to `./config`."},
		{ID: "broken-case", Set: "demo", Title: "A case the executor fails", Statement: "Describe the " + failingCase + " thing.",
			Rubric: "Full marks for `anything`."},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Bench.FreezeSet(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	run, err := e.Bench.StartMemoryRun(ctx, e.Client, benches.MemoryRunRequest{Workspace: "/srv/app", Set: "demo", Runs: 1, By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	enginetest.WaitFor(t, e.Events, func(ev *river.Event) bool {
		return ev.Job.Kind == "bench_decide" && ev.Kind == river.EventKindJobCompleted
	})
	run, err = e.Bench.Run(ctx, run.ID)
	if err != nil || run.Decision == nil || run.Done != 4 || run.Failed != 2 {
		t.Fatalf("run after its decision: %+v %v", run, err)
	}
	return run
}
