package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// demoCases is a three-case set as the import takes it.
const demoCases = `{"set":"demo","cases":[
	{"id":"go-test-flags","title":"Run one test","statement":"Run only TestParse in ./parser","rubric":"Uses ` + "`go test -run`" + `"},
	{"id":"build","title":"Build","statement":"Build the binary","rubric":"Runs ` + "`make build`" + `","capability":"build"},
	{"id":"lint","title":"Lint","statement":"Lint the code","rubric":"Runs ` + "`golangci-lint run`" + `"}]}`

// memoryCreate is an admin apply creating memory entry id.
func memoryCreate(id string) string {
	return `{"proposal":{"summary":"note ` + id + `","edits":[{"action":"create","kind":"memory","id":"` + id +
		`","content":"remember ` + id + `","title":"` + id + `","reason":"seen twice"}]}}`
}

type runBody struct {
	Run    benches.Run `json:"run"`
	Follow string      `json:"follow"`
}

// The admin routes over a benchmark's life, black box: an import adds
// drafts all or nothing, a draft is edited, a set frozen, a frozen case
// refuses an edit (409 with its code); a reference is captured before a
// refinement applies, served to the plugin with its ETag; a run of the
// refinement starts its workflow (202, 3 cases × 2 sides × 1 = 6 cells
// queued); a candidate with a second, unrelated change is refused before
// any cell runs (409 benchmark:run:candidate-delta, no run stored); a
// memory run starts; the lists filter.
//
// Needs the benches service (slice B): it fails with "not built yet" on
// the stub.
func TestBenchAdminRoutesEndToEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newBenchRig(t, s)
		var added struct {
			Added []string `json:"added"`
		}
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/cases/import", demoCases), http.StatusCreated, &added)
		if strings.Join(added.Added, ",") != "go-test-flags,build,lint" {
			t.Fatalf("added %v", added.Added)
		}
		// All or nothing: a set holding a taken id adds none.
		again := strings.Replace(demoCases, `"id":"lint"`, `"id":"fresh"`, 1)
		rec := serve(h.srv, "POST", "/v1/admin/bench/cases/import", again)
		if rec.Code != http.StatusConflict {
			t.Fatalf("import of taken ids: %d %s", rec.Code, rec.Body)
		}
		var cases struct {
			Cases []bench.Case `json:"cases"`
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/bench/cases?set=demo", ""), http.StatusOK, &cases)
		if len(cases.Cases) != 3 {
			t.Fatalf("after a refused import: %d cases, want 3", len(cases.Cases))
		}
		expect(t, serve(h.srv, "PATCH", "/v1/admin/bench/cases/lint",
			`{"title":"Lint","statement":"Lint every package","rubric":"Runs `+"`golangci-lint run ./...`"+`"}`), http.StatusOK, nil)
		var frozen struct {
			Frozen []string `json:"frozen"`
		}
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/freeze", `{"set":"demo"}`), http.StatusOK, &frozen)
		if len(frozen.Frozen) != 3 {
			t.Fatalf("frozen %v", frozen.Frozen)
		}
		var eb benchErrBody
		expect(t, serve(h.srv, "PATCH", "/v1/admin/bench/cases/lint", `{"title":"L","statement":"s","rubric":"r"}`), http.StatusConflict, &eb)
		if eb.Code != "benchmark:update:frozen" {
			t.Errorf("edit of a frozen case: %+v", eb)
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/bench/cases?state=frozen", ""), http.StatusOK, &cases)
		for _, c := range cases.Cases {
			if c.State != bench.Frozen || len(c.Hash) != 64 {
				t.Errorf("case %s: %s %q", c.ID, c.State, c.Hash)
			}
		}

		var snap struct {
			Snapshot bench.Snapshot `json:"snapshot"`
		}
		h.apply(memoryCreate("before-entry"))
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/snapshots", `{"id":"before"}`), http.StatusCreated, &snap)
		if snap.Snapshot.ID != "before" || snap.Snapshot.Kind != bench.HarnessSnapshot || snap.Snapshot.StateHash == "" {
			t.Fatalf("capture: %+v", snap.Snapshot)
		}
		var inj api.BenchInject
		rec = serve(h.srv, "GET", "/v1/bench/snapshots/before/inject", "", bearer("tok"))
		expect(t, rec, http.StatusOK, &inj)
		if !strings.Contains(inj.Text, "before-entry") || inj.ETag == "" || rec.Header().Get("ETag") != inj.ETag {
			t.Fatalf("inject: %+v (ETag %s)", inj, rec.Header().Get("ETag"))
		}
		if rec := serve(h.srv, "GET", "/v1/bench/snapshots/before/inject", "", bearer("tok"), header("If-None-Match", inj.ETag)); rec.Code != http.StatusNotModified {
			t.Errorf("inject with its tag: %d", rec.Code)
		}
		expect(t, serve(h.srv, "GET", "/v1/bench/snapshots/nope/inject", "", bearer("tok")), http.StatusNotFound, nil)

		ref := h.apply(memoryCreate("under-test"))
		var started runBody
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/runs",
			`{"refinement_id":"`+ref.ID+`","reference_snapshot_id":"before","set":"demo","workspace":"/w"}`), http.StatusAccepted, &started)
		run := started.Run
		if run.Status != "running" || run.Total != 6 || run.Runs != 1 || len(run.CaseIDs) != 3 || run.RefinementID != ref.ID ||
			run.Reference != "before" || run.Candidate == "" || !strings.HasSuffix(started.Follow, run.ID) {
			t.Fatalf("started: %+v", started)
		}
		var got runBody
		expect(t, serve(h.srv, "GET", "/v1/admin/bench/runs/"+run.ID, ""), http.StatusOK, &got)
		if got.Run.Done != 0 || got.Run.Total != 6 || got.Run.Decision != nil || got.Run.Cells == nil {
			t.Errorf("run: %+v", got.Run)
		}
		expect(t, serve(h.srv, "GET", "/v1/bench/snapshots/"+run.Candidate+"/inject", "", bearer("tok")), http.StatusOK, &inj)
		if !strings.Contains(inj.Text, "under-test") || !strings.Contains(inj.Text, "before-entry") {
			t.Errorf("candidate inject:\n%s", inj.Text)
		}

		// A second, unrelated change after the capture: the candidate is
		// no longer the reference plus exactly the refinement.
		h.apply(memoryCreate("unrelated"))
		before, _ := s.RowCounts(context.Background())
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/runs",
			`{"refinement_id":"`+ref.ID+`","reference_snapshot_id":"before"}`), http.StatusConflict, &eb)
		if eb.Code != bench.DeltaCode || eb.Reason != string(bench.HistoryMismatch) {
			t.Errorf("second change: %+v", eb)
		}
		after, _ := s.RowCounts(context.Background())
		for table, n := range after {
			if before[table] != n {
				t.Errorf("refused run: table %s %d rows before, %d after", table, before[table], n)
			}
		}
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/runs",
			`{"refinement_id":"refine_nope","reference_snapshot_id":"before"}`), http.StatusNotFound, &eb)
		if eb.Code != "benchmark:run:refinement-not-found" {
			t.Errorf("unknown refinement: %+v", eb)
		}
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/runs",
			`{"refinement_id":"`+ref.ID+`","reference_snapshot_id":"nope"}`), http.StatusNotFound, &eb)
		if eb.Code != "benchmark:run:no-reference" {
			t.Errorf("unknown reference: %+v", eb)
		}

		expect(t, serve(h.srv, "POST", "/v1/admin/bench/memory", `{"workspace":"/w","set":"demo","runs":2}`), http.StatusAccepted, &started)
		if started.Run.Kind != "memory" || started.Run.Total != 12 || started.Run.Workspace != "/w" {
			t.Fatalf("memory run: %+v", started.Run)
		}
		var runs struct {
			Runs []benches.Run `json:"runs"`
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/bench/runs", ""), http.StatusOK, &runs)
		if len(runs.Runs) != 2 || runs.Runs[0].Kind != "memory" {
			t.Errorf("runs: %+v", runs.Runs)
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/bench/runs?kind=refinement&status=running&limit=5", ""), http.StatusOK, &runs)
		if len(runs.Runs) != 1 || runs.Runs[0].ID != run.ID {
			t.Errorf("refinement runs: %+v", runs.Runs)
		}
		var snaps struct {
			Snapshots []bench.Snapshot `json:"snapshots"`
		}
		expect(t, serve(h.srv, "GET", "/v1/admin/bench/snapshots", ""), http.StatusOK, &snaps)
		if len(snaps.Snapshots) != 4 { // before, its candidate, the memory run's two sides
			t.Errorf("snapshots: %d", len(snaps.Snapshots))
		}
		expect(t, serve(h.srv, "GET", "/metrics", ""), http.StatusOK, nil)
		metrics := serve(h.srv, "GET", "/metrics", "").Body.String()
		if !strings.Contains(metrics, `mull_bench_runs{status="running"} 2`) {
			t.Errorf("metrics:\n%s", grepLines(metrics, "mull_bench"))
		}
	})
}

