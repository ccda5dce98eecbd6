// Package retrosession is the retro_session job: when a primary session
// ends (or goes idle), one LLM call reads a bounded excerpt of it and its
// answer (learn/retro) is applied to the workspace's memory library in the
// transaction that completes the job.
package retrosession

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
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
var Spec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 5, Backoff: 30 * time.Minute, Timeout: 10 * time.Minute}

// SessionEnded is the ingest.Hooks.SessionEnded that enqueues a
// retro_session job, in the ingest transaction, when a primary session ends
// or goes idle; subagent sessions get none. The job is unique per end: the
// same end again enqueues nothing new, while an idle session that went on
// and ended later gets a second retro, over what came after.
func SessionEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session) error {
	return Enqueue(ctx, tx, client, s, time.Time{})
}

// Enqueue is SessionEnded with the time the retro may run (zero: now), for
// a caller that spaces a session's retros (retroerror.Hook.SessionEnded).
func Enqueue(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session, at time.Time) error {
	if !s.Primary {
		return nil
	}
	var opts *river.InsertOpts
	if !at.IsZero() {
		opts = &river.InsertOpts{ScheduledAt: at}
	}
	_, err := client.InsertTx(ctx, tx, Args{SessionID: s.ID, Through: s.LastEventAt.UTC().Format(time.RFC3339Nano)}, opts)
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
	// Scope is config memory.scope. Under global, retros write their
	// memories to the global library (the handoff, playbooks and proposal
	// stay the workspace's); under both, each retro promotes the
	// workspace's best memories to the global library (memory.Promote).
	Scope memory.Scope
	// Workspaces, when set, give each workspace's own settings at the
	// job's start (wsconfig): its scope wins over Scope, and a workspace
	// whose retro switch is off gets no retro (the job completes, logging why).
	Workspaces Workspaces
	// TempDirs are the temporary directories whose workspaces never
	// promote (/tmp always is one). Defaults to os.TempDir().
	TempDirs []string
	// NoPrecedentGate turns the precedent gate off for the retro's
	// supersedes (config reflection.precedent_gate = false). Zero: on, the
	// default: a supersede of a structured lesson needs evidence task ids
	// that pass lesson.CheckEvidence, or it is dropped (retro.DropPrecedent).
	NoPrecedentGate bool

	// beforeApply, set by tests only, runs between the model's answer and
	// the apply transaction: a test holds two retros there to apply them
	// at once.
	beforeApply func()
}

