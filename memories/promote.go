package memories

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/trust"
	"github.com/mullhq/mull/store"
)

// PromotedID is one memory copied to the global library.
type PromotedID struct {
	ID       int64 `json:"id"`
	GlobalID int64 `json:"global_id"`
}

// RefusedID is one memory a promotion left where it was, and why.
type RefusedID struct {
	ID     int64  `json:"id"`
	Reason string `json:"reason"`
}

// Promotion is what PromoteByHand did.
type Promotion struct {
	Promoted []PromotedID `json:"promoted"`
	Refused  []RefusedID  `json:"refused"`
	// Message says why nothing moved when no id says it: a temporary
	// workspace, or no memory meeting the automatic rules.
	Message string `json:"message,omitempty"`
}

// PromoteByHand copies workspace memories to the global library now, as a
// person's /promote: ids, each under memory.PromoteRefusal's rules (never
// an external src, never quarantined or invalidated, never what the global
// library has or had), or, with no ids, the best candidates of the
// automatic rules (memory.Promote: at most 3, score at least 10). A
// workspace in a temporary directory (tempDirs, and /tmp) promotes nothing:
// tests and one-off experiments live there, and their entries are never
// broadcast (the seed's rule); each id is refused, and Message says why.
// The global library itself is a *memory.FieldError. Each copy passes the
// trust gate again, as the automatic promotion's (Gated).
func (s *Service) PromoteByHand(ctx context.Context, workspace string, ids []int64, tempDirs []string) (Promotion, error) {
	if workspace == "" {
		return Promotion{}, &memory.FieldError{Field: "workspace", Problem: "required: the workspace whose memories go to the global library"}
	}
	if memory.TemporaryWorkspace(workspace, tempDirs...) {
		why := fmt.Sprintf("workspace %q lies in a temporary directory: its memories are never promoted to the global library", workspace)
		out := Promotion{Promoted: []PromotedID{}, Refused: []RefusedID{}, Message: why}
		for _, id := range ids {
			out.Refused = append(out.Refused, RefusedID{ID: id, Reason: why})
		}
		return out, nil
	}
	out := Promotion{Promoted: []PromotedID{}, Refused: []RefusedID{}}
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		out = Promotion{Promoted: []PromotedID{}, Refused: []RefusedID{}}
		// The workspace's lock, then the global library's: the order the
		// retros take them.
		if err := s.store.LockLibraries(ctx, tx, workspace, ""); err != nil {
			return err
		}
		global, err := s.store.ListMemories(ctx, tx, store.MemoryFilter{Workspaces: []string{""}, All: true})
		if err != nil {
			return err
		}
		cands, err := s.promoteCandidates(ctx, tx, workspace, ids, FromRows(global), &out)
		if err != nil {
			return err
		}
		for _, m := range cands {
			v := trust.Check(m.Text)
			if v.Quarantined {
				out.Refused = append(out.Refused, RefusedID{ID: m.ID, Reason: "the trust gate holds its text (" + v.Reason + ")"})
				continue
			}
			c := memory.PromotedCopy(m, s.store.Now())
			c.Text = memory.OneLine(v.Text)
			gid, err := s.store.InsertMemory(ctx, tx, ToRow(c))
			if err != nil {
				return fmt.Errorf("promote memory %d to global: %w", m.ID, err)
			}
			out.Promoted = append(out.Promoted, PromotedID{ID: m.ID, GlobalID: gid})
		}
		if len(ids) == 0 && len(out.Promoted) == 0 {
			out.Message = "nothing to promote: no live memory of the workspace meets the automatic rules " +
				"(score at least 10, not from an external source, not in the global library)"
		}
		return nil
	})
	return out, err
}

// promoteCandidates are the memories to copy: the named ones that pass
// memory.PromoteRefusal (the rest go to out.Refused), or with no ids the
// automatic rules' choice.
func (s *Service) promoteCandidates(ctx context.Context, tx *sql.Tx, workspace string, ids []int64, global []memory.Memory, out *Promotion) ([]memory.Memory, error) {
	now := s.store.Now()
	have := make(map[string]int64, len(global))
	for _, g := range global {
		have[memory.Normalize(g.Text)] = g.ID
	}
	if len(ids) == 0 {
		local, err := s.store.ListMemories(ctx, tx, store.MemoryFilter{Workspaces: []string{workspace}})
		if err != nil {
			return nil, err
		}
		return autoCandidates(workspace, FromRows(local), global, have, now), nil
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	rows, err := s.store.MemoriesByID(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]memory.Memory, len(rows))
	for _, r := range rows {
		byID[r.ID] = FromRow(r)
	}
	var cands []memory.Memory
	for _, id := range ids {
		m, ok := byID[id]
		if !ok {
			out.Refused = append(out.Refused, RefusedID{ID: id, Reason: "no such memory"})
			continue
		}
		if why := memory.PromoteRefusal(m, workspace, have, now); why != "" {
			out.Refused = append(out.Refused, RefusedID{ID: id, Reason: why})
			continue
		}
		have[memory.Normalize(m.Text)] = m.ID // two ids of one text copy once
		cands = append(cands, m)
	}
	return cands, nil
}

// autoCandidates are the workspace's live memories the automatic
// promotion would copy (memory.Promote), as the originals, so the answer
// can name them; a structured lesson is left to its own transition.
func autoCandidates(workspace string, local, global []memory.Memory, have map[string]int64, now time.Time) []memory.Memory {
	byText := make(map[string]memory.Memory, len(local))
	for _, m := range local {
		byText[memory.Normalize(m.Text)] = m
	}
	var out []memory.Memory
	for _, c := range memory.Promote(local, global, now) {
		if m, ok := byText[memory.Normalize(c.Text)]; ok && memory.PromoteRefusal(m, workspace, have, now) == "" {
			out = append(out, m)
		}
	}
	return out
}
