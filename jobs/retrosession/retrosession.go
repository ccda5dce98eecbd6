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
	"os"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// Args are a retro_session job's arguments.
type Args struct {
	SessionID string `json:"session_id"`
	// Through is the time of the session's last event when it ended
	// (RFC 3339), set by the session-end hook. An idle session that a newer
	// event reopens can end again, and that end, with a later Through, gets
	// a retro of its own; the same end enqueued twice (a replay, an import
	// after a push) is one job.
	Through string `json:"through,omitempty"`
	// Requested is set by a manual run (`mull retro run`) to a fresh value
	// (the time it was asked for), so that it is a job of its own: the
	// InsertOpts are unique by args over every state, completed included,
	// and a session that already had its retro would otherwise get no new
	// job. Applying a session's retro again only bumps what it already
	// added: retro.Plan dedupes against the library.
	Requested string `json:"requested,omitempty"`
}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "retro_session" }

// InsertOpts make the job unique per session end: ending a session twice
// (a replayed session_end, an import after a push) enqueues one retro.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Spec: the llm queue; the seed's 5 attempts 30 minutes apart (config
// [jobs.retro_session] overrides), then the dead letters.
var Spec = engine.Spec{Kind: "retro_session", Queue: "llm", MaxAttempts: 5, Backoff: 30 * time.Minute, Timeout: 10 * time.Minute}

// SessionEnded is the ingest.Hooks.SessionEnded that enqueues a
// retro_session job, in the ingest transaction, when a primary session ends
// or goes idle; subagent sessions get none. The job is unique per end: the
// same end again enqueues nothing new, while an idle session that went on
// and ended later gets a second retro, over what came after.
func SessionEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session) error {
	if !s.Primary {
		return nil
	}
	_, err := client.InsertTx(ctx, tx, Args{SessionID: s.ID, Through: s.LastEventAt.UTC().Format(time.RFC3339Nano)}, nil)
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
	// Scope is config memory.scope. Under both, each retro promotes the
	// workspace's best memories to the global library (memory.Promote).
	Scope memory.Scope
	// TempDirs are the temporary directories whose workspaces never
	// promote (/tmp always is one). Defaults to os.TempDir().
	TempDirs []string
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
	Proposal bool `json:"proposal,omitempty"`
	// ProposalRefused: the answer's proposal repeats one the user rejected
	// before, so it was not stored.
	ProposalRefused bool `json:"proposal_refused,omitempty"`
	Truncated       bool `json:"truncated,omitempty"`
	// Promoted counts the memories copied to the global library.
	Promoted int `json:"promoted,omitempty"`
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
	counts, err := apply(ctx, w, job, sess, ch, truncated, now)
	if err != nil {
		return err
	}
	for _, r := range ch.Rejected {
		w.Logger.Info("retro entry rejected", "job_id", job.ID, "kind", r.Kind, "error", r.Err)
	}
	w.Logger.Info("retro applied", "job_id", job.ID, "job_kind", job.Kind, "session_id", sess.ID, "workspace", sess.Workspace,
		"added", counts.Added, "bumped", counts.Bumped, "invalidated", counts.Invalidated, "rejected", counts.Rejected,
		"handoff", counts.Handoff, "playbooks", counts.Playbooks, "proposal", counts.Proposal, "proposal_refused", counts.ProposalRefused, "promoted", counts.Promoted, "truncated", truncated)
	return nil
}

// apply writes the changes, the promotions, the applied marker and the
// job's completion in one transaction.
func apply[T river.JobArgs](ctx context.Context, w *Worker, job *river.Job[T], sess store.Session, ch retro.Changes, truncated bool, now time.Time) (Counts, error) {
	st := w.Store
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
			rejected, err := st.ListProposals(ctx, tx, sess.Workspace, store.ProposalRejected)
			if err != nil {
				return err
			}
			summaries := make([]string, len(rejected))
			for i, r := range rejected {
				summaries[i] = r.Summary
			}
			if retro.Refused(*p, summaries) {
				c.ProposalRefused = true
			} else {
				ok, err := st.AddPendingProposal(ctx, tx, store.Proposal{ID: fmt.Sprintf("retro-%d", job.ID),
					Workspace: sess.Workspace, Summary: p.Summary, Detail: p.Detail, SessionID: sess.ID, JobID: job.ID, CreatedAt: now})
				if err != nil {
					return err
				}
				c.Proposal = ok
			}
		}
		var err error
		if c.Promoted, err = w.promote(ctx, tx, sess.Workspace, now); err != nil {
			return err
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

// promote copies the workspace's best memories to the global library under
// scope both, by memory.Promote's rules (at most 3, score at least 10, no
// external src, none the global library has already), unless the workspace
// lies in a temporary directory. It runs after the retro's own writes, so
// what this session taught can go too, and returns how many it copied.
func (w *Worker) promote(ctx context.Context, tx *sql.Tx, workspace string, now time.Time) (int, error) {
	if !w.Scope.Promotes() || workspace == "" || memory.TemporaryWorkspace(workspace, w.tempDirs()...) {
		return 0, nil
	}
	local, err := w.Store.ListMemories(ctx, tx, store.MemoryFilter{Workspaces: []string{workspace}})
	if err != nil {
		return 0, err
	}
	global, err := w.Store.ListMemories(ctx, tx, store.MemoryFilter{Workspaces: []string{""}})
	if err != nil {
		return 0, err
	}
	copies := memory.Promote(memories.FromRows(local), memories.FromRows(global), now)
	for _, m := range copies {
		if _, err := w.Store.InsertMemory(ctx, tx, memories.ToRow(m)); err != nil {
			return 0, fmt.Errorf("promote to global: %w", err)
		}
	}
	return len(copies), nil
}

func (w *Worker) tempDirs() []string {
	if w.TempDirs == nil {
		return []string{os.TempDir()}
	}
	return w.TempDirs
}

func toEvents(rows []store.Event) []events.Event {
	out := make([]events.Event, len(rows))
	for i, r := range rows {
		out[i] = events.Event{ID: r.ID, Type: events.Type(r.Type), SessionID: r.SessionID, Workspace: r.Workspace,
			Time: r.Time, Payload: r.Payload}
	}
	return out
}
