package harnesses

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// notFound is an ErrNotFound with the seed's message.
type notFound struct{ msg string }

func (e *notFound) Error() string   { return e.msg }
func (e *notFound) Is(t error) bool { return t == ErrNotFound }

// scopeOf parses a scope key ("global", "session:<id>").
func scopeOf(key string) harness.Scope {
	if s, ok := strings.CutPrefix(key, "session:"); ok {
		return harness.Local(s)
	}
	return harness.Global
}

func (s *Service) state(ctx context.Context, q querier, scope harness.Scope) (harness.State, error) {
	st, _, err := s.readScope(ctx, q, scope.Key())
	return st, err
}

func (s *Service) merged(ctx context.Context, q querier, session string) (global, local, merged harness.State, err error) {
	if global, err = s.state(ctx, q, harness.Global); err != nil {
		return nil, nil, nil, err
	}
	if session == "" {
		return global, harness.State{}, global, nil
	}
	if local, err = s.state(ctx, q, harness.Local(session)); err != nil {
		return nil, nil, nil, err
	}
	return global, local, harness.Merge(global, local), nil
}

// injections counts each entry's injections over every session, keyed
// scope key, kind, id (summed in SQL); kind and id narrow it to one entry.
func (s *Service) injections(ctx context.Context, q querier, keys []string, kind harness.Kind, id string) (map[string]int, map[string]time.Time, error) {
	rows, err := s.store.HarnessInjectionTotals(ctx, q, keys, kind, id)
	if err != nil {
		return nil, nil, err
	}
	counts, last := map[string]int{}, map[string]time.Time{}
	for _, in := range rows {
		k := in.ScopeKey + "\x00" + harness.TombstoneKey(in.Kind, in.ID)
		counts[k], last[k] = in.Count, in.LastInjectedAt
	}
	return counts, last, nil
}

func checkKind(k harness.Kind) error {
	if k != "" && !validKind(k) {
		return &FieldError{Field: "kind", Problem: fmt.Sprintf("%q is not one of %v", k, harness.Kinds)}
	}
	return nil
}

// list is List.
func (s *Service) list(ctx context.Context, f ListFilter) ([]EntryView, error) {
	if err := checkKind(f.Kind); err != nil {
		return nil, err
	}
	db := s.store.DB
	global, err := s.state(ctx, db, harness.Global)
	if err != nil {
		return nil, err
	}
	keys := []string{harness.Global.Key()}
	local := harness.State{}
	if f.Session != "" {
		if local, err = s.state(ctx, db, harness.Local(f.Session)); err != nil {
			return nil, err
		}
		keys = append(keys, harness.Local(f.Session).Key())
	}
	counts, last, err := s.injections(ctx, db, keys, f.Kind, "")
	if err != nil {
		return nil, err
	}
	var out []EntryView
	add := func(scope harness.Scope, st harness.State, shadowedBy harness.State) {
		for _, k := range harness.Kinds {
			if f.Kind != "" && k != f.Kind {
				continue
			}
			for _, id := range sortedIDs(st[k]) {
				e := st[k][id]
				if e.Archived() && !f.Archived {
					continue
				}
				v := s.view(scope, e, counts, last)
				_, v.Shadowed = shadowedBy.Get(k, id)
				out = append(out, v)
			}
		}
	}
	add(harness.Local(f.Session), local, nil)
	add(harness.Global, global, local)
	slices.SortStableFunc(out, func(a, b EntryView) int {
		return strings.Compare(string(a.Kind)+"\x00"+a.ID, string(b.Kind)+"\x00"+b.ID)
	})
	return out, nil
}

func (s *Service) view(scope harness.Scope, e harness.Entry, counts map[string]int, last map[string]time.Time) EntryView {
	k := scope.Key() + "\x00" + harness.TombstoneKey(e.Kind, e.ID)
	if t, ok := last[k]; ok {
		e.Metadata.LastInjectedAt = &t
	}
	return EntryView{Entry: e, Scope: scope, Injections: counts[k]}
}

// resolveKind is ref's kind: given, or the only kind the id has in the
// scope (kinds lists them). Several are a ConflictError naming them.
func resolveKind(ref EntryRef, kinds []harness.Kind) (harness.Kind, error) {
	if ref.Kind != "" {
		return ref.Kind, nil
	}
	switch len(kinds) {
	case 0:
		return "", &notFound{msg: fmt.Sprintf("harness entry %s not found in the %s store", ref.ID, ref.Scope)}
	case 1:
		return kinds[0], nil
	}
	return "", &ConflictError{Msg: fmt.Sprintf("ambiguous id: %s names entries of kinds %v; give the kind", ref.ID, kinds)}
}

