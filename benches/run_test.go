package benches_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/benchcell"
	"github.com/mullhq/mull/jobs/benchdecide"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// StartRun checks in the seed's order, each failure a coded error that
// wins over every later one: missing arguments, runs, frozen cases, the
// reference, the refinement; nothing is stored by any of them.
func TestStartRunOrderedErrors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{}, false, fixed(50))
		start := func(r benches.RunRequest) error {
			_, err := e.svc.StartRun(ctx, e.client, r)
			return err
		}
		full := benches.RunRequest{Refinement: "refine_x", Reference: "ref"}
		check := func(want string, r benches.RunRequest) {
			t.Helper()
			if got := codeOf(start(r)); got != want {
				t.Errorf("want %s, got %s (%v)", want, got, start(r))
			}
		}
		check("benchmark:run:missing-argument", benches.RunRequest{Refinement: "refine_x", Runs: 99})
		check("benchmark:run:missing-argument", benches.RunRequest{Reference: "ref", Runs: 99})
		check("benchmark:run:runs-invalid", benches.RunRequest{Refinement: "refine_x", Reference: "ref", Runs: -1})
		check("benchmark:run:runs-exceeds-max", benches.RunRequest{Refinement: "refine_x", Reference: "ref", Runs: 4})
		check("benchmark:run:no-frozen-cases", full)
		e.svc.AddCase(ctx, benches.CaseInput{ID: "draft", Title: "t", Statement: "s", Rubric: "r"})
		check("benchmark:run:no-frozen-cases", full)
		e.addFrozen(t, "demo", "c1")
		check("benchmark:run:no-frozen-cases", benches.RunRequest{Refinement: "refine_x", Reference: "ref", Set: "other"})
		check("benchmark:run:no-reference", full)
		e.capture(t, "ref", "")
		check("benchmark:run:refinement-not-found", full)
		if err := start(full); !errors.Is(err, benches.ErrNotFound) {
			t.Errorf("refinement-not-found is a 404: %v", err)
		}
		if n := count(t, s, "bench_runs") + count(t, s, "workflow_runs") + count(t, s, "river_job"); n != 0 {
			t.Errorf("%d runs, workflows or jobs stored by refused starts, want none", n)
		}
		if n := count(t, s, "bench_snapshots"); n != 1 {
			t.Errorf("%d snapshots, want only the captured reference", n)
		}
	})
}

// The candidate must be the reference plus exactly the refinement under
// test. A second, unrelated refinement committed after the reference, a
// refinement committed before it, or one to a store the reference does
// not cover is refused with benchmark:run:candidate-delta before any cell
// runs: no run, no candidate snapshot, no workflow, no job.
func TestCandidateDeltaRefusalStoresNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{}, false, fixed(50))
		e.addFrozen(t, "demo", "c1")
		early := e.refine(t, "refine_early", harness.Global, harness.Create, "style", "Prefer small diffs.")
		e.capture(t, "ref", "s1")
		r1 := e.refine(t, "refine_1", harness.Global, harness.Create, "tests", "Run the tests first.")
		other := e.refine(t, "refine_other", harness.Local("s2"), harness.Create, "elsewhere", "Not in s1's view.")
		want := map[string]bench.DeltaReason{
			early.ID: bench.RefinementNotFound, // committed before the reference
			other.ID: bench.RefinementNotFound, // a store the reference does not cover
		}
		r2 := e.refine(t, "refine_2", harness.Local("s1"), harness.Create, "unrelated", "A second change.")
		want[r1.ID] = bench.HistoryMismatch // r2 came after it, to a covered store
		before, err := s.RowCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for id, reason := range want {
			_, err := e.svc.StartRun(ctx, e.client, benches.RunRequest{Refinement: id, Reference: "ref"})
			var de *bench.DeltaError
			if !errors.As(err, &de) || de.Reason != reason || de.RefinementID != id {
				t.Errorf("run of %s: %v, want a DeltaError %s", id, err, reason)
				continue
			}
			if !strings.HasPrefix(err.Error(), bench.DeltaCode+":") {
				t.Errorf("run of %s: %q does not start with %s", id, err, bench.DeltaCode)
			}
		}
		_ = r2
		after, err := s.RowCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(before, after) {
			t.Errorf("refused runs stored rows: before %v, after %v", before, after)
		}
		for _, table := range []string{"bench_runs", "workflow_runs", "workflow_steps", "river_job", "bench_cells"} {
			if n := count(t, s, table); n != 0 {
				t.Errorf("%s has %d rows after refused runs, want none", table, n)
			}
		}
		if n := count(t, s, "bench_snapshots"); n != 1 {
			t.Errorf("%d snapshots after refused runs, want only the reference", n)
		}
	})
}

