package web

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
)

// routesOverview mounts the overview at /, and the LLM call records its
// numbers link to (overview_llm.go).
func (p *Panel) routesOverview() {
	p.get("/{$}", p.overview)
	p.routesLLM()
}

// overviewView is the morning look: is mull well, what waits, who works,
// what it spent today and over 30 days, and what failed. Each part that
// cannot be read says so in place (its Err) and the others still show.
type overviewView struct {
	Health *Health
	Queues section[[]queueRow]
	// Workers are the worker processes with a heartbeat row.
	Workers section[workersView]
	Budget  section[budgetView]
	Dead    section[deadView]
	Spend   section[spendView]
}

// section is one part of a page with the error that kept it from showing.
type section[T any] struct {
	V   T
	Err string
}

func fill[T any](v T, err error) section[T] {
	if err != nil {
		return section[T]{V: v, Err: err.Error()}
	}
	return section[T]{V: v}
}

func (p *Panel) overview(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	v := overviewView{}
	if p.deps.Health != nil {
		h := p.deps.Health(ctx)
		v.Health = &h
	}
	v.Queues = fill(p.queues(ctx, v.Health))
	v.Workers = fill(p.workers(ctx))
	v.Budget = fill(p.budgetToday(ctx))
	v.Dead = fill(p.deadCounts(ctx))
	v.Spend = fill(p.spend(ctx))
	return p.page(w, r, "overview", "overview", "Overview", v)
}

// jobStates are the River job states the queue table shows, in the order a
// job moves through them; dead letters (discarded, cancelled) link to /dlq.
var jobStates = []string{"available", "running", "scheduled", "retryable", "pending", "completed", "cancelled", "discarded"}

// queueRow is one River queue: paused or not and why, its configured
// workers and its jobs by state (in jobStates' order).
type queueRow struct {
	Name     string
	PausedAt *time.Time
	// Reason is why mull paused it (llm.PausedReason), "" when unsaid.
	Reason  string
	Workers int
	Counts  []int64
	// Waiting counts jobs available or retryable: what a paused queue holds up.
	Waiting int64
}

// queues lists every queue River knows and every queue with jobs, as
// `mull queues list` does: River's pause state, the health's job counts.
func (p *Panel) queues(ctx context.Context, h *Health) ([]queueRow, error) {
	counts := map[string]map[string]int64{}
	if h != nil && h.Queues != nil {
		counts = h.Queues
	} else if jc, err := p.deps.Store.JobCounts(ctx); err != nil {
		return nil, err
	} else {
		for _, c := range jc {
			if counts[c.Queue] == nil {
				counts[c.Queue] = map[string]int64{}
			}
			counts[c.Queue][c.State] += c.N
		}
	}
	rows := map[string]*queueRow{}
	for name := range counts {
		rows[name] = &queueRow{Name: name}
	}
	for name, n := range p.deps.Config.Workers.Queues {
		rows[name] = &queueRow{Name: name, Workers: n}
	}
	if p.deps.Client != nil {
		res, err := p.deps.Client.QueueList(ctx, river.NewQueueListParams().First(1000))
		if err != nil {
			return nil, err
		}
		for _, q := range res.Queues {
			row := rows[q.Name]
			if row == nil {
				row = &queueRow{Name: q.Name}
				rows[q.Name] = row
			}
			row.Workers = p.deps.Config.Workers.Queues[q.Name]
			if q.PausedAt != nil {
				row.PausedAt, row.Reason = q.PausedAt, llm.PausedReason(q)
			}
		}
	}
	out := make([]queueRow, 0, len(rows))
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		row := rows[name]
		for _, st := range jobStates {
			row.Counts = append(row.Counts, counts[name][st])
		}
		row.Waiting = counts[name]["available"] + counts[name]["retryable"]
		out = append(out, *row)
	}
	return out, nil
}

// workersView is every worker process with a heartbeat row, live ones first.
type workersView struct {
	List      []store.WorkerStatus
	Live      int
	DeadAfter time.Duration
}

