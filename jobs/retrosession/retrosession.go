// Package retrosession is the retro_session job: when a primary session
// ends (or goes idle), one LLM call reads a bounded excerpt of it and its
// answer (learn/retro) is applied to the workspace's memory library in the
// transaction that completes the job.
package retrosession

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// Args are a retro_session job's arguments.
type Args struct {
	SessionID string `json:"session_id"`
}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "retro_session" }

// InsertOpts make the job unique per session: ending a session twice (a
// replayed session_end, an import after a push) enqueues one retro.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Spec: the llm queue; the seed's 5 attempts 30 minutes apart (config
// [jobs.retro_session] overrides), then the dead letters.
var Spec = engine.Spec{Kind: "retro_session", Queue: "llm", MaxAttempts: 5, Backoff: 30 * time.Minute, Timeout: 10 * time.Minute}

// SessionEnded is the ingest.Hooks.SessionEnded that enqueues a
// retro_session job, in the ingest transaction, when a primary session ends
// or goes idle; subagent sessions get none. The job is unique per session:
// ending it again enqueues nothing new.
func SessionEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session) error {
	if !s.Primary {
		return nil
	}
	_, err := client.InsertTx(ctx, tx, Args{SessionID: s.ID}, nil)
	return err
}

// maxEvents is how many of the session's last events are read; the excerpt
// bounds what the model sees.
const maxEvents = 1000

// Worker works retro_session jobs.
type Worker struct {
	river.WorkerDefaults[Args]
	Store  *store.Store
	LLM    *llm.Client
	Logger *slog.Logger
	// Caps bound the excerpt; zero fields take retro.DefaultCaps.
	Caps retro.Caps
}