// A run end to end on the test steps: every case × side × iteration is a
// cell step, all recorded; progress counts the cells, the failed ones,
// and the step jobs' LLM calls; the decision is over every cell, in the
// seed's input order; deciding again returns the stored decision, and a
// replayed cell keeps the first record.
func TestRunEndToEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		score := func(a benchcell.Args) (*float64, bool) {
			if a.Side == bench.Candidate && a.Case == "c2" && a.Iteration == 2 {
				return nil, false // a failed cell: null, never 0
			}
			if a.Side == bench.Reference {
				return num(60), false
			}
			return num(80), false
		}
		e := newEnv(t, s, config.Bench{MaxFailedCells: 1}, true, score)
		e.addFrozen(t, "demo", "c2", "c1")
		e.addFrozen(t, "other", "z9")
		ref := e.capture(t, "ref", "")
		r1 := e.refine(t, "refine_1", harness.Global, harness.Create, "tests", "Run the tests first.")
		run, err := e.svc.StartRun(ctx, e.client, benches.RunRequest{Refinement: r1.ID, Reference: ref.ID, Set: "demo", Runs: 2,
			Workspace: "/w", By: "admin"})
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != store.BenchRunning || run.Total != 8 || !slices.Equal(run.CaseIDs, []string{"c1", "c2"}) || run.Options.MaxFailedCells != 1 ||
			run.Options.PassThreshold != 60 || run.Executor != "llm" || run.WorkflowID == "" {
			t.Errorf("started run = %+v", run)
		}
		cand, err := e.svc.Snapshot(ctx, run.Candidate)
		if err != nil {
			t.Fatal(err)
		}
		if cand.RefinementID != r1.ID || cand.Reference != ref.ID || !slices.Equal(cand.History, append(slices.Clone(ref.History), r1.ID)) {
			t.Errorf("candidate = %+v", cand)
		}
		if _, ok := cand.Entries.Get(harness.KindMemory, "tests"); !ok {
			t.Errorf("candidate entries lack the refinement's entry: %+v", cand.Entries)
		}
		if _, ok := ref.Entries.Get(harness.KindMemory, "tests"); ok {
			t.Errorf("reference holds the refinement's entry: %+v", ref.Entries)
		}
		e.waitDecided(t)

		got, err := e.svc.Run(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.BenchDecided || got.Done != 8 || got.Failed != 1 || got.Decision == nil || got.Decided == nil {
			t.Fatalf("decided run = %+v", got)
		}
		if got.Tokens != 8*15 || got.CostUSD < 8e-6-1e-12 || got.CostUSD > 8e-6+1e-12 {
			t.Errorf("tokens %d, cost %g; want 120 and 8e-6 (the step jobs' calls)", got.Tokens, got.CostUSD)
		}
		var order []string
		for _, c := range got.Cells {
			order = append(order, benches.CellStep(c.CaseID, c.Side, c.Iteration))
			if c.Status == bench.CellFailed && c.Score != nil || c.Status == bench.CellOK && c.Score == nil {
				t.Errorf("cell %+v: a failed cell's score is null, an ok one's is not", c)
			}
			if c.CaseHash == "" || c.StateHash == "" || c.SnapshotID == "" {
				t.Errorf("cell %+v lacks its hashes", c)
			}
		}
		want := []string{"cell/c1/reference/1", "cell/c1/candidate/1", "cell/c1/reference/2", "cell/c1/candidate/2",
			"cell/c2/reference/1", "cell/c2/candidate/1", "cell/c2/reference/2", "cell/c2/candidate/2"}
		if !slices.Equal(order, want) {
			t.Errorf("cells in order %v, want %v", order, want)
		}
		d := *got.Decision
		if d.Status != bench.Accepted || d.RunID != run.ID || d.RefinementID != r1.ID || d.FailedCells != 1 || len(d.Feedback) != 7 ||
			d.Feedback[0] != "fb cell/c1/reference/1" {
			t.Errorf("decision = %+v", d)
		}

		// Deciding again returns the stored decision; a replayed cell keeps
		// the first record.
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			again, err := e.svc.DecideTx(ctx, tx, run.ID, e.clock.Now().Add(1e9))
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(again, d) {
				t.Errorf("second decision = %+v, want the stored %+v", again, d)
			}
			replay := got.Cells[0]
			replay.Score, replay.Feedback = num(0), "replayed"
			ok, err := e.svc.RecordCellTx(ctx, tx, replay)
			if err != nil || ok {
				t.Errorf("replayed cell: ok %v, %v; want false, nil", ok, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		after, _ := e.svc.Run(ctx, run.ID)
		if *after.Cells[0].Score != 60 || after.Cells[0].Feedback != "fb cell/c1/reference/1" {
			t.Errorf("first cell after a replay = %+v, want the first record", after.Cells[0])
		}
		if after.Cells[0].Evidence == nil {
			t.Error("the cell's evidence was not kept")
		}
		list, err := e.svc.Runs(ctx, benches.RunFilter{Status: store.BenchDecided})
		if err != nil || len(list) != 1 || list[0].Done != 8 || list[0].Cells != nil {
			t.Errorf("decided runs = %+v, %v", list, err)
		}
	})
}

