package benches

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/workflows"
)

// The run kinds.
const (
	KindRefinement = "refinement"
	KindMemory     = "memory"
)

// WorkflowName is the name of a run's workflow.
const WorkflowName = "bench"

// DecideStep is the name of the step that joins every cell.
const DecideStep = "decide"

// CellStep is the workflow step name of one cell: cell/<case>/<side>/<iteration>.
func CellStep(caseID string, side bench.Side, iteration int) string {
	return "cell/" + caseID + "/" + string(side) + "/" + strconv.Itoa(iteration)
}

// WorkflowInput is a run's workflow input.
type WorkflowInput struct {
	Run string `json:"run"`
}

// cellArgs are jobs/benchcell.Args: that package imports this one, so
// they are mirrored here, same kind and same JSON (a test holds them
// equal).
type cellArgs struct {
	Run       string     `json:"run"`
	Side      bench.Side `json:"side"`
	Case      string     `json:"case"`
	Iteration int        `json:"iteration"`
}

func (cellArgs) Kind() string { return "bench_cell" }

// decideArgs are jobs/benchdecide.Args, mirrored like cellArgs.
type decideArgs struct {
	Run string `json:"run"`
}

func (decideArgs) Kind() string { return "bench_decide" }

// Workflow is the workflow of a run: a bench_cell step per case ×
// iteration × side, in the seed's order (per case and iteration, the
// reference cell then the candidate's), all roots so they run in
// parallel, and one bench_decide step after all of them.
func Workflow(run string, caseIDs []string, runs int) workflows.Def {
	def := workflows.Def{Name: WorkflowName, Input: WorkflowInput{Run: run}}
	var cells []string
	for _, c := range caseIDs {
		for it := 1; it <= runs; it++ {
			for _, side := range []bench.Side{bench.Reference, bench.Candidate} {
				name := CellStep(c, side, it)
				def.Steps = append(def.Steps, workflows.StepDef{Name: name, Args: cellArgs{Run: run, Side: side, Case: c, Iteration: it}})
				cells = append(cells, name)
			}
		}
	}
	def.Steps = append(def.Steps, workflows.StepDef{Name: DecideStep, Args: decideArgs{Run: run}, After: cells})
	return def
}

// resolveRuns is the iterations a run makes: the default when 0, else a
// positive number at most bench.max_runs.
func (s *Service) resolveRuns(action string, runs int) (int, error) {
	switch {
	case runs == 0:
		return min(max(s.cfg.DefaultRuns, 1), s.cfg.MaxRuns), nil
	case runs < 0:
		return 0, badRequest(action+":runs-invalid", "runs must be a positive integer, got %d", runs)
	case runs > s.cfg.MaxRuns:
		return 0, badRequest(action+":runs-exceeds-max", "runs (%d) exceeds maxRuns (%d)", runs, s.cfg.MaxRuns)
	}
	return runs, nil
}

// frozenCases are the frozen cases of set ("" = every set) in the order
// they were added: the run's case order, which its decision follows.
func (s *Service) frozenCases(ctx context.Context, action, set string) ([]string, error) {
	if set != "" {
		if problem := checkID(set); problem != "" {
			return nil, &FieldError{Field: "set", Problem: problem}
		}
	}
	cs, err := s.store.ListBenchCases(ctx, s.store.DB, set, bench.Frozen)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		in := ""
		if set != "" {
			in = " in set " + set
		}
		return nil, conflict(action+":no-frozen-cases", "%s requires at least one frozen benchmark case%s", action, in)
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids, nil
}

// checkCommon checks what both kinds of run share.
func checkCommon(workspace, by string) error {
	if err := checkOptionalName("workspace", workspace, events.MaxPath); err != nil {
		return err
	}
	return checkOptionalName("by", by, events.MaxIDLen+len("agent:"))
}

func (s *Service) startRun(ctx context.Context, client *engine.Client, r RunRequest) (Run, error) {
	if strings.TrimSpace(r.Reference) == "" {
		return Run{}, badRequest("run:missing-argument", "run requires reference_snapshot_id")
	}
	if strings.TrimSpace(r.Refinement) == "" {
		return Run{}, badRequest("run:missing-argument", "run requires refinement_id")
	}
	runs, err := s.resolveRuns("run", r.Runs)
	if err != nil {
		return Run{}, err
	}
	if err := checkCommon(r.Workspace, r.By); err != nil {
		return Run{}, err
	}
	caseIDs, err := s.frozenCases(ctx, "run", r.Set)
	if err != nil {
		return Run{}, err
	}
	ref, err := s.reference(ctx, r.Reference)
	if err != nil {
		return Run{}, err
	}
	hr, err := s.store.GetHarnessRefinement(ctx, s.store.DB, r.Refinement)
	if errors.Is(err, store.ErrNotFound) {
		return Run{}, notFound("run:refinement-not-found", "no refinement with id %s in the store history", r.Refinement)
	}
	if err != nil {
		return Run{}, err
	}
	id := newID("bench_")
	cand, err := s.candidate(ctx, ref, hr, id)
	if err != nil {
		return Run{}, err
	}
	row := store.BenchRun{ID: id, Kind: KindRefinement, RefinementID: r.Refinement, ReferenceID: ref.ID, CandidateID: cand.ID,
		Workspace: r.Workspace, Set: r.Set, CaseIDs: caseIDs, Runs: runs, By: r.By}
	return s.start(ctx, client, row, cand)
}

