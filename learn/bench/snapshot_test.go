package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/harness"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func entry(k harness.Kind, id, content string, version int) harness.Entry {
	return harness.Entry{ID: id, Kind: k, Version: version, Content: content, UpdatedAt: t0.Add(time.Duration(version) * time.Minute)}
}

func entryPtr(e harness.Entry) *harness.Entry { return &e }

// reference is a captured harness snapshot: two prompts, a memory, one
// refinement in its history.
func reference() Snapshot {
	s := Snapshot{ID: "snap-ref", Kind: HarnessSnapshot, CapturedAt: t0, History: []string{"refine_1"},
		Entries: harness.State{
			harness.KindPrompt: {"style": entry(harness.KindPrompt, "style", "be brief", 1), "tests": entry(harness.KindPrompt, "tests", "run go test", 2)},
			harness.KindMemory: {"db": entry(harness.KindMemory, "db", "sqlite and postgres", 1)},
		}}
	s.StateHash = StateHash(s)
	return s
}

// refinement updates style, creates a skill, deletes db and has one
// rejected edit.
func refinement() harness.Refinement {
	style, skill, db := entry(harness.KindPrompt, "style", "be brief; cite files", 2), entry(harness.KindSkill, "triage", "read the log first", 1), reference().Entries[harness.KindMemory]["db"]
	before := reference().Entries[harness.KindPrompt]["style"]
	return harness.Refinement{ID: "refine_2", Scope: harness.Global, CommittedAt: t0.Add(time.Hour), Edits: []harness.AppliedEdit{
		{Action: harness.Update, Kind: harness.KindPrompt, ID: "style", Before: &before.Content, After: &style.Content, BeforeEntry: &before, AfterEntry: &style, Applied: true},
		{Action: harness.Create, Kind: harness.KindSkill, ID: "triage", After: &skill.Content, AfterEntry: &skill, Applied: true},
		{Action: harness.Delete, Kind: harness.KindMemory, ID: "db", Before: &db.Content, BeforeEntry: &db, Applied: true},
		// A rejected edit that records what it proposed changed nothing.
		{Action: harness.Update, Kind: harness.KindPrompt, ID: "tests", Error: "rule 6: changed since the planner saw it",
			AfterEntry: entryPtr(entry(harness.KindPrompt, "tests", "never applied", 3)), Applied: false},
	}}
}