// grepLines keeps the lines holding s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// The agent's harness_benchmark over the seed's flow, black box: add-case
// and freeze answer the seed's case fields; freezing twice is
// benchmark:freeze:not-draft; capture-reference the snapshot's id, hash
// and time; run answers at once with status running and the cell count;
// status with run_id follows it; status lists cases, snapshots and recent
// runs.
//
// Needs the benches service (slice B).
func TestBenchAgentToolEndToEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newBenchRig(t, s)
		h.known("s1", "/w")
		tok := bearer("tok")
		call := func(status int, body string, out any) {
			t.Helper()
			expect(t, serve(h.srv, "POST", "/v1/harness/benchmark", `{"session":"s1",`+body+`}`, tok), status, out)
		}
		var c struct {
			Action string         `json:"action"`
			OK     bool           `json:"ok"`
			Case   map[string]any `json:"case"`
		}
		for i := range 2 {
			id := "case-" + strconv.Itoa(i)
			call(http.StatusOK, `"action":"add-case","case_id":"`+id+`","title":"T","statement":"Do `+id+`","rubric":"Mentions `+"`"+id+"`"+`"`, &c)
			if c.Action != "add-case" || !c.OK || c.Case["id"] != id || c.Case["state"] != "draft" || c.Case["created_at"] == nil {
				t.Fatalf("add-case: %+v", c)
			}
			call(http.StatusOK, `"action":"freeze","case_id":"`+id+`"`, &c)
			if c.Case["state"] != "frozen" || c.Case["frozen_at"] == nil {
				t.Fatalf("freeze: %+v", c)
			}
		}
		var eb benchErrBody
		call(http.StatusConflict, `"action":"freeze","case_id":"case-0"`, &eb)
		if eb.Code != "benchmark:freeze:not-draft" {
			t.Errorf("freeze twice: %+v", eb)
		}
		call(http.StatusNotFound, `"action":"freeze","case_id":"nope"`, &eb)
		if eb.Code != "benchmark:freeze:not-found" {
			t.Errorf("freeze unknown: %+v", eb)
		}
		call(http.StatusConflict, `"action":"add-case","case_id":"case-0","title":"T","statement":"S","rubric":"R"`, &eb)
		if eb.Code != "benchmark:add-case:duplicate-id" {
			t.Errorf("duplicate: %+v", eb)
		}

		var captured struct {
			SnapshotID string `json:"snapshot_id"`
			StateHash  string `json:"state_hash"`
			CapturedAt string `json:"captured_at"`
		}
		call(http.StatusOK, `"action":"capture-reference","snapshot_id":"ref-1"`, &captured)
		if captured.SnapshotID != "ref-1" || captured.StateHash == "" || captured.CapturedAt == "" {
			t.Fatalf("capture-reference: %+v", captured)
		}
		ref := h.apply(`{"session":"s1",` + strings.TrimPrefix(memoryCreate("local-note"), "{"))
		var started struct {
			Action string `json:"action"`
			OK     bool   `json:"ok"`
			RunID  string `json:"run_id"`
			Status string `json:"status"`
			Cells  int    `json:"cells"`
			Runs   int    `json:"runs"`
		}
		call(http.StatusAccepted, `"action":"run","reference_snapshot_id":"ref-1","refinement_id":"`+ref.ID+`","runs":2`, &started)
		if started.Action != "run" || !started.OK || started.RunID == "" || started.Status != "running" || started.Cells != 8 || started.Runs != 2 {
			t.Fatalf("run: %+v", started)
		}
		var st map[string]any
		call(http.StatusOK, `"action":"status","run_id":"`+started.RunID+`"`, &st)
		if st["status"] != "running" || st["cells"] != float64(8) || st["cells_done"] != float64(0) {
			t.Errorf("status of the run: %v", st)
		}
		call(http.StatusOK, `"action":"status"`, &st)
		cs, _ := st["cases"].([]any)
		ss, _ := st["snapshots"].([]any)
		rs, _ := st["recent_runs"].([]any)
		if len(cs) != 2 || len(ss) < 1 || len(rs) != 1 {
			t.Errorf("status: %v", st)
		}
		call(http.StatusNotFound, `"action":"status","run_id":"bench_nope"`, &eb)
		if eb.Code != "benchmark:status:not-found" {
			t.Errorf("status of an unknown run: %+v", eb)
		}

		// Another session, in another workspace, sees neither s1's capture
		// (it holds s1's local entries) nor s1's run: the run is as
		// unknown as a made-up id, and it cannot run against the capture.
		h.known("s2", "/other")
		other := func(status int, body string, out any) {
			t.Helper()
			expect(t, serve(h.srv, "POST", "/v1/harness/benchmark", `{"session":"s2",`+body+`}`, tok), status, out)
		}
		other(http.StatusOK, `"action":"status"`, &st)
		if ss, _ := st["snapshots"].([]any); len(ss) != 0 {
			t.Errorf("s2 lists s1's snapshots: %v", st)
		}
		if rs, _ := st["recent_runs"].([]any); len(rs) != 0 {
			t.Errorf("s2 lists s1's runs: %v", st)
		}
		other(http.StatusNotFound, `"action":"status","run_id":"`+started.RunID+`"`, &eb)
		if eb.Code != "benchmark:status:not-found" {
			t.Errorf("s2 reads s1's run: %+v", eb)
		}
		other(http.StatusNotFound, `"action":"run","reference_snapshot_id":"ref-1","refinement_id":"`+ref.ID+`"`, &eb)
		if eb.Code != "benchmark:run:no-reference" {
			t.Errorf("s2 runs against s1's capture: %+v", eb)
		}
	})
}

