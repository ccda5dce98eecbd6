package harnesses

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/learn/trust"
	"github.com/mullhq/mull/store"
)

// The length caps of an edit's texts, in runes. An edit over one is
// rejected (recorded with the message, like a rule's rejection) before
// the rules run: ids are keys the store indexes, and everything stored may
// reach a system prompt.
const (
	MaxIDRunes          = harness.MaxIDRunes
	MaxContentRunes     = 20000
	MaxTitleRunes       = 200
	MaxDescriptionRunes = 400
)

// quarantineKind is the quarantine table's kind of a harness text.
const quarantineKind = "harness"

// applyTx is ApplyTx: lock the scope, read it, plan against the baseline
// and write what changed.
func (s *Service) applyTx(ctx context.Context, tx *sql.Tx, r ApplyRequest) (Applied, error) {
	if err := checkRequest(&r, s.store.Now().UnixMilli()); err != nil {
		return Applied{}, err
	}
	key := r.Scope.Key()
	if _, err := s.store.LockHarnessScope(ctx, tx, key); err != nil {
		return Applied{}, err
	}
	if err := s.idFree(ctx, tx, r.ID, !r.approved); err != nil {
		return Applied{}, err
	}
	cur, tombs, err := s.readScope(ctx, tx, key)
	if err != nil {
		return Applied{}, err
	}
	var global harness.State
	if !r.Scope.IsGlobal() {
		if global, _, err = s.readScope(ctx, tx, harness.Global.Key()); err != nil {
			return Applied{}, err
		}
	}
	baseline, err := baselineOf(r, cur)
	if err != nil {
		return Applied{}, err
	}
	if s.needsApproval(r) {
		return s.hold(ctx, tx, r, baseline)
	}
	now := s.store.Now()
	kept, pre := lengthChecks(r.Proposal.Edits)
	if err := s.keepQuarantined(ctx, tx, r, kept); err != nil {
		return Applied{}, err
	}
	prop := r.Proposal
	prop.Edits = kept
	ref, next := harness.Apply(cur, prop, harness.ApplyOptions{
		ID: r.ID, RollbackOf: r.RollbackOf, Scope: r.Scope, Baseline: baseline, Global: global,
		Automatic: r.Automatic, ProtectedKinds: s.protectedKinds(), MaxGrowth: s.cfg.Growth(), MaxShrink: s.cfg.Shrink(),
		SourceSession: r.SessionID, Tombstones: tombs, Now: now,
	})
	ref.Edits = interleave(pre, ref.Edits)
	if r.RollbackOf != "" {
		if applied, _ := ref.Counts(); applied == 0 {
			// Nothing reversed: nothing is stored and the target is not
			// marked, so its id stays free for a later retry.
			why := r.RollbackOf + " applied no edit to reverse"
			if len(ref.Edits) > 0 {
				why = ref.Edits[0].Error
			}
			return Applied{}, &ConflictError{Msg: fmt.Sprintf("rollback of %s applied nothing: %s", r.RollbackOf, why)}
		}
	}
	if len(ref.Edits) == 0 {
		// An empty proposal is not a refinement (the job's "assessed").
		return Applied{Refinement: ref}, nil
	}
	if err := s.writeChanges(ctx, tx, key, cur, next, r.ID, now); err != nil {
		return Applied{}, err
	}
	if err := s.store.InsertHarnessRefinement(ctx, tx, store.HarnessRefinement{
		Refinement: ref, ScopeKey: key, SessionID: r.SessionID, Source: string(r.Source), JobID: r.JobID, Automatic: r.Automatic,
	}); err != nil {
		if errors.Is(err, store.ErrHarnessRefinementExists) {
			return Applied{}, &ConflictError{Msg: "refinement " + r.ID + " exists"}
		}
		return Applied{}, err
	}
	if err := s.store.BumpHarnessScope(ctx, tx, key); err != nil {
		return Applied{}, err
	}
	if r.RollbackOf != "" {
		ok, err := s.store.MarkHarnessRolledBack(ctx, tx, r.RollbackOf, r.ID)
		if err != nil {
			return Applied{}, err
		}
		if !ok {
			return Applied{}, &ConflictError{Msg: fmt.Sprintf("refinement %s was rolled back already", r.RollbackOf)}
		}
	}
	return Applied{Refinement: ref}, nil
}

// checkRequest names the request's refinement when it has no id and
// refuses a request the store could not keep.
func checkRequest(r *ApplyRequest, unixMS int64) error {
	if r.ID == "" {
		r.ID = NewID("refine", unixMS)
	}
	switch {
	case utf8.RuneCountInString(r.ID) > MaxIDRunes:
		return &FieldError{Field: "id", Problem: fmt.Sprintf("too long (%d > %d)", utf8.RuneCountInString(r.ID), MaxIDRunes)}
	case strings.TrimSpace(r.ID) != r.ID || strings.ContainsFunc(r.ID, func(c rune) bool { return c < ' ' }):
		return &FieldError{Field: "id", Problem: "has spaces or control characters"}
	case utf8.RuneCountInString(r.Scope.Session) > 256:
		return &FieldError{Field: "session", Problem: fmt.Sprintf("too long (%d > 256)", utf8.RuneCountInString(r.Scope.Session))}
	}
	if r.Source == "" {
		r.Source = ByAdmin
	}
	return nil
}