// The decision sees a regression: the candidate's mean below the
// reference's rejects the run, through the same workflow. The refinement
// here updates an entry the reference holds.
func TestRunRejectsRegression(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{}, true, bySide(70, 65))
		e.addFrozen(t, "demo", "c1")
		e.refine(t, "refine_0", harness.Global, harness.Create, "tests", "Run the tests.")
		ref := e.capture(t, "ref", "")
		// An update: its before-entry must match the reference's entry.
		r1 := e.refine(t, "refine_1", harness.Global, harness.Update, "tests", "Run all the tests.")
		run, err := e.svc.StartRun(ctx, e.client, benches.RunRequest{Refinement: r1.ID, Reference: ref.ID})
		if err != nil {
			t.Fatal(err)
		}
		if run.Runs != 1 || run.Total != 2 {
			t.Errorf("default runs: %+v", run)
		}
		e.waitDecided(t)
		got, err := e.svc.Run(ctx, run.ID)
		if err != nil || got.Decision == nil || got.Decision.Status != bench.Rejected {
			t.Errorf("run = %+v, %v; want REJECTED", got, err)
		}
	})
}

// A run whose workflow failed reads as failed, with the cells recorded so
// far counted.
func TestRunStatusFollowsFailedWorkflow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		score := func(a benchcell.Args) (*float64, bool) { return num(50), a.Side == bench.Candidate }
		e := newEnv(t, s, config.Bench{}, true, score)
		e.addFrozen(t, "demo", "c1")
		ref := e.capture(t, "ref", "")
		r1 := e.refine(t, "refine_1", harness.Global, harness.Create, "tests", "Run the tests first.")
		run, err := e.svc.StartRun(ctx, e.client, benches.RunRequest{Refinement: r1.ID, Reference: ref.ID})
		if err != nil {
			t.Fatal(err)
		}
		enginetest.WaitFor(t, e.events, func(ev *river.Event) bool {
			return ev.Job.Kind == "bench_cell" && ev.Job.State == rivertype.JobStateDiscarded
		})
		got, err := e.svc.Run(ctx, run.ID)
		if err != nil || got.Status != store.BenchFailed || got.Decision != nil || got.Failed != 0 {
			t.Errorf("run after its candidate cell failed = %+v, %v; want failed, undecided", got, err)
		}
		list, err := e.svc.Runs(ctx, benches.RunFilter{Status: store.BenchFailed})
		if err != nil || len(list) != 1 {
			t.Errorf("failed runs = %+v, %v", list, err)
		}
	})
}

