package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/dlq"
	"github.com/mullhq/mull/store"
)

// routesLLM mounts mull's LLM call records: the list every spend number of
// the overview links to, and one call with the prompt and answer it kept.
func (p *Panel) routesLLM() {
	p.get("/llm", p.llmCalls)
	p.get("/llm/{id}", p.llmCall)
}

// llmQuery is the /llm filter form's values, as the URL carries them.
type llmQuery struct {
	Kind, Workspace, Day, Since, Until, Job string
	// Run is a benchmark run: the calls of its jobs (what /bench sums).
	Run string
}

type llmView struct {
	Q     llmQuery
	Calls []callRow
	// Sum totals every call the filter matches (not only this page).
	Sum store.LLMUsageRow
	// SumUSD is Sum's cost in dollars.
	SumUSD float64
	Pager  Pager
	// Filtered says a filter is set (the empty state differs).
	Filtered bool
}

// llmFilter reads the query: kind, workspace, job, bench run, and a UTC day
// (YYYY-MM-DD) or since/until (RFC 3339, or a duration back from now).
func (p *Panel) llmFilter(r *http.Request) (llmQuery, store.LLMCallFilter, error) {
	q := r.URL.Query()
	lq := llmQuery{Kind: q.Get("kind"), Workspace: q.Get("workspace"), Day: q.Get("day"),
		Since: q.Get("since"), Until: q.Get("until"), Job: q.Get("job"), Run: strings.TrimSpace(q.Get("run"))}
	f := store.LLMCallFilter{Kind: lq.Kind, Workspace: lq.Workspace, BenchRunID: lq.Run}
	if lq.Job != "" {
		id, err := strconv.ParseInt(lq.Job, 10, 64)
		if err != nil || id < 1 {
			return lq, f, Errorf(http.StatusBadRequest, "job: want a job id, got %q", lq.Job)
		}
		f.JobID = id
	}
	if lq.Day != "" {
		d, err := time.Parse(time.DateOnly, lq.Day)
		if err != nil {
			return lq, f, Errorf(http.StatusBadRequest, "day: want a UTC day such as 2026-11-29, got %q", lq.Day)
		}
		f.Since, f.Until = d, d.AddDate(0, 0, 1)
	}
	for _, b := range []struct {
		name, v string
		to      *time.Time
	}{{"since", lq.Since, &f.Since}, {"until", lq.Until, &f.Until}} {
		if b.v == "" {
			continue
		}
		t, err := dlq.ParseSince(b.v, p.deps.Now())
		if err != nil {
			return lq, f, Errorf(http.StatusBadRequest, "%s: %v", b.name, err)
		}
		*b.to = t
	}
	return lq, f, nil
}

func (p *Panel) llmCalls(w http.ResponseWriter, r *http.Request) error {
	lq, f, err := p.llmFilter(r)
	if err != nil {
		return err
	}
	pg := pager(r, 50)
	v := llmView{Q: lq, Pager: pg, Filtered: lq != llmQuery{}}
	sums, err := p.deps.Store.SumLLMCalls(r.Context(), "workspace", f)
	if err != nil {
		return err
	}
	for _, s := range sums {
		v.Sum.Calls += s.Calls
		v.Sum.Failed += s.Failed
		v.Sum.PromptTokens += s.PromptTokens
		v.Sum.CompletionTokens += s.CompletionTokens
		v.Sum.CacheHitTokens += s.CacheHitTokens
		v.Sum.CostNanoUSD += s.CostNanoUSD
	}
	v.SumUSD = budget.USD(v.Sum.CostNanoUSD)
	f.Limit, f.Offset = pg.Limit(), pg.Offset()
	calls, err := p.deps.Store.LLMCallPage(r.Context(), f)
	if err != nil {
		return err
	}
	for _, c := range calls[:v.Pager.Trim(len(calls))] {
		v.Calls = append(v.Calls, callRow{c})
	}
	return p.page(w, r, "overview_llm", "overview", "LLM calls", v)
}

// llmCallView is one call: its record and the request's messages and the
// model's answer it kept.
type llmCallView struct {
	Call callRow
	// KeepPrompts is llm.keep_prompts, to say why no messages or answer
	// show.
	KeepPrompts time.Duration
}

func (p *Panel) llmCall(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	c, err := p.deps.Store.GetLLMCall(r.Context(), id)
	if errors.Is(err, store.ErrNoLLMCall) {
		return Errorf(http.StatusNotFound, "no LLM call %q: it may never have existed; the list at /llm has every call mull recorded", id)
	}
	if err != nil {
		return err
	}
	return p.page(w, r, "overview_llmcall", "overview", "LLM call", llmCallView{Call: callRow{c}, KeepPrompts: p.deps.Config.LLM.KeepPromptsFor()})
}

// callRow is a call record as the templates show it.
type callRow struct{ store.LLMCall }

// USD is the call's cost in dollars.
func (c callRow) USD() float64 { return budget.USD(c.CostNanoUSD) }

// Badge is the badge class of the call's outcome.
func (c callRow) Badge() string {
	switch outcome := c.Outcome; {
	case outcome == "ok":
		return "ok"
	case outcome == store.LLMCallRunning:
		return ""
	case strings.HasPrefix(outcome, "retry"), outcome == "budget", outcome == "pause":
		return "warn"
	}
	return "bad"
}
