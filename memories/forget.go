package memories

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	rules "github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
)

// ForgetMatch is a memory /forget would invalidate, as the person deciding
// sees it: its text through the render-time gate.
type ForgetMatch struct {
	ID      int64       `json:"id"`
	Kind    memory.Kind `json:"kind"`
	Text    string      `json:"text"`
	Library string      `json:"library"`
}

// ForgetPlan is /forget's dry run: what it would invalidate, and the token
// that confirms exactly that.
type ForgetPlan struct {
	Matches []ForgetMatch `json:"matches"`
	Count   int           `json:"count"`
	// Token binds the workspace, the keywords and the matched ids; a
	// confirm whose matches differ by then is refused (StaleForgetError).
	Token string `json:"confirm_token"`
	// Kept are structured lessons the keywords match, which /forget leaves
	// alone: a lesson changes by a revise or an operator's command.
	Kept []ForgetMatch `json:"kept_lessons,omitempty"`
}

// StaleForgetError refuses a confirm whose token no longer names the
// keywords' matches: a memory was written, forgotten or changed since the
// dry run. The person looks again.
type StaleForgetError struct{ Plan ForgetPlan }

func (e *StaleForgetError) Error() string {
	return fmt.Sprintf("the matches changed since the dry run (now %d): run it again and confirm what it shows", e.Plan.Count)
}

// ForgetPlanFor is /forget's dry run over the libraries the workspace reads
// (its scope's): the live memories the keywords match by the seed's rule
// (memory.Forget). Bad keywords are a *memory.FieldError naming field
// keywords.
func (s *Service) ForgetPlanFor(ctx context.Context, workspace, keywords string) (ForgetPlan, error) {
	if err := memory.CheckForget("keywords", keywords); err != nil {
		return ForgetPlan{}, err
	}
	var p ForgetPlan
	err := s.store.InTx(ctx, func(tx *sql.Tx) (err error) {
		p, _, err = s.forgetPlan(ctx, tx, workspace, keywords)
		return err
	})
	return p, err
}

// Forget invalidates what the dry run token named: the keywords' matches,
// if they are still the ones the token binds, each with reason "forget:
// <keywords>", under the libraries' locks. Nothing is deleted: the rows
// keep their text and history (bi-temporal invalidation). A token that no
// longer fits is a *StaleForgetError and nothing changes.
func (s *Service) Forget(ctx context.Context, workspace, keywords, token string) ([]int64, error) {
	if err := memory.CheckForget("keywords", keywords); err != nil {
		return nil, err
	}
	if strings.TrimSpace(token) == "" {
		return nil, &memory.FieldError{Field: "confirm_token", Problem: "required to confirm: the dry run's confirm_token"}
	}
	var ids []int64
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.store.LockLibraries(ctx, tx, s.libraries(workspace)...); err != nil {
			return err
		}
		p, rows, err := s.forgetPlan(ctx, tx, workspace, keywords)
		if err != nil {
			return err
		}
		if p.Token != token {
			return &StaleForgetError{Plan: p}
		}
		now := s.store.Now()
		for _, m := range rows {
			m = m.Invalidated(now, "forget: "+memory.OneLine(keywords), 0)
			ok, err := s.store.InvalidateMemory(ctx, tx, m.ID, m.InvalidAt, m.InvalidReason, 0)
			if err != nil {
				return err
			}
			if !ok {
				return &StaleForgetError{Plan: p}
			}
			ids = append(ids, m.ID)
		}
		return nil
	})
	return ids, err
}

// forgetPlan reads the keywords' matches in tx: the store narrows to the
// memories whose text overlaps the keywords, the seed's rule decides.
func (s *Service) forgetPlan(ctx context.Context, tx *sql.Tx, workspace, keywords string) (ForgetPlan, []memory.Memory, error) {
	rows, err := s.store.MemoriesOverlapping(ctx, tx, s.libraries(workspace), memory.Normalize(keywords))
	if err != nil {
		return ForgetPlan{}, nil, err
	}
	p := ForgetPlan{Matches: []ForgetMatch{}}
	var hit []memory.Memory
	for _, m := range memory.Forget(keywords, FromRows(rows), s.store.Now()) {
		v := forgetMatch(m)
		if rules.Governed(m) {
			p.Kept = append(p.Kept, v)
			continue
		}
		p.Matches = append(p.Matches, v)
		hit = append(hit, m)
	}
	p.Count = len(p.Matches)
	p.Token = forgetToken(workspace, keywords, hit)
	return p, hit, nil
}

func forgetMatch(m memory.Memory) ForgetMatch {
	text, ok := served(m.Text)
	if !ok {
		text = "(not shown: withheld by the trust gate)"
	}
	lib := "workspace"
	if m.Workspace == "" {
		lib = "global"
	}
	return ForgetMatch{ID: m.ID, Kind: m.Kind, Text: text, Library: lib}
}

// forgetToken binds a workspace, keywords (normalized) and the ids they
// matched. It is a digest, not a secret: whoever can call the route can
// forget what matches anyway; the token only makes sure the confirm
// invalidates what the person saw.
func forgetToken(workspace, keywords string, ms []memory.Memory) string {
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	slices.Sort(ids)
	h := sha256.New()
	fmt.Fprintf(h, "forget\x00%s\x00%s", workspace, memory.Normalize(keywords))
	for _, id := range ids {
		h.Write([]byte("\x00" + strconv.FormatInt(id, 10)))
	}
	return "fg1-" + hex.EncodeToString(h.Sum(nil)[:16])
}
