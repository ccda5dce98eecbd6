package web

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
)

// The benchmark pages (issue 14): the runs, and a run's case × side ×
// iteration grid with its decision, frozen cases and snapshots; each cell
// links to its evidence. Read-only: a run is started from the CLI or the
// admin API, and a run never changes harness state.

// routesBench mounts the bench pages.
func (p *Panel) routesBench() {
	p.get("/bench", p.benchRuns)
	p.get("/bench/{run}", p.benchRun)
	p.get("/bench/{run}/cells/{case}/{side}/{iteration}", p.benchCell)
}

// benchDown is the page of a mull without the benchmark service.
func (p *Panel) benchDown() error {
	if p.deps.Bench == nil || p.deps.Store == nil {
		return Errorf(http.StatusServiceUnavailable, "the benchmark service is not configured in this mull, so there is nothing to show here")
	}
	return nil
}

// benchRunsView is /bench.
type benchRunsView struct {
	Page                     string
	Kind, Status, Refinement string
	Kinds, Statuses          []string
	Runs                     []runRow
	Pager                    Pager
}

// runRow is a run with its progress, as the list shows it.
type runRow struct {
	store.BenchRun
	Total, Done, Failed int
	Tokens              int64
	CostUSD             float64
}

func (p *Panel) benchRuns(w http.ResponseWriter, r *http.Request) error {
	if err := p.benchDown(); err != nil {
		return err
	}
	ctx, q := r.Context(), r.URL.Query()
	v := benchRunsView{Page: "runs", Kind: q.Get("kind"), Status: q.Get("status"), Refinement: strings.TrimSpace(q.Get("refinement")),
		Kinds:    []string{benches.KindRefinement, benches.KindMemory},
		Statuses: []string{store.BenchRunning, store.BenchDecided, store.BenchFailed, store.BenchCancelled}, Pager: pager(r, 25)}
	if v.Kind != "" && !slices.Contains(v.Kinds, v.Kind) {
		return Errorf(http.StatusBadRequest, "kind %q is not refinement or memory", v.Kind)
	}
	if v.Status != "" && !slices.Contains(v.Statuses, v.Status) {
		return Errorf(http.StatusBadRequest, "status %q is not running, decided, failed or cancelled", v.Status)
	}
	rows, err := p.deps.Store.PanelBenchRuns(ctx, store.PanelBenchRunFilter{Kind: v.Kind, Status: v.Status, RefinementID: v.Refinement,
		Limit: v.Pager.Limit(), Offset: v.Pager.Offset()})
	if err != nil {
		return err
	}
	rows = rows[:v.Pager.Trim(len(rows))]
	ids := make([]string, len(rows))
	for i, run := range rows {
		ids[i] = run.ID
	}
	progress, err := p.deps.Store.BenchRunsProgress(ctx, p.deps.Store.DB, ids)
	if err != nil {
		return err
	}
	for _, run := range rows {
		pr := progress[run.ID]
		v.Runs = append(v.Runs, runRow{BenchRun: run, Total: len(run.CaseIDs) * 2 * run.Runs, Done: pr.Done, Failed: pr.Failed,
			Tokens: pr.Tokens, CostUSD: float64(pr.CostNanoUSD) / 1e9})
	}
	return p.page(w, r, "bench", "bench", "Benchmarks", v)
}

// benchRunView is /bench/{run}.
type benchRunView struct {
	Page string
	Run  benches.Run
	// Iterations are 1..Run.Runs, the grid's column groups.
	Iterations []int
	Grid       []gridRow
	Failures   []bench.Cell
	// Overall is the decision's overall means and delta.
	Overall   meansView
	Cases     []bench.Case
	Snapshots []bench.Snapshot
	// Missing are the run's snapshots or cases that could not be read.
	Missing []string
}

// gridRow is one case of the grid: its cells by iteration and side, and
// its means.
type gridRow struct {
	CaseID string
	Title  string
	Cells  []gridPair
	Means  meansView
	// Regressed: the decision lists the case as a regression.
	Regressed bool
}

// gridPair is one iteration of a case: the reference's and the
// candidate's cell (nil while not recorded).
type gridPair struct {
	N              int
	Ref, Candidate *cellView
}

// cellView is a recorded cell with its score as text ("" when failed).
type cellView struct {
	bench.Cell
	Text string
}

// meansView is a pair of means and their delta as text ("" for none: a
// side without an ok cell has no mean, never 0).
type meansView struct {
	Ref, Cand, Delta string
	// Worse and Better: the candidate's mean is below or above the
	// reference's.
	Worse, Better bool
}

func newMeans(ref, cand, delta *float64) meansView {
	m := meansView{Ref: score(ref), Cand: score(cand)}
	if delta == nil && ref != nil && cand != nil {
		d := *cand - *ref
		delta = &d
	}
	if delta != nil {
		m.Delta = signed(*delta)
		m.Worse, m.Better = *delta < 0, *delta > 0
	}
	return m
}

