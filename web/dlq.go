package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/dlq"
)

// routesDeadLetters mounts the dlq pages: the list, one letter, retry and
// purge. They act through the dlq package, as the CLI and the admin API do.
func (p *Panel) routesDeadLetters() {
	p.get("/dlq", p.dlqList)
	p.get("/dlq/purge", p.dlqPurgePreview)
	p.get("/dlq/{id}", p.dlqShow)
	p.post("/dlq/retry", p.dlqRetry)
	p.post("/dlq/purge", p.dlqPurge)
}

// dlqPer is a page of dead letters.
const dlqPer = 25

// dlqMaxPages caps how deep /dlq pages: dlq.List cannot skip rows, so page
// N reads N pages' letters. 40 pages are the newest 1000, dlq.List's own
// default cap; older ones are for kind/since filters or `mull dlq list`.
const dlqMaxPages = 40

// dlqPreviewMax is how many letters the purge's dry run shows.
const dlqPreviewMax = 100

type dlqView struct {
	Kind, Since string
	Letters     []dlq.Letter
	Pager       Pager
	// Counts are every dead letter by kind (not only this page's).
	Counts deadView
	// Matching is how many dead letters the kind filter keeps (0 when
	// unknown: a since filter is set); Capped says the list stops at the
	// newest dlqMaxPages pages while more match.
	Matching int64
	Capped   bool
	// Cap is how many letters the list pages through at most.
	Cap int
}

// capped records whether the list stops short of the letters that match:
// more are known to match than the cap, or the last page has a next.
func (v *dlqView) capped() {
	v.Cap = dlqMaxPages * dlqPer
	if v.Since == "" {
		v.Matching = v.Counts.Total
		if v.Kind != "" {
			v.Matching = 0
			for _, k := range v.Counts.ByKind {
				if k.Kind == v.Kind {
					v.Matching = k.N
				}
			}
		}
	}
	if v.Pager.Page >= dlqMaxPages && v.Pager.HasNext {
		v.Pager.HasNext, v.Capped = false, true
	}
	if v.Matching > int64(v.Cap) {
		v.Capped = true
	}
}

// needClient refuses a dlq page on a server without a River client.
func (p *Panel) needClient() error {
	if p.deps.Client == nil {
		return Errorf(http.StatusServiceUnavailable, "this server has no job client, so it cannot read the dead letters; use `mull dlq list`")
	}
	return nil
}

func (p *Panel) dlqList(w http.ResponseWriter, r *http.Request) error {
	if err := p.needClient(); err != nil {
		return err
	}
	q := r.URL.Query()
	v := dlqView{Kind: q.Get("kind"), Since: q.Get("since"), Pager: pager(r, dlqPer)}
	if v.Pager.Page > dlqMaxPages {
		return Errorf(http.StatusBadRequest, "page %d: the panel pages through the newest %d dead letters only; narrow them by kind or since, or use `mull dlq list`",
			v.Pager.Page, dlqMaxPages*dlqPer)
	}
	f := dlq.Filter{Kind: v.Kind, Limit: v.Pager.Offset() + v.Pager.Limit()}
	if v.Since != "" {
		since, err := dlq.ParseSince(v.Since, p.deps.Now())
		if err != nil {
			return Errorf(http.StatusBadRequest, "since: %v", err)
		}
		f.Since = since
	}
	var err error
	if v.Counts, err = p.deadCounts(r.Context()); err != nil {
		return err
	}
	letters, err := dlq.List(r.Context(), p.deps.Client, f)
	if err != nil {
		return err
	}
	if off := v.Pager.Offset(); off < len(letters) {
		letters = letters[off:]
	} else {
		letters = nil
	}
	v.Letters = letters[:v.Pager.Trim(len(letters))]
	v.capped()
	return p.page(w, r, "dlq", "dlq", "Dead letters", v)
}

// dlqShowView is one job: its args, each attempt's error, and whether it
// is still a dead letter (NotDead says what it is instead).
type dlqShowView struct {
	Letter  dlq.Letter
	Args    string
	NotDead string
}

func (p *Panel) dlqShow(w http.ResponseWriter, r *http.Request) error {
	if err := p.needClient(); err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return Errorf(http.StatusBadRequest, "want a job id in /dlq/ID, got %q", r.PathValue("id"))
	}
	l, err := dlq.Get(r.Context(), p.deps.Client, id)
	v := dlqShowView{Letter: l, Args: indentJSON(l.Args)}
	switch {
	case errors.Is(err, dlq.ErrNoJob):
		return Errorf(http.StatusNotFound, "no job %d: it may have been purged", id)
	case errors.Is(err, dlq.ErrNotDead):
		v.NotDead = l.State
	case err != nil:
		return err
	}
	return p.page(w, r, "dlq_show", "dlq", fmt.Sprintf("Dead letter %d", id), v)
}

