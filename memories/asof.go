package memories

import (
	"context"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/memory/digest"
	"github.com/mullhq/mull/store"
)

// DigestAsOf is a workspace's digest as of a past time, for the panel's
// "as of T": what the agent was served then, as far as mull's history
// holds it.
type DigestAsOf struct {
	// Text is the digest. When Served, it is the published digest's own
	// text: the last publication was at or before At, so every session
	// from then on, At included, was served exactly this. Otherwise it is
	// rebuilt: rendered with the renderer every publication uses, taking
	// in the memories recorded by At (Watermark) and believed at At, the
	// lessons in force at At, the ledger's constraints recorded by At, the
	// proposals pending at At, and the handoff and playbooks only when
	// their stored version was written by At (mull keeps only the latest
	// of each: an older one is not recorded anywhere).
	Text      string
	Served    bool
	Watermark int64
	// PublishedAt is the last publication's time (zero: none yet).
	PublishedAt time.Time
	// Omitted names what a rebuild had to leave out because its stored
	// version is newer than At (handoff, playbook <slug>).
	Omitted []string
}

// DigestAsOf renders workspace's digest as of at (see DigestAsOf). It
// publishes nothing and changes nothing.
func (s *Service) DigestAsOf(ctx context.Context, workspace string, at time.Time) (DigestAsOf, error) {
	at = at.UTC()
	st, ok, err := s.store.GetDigestState(ctx, s.store.DB, s.digestKey(workspace))
	if err != nil {
		return DigestAsOf{}, err
	}
	if ok && st.Scope == s.stateTag(workspace) && !st.PublishedAt.After(at) {
		return DigestAsOf{Text: st.Text, Served: true, Watermark: st.WatermarkID, PublishedAt: st.PublishedAt}, nil
	}
	out := DigestAsOf{PublishedAt: st.PublishedAt}
	facts, err := s.digestFacts(ctx, workspace, at)
	if err != nil {
		return out, err
	}
	if out.Watermark, err = s.store.MaxMemoryIDAt(ctx, s.store.DB, at); err != nil {
		return out, err
	}
	in := digest.Input{Now: at}
	libs := s.libraries(workspace)
	if in.Memories, err = s.believed(ctx, libs[:1], out.Watermark, at); err != nil {
		return out, err
	}
	if len(libs) > 1 {
		if in.Global, err = s.believed(ctx, libs[1:], out.Watermark, at); err != nil {
			return out, err
		}
	}
	if in.Lessons, err = s.digestLessons(ctx, s.store.DB, workspace, "", out.Watermark, at); err != nil {
		return out, err
	}
	in.Lessons.Facts = facts
	if out.Omitted, err = s.sectionsAsOf(ctx, workspace, at, &in); err != nil {
		return out, err
	}
	out.Text = digest.Render(in, s.optsFor(workspace)).Text
	return out, nil
}

// believed are the memories of libs up to watermark believed at at
// (memory.ValidAt) and not quarantined: the database keeps only those,
// as the live digest's read keeps only the live ones.
func (s *Service) believed(ctx context.Context, libs []string, watermark int64, at time.Time) ([]memory.Memory, error) {
	if watermark == 0 {
		return nil, nil
	}
	rows, err := s.store.ListMemories(ctx, s.store.DB, store.MemoryFilter{Workspaces: libs, UpTo: watermark, All: true, Oldest: true, InForceAt: at})
	if err != nil {
		return nil, err
	}
	var out []memory.Memory
	for _, r := range rows {
		if m := FromRow(r); m.ValidAt(at) && !m.Quarantined {
			out = append(out, m)
		}
	}
	return out, nil
}

// sectionsAsOf is fixedSections as of at: the proposals pending then, and
// the handoff and playbooks whose stored version was written by then; it
// names those it had to leave out.
func (s *Service) sectionsAsOf(ctx context.Context, workspace string, at time.Time, in *digest.Input) (omitted []string, err error) {
	if workspace == "" {
		return nil, nil
	}
	h, ok, err := s.store.GetHandoff(ctx, s.store.DB, workspace)
	if err != nil {
		return nil, err
	}
	switch {
	case ok && !h.RecordedAt.After(at):
		in.Handoff = h.Text
	case ok:
		omitted = append(omitted, "handoff")
	}
	props, err := s.store.ListProposals(ctx, s.store.DB, workspace)
	if err != nil {
		return nil, err
	}
	for _, p := range props {
		if !p.CreatedAt.After(at) && (p.DecidedAt.IsZero() || p.DecidedAt.After(at)) {
			in.Proposals = append(in.Proposals, digest.Proposal{ID: p.ID, Summary: p.Summary, Status: store.ProposalPending, At: p.CreatedAt})
		}
	}
	books, err := s.store.ListPlaybooks(ctx, s.store.DB, workspace)
	if err != nil {
		return nil, err
	}
	for _, b := range books {
		if b.UpdatedAt.After(at) {
			omitted = append(omitted, "playbook "+b.Slug)
			continue
		}
		in.Playbooks = append(in.Playbooks, digestPlaybook(b))
	}
	return omitted, nil
}
