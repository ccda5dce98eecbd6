package retrosession

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// answer is the model's answer and what the job knows about it.
type answer struct {
	retro.Output
	truncated bool
	// sourceAt is the time of the last session event the model was shown.
	sourceAt time.Time
	// shown are the ids of the library the prompt showed: the only ones
	// the answer may name.
	shown map[int64]memory.Kind
}

// Messages are a retro's prompt (retro.Messages) as llm messages.
func Messages(lib retro.Library, excerpt string) []llm.Message {
	var out []llm.Message
	for _, m := range retro.Messages(lib, excerpt) {
		out = append(out, llm.Message{Role: m.Role, Content: m.Content})
	}
	return out
}

// publishedLibrary is the library a retro of workspace shows the model: the
// memories of the library it writes (w.library) as the workspace's digest
// last published them, at its watermark, so that it stays byte-identical
// (and served by DeepSeek's prefix cache) until the digest is published
// again. A workspace whose digest was never read has an empty one.
func (w *Worker) publishedLibrary(ctx context.Context, workspace string) (retro.Library, error) {
	st, ok, err := w.Store.GetDigestState(ctx, w.Store.DB, workspace)
	if err != nil || !ok {
		return retro.BuildLibrary(nil, retro.Published{}, 0), err
	}
	rows, err := w.Store.ListMemories(ctx, w.Store.DB, store.MemoryFilter{Workspaces: []string{w.library(workspace)},
		All: true, UpTo: st.WatermarkID, Oldest: true})
	if err != nil {
		return retro.Library{}, err
	}
	return retro.BuildLibrary(memories.FromRows(rows), retro.Published{Watermark: st.WatermarkID, At: st.PublishedAt}, 0), nil
}

// lastEventAt is the time of the newest event read, or the session's last
// event time when none was.
func lastEventAt(rows []store.Event, sess store.Session) time.Time {
	at := sess.LastEventAt
	if len(rows) > 0 {
		at = rows[0].Time
	}
	for _, r := range rows {
		if r.Time.After(at) {
			at = r.Time
		}
	}
	return at
}

// library is the memory library a retro of workspace writes: the
// workspace's own, or under scope global the global one ("") that the
// digest and search read.
func (w *Worker) library(workspace string) string {
	if w.scope(workspace).WritesGlobal() {
		return ""
	}
	return workspace
}