// indentJSON lays out a job's args for reading; raw when they are not JSON.
func indentJSON(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// dlqRetry retries one dead letter (id) or every one of a kind (kind),
// through dlq.Retry as `mull dlq retry` does: the job runs again and leaves
// the dead letters; one that cannot be retried says why.
func (p *Panel) dlqRetry(w http.ResponseWriter, r *http.Request) error {
	if err := p.needClient(); err != nil {
		return err
	}
	var sel dlq.Selector
	if v := r.PostForm.Get("id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return Errorf(http.StatusBadRequest, "id: want a job id, got %q", v)
		}
		sel.IDs = []int64{id}
	}
	sel.Kind = r.PostForm.Get("kind")
	res, err := dlq.Retry(r.Context(), p.deps.Client, sel, false)
	var bad *dlq.SelectorError
	if errors.As(err, &bad) {
		return Errorf(http.StatusBadRequest, "retry: %v", err)
	}
	if err != nil {
		return err
	}
	return p.done(w, r, "/dlq", retrySummary(res))
}

// retrySummary says what a retry did, naming the first refusal's reason.
func retrySummary(res []dlq.RetryResult) string {
	var done []string
	var refused []dlq.RetryResult
	for _, x := range res {
		if x.Retried {
			done = append(done, strconv.FormatInt(x.ID, 10))
		} else {
			refused = append(refused, x)
		}
	}
	var msg string
	switch len(done) {
	case 0:
		msg = "nothing retried"
	case 1:
		msg = "retried job " + done[0] + ": it runs again"
	default:
		msg = fmt.Sprintf("retried %d jobs: they run again", len(done))
	}
	if len(refused) > 0 {
		msg += fmt.Sprintf("; %d not retried (job %d: %s)", len(refused), refused[0].ID, refused[0].Reason)
	}
	return msg
}

// dlqPurgeView is the purge's dry run: what would go, and the form that
// confirms it with the same cutoff.
type dlqPurgeView struct {
	OlderThan, Kind string
	// At is the dry run's clock: the confirmed purge uses it, so it deletes
	// what was shown and no letter that died since.
	At     time.Time
	Cutoff time.Time
	// Letters are the first dlqPreviewMax of the N the purge would delete.
	Letters []dlq.Letter
	N       int
	// Asked says the form was submitted (the dry run ran).
	Asked bool
	Kinds []kindCount
	// KindsErr says why the kinds could not be counted.
	KindsErr string
}

// More is how many letters the purge would delete beyond those shown.
func (v dlqPurgeView) More() int { return v.N - len(v.Letters) }

// dlqPurgePreview shows what a purge would delete, changing nothing.
func (p *Panel) dlqPurgePreview(w http.ResponseWriter, r *http.Request) error {
	if err := p.needClient(); err != nil {
		return err
	}
	q := r.URL.Query()
	v := dlqPurgeView{OlderThan: strings.TrimSpace(q.Get("older_than")), Kind: q.Get("kind"), At: p.deps.Now().UTC()}
	if counts, err := p.deadCounts(r.Context()); err != nil {
		v.KindsErr = err.Error()
	} else {
		v.Kinds = counts.ByKind
	}
	if v.OlderThan != "" {
		d, err := dlq.ParseAge(v.OlderThan)
		if err != nil {
			return Errorf(http.StatusBadRequest, "older than: %v", err)
		}
		v.Asked, v.Cutoff = true, v.At.Add(-d)
		if v.Letters, v.N, err = dlq.PurgePreview(r.Context(), p.deps.Client, d, v.At, v.Kind, dlqPreviewMax); err != nil {
			return err
		}
	}
	return p.page(w, r, "dlq_purge", "dlq", "Purge dead letters", v)
}

// dlqPurge deletes the dead letters the dry run showed: older than
// older_than at the dry run's time (at), of kind when given.
func (p *Panel) dlqPurge(w http.ResponseWriter, r *http.Request) error {
	if err := p.needClient(); err != nil {
		return err
	}
	d, err := dlq.ParseAge(r.PostForm.Get("older_than"))
	if err != nil {
		return Errorf(http.StatusBadRequest, "older than: %v", err)
	}
	at, err := time.Parse(time.RFC3339Nano, r.PostForm.Get("at"))
	if err != nil || at.After(p.deps.Now()) {
		return Errorf(http.StatusBadRequest, "the purge form has no valid dry-run time: run the dry run again at /dlq/purge")
	}
	purged, err := dlq.Purge(r.Context(), p.deps.Client, d, at, r.PostForm.Get("kind"), false)
	if err != nil {
		return err
	}
	return p.done(w, r, "/dlq", fmt.Sprintf("purged %d dead letters", len(purged)))
}