// A memory run compares the workspace's digest (candidate) with no memory
// (reference); both snapshots are stored with the run and its workflow,
// whose steps are the cells and one decide step after them, with the
// bench_cell and bench_decide args' JSON.
func TestStartMemoryRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{}, false, fixed(50))
		e.addFrozen(t, "demo", "c1", "c2")
		if _, err := e.mem.Remember(ctx, memory.Write{Workspace: "/w", Kind: memory.Fact, Text: "The build uses make, not npm."},
			memory.Provenance{Origin: memory.OriginPanel}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.StartMemoryRun(ctx, e.client, benches.MemoryRunRequest{Set: "demo"}); codeOf(err) != "benchmark:memory:missing-argument" {
			t.Errorf("no workspace: %v", err)
		}
		if _, err := e.svc.StartMemoryRun(ctx, e.client, benches.MemoryRunRequest{Workspace: "/w", Set: "nope"}); codeOf(err) != "benchmark:memory:no-frozen-cases" {
			t.Errorf("no frozen cases: %v", err)
		}
		run, err := e.svc.StartMemoryRun(ctx, e.client, benches.MemoryRunRequest{Workspace: "/w", Set: "demo", Runs: 3, By: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		if run.Kind != benches.KindMemory || run.Total != 12 || run.Workspace != "/w" || run.RefinementID != "" {
			t.Errorf("memory run = %+v", run)
		}
		digest, err := e.mem.DigestFor(ctx, "/w", "")
		if err != nil || digest.Text == "" {
			t.Fatalf("digest %q, %v", digest.Text, err)
		}
		in, err := e.svc.CellInput(ctx, run.ID, "c2", bench.Candidate)
		if err != nil || in.Snapshot.Digest != digest.Text || in.Snapshot.Kind != bench.MemorySnapshot || in.Case.ID != "c2" {
			t.Errorf("candidate input = %+v, %v", in, err)
		}
		in, err = e.svc.CellInput(ctx, run.ID, "c1", bench.Reference)
		if err != nil || in.Snapshot.Digest != "" || in.Snapshot.ID != run.Reference {
			t.Errorf("reference input = %+v, %v", in, err)
		}
		if _, err := e.svc.CellInput(ctx, run.ID, "zz", bench.Reference); !errors.Is(err, benches.ErrNotFound) {
			t.Error("a case outside the run was served")
		}
		wf, err := s.GetWorkflowRun(ctx, run.WorkflowID)
		if err != nil {
			t.Fatal(err)
		}
		if len(wf.Steps) != 13 {
			t.Fatalf("%d steps, want 12 cells and decide", len(wf.Steps))
		}
		var cells []string
		for _, st := range wf.Steps[:12] {
			var wire struct{ Args json.RawMessage }
			json.Unmarshal(st.Args, &wire)
			var a benchcell.Args
			dec := json.NewDecoder(bytes.NewReader(wire.Args))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&a); err != nil || st.Kind != a.Kind() || a.Run != run.ID || st.Name != benches.CellStep(a.Case, a.Side, a.Iteration) {
				t.Errorf("step %s (%s): args %s → %+v, %v", st.Name, st.Kind, wire.Args, a, err)
			}
			cells = append(cells, st.Name)
		}
		last := wf.Steps[12]
		var wire struct{ Args json.RawMessage }
		json.Unmarshal(last.Args, &wire)
		var d benchdecide.Args
		if err := json.Unmarshal(wire.Args, &d); err != nil || last.Name != benches.DecideStep || last.Kind != d.Kind() || d.Run != run.ID ||
			!slices.Equal(last.Deps, cells) {
			t.Errorf("decide step = %+v, args %+v", last, d)
		}
		// Not every cell is recorded: the decision waits for all of them.
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := e.svc.DecideTx(ctx, tx, run.ID, e.clock.Now())
			return err
		})
		if !errors.Is(err, benches.ErrCellsMissing) {
			t.Errorf("deciding without the cells: %v, want ErrCellsMissing", err)
		}
	})
}

// RecordCellTx refuses a cell that is not one of its run's.
func TestRecordCellChecks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{}, false, fixed(50))
		e.addFrozen(t, "demo", "c1")
		e.mem.Remember(ctx, memory.Write{Workspace: "/w", Kind: memory.Fact, Text: "Use make."}, memory.Provenance{Origin: memory.OriginPanel})
		run, err := e.svc.StartMemoryRun(ctx, e.client, benches.MemoryRunRequest{Workspace: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		good := bench.Cell{RunID: run.ID, Side: bench.Reference, CaseID: "c1", Iteration: 1, Status: bench.CellOK, Score: num(70),
			SnapshotID: run.Reference, StateHash: "h", CaseHash: "h"}
		bad := map[string]bench.Cell{}
		c := good
		c.CaseID = "zz"
		bad["unknown case"] = c
		c = good
		c.Iteration = 2
		bad["iteration past runs"] = c
		c = good
		c.SnapshotID = run.Candidate
		bad["the other side's snapshot"] = c
		c = good
		c.Side = "both"
		bad["unknown side"] = c
		c = good
		c.Status, c.FailureReason = bench.CellFailed, bench.Timeout
		bad["failed with a score"] = c
		for name, c := range bad {
			err := s.InTx(ctx, func(tx *sql.Tx) error {
				_, err := e.svc.RecordCellTx(ctx, tx, c)
				return err
			})
			if err == nil {
				t.Errorf("%s: recorded", name)
			}
		}
		if n := count(t, s, "bench_cells"); n != 0 {
			t.Errorf("%d cells stored, want none", n)
		}
	})
}