// apply plans the answer against the library and writes the changes, the
// promotions, the applied marker and the job's completion in one
// transaction. The library is locked and read inside it, so two retros of
// one library (a retro_error and the retro_session of one session, say)
// plan one after the other and never add the same memory twice.
func apply[T river.JobArgs](ctx context.Context, w *Worker, job *river.Job[T], sess store.Session, a answer) (Counts, retro.Changes, error) {
	st := w.Store
	var c Counts
	var ch retro.Changes
	err := st.InTx(ctx, func(tx *sql.Tx) error {
		lib := w.library(sess.Workspace)
		if err := st.LockLibrary(ctx, tx, lib); err != nil {
			return err
		}
		// Read the clock once the lock is held: a memory the retro before
		// this one wrote must not look recorded in the future.
		now := st.Now()
		existing, err := st.ListMemories(ctx, tx, store.MemoryFilter{Workspaces: []string{lib}, All: true, Oldest: true})
		if err != nil {
			return err
		}
		lib0 := memories.FromRows(existing)
		ch = retro.PlanShown(a.Output, lib0, a.shown, retro.Source{Workspace: lib, SessionID: sess.ID, JobID: job.ID}, now)
		if !w.NoPrecedentGate {
			if ch, err = gatePrecedent(ctx, st, tx, ch, lib0); err != nil {
				return err
			}
		}
		c = Counts{Rows: true, Rejected: len(ch.Rejected), RejectedItems: ch.Refusals(), Redacted: ch.Redacted, Quarantined: ch.Quarantined, Truncated: a.truncated,
			RepeatsByID: ch.RepeatsByID, SupersedesByID: ch.SupersedesByID, DroppedIDs: ch.DroppedCounts(),
			DroppedItems: ch.DroppedRows(), HeldItems: ch.HeldRows()}
		use := store.MemoryUse{Cause: store.UseRetro, Workspace: sess.Workspace, JobID: job.ID, SessionID: sess.ID, At: now}
		if err := writeMemories(ctx, st, tx, ch, use, &c); err != nil {
			return err
		}
		if err := hold(ctx, st, tx, job.ID, sess, ch.Held, now); err != nil {
			return err
		}
		if err := writeWorkspace(ctx, st, tx, job.ID, sess, ch, a.sourceAt, now, &c); err != nil {
			return err
		}
		if c.PromotedIDs, err = w.promote(ctx, tx, sess.Workspace, now); err != nil {
			return err
		}
		c.Promoted = len(c.PromotedIDs)
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
		return Counts{}, retro.Changes{}, nil
	}
	if err != nil {
		return c, ch, fmt.Errorf("apply retro of session %s: %w", sess.ID, err)
	}
	return c, ch, nil
}

var errAlreadyApplied = errors.New("retro already applied")

// gatePrecedent is retro.GatePrecedent with the evidence tasks read in tx:
// a supersede of a structured lesson needs evidence that it did not work.
func gatePrecedent(ctx context.Context, st *store.Store, tx *sql.Tx, ch retro.Changes, existing []memory.Memory) (retro.Changes, error) {
	tasks := map[string]lesson.TaskOutcome{}
	for _, id := range retro.EvidenceIDs(ch) {
		t, err := st.GetTask(ctx, tx, strings.TrimSpace(id))
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return ch, err
		}
		tasks[strings.TrimSpace(id)] = lesson.TaskOutcome{ID: t.ID, Status: lesson.TaskStatus(t.Status), Closed: !t.ClosedAt.IsZero(),
			EnvironmentIDs: t.EnvironmentIDs}
	}
	return retro.GatePrecedent(ch, existing, func(id string) (lesson.TaskOutcome, bool) {
		t, ok := tasks[id]
		return t, ok
	}), nil
}

// writeMemories adds, bumps (each bump logged as use) and invalidates the
// library's memories as planned, at use.At, linking each invalidated
// memory to its stored replacement.
func writeMemories(ctx context.Context, st *store.Store, tx *sql.Tx, ch retro.Changes, use store.MemoryUse, c *Counts) error {
	now := use.At
	ids := make([]int64, len(ch.Add))
	for i, m := range ch.Add {
		id, err := st.InsertMemory(ctx, tx, memories.ToRow(m))
		if err != nil {
			return err
		}
		ids[i] = id
	}
	c.Added, c.AddedIDs = len(ids), ids
	if err := st.BumpUses(ctx, tx, use, ch.Bump...); err != nil {
		return err
	}
	c.Bumped, c.BumpedIDs = len(ch.Bump), ch.Bump
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
			c.InvalidatedIDs = append(c.InvalidatedIDs, inv.ID)
		}
	}
	return nil
}

// hold keeps the texts the trust gate quarantined that have no flagged row
// of their own (handoff, playbook, proposal, supersede target) in the
// quarantine table of the session's workspace: kept for review, never
// served.
func hold(ctx context.Context, st *store.Store, tx *sql.Tx, jobID int64, sess store.Session, held []retro.Held, now time.Time) error {
	for _, h := range held {
		if err := st.InsertQuarantined(ctx, tx, store.Quarantined{Workspace: sess.Workspace, Kind: h.Kind, Text: h.Text,
			Reason: h.Reason, SessionID: sess.ID, JobID: jobID, RecordedAt: now}); err != nil {
			return err
		}
	}
	return nil
}