// NewID is a fresh refinement id: "<prefix>_<unix ms>_<6 hex>".
func NewID(prefix string, unixMS int64) string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + "_" + strconv.FormatInt(unixMS, 10) + "_" + hex.EncodeToString(b[:])
}

// idFree refuses a refinement id stored already, as a refinement or as a
// pending proposal (unless proposalToo is false: a refinement a person
// accepted applies under its proposal's id): a refinement is applied at
// most once.
func (s *Service) idFree(ctx context.Context, tx *sql.Tx, id string, proposalToo bool) error {
	_, err := s.store.GetHarnessRefinement(ctx, tx, id)
	if err == nil {
		return &ConflictError{Msg: "refinement " + id + " exists"}
	}
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if !proposalToo {
		return nil
	}
	_, err = s.store.GetProposal(ctx, tx, proposalID(id))
	if err == nil {
		return &ConflictError{Msg: "refinement " + id + " exists (pending proposal " + proposalID(id) + ")"}
	}
	if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// readScope is a scope's state and the versions of its tombstones
// (harness.TombstoneKey → last version).
func (s *Service) readScope(ctx context.Context, q querier, key string) (harness.State, map[string]int, error) {
	rows, err := s.store.HarnessCurrent(ctx, q, key)
	if err != nil {
		return nil, nil, err
	}
	st, tombs := harness.State{}, map[string]int{}
	for _, v := range rows {
		if v.Deleted {
			tombs[harness.TombstoneKey(v.Entry.Kind, v.Entry.ID)] = v.Entry.Version
			continue
		}
		put(st, v.Entry)
	}
	return st, tombs, nil
}

// querier is what reads run on: the store's handle or a transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func put(st harness.State, e harness.Entry) {
	if st[e.Kind] == nil {
		st[e.Kind] = map[string]harness.Entry{}
	}
	st[e.Kind][e.ID] = e
}

func cloneState(st harness.State) harness.State {
	out := harness.State{}
	for k, m := range st {
		out[k] = maps.Clone(m)
	}
	return out
}

// baselineOf is what the planner read: the request's Baseline, or the
// current state with BaselineVersions laid over it (a listed entry whose
// version differs, or that is gone, fails rule 6; version 0 is "absent"),
// or the current state (rule 6 cannot fail).
func baselineOf(r ApplyRequest, cur harness.State) (harness.State, error) {
	if r.Baseline != nil {
		return r.Baseline, nil
	}
	base := cloneState(cur)
	for k, v := range r.BaselineVersions {
		kind, id, ok := strings.Cut(k, "/")
		if !ok || !validKind(harness.Kind(kind)) || id == "" {
			return nil, &FieldError{Field: "baseline", Problem: fmt.Sprintf("key %q is not kind/id with a kind of %v", k, harness.Kinds)}
		}
		if v < 0 {
			return nil, &FieldError{Field: "baseline", Problem: fmt.Sprintf("version of %q is %d, not 0 (absent) or more", k, v)}
		}
		e, exists := cur.Get(harness.Kind(kind), id)
		switch {
		case v == 0:
			delete(base[harness.Kind(kind)], id)
		case !exists:
			put(base, harness.Entry{ID: id, Kind: harness.Kind(kind), Version: v})
		case e.Version != v:
			e.Version = v
			put(base, e)
		}
	}
	return base, nil
}

// enumWord is w when it is one of enum, else "?": a text stored with a
// record never repeats a raw word the caller gave.
func enumWord[T ~string](w T, enum []T) string {
	if slices.Contains(enum, w) {
		return string(w)
	}
	return "?"
}

func validKind(k harness.Kind) bool {
	for _, x := range harness.Kinds {
		if k == x {
			return true
		}
	}
	return false
}

func (s *Service) protectedKinds() []harness.Kind {
	out := make([]harness.Kind, len(s.cfg.ProtectedKinds))
	for i, k := range s.cfg.ProtectedKinds {
		out[i] = harness.Kind(k)
	}
	return out
}

// lengthChecks splits edits into those the rules see (kept) and the
// rejected over-long ones, by their index in edits.
func lengthChecks(edits []harness.Edit) (kept []harness.Edit, pre map[int]harness.AppliedEdit) {
	pre = map[int]harness.AppliedEdit{}
	for i, e := range edits {
		if msg := tooLong(e); msg != "" {
			pre[i] = tooLongEdit(e, msg)
			continue
		}
		kept = append(kept, e)
	}
	return kept, pre
}

