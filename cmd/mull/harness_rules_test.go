package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/harness"
)

// The seed's messages, spelt out here rather than taken from
// learn/harness, so a changed message fails this test.
const (
	msgBaseImmutable    = "the base system prompt is immutable"
	msgSkillKebab       = "skill ids must be kebab-case"
	msgArchivePinUpdate = "archive/pin only valid on update edits"
	msgContentRequired  = "non-delete edits require content"
	msgGlobalReadOnly   = "global entries are read-only during a local refinement; create a local shadow first"
	msgExists           = "entry already exists"
	msgNotFound         = "entry not found"
	msgProtected        = "protected entries are mutable only in explicit user sessions"
	msgGrowth           = "entry growth exceeds the maxEntryGrowth cap"
	msgChanged          = "entry changed during refinement planning"
	msgAlreadyArchived  = "already archived"
	msgNotArchived      = "not archived"
	// mull's own: harness.protected_kinds (default [skill]), the shrink
	// guard, the trust gate.
	msgProtectedSkill = "skill entries are a protected kind (harness.protected_kinds), mutable only in explicit user sessions"
	msgShrink         = "entry shrink exceeds the maxEntryShrink cap"
	msgQuarantined    = "quarantined by the trust gate: "
)

// missingReason is the seed's rule-1 message for an edit of id.
func missingReason(id string) string {
	return `edit "` + id + `" rejected: missing reason, please re-add it`
}

// mk is an edit: action, kind, id, then field/value pairs.
func mk(action, kind, id string, fields ...any) edit {
	e := edit{"action": action, "kind": kind, "id": id}
	for i := 0; i+1 < len(fields); i += 2 {
		e[fields[i].(string)] = fields[i+1]
	}
	return e
}

// ten is a ten-character content, the rule cases' starting length: 15
// characters is exactly at max_entry_growth (0.5), 16 over it; 5 exactly
// at max_entry_shrink (0.5), 4 under it.
const ten = "0123456789"

// ruleStep is one apply of one edit and the message it must get ("":
// applied).
type ruleStep struct {
	edit      edit
	automatic bool
	baseline  map[string]int
	want      string
	// radius, when set, is the blast radius the applied edit records.
	radius harness.BlastRadius
}

// ruleCase is a seed case by its name: edits applied by hand first
// (global to the global store), then the steps, in the case's own session
// store; check, when set, reads what the steps left.
type ruleCase struct {
	name   string
	global []edit
	setup  []edit
	steps  []ruleStep
	check  func(t *testing.T, p *serveProc, session string)
}