// A snapshot of a session holds the merged view and the history of the
// global store and the session's own, in commit order, and not another
// session's; its id is checked and taken once.
func TestCaptureHistory(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{}, false, fixed(50))
		e.refine(t, "refine_g1", harness.Global, harness.Create, "a", "Global a.")
		e.refine(t, "refine_l1", harness.Local("s1"), harness.Create, "b", "Local b.")
		e.refine(t, "refine_x", harness.Local("s2"), harness.Create, "c", "Other session.")
		e.refine(t, "refine_g2", harness.Global, harness.Update, "a", "Global a, v2.")
		sn := e.capture(t, "", "s1")
		if !strings.HasPrefix(sn.ID, "snap_") || !slices.Equal(sn.History, []string{"refine_g1", "refine_l1", "refine_g2"}) {
			t.Errorf("snapshot %s history %v", sn.ID, sn.History)
		}
		if a, ok := sn.Entries.Get(harness.KindMemory, "a"); !ok || a.Content != "Global a, v2." {
			t.Errorf("entries = %+v", sn.Entries)
		}
		if _, ok := sn.Entries.Get(harness.KindMemory, "c"); ok {
			t.Error("another session's entry was captured")
		}
		if sn.StateHash != bench.StateHash(sn) {
			t.Error("state hash is not StateHash of the snapshot")
		}
		stored, err := e.svc.Snapshot(ctx, sn.ID)
		if err != nil || stored.StateHash != sn.StateHash || bench.StateHash(stored) != sn.StateHash {
			t.Errorf("stored snapshot %+v, %v: hash does not hold", stored, err)
		}
		if _, err := e.svc.Capture(ctx, benches.CaptureRequest{ID: sn.ID}); codeOf(err) != "benchmark:capture-reference:duplicate-id" {
			t.Errorf("taken id: %v", err)
		}
		var fe *benches.FieldError
		if _, err := e.svc.Capture(ctx, benches.CaptureRequest{ID: "a/b"}); !errors.As(err, &fe) || fe.Field != "snapshot_id" {
			t.Errorf("bad id: %v", err)
		}
		list, err := e.svc.Snapshots(ctx, 0)
		if err != nil || len(list) != 1 || list[0].ID != sn.ID || list[0].Entries != nil {
			t.Errorf("snapshots = %+v, %v", list, err)
		}
	})
}

// A set keeps the order its cases were added in (here an import's, under
// a clock that does not move): the run's cases, and so its decision's
// feedback, come in that order (per case and iteration, the reference
// then the candidate), not by id.
func TestRunKeepsTheCasesOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{}, true, fixed(50))
		var in []benches.CaseInput
		for _, id := range []string{"zeta", "alpha", "mid"} {
			in = append(in, benches.CaseInput{ID: id, Set: "demo", Title: "t", Statement: "s " + id, Rubric: "r"})
		}
		if _, err := e.svc.AddCases(ctx, in); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.FreezeSet(ctx, "demo"); err != nil {
			t.Fatal(err)
		}
		run, err := e.svc.StartMemoryRun(ctx, e.client, benches.MemoryRunRequest{Workspace: "/w", Set: "demo", Runs: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(run.CaseIDs, []string{"zeta", "alpha", "mid"}) {
			t.Errorf("run cases %v, want the order they were added", run.CaseIDs)
		}
		e.waitDecided(t)
		got, err := e.svc.Run(ctx, run.ID)
		if err != nil || got.Decision == nil {
			t.Fatalf("run %+v, %v", got, err)
		}
		var want []string
		for _, c := range []string{"zeta", "alpha", "mid"} {
			want = append(want, "fb cell/"+c+"/reference/1", "fb cell/"+c+"/candidate/1")
		}
		if !slices.Equal(got.Decision.Feedback, want) {
			t.Errorf("feedback %v, want %v", got.Decision.Feedback, want)
		}
	})
}
