package bench

import (
	"slices"

	"github.com/mullhq/mull/learn/harness"
)

// CheckDelta proves that cand is exactly ref plus refinement r (the seed's
// validateCandidateDelta), so a run never measures drift or a second
// change as if it were r's effect. It returns nil or a *DeltaError; a
// failed check means the run is refused before any cell runs.
//
// since lists, in commit order, the refinements committed to the stores
// ref covers after ref was captured (the store knows them; the snapshot
// cannot). The reference must have been captured just before r: r not
// among them is refinement-not-found, and anything besides r is
// history-mismatch, which is what catches a second, unrelated change
// committed in between. Then the seed's rules, in its order:
//   - a candidate naming another refinement: candidate-delta-mismatch;
//   - the candidate's history must be the reference's plus r.ID, last
//     (refinement-not-found when r is not in it at the right place,
//     history-mismatch when the rest differs);
//   - the entries that differ must be exactly those of r's applied edits;
//   - a create must add, a delete remove, an update change an entry
//     present on both sides;
//   - the reference's entry must be the edit's BeforeEntry (or its Before
//     content), the candidate's its AfterEntry (or its After content),
//     compared canonically.
//
// And one of mull's: where the merged view shows id shadowed (a session's
// entry over a global one, the global kept under harness.LocalPrefix+id),
// a global refinement's edit of id, or a session's delete of it, is a
// candidate-delta-mismatch: the seed's derivation keys entries by id
// alone, so it would change the session's entry for the global one, or
// not bring the global one back. A session's update of its own entry
// derives correctly and passes.
func CheckDelta(ref, cand Snapshot, r harness.Refinement, since []string) error {
	fail := func(reason DeltaReason) error { return &DeltaError{RefinementID: r.ID, Reason: reason} }
	if !slices.Contains(since, r.ID) {
		return fail(RefinementNotFound)
	}
	if len(since) != 1 {
		return fail(HistoryMismatch)
	}
	if ref.Kind != HarnessSnapshot || cand.Kind != HarnessSnapshot {
		return fail(DeltaMismatch)
	}
	if cand.RefinementID != "" && cand.RefinementID != r.ID {
		return fail(DeltaMismatch)
	}
	if reason, ok := checkHistory(ref.History, cand.History, r.ID); !ok {
		return fail(reason)
	}
	if !checkEntries(ref.Entries, cand.Entries, r) {
		return fail(DeltaMismatch)
	}
	return nil
}

// checkHistory: cand must extend ref by exactly id, in commit order.
func checkHistory(ref, cand []string, id string) (DeltaReason, bool) {
	if len(cand) != len(ref)+1 {
		if !slices.Contains(cand, id) {
			return RefinementNotFound, false
		}
		return HistoryMismatch, false
	}
	if !slices.Equal(ref, cand[:len(ref)]) {
		return HistoryMismatch, false
	}
	if cand[len(cand)-1] != id {
		return RefinementNotFound, false
	}
	return "", true
}

// checkEntries is the seed's entry-level part of the check: every
// difference is one of r's applied edits, and each applied edit is
// consistent with its recorded before and after.
func checkEntries(ref, cand harness.State, r harness.Refinement) bool {
	var applied []harness.AppliedEdit
	editKeys := map[string]bool{}
	for _, e := range r.Edits {
		if e.Applied {
			applied = append(applied, e)
			editKeys[entryKey(e.Kind, e.ID)] = true
		}
	}
	diff := diffKeys(ref, cand)
	if len(diff) != len(editKeys) {
		return false
	}
	for k := range editKeys {
		if !diff[k] {
			return false
		}
	}
	for _, e := range applied {
		if !checkEdit(ref, cand, e, r.Scope) {
			return false
		}
	}
	return true
}

func checkEdit(ref, cand harness.State, e harness.AppliedEdit, scope harness.Scope) bool {
	if (shadowed(ref, e) || shadowed(cand, e)) && (scope.IsGlobal() || e.Action == harness.Delete) {
		return false
	}
	refEntry, candEntry := lookup(ref, e.Kind, e.ID), lookup(cand, e.Kind, e.ID)
	switch e.Action {
	case harness.Create:
		if refEntry != nil || candEntry == nil {
			return false
		}
	case harness.Delete:
		if refEntry == nil || candEntry != nil {
			return false
		}
	default:
		if refEntry == nil || candEntry == nil {
			return false
		}
	}
	if e.BeforeEntry != nil {
		if canonicalEntry(refEntry) != canonicalEntry(e.BeforeEntry) {
			return false
		}
	} else if e.Before != nil && (refEntry == nil || refEntry.Content != *e.Before) {
		return false
	}
	if e.AfterEntry != nil {
		if canonicalEntry(candEntry) != canonicalEntry(e.AfterEntry) {
			return false
		}
	} else if e.After != nil && (candEntry == nil || candEntry.Content != *e.After) {
		return false
	}
	return true
}

// shadowed: the merged state s keeps a shadowed global of e's id.
func shadowed(s harness.State, e harness.AppliedEdit) bool {
	_, ok := s[e.Kind][harness.LocalPrefix+e.ID]
	return ok
}

func lookup(s harness.State, k harness.Kind, id string) *harness.Entry {
	e, ok := s[k][id]
	if !ok {
		return nil
	}
	return &e
}

// diffKeys are the entry keys whose canonical form differs between a and
// b, over every kind either holds.
func diffKeys(a, b harness.State) map[string]bool {
	out := map[string]bool{}
	kinds := map[harness.Kind]bool{}
	for k := range a {
		kinds[k] = true
	}
	for k := range b {
		kinds[k] = true
	}
	for k := range kinds {
		ids := map[string]bool{}
		for id := range a[k] {
			ids[id] = true
		}
		for id := range b[k] {
			ids[id] = true
		}
		for id := range ids {
			if canonicalEntry(lookup(a, k, id)) != canonicalEntry(lookup(b, k, id)) {
				out[entryKey(k, id)] = true
			}
		}
	}
	return out
}

func entryKey(k harness.Kind, id string) string { return string(k) + ":" + id }
