package harness_test

import (
	"reflect"
	"testing"

	"github.com/mullhq/mull/learn/harness"
)

// rollbackOpts are the options the service applies RollbackOf(r) with.
func rollbackOpts(r harness.Refinement) harness.ApplyOptions {
	return harness.ApplyOptions{ID: "rollback_" + r.ID, RollbackOf: r.ID, Scope: r.Scope, Baseline: harness.RollbackBaseline(r), Now: t1}
}

func rollback(t *testing.T, cur harness.State, r harness.Refinement) (harness.Refinement, harness.State) {
	t.Helper()
	return harness.Apply(cur, harness.RollbackOf(r), rollbackOpts(r))
}

// rules.spec.ts "rollback reason stamping".
func TestStampsRollbackReasonOnEveryGeneratedEditAndSurvivesValidation(t *testing.T) {
	cur := state(mem("u", "old"), mem("d", "doomed"))
	r, next := apply(cur, local(cur),
		harness.Edit{Action: harness.Create, Kind: harness.KindMemory, ID: "a", Content: str("A")},
		harness.Edit{Action: harness.Create, Kind: harness.KindMemory, ID: "b", Content: str("B")},
		harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "u", Reason: "r", Content: str("new")},
		harness.Edit{Action: harness.Delete, Kind: harness.KindMemory, ID: "d", Reason: "r"})
	r.ID = "refine_rules_3"
	p := harness.RollbackOf(r)
	if len(p.Edits) != 4 {
		t.Fatalf("rollback edits = %d", len(p.Edits))
	}
	for _, e := range p.Edits {
		if e.Reason != "rollback:refine_rules_3" {
			t.Errorf("reason = %q", e.Reason)
		}
		if msg := harness.Validate(e); msg != "" {
			t.Errorf("rollback edit %s invalid: %s", e.ID, msg)
		}
	}
	back, _ := rollback(t, next, r)
	for _, a := range back.Edits {
		wantApplied(t, a)
	}
}

// refine.spec.ts "reverses applied edits in reverse order".
func TestReversesAppliedEditsInReverseOrder(t *testing.T) {
	empty := state()
	r, next := harness.Apply(empty, harness.Proposal{ID: "refine_3", Summary: "two creates", Edits: []harness.Edit{
		{Action: harness.Create, Kind: harness.KindMemory, ID: "a", Content: str("A")},
		{Action: harness.Create, Kind: harness.KindMemory, ID: "b", Content: str("B")},
	}}, harness.ApplyOptions{ID: "refine_3", Scope: harness.Local("s1"), Baseline: empty, Now: t1})
	p := harness.RollbackOf(r)
	if p.ID != "rollback_refine_3" || p.Summary != "Rollback of refine_3" {
		t.Fatalf("proposal = %+v", p)
	}
	if len(p.Edits) != 2 || p.Edits[0].ID != "b" || p.Edits[1].ID != "a" || p.Edits[0].Action != harness.Delete {
		t.Fatalf("edits = %+v", p.Edits)
	}
	back, reverted := rollback(t, next, r)
	if back.RollbackOf != "refine_3" || back.ID != "rollback_refine_3" || back.Summary != "Rollback of refine_3" {
		t.Fatalf("rollback record = %+v", back)
	}
	if len(reverted[harness.KindMemory]) != 0 {
		t.Fatalf("reverted = %+v", reverted)
	}
}

// refine.spec.ts "records beforeEntry/afterEntry on update and restores
// metadata on rollback".
func TestRollbackOfAnUpdateRestoresEveryFieldAndBumpsTheVersion(t *testing.T) {
	old := entry(harness.KindSkill, "repro", "old steps")
	old.Title = "old title"
	old.Description = "old description"
	old.Metadata = harness.Metadata{SourceSession: "s1", Lifecycle: harness.Active}
	cur := state(old)
	o := local(cur)
	o.SourceSession = "s-now"
	r, next := apply(cur, o, harness.Edit{Action: harness.Update, Kind: harness.KindSkill, ID: "repro", Reason: "why",
		Content: str("new steps"), Title: str("new title"), Description: str("new description")})
	wantApplied(t, r.Edits[0])
	p := harness.RollbackOf(r)
	e := p.Edits[0]
	if e.Action != harness.Update || *e.Content != "old steps" || *e.Title != "old title" || *e.Description != "old description" || *e.Metadata != old.Metadata {
		t.Fatalf("rollback edit = %+v", e)
	}
	back, reverted := rollback(t, next, r)
	wantApplied(t, back.Edits[0])
	got, _ := reverted.Get(harness.KindSkill, "repro")
	want := old
	want.Version, want.UpdatedAt = 3, t1
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reverted = %+v\nwant       %+v", got, want)
	}
}

