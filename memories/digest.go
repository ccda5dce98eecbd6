package memories

import (
	"context"
	"database/sql"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/memory/digest"
	"github.com/mullhq/mull/store"
)

// Digest is the memory section a workspace's DSH sessions inject.
type Digest struct {
	Text string `json:"text"`
	// ETag is digest.ETag(Text), quoted.
	ETag string `json:"etag"`
	// Dropped names the sections left out for room.
	Dropped []string `json:"dropped"`
	// Watermark is the last memory id the digest took in: GET /v1/notices
	// serves the live ones after it.
	Watermark   int64     `json:"watermark"`
	PublishedAt time.Time `json:"published_at"`
}

// Digest returns a workspace's published digest, publishing a new one first
// when a batch of changes is due: digest.watermark_items new live memories
// (an invalidation counts as one) since the last, or the oldest new one
// older than digest.watermark_age. Between batches the text, and so DSH's
// cached prompt prefix, stays byte-identical. The first call publishes.
//
// A new handoff, a playbook written, or a proposal made or decided is due
// at once, with no batch: a retro writes them at a session's end for the
// very next session. That publication takes in the memories the same retro
// wrote too.
//
// The watermark is the largest memory id at publication, kept per digest
// key in digest_state with the text and its ETag, so a read costs three
// small queries and no render. Every memory writer (retros, remember,
// forget, a rejection's lesson, consolidation) holds the library's lock
// while it writes, and a publication takes it shared first, so it renders
// after writers in flight commit and what they stamped is in it.
func (s *Service) Digest(ctx context.Context, workspace string) (Digest, error) {
	key, libs := s.digestKey(workspace), s.libraries(workspace)
	st, ok, err := s.store.GetDigestState(ctx, s.store.DB, key)
	if err != nil {
		return Digest{}, err
	}
	if ok && st.Scope == s.stateTag(workspace) {
		due, err := s.due(ctx, workspace, libs, st)
		if err != nil || !due {
			return fromState(st), err
		}
	}
	return s.publish(ctx, key, workspace)
}

// due reports whether the published digest st must be replaced: a batch of
// memory changes is complete, or the sections fixedSections reads for
// workspace changed since st was published.
//
// The two kinds of change batch apart. Lesson changes (a new lesson,
// directive or failure, or one leaving force) complete a batch at
// lessons.commit_every (the seed's commitEvery, 8); every other memory, new
// or invalidated, at digest.watermark_items (5). Neither counts toward the
// other, so seven new lessons and four new facts publish nothing, and the
// eighth lesson or the fifth fact does. digest.watermark_age applies to the
// oldest unpublished new memory of either kind.
//
// With a ledger (WithLedger), a negative ledger fact recorded or leaving
// force (resolved, superseded, stale) counts as a lesson change, and
// digest.watermark_age applies to the oldest such change too: a new fact
// changes the prompt, and so DSH's prompt cache, as a new lesson does.
func (s *Service) due(ctx context.Context, workspace string, libs []string, st store.DigestState) (bool, error) {
	ch, err := s.store.MemoryChangesSince(ctx, s.store.DB, libs, st.WatermarkID, st.PublishedAt)
	if err != nil {
		return false, err
	}
	facts, err := s.factChanges(ctx, workspace, st.PublishedAt)
	if err != nil {
		return false, err
	}
	lessons := ch.Lessons + ch.LessonsInvalidated
	if ch.New+ch.Invalidated-lessons >= s.digest.WatermarkItems || lessons+facts.Count >= s.lessons.CommitEvery {
		return true, nil
	}
	if ch.New > 0 && s.store.Now().Sub(ch.Oldest) >= s.digest.WatermarkAge.D() {
		return true, nil
	}
	if facts.Count > 0 && s.store.Now().Sub(facts.Oldest) >= s.digest.WatermarkAge.D() {
		return true, nil
	}
	return s.store.DigestSectionsChangedSince(ctx, s.store.DB, fixedWorkspaces(workspace), st.PublishedAt)
}