func (p *Panel) workers(ctx context.Context) (workersView, error) {
	ws, err := p.deps.Store.ListWorkers(ctx)
	if err != nil {
		return workersView{}, err
	}
	v := workersView{DeadAfter: p.deps.Config.Workers.DeadAfter.D()}
	v.List = store.WorkerStatuses(ws, p.deps.Now(), v.DeadAfter)
	slices.SortStableFunc(v.List, func(a, b store.WorkerStatus) int {
		if a.Live != b.Live {
			if a.Live {
				return -1
			}
			return 1
		}
		return b.HeartbeatAt.Compare(a.HeartbeatAt)
	})
	for _, w := range v.List {
		if w.Live {
			v.Live++
		}
	}
	return v, nil
}

// budgetView is today's budget report (in the ledger's zone), each key
// with the link to the calls it counts.
type budgetView struct {
	Off  bool
	Day  budget.DayReport
	Keys []budgetKey
}

type budgetKey struct {
	budget.KeyReport
	// CallsLink links to this key's calls of the budget day; "" for the
	// default workspace limit (workspace:*), which counts no calls itself.
	CallsLink string
	// Used is spent and reserved tokens over the limit (0..1+), -1 without one.
	Used float64
}

func (p *Panel) budgetToday(ctx context.Context) (budgetView, error) {
	if p.deps.Budget == nil {
		return budgetView{Off: true}, nil
	}
	rep, err := p.deps.Budget.ReportDay(ctx, "")
	if err != nil {
		return budgetView{}, err
	}
	v := budgetView{Day: rep}
	start := rep.ResetAt.AddDate(0, 0, -1)
	if loc, err := time.LoadLocation(rep.Zone); err == nil {
		start = rep.ResetAt.In(loc).AddDate(0, 0, -1)
	}
	for _, k := range rep.Keys {
		bk := budgetKey{KeyReport: k, Used: -1, CallsLink: budgetCalls(k.Key, start, rep.ResetAt)}
		if k.LimitTokens > 0 {
			bk.Used = float64(k.SpentTokens+k.ReservedTokens) / float64(k.LimitTokens)
		}
		v.Keys = append(v.Keys, bk)
	}
	return v, nil
}

// budgetCalls links a budget key to the calls it counted between since and until.
func budgetCalls(key string, since, until time.Time) string {
	kind, ws := "", ""
	switch {
	case key == budget.KeyGlobal:
	case key == budget.KeyDefaultWorkspace:
		return ""
	case len(key) > 5 && key[:5] == "kind:":
		kind = key[5:]
	case len(key) > 10 && key[:10] == "workspace:":
		ws = key[10:]
	default:
		return ""
	}
	return link("/llm", "kind", kind, "workspace", ws, "since", since, "until", until)
}

// deadView counts the dead letters by kind, most first.
type deadView struct {
	Total  int64
	ByKind []kindCount
}

type kindCount struct {
	Kind string
	N    int64
}

func (p *Panel) deadCounts(ctx context.Context) (deadView, error) {
	m, err := p.deps.Store.DeadLetterCounts(ctx)
	if err != nil {
		return deadView{}, err
	}
	var v deadView
	for k, n := range m {
		v.Total += n
		v.ByKind = append(v.ByKind, kindCount{k, n})
	}
	slices.SortFunc(v.ByKind, func(a, b kindCount) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Kind, b.Kind)) })
	return v, nil
}

// States are the job states the queue table's columns show.
func (overviewView) States() []string { return jobStates }

// DeadState reports a state whose jobs may be dead letters (linked to /dlq).
func (overviewView) DeadState(s string) bool { return s == "cancelled" || s == "discarded" }

// Global is the global key's row of today's budget, nil without one.
func (b budgetView) Global() *budgetKey {
	for i := range b.Keys {
		if b.Keys[i].Key == budget.KeyGlobal {
			return &b.Keys[i]
		}
	}
	return nil
}

// Paused lists the paused queues.
func (v overviewView) Paused() []queueRow {
	var out []queueRow
	for _, q := range v.Queues.V {
		if q.PausedAt != nil {
			out = append(out, q)
		}
	}
	return out
}
