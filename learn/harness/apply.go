package harness

import (
	"cmp"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/trust"
)

// TombstoneKey is the key of ApplyOptions.Tombstones: "kind/id".
func TombstoneKey(k Kind, id string) string { return string(k) + "/" + id }

// Apply applies p to cur (the target store now) under the six rules in
// the seed's order, plus protected kinds and the shrink guard (after rule
// 4 and rule 5) and the trust gate (GateEdit, first). It returns the
// refinement record and the next state; cur is not modified. Versions
// start at 1 and go up by 1 on each update, archive or pin.
//
// Each edit is checked, and applied or rejected, on its own (the seed's
// per-edit semantics): a rejected edit does not stop the others.
//
// Where mull differs from the seed's applyRefinementProposal:
//   - Each edit is checked against the state the edits before it left, not
//     the state before the proposal: two edits of one entry in one
//     proposal would otherwise both apply with the same version. The second
//     fails rule 3 or rule 6 instead, so an entry has one version per
//     applied edit.
//   - A rollback (o.RollbackOf != "") skips the protected-entry rule, the
//     protected kinds and the growth and shrink guards: it restores a prior
//     state, and a growth cap would refuse to undo a large shrink. Rules 1,
//     2, 3 and 6 still hold, so an entry changed since the refinement fails
//     its rollback edit with MsgChanged.
//   - Lengths are counted in runes, the seed's in UTF-16 units (JS length):
//     the same for most text, not for characters outside the BMP.
//   - An update sets a skill's description when given (the seed drops it),
//     so a rollback restores it.
//   - An update's metadata: a rollback restores the whole (but the
//     injection telemetry); any other edit sets the source session only,
//     lifecycle and pin being the archive and pin edits' own.
//   - A create carries a protection only off the automatic path.
//   - As in the seed, an archive edit ignores any content, title or pin it
//     carries, and a pin edit any content or title: lifecycle edits change
//     the lifecycle only.
//   - The summary passes the trust gate (redacted; a quarantined one is
//     replaced by the gate's message).
func Apply(cur State, p Proposal, o ApplyOptions) (Refinement, State) {
	next := cur.clone()
	r := Refinement{
		ID:          o.ID,
		Summary:     gateSummary(p.Summary),
		RollbackOf:  o.RollbackOf,
		CommittedAt: o.Now,
		Scope:       o.Scope,
		Edits:       make([]AppliedEdit, 0, len(p.Edits)),
	}
	for _, e := range p.Edits {
		r.Edits = append(r.Edits, applyEdit(next, e, o))
	}
	return r, next
}

// gateSummary is the summary as it may be stored.
func gateSummary(s string) string {
	v := trust.Check(s)
	if v.Quarantined {
		return fmt.Sprintf(MsgQuarantined, v.Reason)
	}
	return v.Text
}

// applyEdit gates, checks and applies one edit to next.
func applyEdit(next State, raw Edit, o ApplyOptions) AppliedEdit {
	e, _, quarantined := GateEdit(raw)
	if quarantined != "" {
		return rejected(e, quarantined)
	}
	if msg := check(next, e, o); msg != "" {
		return rejected(e, msg)
	}
	cur, _ := next.Get(e.Kind, e.ID)
	switch {
	case e.Action == Delete:
		delete(next[e.Kind], e.ID)
		a := applied(e)
		a.Before, a.BeforeEntry = ptr(cur.Content), ptr(cur)
		return a
	case e.Action == Create:
		return put(next, e, nil, created(e, o))
	case e.Archive != nil:
		return archive(next, e, cur, o)
	case e.Pin != nil:
		after := bumped(cur, o)
		after.Metadata.Pinned = *e.Pin
		return put(next, e, &cur, after)
	default:
		return put(next, e, &cur, updated(cur, e, o))
	}
}

// archive archives cur (*e.Archive) or restores it; archiving an archived
// entry, or restoring an active one, is rejected (the seed's messages).
func archive(next State, e Edit, cur Entry, o ApplyOptions) AppliedEdit {
	target, already := Active, MsgNotArchived
	if *e.Archive {
		target, already = Archived, MsgAlreadyArchived
	}
	if lifecycleOf(cur) == target {
		return rejected(e, already)
	}
	after := bumped(cur, o)
	after.Metadata.Lifecycle = target
	return put(next, e, &cur, after)
}

// check runs the rules in the seed's order; "" when e may apply.
func check(next State, e Edit, o ApplyOptions) string {
	if msg := cmp.Or(Validate(e), validRestore(e)); msg != "" {
		return msg
	}
	cur, exists := next.Get(e.Kind, e.ID)
	mutates := e.Action == Update || e.Action == Delete
	if _, global := o.Global.Get(e.Kind, e.ID); !o.Scope.IsGlobal() && mutates && global && !exists {
		return MsgGlobalReadOnly
	}
	switch {
	case e.Action == Create && exists:
		return MsgExists
	case mutates && !exists:
		return MsgNotFound
	}
	if o.RollbackOf == "" {
		if msg := guards(cur, e, o); msg != "" {
			return msg
		}
	}
	base, inBaseline := o.Baseline.Get(e.Kind, e.ID)
	if e.Action == Create && inBaseline || e.Action != Create && (!inBaseline || Fingerprint(base) != Fingerprint(cur)) {
		return MsgChanged
	}
	return ""
}