var ruleCases = []ruleCase{
	{name: "accepts create without reason", steps: []ruleStep{
		{edit: mk("create", "memory", "x", "content", ten)}}},
	{name: "rejects update/delete without reason with the exact message", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{
			{edit: mk("update", "memory", "x", "content", "abcdefghij"), want: missingReason("x")},
			{edit: mk("delete", "memory", "x"), want: missingReason("x")},
			{edit: mk("update", "memory", "x", "content", "abcdefghij", "reason", "  "), want: missingReason("x")},
		}},
	{name: "accepts update/delete with a reason", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{
			{edit: mk("update", "memory", "x", "content", "abcdefghij", "reason", "why")},
			{edit: mk("delete", "memory", "x", "reason", "why")},
		}},
	{name: "treats the base system prompt as immutable", steps: []ruleStep{
		{edit: mk("update", "prompt", "base_system_prompt", "content", "x", "reason", "why"), want: msgBaseImmutable},
		{edit: mk("create", "prompt", "base_system_prompt", "content", "x"), want: msgBaseImmutable},
		{edit: mk("delete", "prompt", "base_system_prompt", "reason", "why"), want: msgBaseImmutable},
	}},
	{name: "validates skill edits: kebab-case id, content required, description optional", steps: []ruleStep{
		{edit: mk("create", "skill", "Not Kebab", "content", "c"), want: msgSkillKebab},
		{edit: mk("create", "skill", "deploy_steps", "content", "c"), want: msgSkillKebab},
		{edit: mk("create", "skill", "deploy-steps", "content", "1. run make deploy", "description", "summary")},
		{edit: mk("update", "skill", "deploy-steps", "reason", "why"), want: msgContentRequired},
		{edit: mk("delete", "skill", "deploy-steps", "reason", "why")},
	}},
	{name: "rejects an unknown blastRadius value", steps: []ruleStep{
		// The rejected edit records the radius normalized to general, as
		// the seed's "normalizes an invalid blastRadius to general on
		// rejected edits".
		{edit: mk("create", "memory", "x", "content", ten, "blast_radius", "bogus"), want: "invalid blastRadius: bogus", radius: harness.RadiusGeneral},
	}},
	{name: "accepts every valid blastRadius value", steps: []ruleStep{
		{edit: mk("create", "memory", "g", "content", ten, "blast_radius", "general"), radius: harness.RadiusGeneral},
		{edit: mk("create", "memory", "p", "content", ten, "blast_radius", "project"), radius: harness.RadiusProject},
		{edit: mk("create", "memory", "s", "content", ten, "blast_radius", "session"), radius: harness.RadiusSession},
		{edit: mk("create", "memory", "d", "content", ten), radius: harness.RadiusGeneral},
	}},
	{name: "validateEdit accepts archive/pin edits without content and rejects non-update lifecycle edits",
		setup: []edit{mk("create", "memory", "m", "content", ten)},
		steps: []ruleStep{
			{edit: mk("create", "memory", "m2", "content", ten, "archive", true), want: msgArchivePinUpdate},
			{edit: mk("delete", "memory", "m", "pin", true, "reason", "remove"), want: msgArchivePinUpdate},
			{edit: mk("update", "memory", "m", "archive", true, "reason", "hide")},
			{edit: mk("update", "memory", "m", "pin", true, "reason", "lock")},
		}},
	{name: "archives an active entry, bumps version, records snapshots, and rejects re-archive",
		setup: []edit{mk("create", "memory", "m", "content", ten)},
		steps: []ruleStep{
			{edit: mk("update", "memory", "m", "archive", true, "reason", "hide")},
			{edit: mk("update", "memory", "m", "archive", true, "reason", "hide"), want: msgAlreadyArchived},
			{edit: mk("update", "memory", "m", "archive", false, "reason", "back")},
			{edit: mk("update", "memory", "m", "archive", false, "reason", "back"), want: msgNotArchived},
		},
		check: func(t *testing.T, p *serveProc, session string) {
			wantVersions(t, p.mustEntry(t, session, harness.KindMemory, "m"), 3, ten)
		}},
	{name: "requires content for non-delete edits", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{
			{edit: mk("update", "memory", "x", "reason", "why"), want: msgContentRequired},
			{edit: mk("create", "memory", "y"), want: msgContentRequired},
		}},
	{name: "rejects update of a global-only entry with the exact message",
		global: []edit{mk("create", "memory", "global-only", "content", "the global copy")},
		steps: []ruleStep{
			{edit: mk("update", "memory", "global-only", "content", "the local copy", "reason", "why"), want: msgGlobalReadOnly},
			// "rejects delete of a global-only entry"
			{edit: mk("delete", "memory", "global-only", "reason", "why"), want: msgGlobalReadOnly},
			// "allows create of a global-only id as the local shadow"
			{edit: mk("create", "memory", "global-only", "content", "the shadow copy")},
			// "allows update of an existing local shadow"
			{edit: mk("update", "memory", "global-only", "content", "the shadow edit", "reason", "why")},
		},
		check: func(t *testing.T, p *serveProc, session string) {
			wantVersions(t, p.mustEntry(t, session, harness.KindMemory, "global-only"), 2, "the shadow edit")
			wantVersions(t, p.mustEntry(t, "", harness.KindMemory, "global-only"), 1, "the global copy")
		}},
	{name: "rejects a create of an existing entry and an edit of a missing one", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{
			{edit: mk("create", "memory", "x", "content", ten), want: msgExists},
			{edit: mk("update", "memory", "missing", "content", ten, "reason", "why"), want: msgNotFound},
			{edit: mk("delete", "memory", "missing", "reason", "why"), want: msgNotFound},
		}},
	{name: "rejects an automatic update of a protected entry with the exact message",
		setup: []edit{mk("create", "memory", "m", "content", ten, "protection", "user-owned"), mk("create", "memory", "u", "content", ten)},
		steps: []ruleStep{
			{edit: mk("update", "memory", "m", "content", "abcdefghij", "reason", "auto"), automatic: true, want: msgProtected},
			// "rejects an automatic delete of a protected entry"
			{edit: mk("delete", "memory", "m", "reason", "auto"), automatic: true, want: msgProtected},
			// "allows automatic edits of unprotected entries"
			{edit: mk("update", "memory", "u", "content", "abcdefghij", "reason", "auto"), automatic: true},
			// "allows the tool path (automatic false) to edit a protected entry"
			{edit: mk("update", "memory", "m", "content", "abcdefghij", "reason", "tool")},
		}},
	{name: "rejects an automatic update or delete of a protected kind (skill), allows it by hand",
		setup: []edit{mk("create", "skill", "deploy-steps", "content", "1. run make", "description", "deploy")},
		steps: []ruleStep{
			{edit: mk("update", "skill", "deploy-steps", "content", "1. run make", "reason", "auto"), automatic: true, want: msgProtectedSkill},
			{edit: mk("delete", "skill", "deploy-steps", "reason", "auto"), automatic: true, want: msgProtectedSkill},
			// A new skill may be born on the automatic path.
			{edit: mk("create", "skill", "release-steps", "content", "1. tag", "description", "release"), automatic: true},
			// A protected kind does not protect the memory kind.
			{edit: mk("create", "memory", "m", "content", ten), automatic: true},
			{edit: mk("update", "memory", "m", "content", "abcdefghij", "reason", "auto"), automatic: true},
			{edit: mk("update", "skill", "deploy-steps", "content", "1. run make", "reason", "by hand")},
		}},
	{name: "allows an update exactly at the maxEntryGrowth threshold", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{{edit: mk("update", "memory", "x", "content", strings.Repeat("y", 15), "reason", "grow")}},
		check: func(t *testing.T, p *serveProc, session string) {
			wantVersions(t, p.mustEntry(t, session, harness.KindMemory, "x"), 2, strings.Repeat("y", 15))
		}},
	{name: "rejects an update exceeding maxEntryGrowth with the exact message", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{{edit: mk("update", "memory", "x", "content", strings.Repeat("y", 16), "reason", "grow"), want: msgGrowth, radius: harness.RadiusGeneral}},
		check: func(t *testing.T, p *serveProc, session string) {
			wantVersions(t, p.mustEntry(t, session, harness.KindMemory, "x"), 1, ten)
		}},
	{name: "skips the check when the old content is empty", setup: []edit{mk("create", "memory", "e", "content", "")},
		steps: []ruleStep{{edit: mk("update", "memory", "e", "content", strings.Repeat("y", 200), "reason", "grow")}}},
	{name: "allows an update exactly at the max_entry_shrink threshold", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{{edit: mk("update", "memory", "x", "content", "01234", "reason", "shrink")}},
		check: func(t *testing.T, p *serveProc, session string) {
			wantVersions(t, p.mustEntry(t, session, harness.KindMemory, "x"), 2, "01234")
		}},
	{name: "rejects an update shrinking past max_entry_shrink", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{{edit: mk("update", "memory", "x", "content", "0123", "reason", "shrink"), want: msgShrink}},
		check: func(t *testing.T, p *serveProc, session string) {
			wantVersions(t, p.mustEntry(t, session, harness.KindMemory, "x"), 1, ten)
		}},
	{name: "rejects edits whose baseline entry changed during planning", setup: []edit{mk("create", "memory", "x", "content", ten)},
		steps: []ruleStep{
			{edit: mk("update", "memory", "x", "content", "abcdefghij", "reason", "first"), baseline: map[string]int{"memory/x": 1}},
			{edit: mk("update", "memory", "x", "content", "ABCDEFGHIJ", "reason", "stale"), baseline: map[string]int{"memory/x": 1}, want: msgChanged},
			// Planned against the version it is at, it applies.
			{edit: mk("update", "memory", "x", "content", "ABCDEFGHIJ", "reason", "fresh"), baseline: map[string]int{"memory/x": 2}},
		},
		check: func(t *testing.T, p *serveProc, session string) {
			wantVersions(t, p.mustEntry(t, session, harness.KindMemory, "x"), 3, "ABCDEFGHIJ")
			// Per edit, as the seed: the stale edit is rejected, the
			// other edit of the same refinement applies.
			ref := p.apply(t, session, applyOpts{baseline: map[string]int{"memory/x": 2}},
				mk("update", "memory", "x", "content", "abcdefghij", "reason", "stale"), mk("create", "memory", "z", "content", ten))
			if e := ref.Edits; e[0].Applied || e[0].Error != msgChanged || !e[1].Applied {
				t.Fatalf("a stale edit beside a good one: %+v, want the first rejected (%q), the second applied", e, msgChanged)
			}
			wantVersions(t, p.mustEntry(t, session, harness.KindMemory, "x"), 3, "ABCDEFGHIJ")
		}},
}

