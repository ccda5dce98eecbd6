package memories

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/trust"
	"github.com/mullhq/mull/store"
)

// Proposal is an improvement a retro proposed and the user's decision on
// it: the seed's status.json entry {status, at, summary, decidedAt, note}.
type Proposal struct {
	ID string `json:"id"`
	// Kind is retro (a retro's proposal) or harness (a global harness
	// refinement waiting for approval).
	Kind      string `json:"kind"`
	Workspace string `json:"workspace"`
	Summary   string `json:"summary"`
	Detail    string `json:"detail,omitempty"`
	// Status is pending, accepted or rejected.
	Status    string    `json:"status"`
	SessionID string    `json:"session_id"`
	JobID     int64     `json:"job_id"`
	CreatedAt time.Time `json:"created_at"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	Note      string    `json:"note,omitempty"`
	// DecidedBy says who decided: store.DecidedByPanel, …API, …CLI or
	// …Agent; "" (left out of the JSON) while pending or when decided
	// before mull kept it.
	DecidedBy string `json:"decided_by,omitempty"`
	// Withheld: the render-time gate found an instruction in its summary
	// or detail, which are not shown (Summary says so); listings leave it
	// out.
	Withheld bool `json:"withheld,omitempty"`
}

// MaxNoteRunes caps a decision's note: a rejection's note becomes a lesson,
// and one memory is one short statement (memory.MaxTextRunes), the
// proposal's summary included.
const MaxNoteRunes = 300

// Decision is what DecideProposal did.
type Decision struct {
	Proposal Proposal `json:"proposal"`
	// Lesson is the rejection written back as a lesson; nil on accept.
	Lesson *Written `json:"lesson,omitempty"`
}

// Proposals lists proposals, oldest first: a workspace's ("" for every
// workspace's), of one status ("" for any). Each passes the render-time
// gate; one it withholds is left out.
func (s *Service) Proposals(ctx context.Context, workspace, status string) ([]Proposal, error) {
	var statuses []string
	if status != "" {
		if err := checkStatus(status, store.ProposalPending); err != nil {
			return nil, err
		}
		statuses = []string{status}
	}
	rows, err := s.store.ListProposals(ctx, s.store.DB, workspace, statuses...)
	out := make([]Proposal, 0, len(rows))
	for _, r := range rows {
		if p := proposalView(r); !p.Withheld {
			out = append(out, p)
		}
	}
	return out, err
}

// Proposal reads one proposal, or an error wrapping store.ErrNotFound.
func (s *Service) Proposal(ctx context.Context, id string) (Proposal, error) {
	p, err := s.store.GetProposal(ctx, s.store.DB, id)
	return proposalView(p), err
}

// DecideProposal accepts or rejects a pending proposal (status
// store.ProposalAccepted or store.ProposalRejected), with the user's note
// and who decides (by: store.DecidedByPanel, …API, …CLI or …Agent; kept
// with the decision). A rejection needs a note saying why, and the note is written back as a
// lesson in the same transaction, as the seed did: the user's word (src
// user, origin command), so the next retro does not propose it again. A
// proposal decided already is an error wrapping store.ErrNotPending; an
// unknown id wraps store.ErrNotFound; a bad status or a missing note is a
// *memory.FieldError.
func (s *Service) DecideProposal(ctx context.Context, id, status, note, by string) (Decision, error) {
	note = strings.TrimSpace(note)
	if err := checkStatus(status); err != nil {
		return Decision{}, err
	}
	if status == store.ProposalRejected && note == "" {
		return Decision{}, &memory.FieldError{Field: "note", Problem: "required to reject: say why (it is kept as a lesson)"}
	}
	if n := utf8.RuneCountInString(note); n > MaxNoteRunes {
		return Decision{}, &memory.FieldError{Field: "note", Problem: fmt.Sprintf("%d characters, at most %d", n, MaxNoteRunes)}
	}
	// The note is stored with the decision and may be shown: it passes the
	// gate as every stored text does (the lesson made of it goes through
	// memory.New).
	note = trust.Check(note).Text
	now := s.store.Now()
	var d Decision
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		// A rejection writes a lesson under the library's lock; take it
		// before touching the proposal, in the order a retro takes them
		// (lock, then its proposal insert), or the two deadlock on
		// Postgres: the retro's insert waits on this row's change, this
		// lesson on the retro's lock.
		if status == store.ProposalRejected {
			cur, err := s.store.GetProposal(ctx, tx, id)
			if err != nil {
				return err
			}
			if err := s.store.LockLibrary(ctx, tx, s.lessonLibrary(cur.Workspace)); err != nil {
				return err
			}
		}
		p, err := s.store.DecideProposal(ctx, tx, id, status, note, by, now)
		if err != nil {
			return err
		}
		d.Proposal = proposalView(p)
		if status != store.ProposalRejected {
			return nil
		}
		w, err := s.rejectionLesson(ctx, tx, p, now)
		d.Lesson = &w
		return err
	})
	if err != nil {
		return Decision{}, err
	}
	return d, nil
}

// rejectionLesson writes a rejected proposal's note as a lesson of its
// workspace (of the global library under scope global), or bumps the same
// lesson already there.
func (s *Service) rejectionLesson(ctx context.Context, tx *sql.Tx, p store.Proposal, now time.Time) (Written, error) {
	w := memory.Write{Workspace: s.lessonLibrary(p.Workspace), Kind: memory.Lesson, Src: memory.SrcUser, SessionID: p.SessionID,
		Text: rejectionText(p.Summary, p.Note)}
	m, redacted, err := memory.New(w, memory.Provenance{Origin: memory.OriginCommand}, now)
	if err != nil {
		return Written{}, fmt.Errorf("lesson from rejecting proposal %s: %w", p.ID, err)
	}
	// The one who rejects writes the lesson: a repeat verifies it in their
	// name.
	out, err := s.write(ctx, tx, m, p.DecidedBy)
	out.Redacted = redacted
	return out, err
}

// lessonLibrary is the library a rejection's lesson goes to: the
// proposal's workspace, or the global one under scope global.
func (s *Service) lessonLibrary(workspace string) string {
	if s.scopeOf(workspace).WritesGlobal() {
		return ""
	}
	return workspace
}

// rejectionText is "proposal rejected: <summary> -> <note>", the summary
// shortened so the lesson stays within memory.MaxTextRunes.
func rejectionText(summary, note string) string {
	const head, arrow = "proposal rejected: ", " -> "
	note = memory.OneLine(note)
	room := memory.MaxTextRunes - len([]rune(head+arrow+note))
	return head + short(memory.OneLine(summary), max(room, 20)) + arrow + note
}

// checkStatus refuses a status other than a decision (or, when allowed,
// one of extra).
func checkStatus(status string, extra ...string) error {
	ok := []string{store.ProposalAccepted, store.ProposalRejected}
	for _, s := range append(extra, ok...) {
		if status == s {
			return nil
		}
	}
	return &memory.FieldError{Field: "status", Problem: fmt.Sprintf("%q is not one of %s", status, strings.Join(append(extra, ok...), ", "))}
}

// proposalView is a stored proposal as served: summary, detail and note
// through the render-time gate.
func proposalView(p store.Proposal) Proposal {
	v := Proposal{ID: p.ID, Kind: cmp.Or(p.Kind, store.ProposalRetro), Workspace: p.Workspace, Status: p.Status,
		SessionID: p.SessionID, JobID: p.JobID, CreatedAt: p.CreatedAt, DecidedAt: p.DecidedAt, DecidedBy: p.DecidedBy}
	summary, ok := served(p.Summary)
	detail, dok := trust.Block(p.Detail)
	if !ok || !dok {
		v.Summary, v.Withheld = "(withheld: reads like an instruction to the agent)", true
	} else {
		v.Summary, v.Detail = summary, strings.Join(detail, "\n")
	}
	v.Note, _ = served(p.Note)
	return v
}