func tooLong(e harness.Edit) string {
	for _, f := range []struct {
		name string
		text *string
		max  int
	}{{"id", &e.ID, MaxIDRunes}, {"content", e.Content, MaxContentRunes}, {"title", e.Title, MaxTitleRunes},
		{"description", e.Description, MaxDescriptionRunes}} {
		if f.text == nil {
			continue
		}
		if n := utf8.RuneCountInString(*f.text); n > f.max {
			return fmt.Sprintf("%s too long (%d > %d)", f.name, n, f.max)
		}
	}
	return ""
}

// tooLongEdit records a rejected over-long edit: no content, the rest
// as harness.RejectedEdit keeps it (a cut id, every text through the
// trust gate, an action or kind outside its enum "").
func tooLongEdit(e harness.Edit, msg string) harness.AppliedEdit { return harness.RejectedEdit(e, msg) }

// gated is a text as the trust gate lets it be stored ("" when it
// quarantines it).
func gated(s string) string {
	v := trust.Check(s)
	if v.Quarantined {
		return ""
	}
	return v.Text
}

// interleave puts the pre-rejected edits back at their places among the
// edits Apply recorded (one per edit it was given, in order).
func interleave(pre map[int]harness.AppliedEdit, applied []harness.AppliedEdit) []harness.AppliedEdit {
	if len(pre) == 0 {
		return applied
	}
	total := len(pre) + len(applied)
	out := make([]harness.AppliedEdit, 0, total)
	for i := 0; len(out) < total; i++ {
		if a, ok := pre[i]; ok {
			out = append(out, a)
			continue
		}
		out = append(out, applied[0])
		applied = applied[1:]
	}
	return out
}

// keepQuarantined keeps every edit text the trust gate quarantines in the
// quarantine table (redacted, for review; never served). Apply rejects the
// edit; its record holds none of the text.
func (s *Service) keepQuarantined(ctx context.Context, tx *sql.Tx, r ApplyRequest, edits []harness.Edit) error {
	workspace := s.workspaceOf(ctx, tx, r.Scope, r.SessionID)
	for _, e := range edits {
		for _, t := range []*string{e.Content, e.Title, e.Description, &e.Reason} {
			if t == nil {
				continue
			}
			v := trust.Check(*t)
			if !v.Quarantined {
				continue
			}
			if err := s.store.InsertQuarantined(ctx, tx, store.Quarantined{
				Workspace: workspace, Kind: quarantineKind, Text: v.Text,
				Reason:    fmt.Sprintf("refinement %s, %s %s/%s: %s", r.ID, enumWord(e.Action, harness.Actions), enumWord(e.Kind, harness.Kinds), gated(e.ID), v.Reason),
				SessionID: r.SessionID, JobID: r.JobID, RecordedAt: s.store.Now(),
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// workspaceOf is the workspace a refinement's quarantined texts are kept
// under: its session's ("" for a global refinement without one).
func (s *Service) workspaceOf(ctx context.Context, q querier, scope harness.Scope, session string) string {
	if session == "" {
		session = scope.Session
	}
	if session == "" {
		return ""
	}
	sess, err := s.store.GetSessionIn(ctx, q, session)
	if err != nil {
		return ""
	}
	return sess.Workspace
}

// writeChanges stores a version of every entry next changed: a new or
// re-versioned entry, and a tombstone (its last content, one version on)
// of every entry it deleted. A re-created entry starts one past its
// tombstone (readScope hands Apply the tombstones), so an entry's history
// stays monotonic and Get at T never sees two version 1s.
func (s *Service) writeChanges(ctx context.Context, tx *sql.Tx, key string, cur, next harness.State, id string, now time.Time) error {
	for _, k := range harness.Kinds {
		for _, eid := range sortedIDs(next[k]) {
			e := next[k][eid]
			if old, ok := cur.Get(k, eid); ok && old.Version == e.Version {
				continue
			}
			e.Metadata.LastInjectedAt = nil
			if err := s.store.PutHarnessVersion(ctx, tx, store.HarnessVersion{ScopeKey: key, Entry: e, RefinementID: id, RecordedAt: now}); err != nil {
				return err
			}
		}
		for _, eid := range sortedIDs(cur[k]) {
			if _, ok := next.Get(k, eid); ok {
				continue
			}
			e := cur[k][eid]
			e.Version++
			e.UpdatedAt = now
			e.Metadata.LastInjectedAt = nil
			if err := s.store.PutHarnessVersion(ctx, tx, store.HarnessVersion{
				ScopeKey: key, Entry: e, Deleted: true, RefinementID: id, RecordedAt: now,
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedIDs(m map[string]harness.Entry) []string { return slices.Sorted(maps.Keys(m)) }