// refine.spec.ts "restores metadata when rolling back a delete".
func TestRollbackOfADeleteRestoresTheWholeEntry(t *testing.T) {
	old := entry(harness.KindSkill, "repro", "steps")
	old.Version = 4
	old.Title = "title"
	old.Description = "summary"
	old.Protection = harness.UserOwned
	old.Metadata = harness.Metadata{SourceSession: "s2", Lifecycle: harness.Archived, Pinned: true}
	cur := state(old)
	r, next := apply(cur, local(cur), harness.Edit{Action: harness.Delete, Kind: harness.KindSkill, ID: "repro", Reason: "remove"})
	wantApplied(t, r.Edits[0])
	e := harness.RollbackOf(r).Edits[0]
	if e.Action != harness.Create || *e.Content != "steps" || *e.Metadata != old.Metadata || *e.Protection != harness.UserOwned {
		t.Fatalf("rollback edit = %+v", e)
	}
	o := rollbackOpts(r)
	o.Tombstones = map[string]int{harness.TombstoneKey(harness.KindSkill, "repro"): 5} // the store's delete version
	o.Automatic = true                                                                 // protection restores even so
	back, reverted := harness.Apply(next, harness.RollbackOf(r), o)
	wantApplied(t, back.Edits[0])
	got, _ := reverted.Get(harness.KindSkill, "repro")
	want := old
	want.Version, want.UpdatedAt = 6, t1
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reverted = %+v\nwant       %+v", got, want)
	}
}

func TestRollbackOfACreateDeletes(t *testing.T) {
	empty := state()
	r, next := apply(empty, local(empty), harness.Edit{Action: harness.Create, Kind: harness.KindMemory, ID: "m", Content: str("x")})
	back, reverted := rollback(t, next, r)
	wantApplied(t, back.Edits[0])
	if back.Edits[0].Action != harness.Delete || back.Edits[0].BeforeEntry.Version != 1 {
		t.Fatalf("record = %+v", back.Edits[0])
	}
	if _, ok := reverted.Get(harness.KindMemory, "m"); ok {
		t.Fatal("m not deleted")
	}
}

func TestRollbackOfArchiveAndPinRestoresTheLifecycle(t *testing.T) {
	cur := state(mem("a", "x"), mem("p", "y"))
	r, next := apply(cur, local(cur),
		harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "a", Reason: "stale", Archive: yes()},
		harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "p", Reason: "keep", Pin: yes()})
	back, reverted := rollback(t, next, r)
	for _, a := range back.Edits {
		wantApplied(t, a)
	}
	for _, id := range []string{"a", "p"} {
		got, _ := reverted.Get(harness.KindMemory, id)
		if got.Archived() || got.Metadata.Pinned || got.Version != 3 || got.Content != cur[harness.KindMemory][id].Content {
			t.Errorf("%s = %+v", id, got)
		}
	}
	// The restored entry fingerprints as the original but for the version.
	got, _ := reverted.Get(harness.KindMemory, "a")
	got.Version = 1
	if harness.Fingerprint(got) != harness.Fingerprint(cur[harness.KindMemory]["a"]) {
		t.Errorf("restored %s; original %s", harness.Fingerprint(got), harness.Fingerprint(cur[harness.KindMemory]["a"]))
	}
}

// A rollback restores a prior state: the growth and shrink caps and the
// protection guards do not apply to it (the seed's would refuse to undo a
// large shrink under maxEntryGrowth).
func TestRollbackSkipsTheGrowthShrinkAndProtectionGuards(t *testing.T) {
	cur := state(mem("m", "a long memory of forty runes, give or take"), entry(harness.KindSkill, "s", "steps"))
	r, next := apply(cur, local(cur),
		harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "m", Reason: "trim", Content: str("short")},
		harness.Edit{Action: harness.Update, Kind: harness.KindSkill, ID: "s", Reason: "tweak", Content: str("steps!")})
	o := rollbackOpts(r)
	o.MaxGrowth, o.MaxShrink = 0.5, 0.5
	o.Automatic, o.ProtectedKinds = true, []harness.Kind{harness.KindSkill}
	back, reverted := harness.Apply(next, harness.RollbackOf(r), o)
	for _, a := range back.Edits {
		wantApplied(t, a)
	}
	if e, _ := reverted.Get(harness.KindMemory, "m"); e.Content != "a long memory of forty runes, give or take" {
		t.Fatalf("m = %+v", e)
	}
	// The same edit as a plain refinement is capped.
	plain := o
	plain.RollbackOf = ""
	capped, _ := harness.Apply(next, harness.RollbackOf(r), plain)
	wantRejected(t, capped.Edits[0], "skill entries are a protected kind (harness.protected_kinds), mutable only in explicit user sessions")
	wantRejected(t, capped.Edits[1], "entry growth exceeds the maxEntryGrowth cap")
}