// reference reads a run's reference snapshot: a harness snapshot whose
// state still hashes to what was captured.
func (s *Service) reference(ctx context.Context, id string) (bench.Snapshot, error) {
	ref, err := s.store.GetBenchSnapshot(ctx, s.store.DB, id)
	if errors.Is(err, store.ErrNotFound) {
		return ref, notFound("run:no-reference", "reference snapshot not found: %s", id)
	}
	if err != nil {
		return ref, err
	}
	if ref.Kind != bench.HarnessSnapshot {
		return ref, badRequest("run:no-reference", "snapshot %s is a %s snapshot, not a harness reference", id, ref.Kind)
	}
	return ref, checkHash(ref)
}

// candidate derives the candidate (the reference plus exactly the
// refinement's applied edits) and proves it is that: the refinements
// committed to the reference's stores since it was captured must be
// exactly this one, and every difference must be its edits'. A failure is
// a *bench.DeltaError, returned before anything is stored.
func (s *Service) candidate(ctx context.Context, ref bench.Snapshot, hr store.HarnessRefinement, run string) (bench.Snapshot, error) {
	r := hr.Refinement
	r.Scope = harness.Global
	if key, ok := strings.CutPrefix(hr.ScopeKey, "session:"); ok {
		r.Scope = harness.Local(key)
	}
	since, err := s.since(ctx, ref)
	if err != nil {
		return bench.Snapshot{}, err
	}
	cand, err := bench.Derive(ref, r, run+"-candidate", s.store.Now())
	if err != nil {
		return bench.Snapshot{}, err
	}
	if err := bench.CheckDelta(ref, cand, r, since); err != nil {
		s.logger.InfoContext(ctx, "bench run refused: candidate delta", "refinement", r.ID, "reference", ref.ID, "error", err)
		return bench.Snapshot{}, err
	}
	return cand, nil
}

// since lists, in commit order, the refinements committed to the
// reference's stores that its history does not hold: those committed
// after it was captured. It goes by the commit sequence and the captured
// history, not by time, so a refinement committed in the same clock tick
// as the capture is still told apart.
func (s *Service) since(ctx context.Context, ref bench.Snapshot) ([]string, error) {
	commits, err := s.store.HarnessCommits(ctx, s.store.DB, scopeKeys(ref.Session))
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, c := range commits {
		if !slices.Contains(ref.History, c.ID) {
			out = append(out, c.ID)
		}
	}
	return out, nil
}

// start stores the run, the snapshots it made and its workflow, in one
// transaction: nothing of the run exists unless all of it does.
func (s *Service) start(ctx context.Context, client *engine.Client, row store.BenchRun, made ...bench.Snapshot) (Run, error) {
	if client == nil || s.runner == nil {
		return Run{}, errors.New("benches: starting a run needs the workflow runner and a River client")
	}
	row.Options = bench.Options{PassThreshold: s.cfg.Pass(), RegressionTolerance: s.cfg.RegressionTolerance,
		MaxFailedCells: s.cfg.MaxFailedCells}
	row.Executor, row.Status, row.CreatedAt = s.cfg.Executor, store.BenchRunning, s.store.Now()
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		for _, sn := range made {
			if err := s.store.InsertBenchSnapshot(ctx, tx, sn); err != nil {
				return err
			}
		}
		wf, err := s.runner.Start(ctx, tx, client, Workflow(row.ID, row.CaseIDs, row.Runs))
		if err != nil {
			return fmt.Errorf("start bench run %s: %w", row.ID, err)
		}
		row.WorkflowRunID = wf
		return s.store.InsertBenchRun(ctx, tx, row)
	})
	if err != nil {
		return Run{}, err
	}
	s.logger.InfoContext(ctx, "bench run started", "run", row.ID, "kind", row.Kind, "refinement", row.RefinementID,
		"cases", len(row.CaseIDs), "runs", row.Runs, "workflow_run", row.WorkflowRunID)
	return s.view(row, nil, store.BenchProgress{}), nil
}

func (s *Service) startMemoryRun(ctx context.Context, client *engine.Client, r MemoryRunRequest) (Run, error) {
	if strings.TrimSpace(r.Workspace) == "" {
		return Run{}, badRequest("memory:missing-argument", "a memory run requires workspace")
	}
	runs, err := s.resolveRuns("memory", r.Runs)
	if err != nil {
		return Run{}, err
	}
	if err := checkCommon(r.Workspace, r.By); err != nil {
		return Run{}, err
	}
	caseIDs, err := s.frozenCases(ctx, "memory", r.Set)
	if err != nil {
		return Run{}, err
	}
	if s.memories == nil {
		return Run{}, errors.New("benches: no memory service to read the digest from")
	}
	// Read before the run's transaction: DigestFor may publish, in its own.
	d, err := s.memories.DigestFor(ctx, r.Workspace, "")
	if err != nil {
		return Run{}, fmt.Errorf("memory run: digest of %s: %w", r.Workspace, err)
	}
	id, now := newID("bench_"), s.store.Now()
	ref := bench.Snapshot{ID: id + "-reference", Kind: bench.MemorySnapshot, Workspace: r.Workspace, CapturedAt: now}
	cand := bench.Snapshot{ID: id + "-candidate", Kind: bench.MemorySnapshot, Workspace: r.Workspace, Digest: d.Text,
		CapturedAt: now}
	ref.StateHash, cand.StateHash = bench.StateHash(ref), bench.StateHash(cand)
	if d.Text == "" {
		s.logger.WarnContext(ctx, "memory run on a workspace with no digest: both sides see no memory", "workspace", r.Workspace)
	}
	row := store.BenchRun{ID: id, Kind: KindMemory, ReferenceID: ref.ID, CandidateID: cand.ID, Workspace: r.Workspace,
		Set: r.Set, CaseIDs: caseIDs, Runs: runs, By: r.By}
	return s.start(ctx, client, row, ref, cand)
}