// guards are the rules a rollback skips: protection on the automatic
// path (rule 4 and harness.protected_kinds) and the growth (rule 5) and
// shrink caps.
func guards(cur Entry, e Edit, o ApplyOptions) string {
	mutates := e.Action == Update || e.Action == Delete
	switch {
	case o.Automatic && mutates && cur.Protection != "":
		return MsgProtected
	case o.Automatic && mutates && slices.Contains(o.ProtectedKinds, e.Kind):
		return fmt.Sprintf(MsgProtectedKind, e.Kind)
	}
	if e.Action != Update || e.Content == nil {
		return ""
	}
	old, now := utf8.RuneCountInString(cur.Content), utf8.RuneCountInString(*e.Content)
	if old == 0 {
		return ""
	}
	// Exactly at a cap is allowed (the seed's strict >).
	switch {
	case o.MaxGrowth > 0 && float64(now-old)/float64(old) > o.MaxGrowth:
		return MsgGrowth
	case o.MaxShrink > 0 && float64(old-now)/float64(old) > o.MaxShrink:
		return MsgShrink
	}
	return ""
}

// created is the entry a create makes: version 1, or one past the
// tombstone of a deleted entry of the same kind and id.
func created(e Edit, o ApplyOptions) Entry {
	n := Entry{
		ID:        e.ID,
		Kind:      e.Kind,
		Version:   o.Tombstones[TombstoneKey(e.Kind, e.ID)] + 1,
		Content:   *e.Content,
		Title:     deref(e.Title),
		UpdatedAt: o.Now,
	}
	if e.Kind == KindSkill {
		n.Description = deref(e.Description)
	}
	if e.Protection != nil && (!o.Automatic || o.RollbackOf != "") {
		n.Protection = *e.Protection
	}
	if e.Metadata != nil {
		n.Metadata = *e.Metadata
		if o.RollbackOf == "" {
			n.Metadata.LastInjectedAt = nil
		}
	}
	if o.RollbackOf == "" || e.Metadata == nil {
		n.Metadata.SourceSession = cmp.Or(n.Metadata.SourceSession, o.SourceSession)
	}
	return n
}

// updated is the entry a content update makes of cur.
func updated(cur Entry, e Edit, o ApplyOptions) Entry {
	n := bumped(cur, o)
	n.Content = *e.Content
	if e.Title != nil {
		n.Title = *e.Title
	}
	if e.Description != nil && e.Kind == KindSkill {
		n.Description = *e.Description
	}
	if o.RollbackOf != "" && e.Metadata != nil {
		n.Metadata = *e.Metadata
		n.Metadata.LastInjectedAt = cur.Metadata.LastInjectedAt
		return n
	}
	var given string
	if e.Metadata != nil {
		given = e.Metadata.SourceSession
	}
	n.Metadata.SourceSession = cmp.Or(given, o.SourceSession, cur.Metadata.SourceSession)
	return n
}

// bumped is cur one version on, updated now.
func bumped(cur Entry, o ApplyOptions) Entry {
	cur.Version++
	cur.UpdatedAt = o.Now
	return cur
}

// put stores after in next and records the edit (before is nil for a
// create).
func put(next State, e Edit, before *Entry, after Entry) AppliedEdit {
	next.kind(e.Kind)[e.ID] = after
	a := applied(e)
	if before != nil {
		a.Before, a.BeforeEntry = ptr(before.Content), ptr(*before)
	}
	a.After, a.AfterEntry = ptr(after.Content), ptr(after)
	return a
}

// applied and rejected are the seed's stampAppliedEdit: the edit's
// reason and blast radius, the radius defaulting to general (and an
// out-of-enum one normalized to it, although Validate rejects it first).
// An action or kind outside its enum is recorded as "" (Validate's
// message names it, cut): the record is stored and may reach a prompt.
func applied(e Edit) AppliedEdit {
	a := rejected(e, "")
	a.Applied = true
	return a
}

func rejected(e Edit, msg string) AppliedEdit {
	radius := e.BlastRadius
	if !slices.Contains(BlastRadii, radius) {
		radius = RadiusGeneral
	}
	a := AppliedEdit{Action: e.Action, Kind: e.Kind, ID: e.ID, Reason: e.Reason, BlastRadius: radius, Error: msg}
	if !slices.Contains(Actions, a.Action) {
		a.Action = ""
	}
	if !slices.Contains(Kinds, a.Kind) {
		a.Kind = ""
	}
	return a
}

// RejectedEdit is the record of an edit rejected before the rules ran
// (msg says why, e.g. a length cap): the edit through GateEdit, an id
// over MaxIDRunes cut, an action or kind outside its enum "", no content.
// Every text it keeps passed the trust gate.
func RejectedEdit(e Edit, msg string) AppliedEdit {
	cut := utf8.RuneCountInString(e.ID) > MaxIDRunes
	if cut {
		e.ID = cutRunes(e.ID, MaxIDRunes)
	}
	g, _, _ := GateEdit(e)
	if cut && g.ID != "" {
		g.ID += "…"
	}
	return rejected(g, msg)
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
