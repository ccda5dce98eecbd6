package bench

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/harness"
)

// StateHash is the hash a snapshot's state is known by: sha256 hex of the
// canonical JSON of {kind, entries (harness) or digest (memory), history}
// (the seed hashes its captured state, entries and refinement history).
// Telemetry is left out (Metadata.LastInjectedAt): the agent being shown
// an entry changes nothing it would be shown, so it must not change the
// hash. Ids, session, workspace and times are not state.
func StateHash(s Snapshot) string {
	m := map[string]any{"kind": s.Kind, "history": nonNil(s.History)}
	if s.Kind == MemorySnapshot {
		m["digest"] = s.Digest
	} else {
		m["entries"] = canonicalState(s.Entries)
	}
	out, err := canonicalJSON(m)
	if err != nil {
		// Entries hold strings, integers, booleans and times only.
		panic(err)
	}
	return sha256Hex(out)
}

// VerifySnapshot reports whether a loaded snapshot's recorded hash still
// matches its state (the seed's loadReferenceSnapshot check), so a store
// that was edited behind mull's back is not benchmarked as if it were the
// captured one.
func VerifySnapshot(s Snapshot) error {
	if got := StateHash(s); got != s.StateHash {
		return fmt.Errorf("snapshot %s: state_hash mismatch (recorded %s, state hashes to %s)", s.ID, s.StateHash, got)
	}
	return nil
}

// canonicalState is a state as hashed and compared: every kind present
// (an empty kind and a missing one are the same state), telemetry out.
func canonicalState(s harness.State) map[string]map[string]harness.Entry {
	out := map[string]map[string]harness.Entry{}
	for _, k := range harness.Kinds {
		out[string(k)] = map[string]harness.Entry{}
	}
	for k, entries := range s {
		m := out[string(k)]
		if m == nil {
			m = map[string]harness.Entry{}
			out[string(k)] = m
		}
		for key, e := range entries {
			m[key] = withoutTelemetry(e)
		}
	}
	return out
}

// withoutTelemetry is e as hashed and compared: no telemetry, and its
// time in UTC, so the same instant read back from either database (or
// recorded in a refinement's JSON) compares equal.
func withoutTelemetry(e harness.Entry) harness.Entry {
	e.Metadata.LastInjectedAt = nil
	e.UpdatedAt = e.UpdatedAt.UTC()
	return e
}

// canonicalEntry is one entry as the delta check compares it: the seed's
// canonicalJson of the entry, telemetry out; "null" when absent.
func canonicalEntry(e *harness.Entry) string {
	if e == nil {
		return "null"
	}
	out, err := canonicalJSON(withoutTelemetry(*e))
	if err != nil {
		panic(err)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Derive is the candidate of a refinement's A/B: the reference plus
// exactly refinement r (the seed's deriveCandidateSnapshot), derived from
// the captured reference and r's recorded applied edits, never from the
// live store, which may have drifted since. An applied delete removes its
// entry; any other applied edit puts its AfterEntry; a rejected edit
// changed nothing and is skipped. The history is the reference's plus
// r.ID. CheckDelta must then prove the result.
func Derive(ref Snapshot, r harness.Refinement, id string, now time.Time) (Snapshot, error) {
	switch {
	case ref.Kind != HarnessSnapshot:
		return Snapshot{}, fmt.Errorf("reference snapshot %s is a %s snapshot; a refinement's candidate derives from a harness snapshot", ref.ID, ref.Kind)
	case strings.TrimSpace(r.ID) == "":
		return Snapshot{}, errors.New("refinement id must be non-empty")
	case strings.TrimSpace(id) == "":
		return Snapshot{}, errors.New("candidate snapshot id must be non-empty")
	}
	state := cloneState(ref.Entries)
	for _, e := range r.Edits {
		if !e.Applied {
			continue
		}
		if e.Action == harness.Delete {
			delete(state[e.Kind], e.ID)
		} else if e.AfterEntry != nil {
			if state[e.Kind] == nil {
				state[e.Kind] = map[string]harness.Entry{}
			}
			state[e.Kind][e.ID] = *e.AfterEntry
		}
	}
	cand := Snapshot{
		ID:           id,
		Kind:         HarnessSnapshot,
		Session:      ref.Session,
		Entries:      state,
		History:      append(slices.Clone(ref.History), r.ID),
		RefinementID: r.ID,
		Reference:    ref.ID,
		CapturedAt:   now,
	}
	cand.StateHash = StateHash(cand)
	return cand, nil
}

func cloneState(s harness.State) harness.State {
	out := make(harness.State, len(s))
	for k, entries := range s {
		m := make(map[string]harness.Entry, len(entries))
		for id, e := range entries {
			m[id] = e
		}
		out[k] = m
	}
	return out
}