// Counts is what one applied retro did, kept on its retro_runs row.
type Counts struct {
	Added       int  `json:"added"`
	Bumped      int  `json:"bumped"`
	Invalidated int  `json:"invalidated"`
	Rejected    int  `json:"rejected"`
	Redacted    int  `json:"redacted,omitempty"`
	Handoff     bool `json:"handoff"`
	Playbooks   int  `json:"playbooks,omitempty"`
	// Proposal: a proposal was stored (none is while another is pending).
	Proposal  bool `json:"proposal,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
}

// Work asks the model about the session and applies its answer with the
// job's completion. A job that already applied (killed after its commit,
// before River recorded it) only completes.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	return Run(ctx, w, job, job.Args.SessionID, retro.BuildExcerpt)
}

// Excerpt renders a session's evidence for the model: retro.BuildExcerpt
// (retro_session) or retro.ErrorFocus (retro_error).
type Excerpt func(in retro.Input, caps retro.Caps) string

// Run is the retro pipeline shared by the retro jobs: read the session's
// last events, render them with excerpt, ask the model, and apply its answer
// in the transaction that completes job. w gives the store, the LLM client,
// the logger and the caps; its River defaults are not used. A job that
// already applied only completes.
func Run[T river.JobArgs](ctx context.Context, w *Worker, job *river.Job[T], sessionID string, excerpt Excerpt) error {
	if _, done, err := w.Store.GetRetroRun(ctx, w.Store.DB, job.ID); err != nil {
		return err
	} else if done {
		w.Logger.Info("retro already applied; completing", "job_id", job.ID, "kind", job.Kind, "session_id", sessionID)
		return nil
	}
	sess, err := w.Store.GetSession(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	rows, err := w.Store.SessionEvents(ctx, sess.ID, maxEvents)
	if err != nil {
		return err
	}
	text := excerpt(retro.FromEvents(toEvents(rows)), w.Caps)
	out, res, err := llm.CompleteJSON[retro.Output](ctx, w.LLM, llm.Call{
		Kind: job.Kind, JobID: job.ID, Workspace: sess.Workspace,
		Messages: []llm.Message{llm.System(retro.Prompt), llm.User(text)},
	})
	truncated := false
	if e := (*llm.Error)(nil); errors.As(err, &e) && e.Reason == "truncated" {
		if o, perr := retro.ParseTruncated(res.Content); perr == nil {
			out, err, truncated = o, nil, true
			w.Logger.Info("retro output truncated; applying its additive sections", "job_id", job.ID, "kind", job.Kind, "session_id", sess.ID)
		}
	}
	if err != nil {
		return llm.JobResult(ctx, w.Logger, job.JobRow, err)
	}
	existing, err := w.Store.ListMemories(ctx, w.Store.DB, store.MemoryFilter{Workspaces: []string{sess.Workspace}, All: true, Oldest: true})
	if err != nil {
		return err
	}
	now := w.Store.Now()
	ch := retro.Plan(out, memories.FromRows(existing), retro.Source{Workspace: sess.Workspace, SessionID: sess.ID, JobID: job.ID}, now)
	counts, err := apply(ctx, w.Store, job, sess, ch, truncated, now)
	if err != nil {
		return err
	}
	for _, r := range ch.Rejected {
		w.Logger.Info("retro entry rejected", "job_id", job.ID, "kind", r.Kind, "error", r.Err)
	}
	w.Logger.Info("retro applied", "job_id", job.ID, "job_kind", job.Kind, "session_id", sess.ID, "workspace", sess.Workspace,
		"added", counts.Added, "bumped", counts.Bumped, "invalidated", counts.Invalidated, "rejected", counts.Rejected,
		"handoff", counts.Handoff, "playbooks", counts.Playbooks, "proposal", counts.Proposal, "truncated", truncated)
	return nil
}

// apply writes the changes, the applied marker and the job's completion in
// one transaction.
func apply[T river.JobArgs](ctx context.Context, st *store.Store, job *river.Job[T], sess store.Session, ch retro.Changes, truncated bool, now time.Time) (Counts, error) {
	var c Counts
	err := st.InTx(ctx, func(tx *sql.Tx) error {
		c = Counts{Rejected: len(ch.Rejected), Redacted: ch.Redacted, Truncated: truncated}
		ids := make([]int64, len(ch.Add))
		for i, m := range ch.Add {
			id, err := st.InsertMemory(ctx, tx, memories.ToRow(m))
			if err != nil {
				return err
			}
			ids[i] = id
		}
		c.Added = len(ids)
		if err := st.BumpUses(ctx, tx, 1, ch.Bump...); err != nil {
			return err
		}
		c.Bumped = len(ch.Bump)
		for _, inv := range ch.Invalidate {
			var by int64
			if inv.By >= 0 && inv.By < len(ids) {
				by = ids[inv.By]
			}
			ok, err := st.InvalidateMemory(ctx, tx, inv.ID, now, inv.Reason, by)
			if err != nil {
				return err
			}
			if ok {
				c.Invalidated++
			}
		}
		if ch.Handoff != "" {
			if err := st.PutHandoff(ctx, tx, store.Handoff{Workspace: sess.Workspace, Text: ch.Handoff,
				SessionID: sess.ID, JobID: job.ID, RecordedAt: now}); err != nil {
				return err
			}
			c.Handoff = true
		}
		for _, p := range ch.Playbooks {
			if err := st.PutPlaybook(ctx, tx, store.Playbook{Workspace: sess.Workspace, Slug: p.Slug, Steps: p.Steps,
				SessionID: sess.ID, JobID: job.ID, UpdatedAt: now}); err != nil {
				return err
			}
		}
		c.Playbooks = len(ch.Playbooks)
		if p := ch.Proposal; p != nil {
			ok, err := st.AddPendingProposal(ctx, tx, store.Proposal{ID: fmt.Sprintf("retro-%d", job.ID),
				Workspace: sess.Workspace, Summary: p.Summary, Detail: p.Detail, SessionID: sess.ID, JobID: job.ID, CreatedAt: now})
			if err != nil {
				return err
			}
			c.Proposal = ok
		}
		b, _ := json.Marshal(c) // plain struct
		first, err := st.InsertRetroRun(ctx, tx, store.RetroRun{JobID: job.ID, SessionID: sess.ID,
			Workspace: sess.Workspace, AppliedAt: now, Counts: string(b)})
		if err != nil {
			return err
		}
		if !first {
			return errAlreadyApplied
		}
		_, err = river.JobCompleteTx[riverdriver.Driver[*sql.Tx]](ctx, tx, job)
		return err
	})
	if errors.Is(err, errAlreadyApplied) {
		// Another run applied it between our check and this transaction:
		// everything above rolled back; the job is done.
		return Counts{}, nil
	}
	if err != nil {
		return c, fmt.Errorf("apply retro of session %s: %w", sess.ID, err)
	}
	return c, nil
}

var errAlreadyApplied = errors.New("retro already applied")

func toEvents(rows []store.Event) []events.Event {
	out := make([]events.Event, len(rows))
	for i, r := range rows {
		out[i] = events.Event{ID: r.ID, Type: events.Type(r.Type), SessionID: r.SessionID, Workspace: r.Workspace,
			Time: r.Time, Payload: r.Payload}
	}
	return out
}