// Counts is what one applied retro did, kept on its retro_runs row.
type Counts struct {
	Added       int `json:"added"`
	Bumped      int `json:"bumped"`
	Invalidated int `json:"invalidated"`
	Rejected    int `json:"rejected"`
	// Rows: this retro recorded the rows behind its numbers (the *IDs,
	// *Items and PlaybookSlugs fields); false on retros from before.
	Rows bool `json:"rows,omitempty"`
	// BumpedIDs are the memories Bumped counts, one use each, and
	// RejectedItems the entries Rejected counts: their section, field and
	// the check's reason, never their text (retro.Refusal). Retros applied
	// before mull kept them have neither: their numbers have no rows.
	BumpedIDs     []int64         `json:"bumped_ids,omitempty"`
	RejectedItems []retro.Refusal `json:"rejected_items,omitempty"`
	// AddedIDs, InvalidatedIDs and PromotedIDs are the memories Added,
	// Invalidated and Promoted count; PlaybookSlugs the playbooks
	// Playbooks counts; DroppedItems the ids DroppedIDs counts; HeldItems
	// the quarantined texts of no memory (Quarantined counts them and the
	// added memories flagged). Absent on retros from before mull kept them.
	AddedIDs       []int64            `json:"added_ids,omitempty"`
	InvalidatedIDs []int64            `json:"invalidated_ids,omitempty"`
	PromotedIDs    []int64            `json:"promoted_ids,omitempty"`
	PlaybookSlugs  []string           `json:"playbook_slugs,omitempty"`
	DroppedItems   []retro.DroppedRow `json:"dropped_items,omitempty"`
	HeldItems      []retro.HeldRow    `json:"held_items,omitempty"`
	// RepeatsByID and SupersedesByID count what the model's ids decided
	// (bumps, invalidations) instead of mull's text checks; DroppedIDs the
	// ids it named that were not applied, by reason (retro.Drop*).
	RepeatsByID    int            `json:"repeats_by_id,omitempty"`
	SupersedesByID int            `json:"supersedes_by_id,omitempty"`
	DroppedIDs     map[string]int `json:"dropped_ids,omitempty"`
	// Redacted counts the credentials the trust gate redacted, in any
	// section; Quarantined the texts it quarantined (memories stored
	// flagged, the rest kept in the quarantine table), never served.
	Redacted    int  `json:"redacted,omitempty"`
	Quarantined int  `json:"quarantined,omitempty"`
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
	// HandoffStale: the answer's handoff was not stored, because the
	// workspace's was drawn from a later session event (this retro ran
	// late, after a newer session's).
	HandoffStale bool `json:"handoff_stale,omitempty"`
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
	if w.Workspaces != nil && !w.Workspaces.Effective(sess.Workspace).RetroOn() {
		// Completed, not cancelled: a switch an operator set on purpose is
		// not a failure, and a dead letter per session would bury real ones.
		w.Logger.Info("retro off for this workspace (its retro setting); completing without a retro", "job_id", job.ID, "kind", job.Kind,
			"session_id", sess.ID, "workspace", sess.Workspace)
		return nil
	}
	rows, err := w.Store.SessionEvents(ctx, sess.ID, maxEvents)
	if err != nil {
		return err
	}
	in, err := w.evidence(ctx, sess, rows)
	if err != nil {
		return err
	}
	imp, err := w.Store.SessionImport(ctx, sess.ID) // a cut or damaged log: the excerpt says so
	if err != nil {
		return err
	}
	incomplete := imp != nil && imp.State == store.ImportIncomplete
	text := retro.NoteIncomplete(excerpt(in, retro.CapsWithNote(w.Caps, incomplete)), incomplete)
	lib, err := w.publishedLibrary(ctx, sess.Workspace)
	if err != nil {
		return err
	}
	out, res, err := llm.CompleteJSON[retro.Output](ctx, w.LLM, llm.Call{
		Kind: job.Kind, JobID: job.ID, Workspace: sess.Workspace,
		Messages: Messages(lib, text),
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
	if w.beforeApply != nil {
		w.beforeApply()
	}
	a := answer{Output: out, truncated: truncated, sourceAt: lastEventAt(rows, sess), shown: lib.Shown}
	counts, ch, err := apply(ctx, w, job, sess, a)
	if err != nil {
		return err
	}
	// As the counts keep them: a refused text or a malformed id may hold a
	// credential, and the log is no place for it either.
	for _, r := range ch.Refusals() {
		w.Logger.Info("retro entry rejected", "job_id", job.ID, "field", r.Field, "reason", r.Reason)
	}
	for _, d := range ch.DroppedRows() {
		w.Logger.Info("retro id dropped", "job_id", job.ID, "field", d.Field, "id", d.ID, "reason", d.Reason, "detail", d.Detail)
	}
	w.Logger.Info("retro applied", "job_id", job.ID, "job_kind", job.Kind, "session_id", sess.ID, "workspace", sess.Workspace,
		"library", w.library(sess.Workspace), "added", counts.Added, "bumped", counts.Bumped, "invalidated", counts.Invalidated,
		"rejected", counts.Rejected, "repeats_by_id", counts.RepeatsByID, "supersedes_by_id", counts.SupersedesByID,
		"dropped_ids", counts.DroppedIDs, "library_ids", len(lib.Shown), "redacted", counts.Redacted, "quarantined", counts.Quarantined, "handoff", counts.Handoff, "handoff_stale", counts.HandoffStale, "playbooks", counts.Playbooks,
		"proposal", counts.Proposal, "proposal_refused", counts.ProposalRefused, "promoted", counts.Promoted, "truncated", truncated)
	return nil
}

func toEvents(rows []store.Event) []events.Event {
	out := make([]events.Event, len(rows))
	for i, r := range rows {
		out[i] = events.Event{ID: r.ID, Type: events.Type(r.Type), SessionID: r.SessionID, Workspace: r.Workspace,
			Time: r.Time, Payload: r.Payload}
	}
	return out
}