func TestStateHash(t *testing.T) {
	s := reference()
	h := StateHash(s)
	if len(h) != 64 || h != s.StateHash {
		t.Fatalf("hash %q", h)
	}
	same := func(name string, edit func(*Snapshot)) {
		t.Helper()
		c := reference()
		edit(&c)
		if StateHash(c) != h {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := func(name string, edit func(*Snapshot)) {
		t.Helper()
		c := reference()
		edit(&c)
		if StateHash(c) == h {
			t.Errorf("%s left the hash", name)
		}
	}
	same("the entry's last injection (telemetry)", func(c *Snapshot) {
		e := c.Entries[harness.KindPrompt]["style"]
		e.Metadata.LastInjectedAt = &t0
		c.Entries[harness.KindPrompt]["style"] = e
	})
	same("an entry's time in another zone", func(c *Snapshot) {
		e := c.Entries[harness.KindPrompt]["style"]
		e.UpdatedAt = e.UpdatedAt.In(time.FixedZone("CST", 8*3600))
		c.Entries[harness.KindPrompt]["style"] = e
	})
	same("an empty kind given", func(c *Snapshot) { c.Entries[harness.KindSubagent] = map[string]harness.Entry{} })
	same("ids, session, times", func(c *Snapshot) { c.ID, c.Session, c.CapturedAt, c.StateHash = "x", "s1", t0.Add(time.Hour), "" })
	differ("an entry's content", func(c *Snapshot) {
		e := c.Entries[harness.KindPrompt]["style"]
		e.Content += "!"
		c.Entries[harness.KindPrompt]["style"] = e
	})
	differ("an entry's pin", func(c *Snapshot) {
		e := c.Entries[harness.KindPrompt]["style"]
		e.Metadata.Pinned = true
		c.Entries[harness.KindPrompt]["style"] = e
	})
	differ("the history", func(c *Snapshot) { c.History = append(c.History, "refine_9") })
	differ("a shadowed global's key", func(c *Snapshot) {
		c.Entries[harness.KindMemory][harness.LocalPrefix+"db"] = c.Entries[harness.KindMemory]["db"]
	})

	none := Snapshot{Kind: MemorySnapshot}
	with := Snapshot{Kind: MemorySnapshot, Digest: "## Remembered context\n- a fact"}
	if StateHash(none) == StateHash(with) || StateHash(none) == StateHash(Snapshot{Kind: HarnessSnapshot}) {
		t.Errorf("memory snapshots: digest or kind not in the hash")
	}
}

func TestVerifySnapshot(t *testing.T) {
	s := reference()
	if err := VerifySnapshot(s); err != nil {
		t.Fatal(err)
	}
	s.History = nil
	if err := VerifySnapshot(s); err == nil || !strings.Contains(err.Error(), "state_hash mismatch") {
		t.Fatalf("got %v", err)
	}
}

func TestDerive(t *testing.T) {
	ref, r := reference(), refinement()
	cand, err := Derive(ref, r, "snap-cand", t0.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if got := cand.Entries[harness.KindPrompt]["style"].Content; got != "be brief; cite files" {
		t.Errorf("update not applied: %q", got)
	}
	if _, ok := cand.Entries[harness.KindSkill]["triage"]; !ok {
		t.Errorf("create not applied")
	}
	if _, ok := cand.Entries[harness.KindMemory]["db"]; ok {
		t.Errorf("delete not applied")
	}
	if got := cand.Entries[harness.KindPrompt]["tests"].Content; got != "run go test" {
		t.Errorf("a rejected edit changed the state: %q", got)
	}
	if !slices.Equal(cand.History, []string{"refine_1", "refine_2"}) || cand.RefinementID != "refine_2" || cand.Reference != "snap-ref" ||
		cand.ID != "snap-cand" || cand.Kind != HarnessSnapshot || cand.StateHash != StateHash(cand) || !cand.CapturedAt.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("candidate %+v", cand)
	}
	if VerifySnapshot(reference()) != nil || StateHash(ref) != reference().StateHash || len(ref.History) != 1 {
		t.Errorf("Derive modified the reference")
	}
	if err := CheckDelta(ref, cand, r, []string{r.ID}); err != nil {
		t.Errorf("the derived candidate fails its check: %v", err)
	}

	for name, tc := range map[string]struct {
		ref     Snapshot
		r       harness.Refinement
		id, msg string
	}{
		"a memory reference": {Snapshot{ID: "m", Kind: MemorySnapshot}, r, "c", "memory snapshot"},
		"no refinement id":   {ref, harness.Refinement{}, "c", "refinement id"},
		"no candidate id":    {ref, r, " ", "candidate snapshot id"},
	} {
		if _, err := Derive(tc.ref, tc.r, tc.id, t0); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want %q", name, err, tc.msg)
		}
	}
}

func TestCheckDelta(t *testing.T) {
	derived := func() (Snapshot, Snapshot, harness.Refinement) {
		ref, r := reference(), refinement()
		cand, err := Derive(ref, r, "snap-cand", t0)
		if err != nil {
			t.Fatal(err)
		}
		return ref, cand, r
	}
	setEntry := func(s *Snapshot, e harness.Entry) {
		if s.Entries[e.Kind] == nil {
			s.Entries[e.Kind] = map[string]harness.Entry{}
		}
		s.Entries[e.Kind][e.ID] = e
	}
	for _, tc := range []struct {
		name  string
		since []string
		edit  func(ref, cand *Snapshot, r *harness.Refinement)
		want  DeltaReason
	}{
		{name: "the reference plus exactly the refinement", since: []string{"refine_2"}},
		{name: "the refinement not committed after the reference", since: nil, want: RefinementNotFound},
		{name: "another refinement committed after the reference", since: []string{"refine_3"}, want: RefinementNotFound},
		{name: "a second, unrelated change after the refinement", since: []string{"refine_2", "refine_3"}, want: HistoryMismatch},
		{name: "a second, unrelated change before the refinement", since: []string{"refine_3", "refine_2"}, want: HistoryMismatch},
		{name: "a candidate naming another refinement", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(_, c *Snapshot, _ *harness.Refinement) { c.RefinementID = "refine_3" }},
		{name: "a candidate history with two more", since: []string{"refine_2"}, want: HistoryMismatch,
			edit: func(_, c *Snapshot, _ *harness.Refinement) { c.History = []string{"refine_1", "refine_3", "refine_2"} }},
		{name: "a candidate history without the refinement", since: []string{"refine_2"}, want: RefinementNotFound,
			edit: func(_, c *Snapshot, _ *harness.Refinement) { c.History = []string{"refine_1"} }},
		{name: "a candidate history whose past differs", since: []string{"refine_2"}, want: HistoryMismatch,
			edit: func(_, c *Snapshot, _ *harness.Refinement) { c.History = []string{"refine_0", "refine_2"} }},
		{name: "a candidate history ending in another refinement", since: []string{"refine_2"}, want: RefinementNotFound,
			edit: func(_, c *Snapshot, _ *harness.Refinement) { c.History = []string{"refine_1", "refine_3"} }},
		{name: "a drifted entry in the candidate", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(_, c *Snapshot, _ *harness.Refinement) {
				setEntry(c, entry(harness.KindPrompt, "tests", "run go test -race", 3))
			}},
		{name: "an applied edit missing from the candidate", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(r, c *Snapshot, _ *harness.Refinement) { setEntry(c, r.Entries[harness.KindPrompt]["style"]) }},
		{name: "a reference entry other than the edit's before", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(r, _ *Snapshot, _ *harness.Refinement) {
				setEntry(r, entry(harness.KindPrompt, "style", "be terse", 1))
			}},
		{name: "a reference entry differing from the before only in telemetry", since: []string{"refine_2"},
			edit: func(r, _ *Snapshot, _ *harness.Refinement) {
				e := r.Entries[harness.KindPrompt]["style"]
				e.Metadata.LastInjectedAt = &t0
				setEntry(r, e)
			}},
		{name: "a candidate entry other than the edit's after", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(_, c *Snapshot, _ *harness.Refinement) {
				setEntry(c, entry(harness.KindPrompt, "style", "be brief; cite lines", 2))
			}},
		{name: "a create of an entry the reference had", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(r, _ *Snapshot, _ *harness.Refinement) {
				setEntry(r, entry(harness.KindSkill, "triage", "old", 1))
			}},
		{name: "a delete the candidate does not show", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(_, c *Snapshot, _ *harness.Refinement) {
				setEntry(c, entry(harness.KindMemory, "db", "sqlite only", 2))
			}},
		{name: "before and after content without whole entries", since: []string{"refine_2"},
			edit: func(_, _ *Snapshot, r *harness.Refinement) { r.Edits[2].BeforeEntry = nil }},
		{name: "a before content other than the reference's", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(_, _ *Snapshot, r *harness.Refinement) {
				r.Edits[2].BeforeEntry, r.Edits[2].Before = nil, ptrString("postgres only")
			}},
		{name: "a global edit of a shadowed id", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(r, c *Snapshot, _ *harness.Refinement) {
				for _, s := range []*Snapshot{r, c} {
					s.Entries[harness.KindPrompt][harness.LocalPrefix+"style"] = entry(harness.KindPrompt, "style", "global", 1)
				}
			}},
		{name: "a session's update of its own entry over a global one", since: []string{"refine_2"},
			edit: func(r, c *Snapshot, rf *harness.Refinement) {
				rf.Scope = harness.Local("s1")
				for _, s := range []*Snapshot{r, c} {
					s.Entries[harness.KindPrompt][harness.LocalPrefix+"style"] = entry(harness.KindPrompt, "style", "global", 1)
				}
			}},
		{name: "a session's delete of its entry over a global one", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(r, c *Snapshot, rf *harness.Refinement) {
				rf.Scope = harness.Local("s1")
				for _, s := range []*Snapshot{r, c} {
					s.Entries[harness.KindMemory][harness.LocalPrefix+"db"] = entry(harness.KindMemory, "db", "global", 1)
				}
			}},
		{name: "a memory snapshot", since: []string{"refine_2"}, want: DeltaMismatch,
			edit: func(r, _ *Snapshot, _ *harness.Refinement) { r.Kind = MemorySnapshot }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref, cand, r := derived()
			if tc.edit != nil {
				tc.edit(&ref, &cand, &r)
			}
			err := CheckDelta(ref, cand, r, tc.since)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var de *DeltaError
			if !errors.As(err, &de) || de.Reason != tc.want || de.RefinementID != "refine_2" {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), DeltaCode+": ") || !strings.HasSuffix(err.Error(), string(tc.want)) {
				t.Fatalf("message %q", err)
			}
		})
	}
}

func ptrString(s string) *string { return &s }