// fixedWorkspaces are the workspaces whose handoff, proposals and
// playbooks fixedSections reads: the requesting one, if any.
func fixedWorkspaces(workspace string) []string {
	if workspace == "" {
		return nil
	}
	return []string{workspace}
}

// publish renders the digest from everything live up to the newest memory
// and stores it as the published one, in one transaction.
func (s *Service) publish(ctx context.Context, key, workspace string) (Digest, error) {
	var st store.DigestState
	// The ledger's facts are read before the transaction (on SQLite it
	// holds the one connection); a fact recorded between this read and
	// the publication time below is a change the next due counts only if
	// stamped after it, a window of one query.
	facts, err := s.digestFacts(ctx, workspace, time.Time{})
	if err != nil {
		return Digest{}, err
	}
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		// Wait for writers of these libraries in flight (a retro applying
		// its memories and handoff): rendering before they commit, with a
		// publication time after their stamps, would leave what they wrote
		// out until the next publication. Workspace first, then global, the
		// order writers take them.
		libs := s.libraries(workspace)
		for _, lib := range libs {
			if err := s.store.LockLibraryShared(ctx, tx, lib); err != nil {
				return err
			}
		}
		wm, err := s.store.MaxMemoryID(ctx, tx)
		if err != nil {
			return err
		}
		now := s.store.Now()
		out, err := s.render(ctx, tx, workspace, "", wm, now, facts)
		if err != nil {
			return err
		}
		st = store.DigestState{Workspace: key, Scope: s.stateTag(workspace), WatermarkID: wm, PublishedAt: now,
			Text: out.Text, ETag: out.ETag, Dropped: out.Dropped, LessonIDs: out.Lessons}
		return s.store.PutDigestState(ctx, tx, st)
	})
	return fromState(st), err
}

// render renders the digest of workspace, for session ("" none), taking
// in the memories up to watermark, at now: the libraries' live memories,
// the lessons in force for session as of now, and the workspace's handoff,
// proposal and playbooks.
//
// facts are the ledger's constraints to show (digestFacts, read before
// any transaction).
func (s *Service) render(ctx context.Context, q Querier, workspace, session string, wm int64, now time.Time, facts []ledger.Fact) (digest.Output, error) {
	libs := s.libraries(workspace)
	in := digest.Input{Now: now}
	var err error
	if in.Memories, err = s.live(ctx, q, libs[:1], wm); err != nil {
		return digest.Output{}, err
	}
	if len(libs) > 1 {
		if in.Global, err = s.live(ctx, q, libs[1:], wm); err != nil {
			return digest.Output{}, err
		}
	}
	if in.Lessons, err = s.digestLessons(ctx, q, workspace, session, wm, now); err != nil {
		return digest.Output{}, err
	}
	in.Lessons.Facts = facts
	if err := s.fixedSections(ctx, q, workspace, &in); err != nil {
		return digest.Output{}, err
	}
	return digest.Render(in, s.optsFor(workspace)), nil
}

func (s *Service) live(ctx context.Context, tx Querier, libs []string, upTo int64) ([]memory.Memory, error) {
	if upTo == 0 {
		return nil, nil
	}
	rows, err := s.store.ListMemories(ctx, tx, store.MemoryFilter{Workspaces: libs, UpTo: upTo, Oldest: true})
	return FromRows(rows), err
}

// digestKey is the digest_state row a workspace is served from: its own,
// under every scope. Under scope global the memory sections are the same
// for all, but the handoff, proposal and playbooks are the workspace's, so
// one shared row would serve one workspace's handoff to the others.
func (s *Service) digestKey(workspace string) string {
	return workspace
}