// With bench.executor = dsh a run executes shell-capable DSH sessions on
// mull's host on whatever the set's statements say, and an agent may add
// statements: the agent's run is refused (403 benchmark:run:admin-only)
// and nothing is stored, while the admin route starts the same run.
func TestBenchAgentRunRefusedWithDSHExecutor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newBenchRig(t, s, func(c *config.Config) {
			c.Bench.Executor, c.Bench.DSHCommand = config.BenchExecutorDSH, "dsh-not-run-here"
		})
		h.known("s1", "/w")
		var eb benchErrBody
		expect(t, serve(h.srv, "POST", "/v1/harness/benchmark",
			`{"session":"s1","action":"run","reference_snapshot_id":"ref-1","refinement_id":"refine_x"}`, bearer("tok")),
			http.StatusForbidden, &eb)
		if eb.Code != "benchmark:run:admin-only" || !strings.Contains(eb.Error, "operator") {
			t.Fatalf("agent run under the dsh executor: %+v", eb)
		}
		if runs, err := h.bench.Runs(t.Context(), benches.RunFilter{}); err != nil || len(runs) != 0 {
			t.Fatalf("runs after the refusal: %v %v", runs, err)
		}
	})
}

// With bench.executor = dsh and no admin token, every loopback caller is
// mull's admin, a DSH cell's agent included: the admin routes that start
// a run refuse (409 benchmark:<action>:dsh-needs-tokens, naming
// MULL_ADMIN_TOKEN), before anything is stored, even from loopback. With
// an admin token the same memory run starts.
func TestBenchDSHRunsNeedTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newBenchRig(t, s, func(c *config.Config) {
			c.Bench.Executor, c.Bench.DSHCommand = config.BenchExecutorDSH, "dsh-not-run-here"
		})
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/cases/import", demoCases), http.StatusCreated, nil)
		expect(t, serve(h.srv, "POST", "/v1/admin/bench/freeze", `{"set":"demo"}`), http.StatusOK, nil)
		for _, tc := range []struct{ path, body, code string }{
			{"/v1/admin/bench/memory", `{"workspace":"/w","set":"demo","runs":1}`, "benchmark:memory:dsh-needs-tokens"},
			{"/v1/admin/bench/runs", `{"reference_snapshot_id":"ref-1","refinement_id":"refine_x"}`, "benchmark:run:dsh-needs-tokens"},
		} {
			var eb benchErrBody
			expect(t, serve(h.srv, "POST", tc.path, tc.body), http.StatusConflict, &eb)
			if eb.Code != tc.code || !strings.Contains(eb.Error, "MULL_ADMIN_TOKEN") || !strings.Contains(eb.Error, "loopback") {
				t.Errorf("%s: %+v, want %s naming MULL_ADMIN_TOKEN and why", tc.path, eb, tc.code)
			}
		}
		if runs, err := h.bench.Runs(t.Context(), benches.RunFilter{}); err != nil || len(runs) != 0 {
			t.Fatalf("runs after the refusals: %v %v", runs, err)
		}

		admin := newBenchRig(t, s, func(c *config.Config) {
			c.Bench.Executor, c.Bench.DSHCommand, c.AdminToken, c.APIToken = config.BenchExecutorDSH, "dsh-not-run-here", "adm", "api"
		})
		var run runBody
		expect(t, serve(admin.srv, "POST", "/v1/admin/bench/memory", `{"workspace":"/w","set":"demo","runs":1}`, bearer("adm")),
			http.StatusAccepted, &run)
		if run.Run.Executor != config.BenchExecutorDSH {
			t.Errorf("run %+v, want a dsh run", run.Run)
		}
	})
}
