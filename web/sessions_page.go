package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
)

// eventsPerPage bounds a page of a session's timeline.
const eventsPerPage = 100

// tasksShown bounds the tasks a session page lists.
const tasksShown = 200

type sessionView struct {
	S            store.Session
	ToolFailures int64
	// Usage is the agent's own usage in the session, priced (llm.prices).
	Usage        overhead.Agent
	AgentCostUSD float64
	Import       *store.SessionImport
	// The timeline: a page of the events that match the filter.
	Events     []timelineRow
	EventTotal int64
	Pager      Pager
	Only, Type string
	From, To   int64
	Types      []string
	// What learning did with it.
	Tasks      []taskRow
	MoreTasks  bool
	Retros     []retroRow
	ErrorRetro *store.ErrorRetro
	// ErrorRetros are the scheduling rows behind ErrorRetro.Count.
	ErrorRetros errorRetroRows
	Calls       []sessionCallRow
	CallsCost   float64
}

func (p *Panel) sessionPage(w http.ResponseWriter, r *http.Request) error {
	if err := p.needStore(); err != nil {
		return err
	}
	ctx, st := r.Context(), p.deps.Store
	sess, err := st.GetSession(ctx, r.PathValue("id"))
	if errors.Is(err, store.ErrNotFound) {
		return Errorf(http.StatusNotFound, "mull has no session %q: see the sessions list", r.PathValue("id"))
	}
	if err != nil {
		return err
	}
	v := sessionView{S: sess, Pager: pager(r, eventsPerPage), Types: sessionEventTypes(sess)}
	if err := v.readFilter(r); err != nil {
		return err
	}
	fails, err := st.SessionToolFailures(ctx, []string{sess.ID})
	if err != nil {
		return err
	}
	v.ToolFailures = fails[sess.ID]
	if v.Usage, err = overhead.ForSession(ctx, st, llm.NewPricing(p.deps.Config.LLM), sess.ID); err != nil {
		return err
	}
	v.AgentCostUSD = float64(v.Usage.CostNanoUSD) / 1e9
	if v.Import, err = st.SessionImport(ctx, sess.ID); err != nil {
		return err
	}
	if err := p.timeline(r, &v); err != nil {
		return err
	}
	if err := p.learnt(r, &v); err != nil {
		return err
	}
	title := "Session " + trunc(48, sess.ID)
	if sess.Title != "" {
		title = trunc(80, sess.Title)
	}
	return p.page(w, r, "session", "sessions", title, v)
}

// sessionEventTypes are the types the session has events of, for the
// timeline's filter.
func sessionEventTypes(s store.Session) []string {
	var out []string
	for t, n := range s.Counts {
		if n > 0 {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// readFilter reads the timeline's filter: only=failures, type=T, and a
// task's window from=N&to=M (seq in (N, M]).
func (v *sessionView) readFilter(r *http.Request) error {
	q := r.URL.Query()
	v.Only, v.Type = q.Get("only"), q.Get("type")
	if v.Only != "" && v.Only != "failures" {
		return Errorf(http.StatusBadRequest, "only=%q: the timeline can show only=failures, or everything without it", v.Only)
	}
	for name, dst := range map[string]*int64{"from": &v.From, "to": &v.To} {
		if s := q.Get(name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return Errorf(http.StatusBadRequest, "%s=%q: want an event number (seq), 0 or more", name, s)
			}
			*dst = n
		}
	}
	return nil
}

func (p *Panel) timeline(r *http.Request, v *sessionView) error {
	f := store.EventPage{SessionID: v.S.ID, From: v.From, To: v.To, Failures: v.Only == "failures",
		Limit: v.Pager.Limit(), Offset: v.Pager.Offset()}
	if v.Type != "" {
		f.Types = []string{v.Type}
	}
	evs, total, err := p.deps.Store.PanelEvents(r.Context(), f)
	if err != nil {
		return err
	}
	v.EventTotal = total
	for _, e := range evs[:v.Pager.Trim(len(evs))] {
		v.Events = append(v.Events, newTimelineRow(e))
	}
	return nil
}

// sessionCallRow is an LLM call as a session page lists it.
type sessionCallRow struct {
	store.LLMCall
	CostUSD  float64
	Duration string
}

func newSessionCallRow(c store.LLMCall) sessionCallRow {
	d := "—"
	if c.Outcome != store.LLMCallRunning && c.Outcome != store.LLMCallLost {
		d = (time.Duration(c.LatencyMS) * time.Millisecond).String()
	}
	return sessionCallRow{LLMCall: c, CostUSD: float64(c.CostNanoUSD) / 1e9, Duration: d}
}

// learnt fills what mull's learning did with the session: its tasks and
// their reflections, its retros, and the LLM calls of all their jobs.
func (p *Panel) learnt(r *http.Request, v *sessionView) error {
	ctx, st := r.Context(), p.deps.Store
	tasks, err := st.ListTasks(ctx, st.DB, store.TaskFilter{SessionID: v.S.ID, Limit: tasksShown + 1})
	if err != nil {
		return err
	}
	if len(tasks) > tasksShown {
		tasks, v.MoreTasks = tasks[:tasksShown], true
	}
	var jobs []int64
	for _, t := range tasks {
		row, err := p.taskRow(r, t)
		if err != nil {
			return err
		}
		v.Tasks = append(v.Tasks, row)
		jobs = append(jobs, row.jobIDs()...)
	}
	if v.Retros, err = p.retroRows(r, v.S.ID); err != nil {
		return err
	}
	for _, rr := range v.Retros {
		jobs = append(jobs, rr.JobID)
	}
	er, _, err := st.GetErrorRetro(ctx, st.DB, v.S.ID)
	if err != nil {
		return err
	}
	if v.ErrorRetros, err = p.errorRetroRows(r, v.S.ID, er.Count); err != nil {
		return err
	}
	if er.Count > 0 || len(v.ErrorRetros.Rows) > 0 {
		v.ErrorRetro = &er
	}
	calls, err := st.LLMCallsOfJobs(ctx, jobs, 200)
	if err != nil {
		return err
	}
	for _, c := range calls {
		row := newSessionCallRow(c)
		v.Calls = append(v.Calls, row)
		v.CallsCost += row.CostUSD
	}
	kinds := map[int64]string{}
	for _, c := range calls {
		kinds[c.JobID] = c.Kind
	}
	for i := range v.Retros {
		v.Retros[i].Kind = kinds[v.Retros[i].JobID]
	}
	return nil
}