// writeWorkspace writes what belongs to the session's workspace whatever
// the scope: the handoff (unless the stored one was drawn from a later
// session event than sourceAt), the playbooks and the proposal.
func writeWorkspace(ctx context.Context, st *store.Store, tx *sql.Tx, jobID int64, sess store.Session, ch retro.Changes,
	sourceAt, now time.Time, c *Counts) error {
	if ch.Handoff != "" {
		ok, err := st.PutNewerHandoff(ctx, tx, store.Handoff{Workspace: sess.Workspace, Text: ch.Handoff,
			SessionID: sess.ID, JobID: jobID, RecordedAt: now, SourceAt: sourceAt})
		if err != nil {
			return err
		}
		c.Handoff, c.HandoffStale = ok, !ok
	}
	for _, p := range ch.Playbooks {
		if err := st.PutPlaybook(ctx, tx, store.Playbook{Workspace: sess.Workspace, Slug: p.Slug, Steps: p.Steps,
			SessionID: sess.ID, JobID: jobID, UpdatedAt: now}); err != nil {
			return err
		}
	}
	c.Playbooks = len(ch.Playbooks)
	for _, p := range ch.Playbooks {
		c.PlaybookSlugs = append(c.PlaybookSlugs, p.Slug)
	}
	if ch.Proposal == nil {
		return nil
	}
	return propose(ctx, st, tx, jobID, sess, *ch.Proposal, now, c)
}

// propose stores the answer's proposal as the workspace's pending one,
// unless the user rejected the same before or another is pending.
func propose(ctx context.Context, st *store.Store, tx *sql.Tx, jobID int64, sess store.Session, p retro.Proposal, now time.Time, c *Counts) error {
	rejected, err := st.ListProposals(ctx, tx, sess.Workspace, store.ProposalRejected)
	if err != nil {
		return err
	}
	summaries := make([]string, len(rejected))
	for i, r := range rejected {
		summaries[i] = r.Summary
	}
	if retro.Refused(p, summaries) {
		c.ProposalRefused = true
		return nil
	}
	c.Proposal, err = st.AddPendingProposal(ctx, tx, store.Proposal{ID: fmt.Sprintf("retro-%d", jobID),
		Workspace: sess.Workspace, Summary: p.Summary, Detail: p.Detail, SessionID: sess.ID, JobID: jobID, CreatedAt: now})
	return err
}

// promote copies the workspace's best memories to the global library under
// scope both, by memory.Promote's rules (at most 3, score at least 10, no
// external src, none the global library has already), unless the workspace
// lies in a temporary directory. It runs after the retro's own writes, so
// what this session taught can go too, and returns the copies' ids. A
// global copy that was invalidated is never made again.
func (w *Worker) promote(ctx context.Context, tx *sql.Tx, workspace string, now time.Time) ([]int64, error) {
	if !w.scope(workspace).Promotes() || workspace == "" || memory.TemporaryWorkspace(workspace, w.tempDirs()...) {
		return nil, nil
	}
	// The global library's lock comes after the workspace's, always: two
	// workspaces promoting at once take turns and copy nothing twice.
	if err := w.Store.LockLibrary(ctx, tx, ""); err != nil {
		return nil, err
	}
	local, err := w.Store.ListMemories(ctx, tx, store.MemoryFilter{Workspaces: []string{workspace}})
	if err != nil {
		return nil, err
	}
	// Every global row, forgotten ones too: a copy someone invalidated
	// is not promoted again.
	global, err := w.Store.ListMemories(ctx, tx, store.MemoryFilter{Workspaces: []string{""}, All: true})
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, m := range memories.Gated(memory.Promote(memories.FromRows(local), memories.FromRows(global), now)) {
		id, err := w.Store.InsertMemory(ctx, tx, memories.ToRow(m))
		if err != nil {
			return nil, fmt.Errorf("promote to global: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (w *Worker) tempDirs() []string {
	if w.TempDirs == nil {
		return []string{os.TempDir()}
	}
	return w.TempDirs
}
