package memories

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
)

// FailpointMoveLocate: inside MoveMemory's transaction, after the source
// is first read (to learn its library), before the library locks are
// taken and it is read again (store.SetFailpoint; tests only).
const FailpointMoveLocate = "memories.move.locate"

// MovedMemory is what MoveMemory did: the memory in its new library and
// the one it replaces there.
type MovedMemory struct {
	Memory memory.Memory `json:"memory"`
	From   memory.Memory `json:"from"`
	// Duplicate: the target library already had it live; the source is
	// superseded by that one, which got one more use.
	Duplicate bool `json:"duplicate,omitempty"`
}

// MoveMemory moves a memory that is not a structured lesson (lessons move
// by MoveLesson) to another library: to ("" is the global library). It is
// a change recorded on both timelines, never an edit in place: in one
// transaction, under both libraries' locks, the memory is written again in
// the target library (built anew by memory.New, so its text passes today's
// trust gate; PromotedFromID names the source, PromotedFrom its
// workspace's base name on a move to global; uses, verification, TTL and
// provenance travel with it), and the source is superseded by it, with a
// reason saying where it went. When the target already holds the same
// text live, the source is superseded by that one instead, which gets a
// use. A library the memory scope does not read (each workspace's own
// scope: the global library when the source's workspace is under scope
// workspace, a workspace under scope global), a quarantined
// result, an invalidated or quarantined source (read again under the
// locks, so one forgotten while the move waited is not brought back), a
// structured lesson or a move to the library it is in are refused, and
// nothing is stored.
func (s *Service) MoveMemory(ctx context.Context, id int64, to string) (MovedMemory, error) {
	var out MovedMemory
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		// The first read only names the source's library (a memory never
		// changes library): the source is read again under both locks, so
		// a forget that commits in between is seen and refused rather than
		// brought back to life in the target.
		row, err := s.store.GetMemory(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := s.readable(row.Workspace, to); err != nil {
			return err
		}
		store.Failpoint(FailpointMoveLocate)
		if err := s.store.LockLibraries(ctx, tx, row.Workspace, to); err != nil {
			return err
		}
		if row, err = s.store.GetMemoryForUpdate(ctx, tx, id); err != nil {
			return err
		}
		src := FromRow(row)
		switch {
		case src.Kind.Structured():
			return &memory.FieldError{Field: "id", Problem: fmt.Sprintf("memory %d is a %s: move it to a lesson scope (global, workspace:W, session:S) instead", id, src.Kind)}
		case src.Quarantined:
			return &NotLiveError{Memory: src}
		case !src.InvalidAt.IsZero():
			return &NotLiveError{Memory: src}
		case src.Workspace == to:
			return &memory.FieldError{Field: "to", Problem: fmt.Sprintf("memory %d is already in %s", id, libraryName(to))}
		}
		prov := memory.Provenance{Origin: src.Origin, JobID: src.JobID}
		if to == "" {
			prov.PromotedFrom = filepath.Base(filepath.Clean(strings.ReplaceAll(src.Workspace, `\`, "/")))
		}
		d, _, err := memory.New(memory.Write{Workspace: to, Kind: src.Kind, Text: src.Text, Importance: src.Importance,
			Src: src.Src, SessionID: src.SessionID}, prov, s.store.Now())
		if err != nil {
			return err
		}
		if d.Quarantined {
			return fmt.Errorf("memory %d: the trust gate quarantines the moved text (%s); nothing was moved", id, d.QuarantineReason)
		}
		now := s.store.Now()
		d.RecordedAt, d.PromotedFromID = now.UTC(), src.ID
		d.Uses, d.VerifiedAt, d.VerifiedBy, d.TTLDays = src.Uses, src.VerifiedAt, src.VerifiedBy, src.TTLDays
		dup, ok, err := s.store.FindMemoryByNorm(ctx, tx, to, memory.Normalize(d.Text))
		if err != nil {
			return err
		}
		if ok {
			if err := s.store.BumpUses(ctx, tx, store.MemoryUse{Cause: store.UseMove, Workspace: to}, dup.ID); err != nil {
				return err
			}
			dup.Uses++
			d, out.Duplicate = FromRow(dup), true
		} else if d.ID, err = s.store.InsertMemory(ctx, tx, ToRow(d)); err != nil {
			return err
		}
		src = src.Invalidated(now, "moved to "+libraryName(to), d.ID)
		if ok, err := s.store.InvalidateMemory(ctx, tx, src.ID, src.InvalidAt, src.InvalidReason, d.ID); err != nil {
			return err
		} else if !ok {
			// Invalidated since it was read: the copy must not outlive it.
			row, err := s.store.GetMemory(ctx, tx, id)
			if err != nil {
				return err
			}
			return &NotLiveError{Memory: FromRow(row)}
		}
		src.State = memory.StateSuperseded
		out.Memory, out.From = d, src
		return nil
	})
	return out, err
}

// readable refuses a move from library from to library to that the memory
// scopes make pointless, each workspace's own (its effective setting, as
// its digest reads): to the global library when from's workspace does not
// read it (the move would take the memory away from the agents that saw
// it), to a workspace whose agents read only the global library.
func (s *Service) readable(from, to string) error {
	switch {
	case to == "" && from != "" && !s.scopeOf(from).ReadsGlobal():
		return &memory.FieldError{Field: "to", Problem: fmt.Sprintf("the memory scope of %s is %q: it does not read the global library, so its agents would no longer see the memory", libraryName(from), s.scopeOf(from))}
	case to != "" && !s.scopeOf(to).ReadsWorkspace():
		return &memory.FieldError{Field: "to", Problem: fmt.Sprintf("the memory scope of %s is %q: its agents read only the global library, so no agent would see the memory there", libraryName(to), s.scopeOf(to))}
	}
	return nil
}

// libraryName names a library for a person: the global library, or
// workspace <base name>.
func libraryName(workspace string) string {
	if workspace == "" {
		return "the global library"
	}
	return "workspace " + filepath.Base(filepath.Clean(strings.ReplaceAll(workspace, `\`, "/")))
}

// RefusedError is an operator's write the trust gate refuses: its text
// reads like an instruction to the agent. Nothing was stored.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string {
	return "the trust gate refuses this text: it reads like an instruction to the agent (" + e.Reason + "); nothing was stored"
}

// AddFromPanel is Remember for an operator at the panel (origin panel),
// except that text the trust gate would quarantine is refused with a
// *RefusedError and nothing is stored: the operator is there to reword
// it, and a flagged row would only wait for review of what they just
// typed. Everything else is Remember's (validation, redaction, duplicates,
// the memory scope); a duplicate it vouches for is verified by
// store.ActorPanel.
func (s *Service) AddFromPanel(ctx context.Context, w memory.Write) (Written, error) {
	m, redacted, err := memory.New(w, memory.Provenance{Origin: memory.OriginPanel}, s.store.Now())
	if err != nil {
		return Written{Redacted: redacted}, err
	}
	if m.Quarantined {
		return Written{}, &RefusedError{Reason: m.QuarantineReason}
	}
	return s.Remember(ctx, w, memory.Provenance{Origin: memory.OriginPanel, By: store.ActorPanel})
}

// Libraries are the libraries workspace reads under the memory scope, its
// own first ("" is the global library): what its digest is made of.
func (s *Service) Libraries(workspace string) []string { return s.libraries(workspace) }