func fromState(st store.DigestState) Digest {
	d := Digest{Text: st.Text, ETag: st.ETag, Dropped: st.Dropped, Watermark: st.WatermarkID, PublishedAt: st.PublishedAt}
	if d.Dropped == nil {
		d.Dropped = []string{}
	}
	return d
}

// Notice is a memory written since the digest was published, in short.
type Notice struct {
	ID         int64       `json:"id"`
	Kind       memory.Kind `json:"kind"`
	Text       string      `json:"text"`
	RecordedAt time.Time   `json:"recorded_at"`
}

// Notices are the memories a workspace has not seen in its digest yet.
type Notices struct {
	Notices []Notice `json:"notices"`
	// Cursor is what to pass as after next time.
	Cursor int64 `json:"cursor"`
}

// NoticeRunes caps a notice's text: a per-step message stays short.
const NoticeRunes = 160

// MaxNotices caps the notices of one call.
const MaxNotices = 20

// Notices lists, oldest first, the live memories (each through the
// render-time gate, trust.Line; one it hides is skipped) a workspace reads that
// came after its published digest's watermark and after the cursor after (a
// memory id; 0 for none). It goes through Digest, so a batch that is due is
// published first and its items stop being notices.
func (s *Service) Notices(ctx context.Context, workspace string, after int64) (Notices, error) {
	return s.lessonNotices(ctx, workspace, "", after)
}

// lessonNotices is Notices for one session of workspace ("" none): a new
// lesson (kind lesson, directive or failure, its one-line text) is a
// notice only to the sessions its scope shows it to, so a session lesson
// reaches its own session and no other. It is the seed's instantNotice: a
// lesson waiting for lessons.commit_every shows at once, and the system
// prompt stays as it is.
func (s *Service) lessonNotices(ctx context.Context, workspace, session string, after int64) (Notices, error) {
	viewer := lesson.Viewer{Workspace: workspace, Session: session, GlobalLibrary: s.scopeOf(workspace).ReadsGlobal()}
	d, err := s.Digest(ctx, workspace)
	if err != nil {
		return Notices{}, err
	}
	from := max(after, d.Watermark)
	rows, err := s.store.ListMemories(ctx, s.store.DB, store.MemoryFilter{
		Workspaces: s.libraries(workspace), AfterID: from, Oldest: true, Limit: MaxNotices})
	if err != nil {
		return Notices{}, err
	}
	out := Notices{Notices: []Notice{}, Cursor: from}
	for _, r := range rows {
		// Past the cursor whether shown or not: a text the gate hides now
		// stays hidden.
		out.Cursor = r.ID
		if k := memory.Kind(r.Kind); k.Structured() && !viewer.Sees(FromRow(r)) {
			continue
		}
		text, ok := served(r.Text)
		if !ok {
			continue
		}
		out.Notices = append(out.Notices, Notice{ID: r.ID, Kind: memory.Kind(r.Kind), Text: short(text, NoticeRunes), RecordedAt: r.RecordedAt})
	}
	return out, nil
}

func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// fixedSections reads what the retro jobs keep beside memories: the
// workspace's handoff, its pending proposal and its playbooks.
func (s *Service) fixedSections(ctx context.Context, tx Querier, workspace string, in *digest.Input) error {
	if workspace == "" {
		return nil
	}
	h, ok, err := s.store.GetHandoff(ctx, tx, workspace)
	if err != nil {
		return err
	}
	if ok {
		in.Handoff = h.Text
	}
	props, err := s.store.ListProposals(ctx, tx, workspace, store.ProposalPending)
	if err != nil {
		return err
	}
	for _, p := range props {
		in.Proposals = append(in.Proposals, digest.Proposal{ID: p.ID, Summary: p.Summary, Status: p.Status, At: p.CreatedAt})
	}
	books, err := s.store.ListPlaybooks(ctx, tx, workspace)
	if err != nil {
		return err
	}
	for _, b := range books {
		in.Playbooks = append(in.Playbooks, digestPlaybook(b))
	}
	return nil
}