// Rule 6 holds for a rollback: an entry changed since the refinement fails
// its rollback edit, the others still apply.
func TestRollbackOfAChangedEntryFailsWithMsgChanged(t *testing.T) {
	cur := state(mem("a", "a0"), mem("b", "b0"))
	r, next := apply(cur, local(cur),
		harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "a", Reason: "r", Content: str("a1")},
		harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "b", Reason: "r", Content: str("b1")},
		harness.Edit{Action: harness.Delete, Kind: harness.KindMemory, ID: "c", Reason: "r"}) // rejected: skipped
	later, changed := apply(next, local(next), harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "a", Reason: "r", Content: str("a2")})
	wantApplied(t, later.Edits[0])
	back, reverted := rollback(t, changed, r)
	if len(back.Edits) != 2 {
		t.Fatalf("rollback edits = %+v", back.Edits)
	}
	wantApplied(t, back.Edits[0]) // b, reversed order
	wantRejected(t, back.Edits[1], "entry changed during refinement planning")
	if e, _ := reverted.Get(harness.KindMemory, "a"); e.Content != "a2" {
		t.Errorf("a = %+v", e)
	}
	if e, _ := reverted.Get(harness.KindMemory, "b"); e.Content != "b0" || e.Version != 3 {
		t.Errorf("b = %+v", e)
	}
	// A deleted entry recreated since: its rollback create finds it.
	r, next = apply(cur, local(cur), harness.Edit{Action: harness.Delete, Kind: harness.KindMemory, ID: "a", Reason: "r"})
	_, recreated := apply(next, local(next), harness.Edit{Action: harness.Create, Kind: harness.KindMemory, ID: "a", Content: str("new a")})
	back, _ = rollback(t, recreated, r)
	wantRejected(t, back.Edits[0], "entry already exists")
}

func TestRollbackOfARollbackRestoresAgain(t *testing.T) {
	cur := state(mem("m", "v1"))
	r, next := apply(cur, local(cur), harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "m", Reason: "r", Content: str("v2")})
	back, reverted := rollback(t, next, r)
	again, redone := rollback(t, reverted, back)
	wantApplied(t, again.Edits[0])
	if again.RollbackOf != back.ID || again.Edits[0].Reason != "rollback:"+back.ID {
		t.Fatalf("record = %+v", again)
	}
	if e, _ := redone.Get(harness.KindMemory, "m"); e.Content != "v2" || e.Version != 4 {
		t.Fatalf("m = %+v", e)
	}
}

// refine.spec.ts "flags rollbackDegraded when the source edit lacks full
// snapshots": mull has no flag; a content-only record restores content.
func TestRollbackOfARecordWithoutSnapshotsRestoresContentOnly(t *testing.T) {
	legacy := harness.Refinement{ID: "r2", Summary: "legacy", Edits: []harness.AppliedEdit{
		{Action: harness.Update, Kind: harness.KindMemory, ID: "m", Before: str("old"), After: str("new"), BlastRadius: harness.RadiusGeneral, Applied: true},
		{Action: harness.Update, Kind: harness.KindMemory, ID: "none", Applied: true},
	}}
	p := harness.RollbackOf(legacy)
	if len(p.Edits) != 1 {
		t.Fatalf("edits = %+v", p.Edits)
	}
	want := harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "m", Content: str("old"), Reason: "rollback:r2"}
	if !reflect.DeepEqual(p.Edits[0], want) {
		t.Fatalf("edit = %+v", p.Edits[0])
	}
}

func TestRollbackBaseline(t *testing.T) {
	cur := state(mem("u", "u0"), mem("d", "d0"))
	r, next := apply(cur, local(cur),
		harness.Edit{Action: harness.Create, Kind: harness.KindPrompt, ID: "c", Content: str("c1")},
		harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "u", Reason: "r", Content: str("u1")},
		harness.Edit{Action: harness.Delete, Kind: harness.KindMemory, ID: "d", Reason: "r"},
		harness.Edit{Action: harness.Update, Kind: harness.KindMemory, ID: "x", Reason: "r", Content: str("x")})
	if got := harness.RollbackBaseline(r); !reflect.DeepEqual(got, next) {
		t.Fatalf("RollbackBaseline = %+v\nwant %+v", got, next)
	}
}