func checkRef(ref EntryRef) error {
	if strings.TrimSpace(ref.ID) == "" {
		return &FieldError{Field: "id", Problem: "required"}
	}
	return checkKind(ref.Kind)
}

// get is Get.
func (s *Service) get(ctx context.Context, ref EntryRef, at time.Time) (EntryView, error) {
	if err := checkRef(ref); err != nil {
		return EntryView{}, err
	}
	db, key := s.store.DB, ref.Scope.Key()
	kinds, err := s.store.HarnessKindsOf(ctx, db, key, ref.ID)
	if err != nil {
		return EntryView{}, err
	}
	if at.IsZero() {
		cur, err := s.state(ctx, db, ref.Scope)
		if err != nil {
			return EntryView{}, err
		}
		kinds = slices.DeleteFunc(kinds, func(k harness.Kind) bool { _, ok := cur.Get(k, ref.ID); return !ok })
		kind, err := resolveKind(ref, kinds)
		if err != nil {
			return EntryView{}, err
		}
		e, ok := cur.Get(kind, ref.ID)
		if !ok {
			return EntryView{}, &notFound{msg: fmt.Sprintf("harness entry %s/%s not found in the %s store", kind, ref.ID, ref.Scope)}
		}
		counts, last, err := s.injections(ctx, db, []string{key}, kind, ref.ID)
		if err != nil {
			return EntryView{}, err
		}
		return s.view(ref.Scope, e, counts, last), nil
	}
	kind, err := resolveKind(ref, kinds)
	if err != nil {
		return EntryView{}, err
	}
	v, ok, err := s.store.HarnessVersionAt(ctx, db, key, kind, ref.ID, at)
	if err != nil {
		return EntryView{}, err
	}
	if !ok || v.Deleted {
		return EntryView{}, &notFound{msg: fmt.Sprintf("harness entry %s/%s did not exist in the %s store at %s",
			kind, ref.ID, ref.Scope, at.UTC().Format(time.RFC3339Nano))}
	}
	return EntryView{Entry: v.Entry, Scope: ref.Scope}, nil
}

// versions is Versions.
func (s *Service) versions(ctx context.Context, ref EntryRef) ([]Version, error) {
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	db, key := s.store.DB, ref.Scope.Key()
	kinds, err := s.store.HarnessKindsOf(ctx, db, key, ref.ID)
	if err != nil {
		return nil, err
	}
	kind, err := resolveKind(ref, kinds)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.HarnessVersions(ctx, db, key, kind, ref.ID)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &notFound{msg: fmt.Sprintf("harness entry %s/%s not found in the %s store", kind, ref.ID, ref.Scope)}
	}
	out := make([]Version, len(rows))
	for i, v := range rows {
		out[i] = Version{Entry: v.Entry, Deleted: v.Deleted, RefinementID: v.RefinementID, RecordedAt: v.RecordedAt}
	}
	return out, nil
}

func refinementView(r store.HarnessRefinement) RefinementView {
	ref := r.Refinement
	ref.Scope = scopeOf(r.ScopeKey)
	return RefinementView{Refinement: ref, Source: Source(r.Source), JobID: r.JobID, SessionID: r.SessionID,
		Automatic: r.Automatic, RolledBackBy: r.RolledBackBy}
}

// history is History.
func (s *Service) history(ctx context.Context, q querier, f HistoryFilter) ([]RefinementView, error) {
	var keys []string
	switch f.Scope {
	case "", "global", "local":
	default:
		return nil, &FieldError{Field: "scope", Problem: fmt.Sprintf("%q is not global or local", f.Scope)}
	}
	if f.Limit < 0 || f.Limit > 1000 {
		return nil, &FieldError{Field: "limit", Problem: fmt.Sprintf("%d is not between 1 and 1000", f.Limit)}
	}
	limit := f.Limit
	if f.Scope != "global" && f.Session != "" {
		keys = append(keys, harness.Local(f.Session).Key())
	}
	if f.Scope != "local" && (f.Session != "" || f.Scope == "global") {
		keys = append(keys, harness.Global.Key())
	}
	if f.Scope == "local" && f.Session == "" {
		limit = 1000 // every session's: filtered below
	}
	rows, err := s.store.ListHarnessRefinements(ctx, q, keys, limit)
	if err != nil {
		return nil, err
	}
	out := make([]RefinementView, 0, len(rows))
	for _, r := range rows {
		if f.Scope == "local" && r.ScopeKey == harness.Global.Key() {
			continue
		}
		out = append(out, refinementView(r))
	}
	if n := cmp.Or(f.Limit, 50); len(out) > n {
		out = out[:n]
	}
	return out, nil
}