// score is a score or mean as people read it: at most two decimals, ""
// for none.
func score(f *float64) string {
	if f == nil {
		return ""
	}
	return strconv.FormatFloat(math.Round(*f*100)/100, 'f', -1, 64)
}

func signed(f float64) string {
	s := score(&f)
	if f > 0 {
		return "+" + s
	}
	return s
}

func (p *Panel) benchRun(w http.ResponseWriter, r *http.Request) error {
	if err := p.benchDown(); err != nil {
		return err
	}
	ctx := r.Context()
	run, err := p.deps.Bench.Run(ctx, r.PathValue("run"))
	if err != nil {
		return benchError(err)
	}
	v := benchRunView{Page: "run", Run: run}
	for i := 1; i <= run.Runs; i++ {
		v.Iterations = append(v.Iterations, i)
	}
	cases, err := p.deps.Store.GetBenchCases(ctx, p.deps.Store.DB, run.CaseIDs)
	if err != nil {
		return err
	}
	for _, id := range run.CaseIDs {
		c, ok := cases[id]
		if !ok {
			v.Missing = append(v.Missing, fmt.Sprintf("case %s: %v", id, store.ErrNotFound))
			c = bench.Case{ID: id}
		}
		v.Cases = append(v.Cases, c)
	}
	for _, id := range []string{run.Reference, run.Candidate} {
		sn, err := p.deps.Bench.Snapshot(ctx, id)
		if err != nil {
			v.Missing = append(v.Missing, fmt.Sprintf("snapshot %s: %v", id, err))
			continue
		}
		v.Snapshots = append(v.Snapshots, sn)
	}
	v.grid()
	return p.page(w, r, "bench", "bench", "Benchmark run "+run.ID, v)
}

// grid lays the run's cells out by case, iteration and side, with the
// decision's means.
func (v *benchRunView) grid() {
	run := v.Run
	byKey := map[string]*cellView{}
	for _, c := range run.Cells {
		byKey[cellKey(c.CaseID, c.Side, c.Iteration)] = &cellView{Cell: c, Text: score(c.Score)}
		if c.Status == bench.CellFailed {
			v.Failures = append(v.Failures, c)
		}
	}
	titles := map[string]string{}
	for _, c := range v.Cases {
		titles[c.ID] = c.Title
	}
	d := run.Decision
	if d != nil {
		v.Overall = newMeans(d.ReferenceOverall, d.CandidateOverall, nil)
	}
	for _, id := range run.CaseIDs {
		row := gridRow{CaseID: id, Title: titles[id]}
		for _, n := range v.Iterations {
			row.Cells = append(row.Cells, gridPair{N: n, Ref: byKey[cellKey(id, bench.Reference, n)],
				Candidate: byKey[cellKey(id, bench.Candidate, n)]})
		}
		if d != nil {
			m := d.PerCase[id]
			row.Means = newMeans(m.Reference, m.Candidate, m.Delta)
			row.Regressed = slices.Contains(d.RegressionCases, id)
		}
		v.Grid = append(v.Grid, row)
	}
}

func cellKey(caseID string, side bench.Side, n int) string {
	return caseID + "\x00" + string(side) + "\x00" + strconv.Itoa(n)
}

// benchCellView is /bench/{run}/cells/{case}/{side}/{iteration}.
type benchCellView struct {
	Page string
	Run  benches.Run
	Cell bench.Cell
	// Score is the score as text ("" for a failed cell).
	Score string
	// Log is the DSH session log, as stored.
	Log string
}

func (p *Panel) benchCell(w http.ResponseWriter, r *http.Request) error {
	if err := p.benchDown(); err != nil {
		return err
	}
	run, err := p.deps.Bench.Run(r.Context(), r.PathValue("run"))
	if err != nil {
		return benchError(err)
	}
	caseID, side := r.PathValue("case"), bench.Side(r.PathValue("side"))
	n, _ := strconv.Atoi(r.PathValue("iteration"))
	for _, c := range run.Cells {
		if c.CaseID == caseID && c.Side == side && c.Iteration == n {
			v := benchCellView{Page: "cell", Run: run, Cell: c, Score: score(c.Score), Log: string(c.Log)}
			return p.page(w, r, "bench", "bench", fmt.Sprintf("Cell %s · %s · iteration %d", caseID, side, n), v)
		}
	}
	if !slices.Contains(run.CaseIDs, caseID) || side != bench.Reference && side != bench.Candidate || n < 1 || n > run.Runs {
		return Errorf(http.StatusNotFound, "run %s has no cell %s/%s/%s", run.ID, caseID, side, r.PathValue("iteration"))
	}
	return Errorf(http.StatusNotFound, "cell %s/%s/%d of run %s is not recorded yet (the run is %s): reload the run's page later", caseID, side, n, run.ID, run.Status)
}

// benchError maps the service's errors to what a page shows.
func benchError(err error) error {
	if errors.Is(err, benches.ErrNotFound) {
		return Errorf(http.StatusNotFound, "%s", strings.TrimSuffix(err.Error(), ": "+store.ErrNotFound.Error()))
	}
	return err
}