// harnessRules runs the rule cases over POST /v1/admin/harness/apply,
// each in its own session's store.
func harnessRules(t *testing.T, p *serveProc) {
	for i, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			session := fmt.Sprintf("rules-%d", i)
			if c.global != nil {
				p.mustApply(t, "", c.global...)
			}
			if c.setup != nil {
				p.mustApply(t, session, c.setup...)
			}
			for _, e := range c.setup {
				if prot, ok := e["protection"]; ok {
					got := p.mustEntry(t, session, harness.Kind(e["kind"].(string)), e["id"].(string))
					if string(got.Entry.Protection) != prot {
						t.Fatalf("setup: entry %s created with protection %q, stored with %q", e["id"], prot, got.Entry.Protection)
					}
				}
			}
			for n, s := range c.steps {
				ref := p.apply(t, session, applyOpts{automatic: s.automatic, baseline: s.baseline}, s.edit)
				got := ref.Edits[0]
				switch {
				case s.want == "" && !got.Applied:
					t.Fatalf("step %d %v (automatic %v): rejected with %q, want applied", n, s.edit, s.automatic, got.Error)
				case s.want != "" && (got.Applied || got.Error != s.want):
					t.Fatalf("step %d %v (automatic %v): applied %v error %q, want rejected with %q", n, s.edit, s.automatic, got.Applied, got.Error, s.want)
				case s.radius != "" && got.BlastRadius != s.radius:
					t.Fatalf("step %d %v: recorded blast radius %q, want %q", n, s.edit, got.BlastRadius, s.radius)
				}
			}
			if c.check != nil {
				c.check(t, p, session)
			}
		})
	}
}

// wantVersions checks an entry is at version v with content, and that its
// history holds versions 1..v.
func wantVersions(t *testing.T, e entryResp, v int, content string) {
	t.Helper()
	if e.Entry.Version != v || e.Entry.Content != content {
		t.Fatalf("entry %s/%s at version %d with %q, want version %d with %q", e.Entry.Kind, e.Entry.ID, e.Entry.Version, e.Entry.Content, v, content)
	}
	var got []int
	for _, x := range e.Versions {
		got = append(got, x.Version)
	}
	want := make([]int, v)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entry %s/%s has versions %v, want %v", e.Entry.Kind, e.Entry.ID, got, want)
	}
}
