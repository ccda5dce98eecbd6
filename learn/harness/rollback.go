package harness

// RollbackOf is the proposal that reverses r: its applied edits in
// reverse order, id "rollback_<r.ID>", every reason "rollback:<r.ID>",
// restoring whole entries from BeforeEntry (the seed's rollbackProposal).
// A create becomes a delete; a delete a create of the entry as it was
// (content, title, description, metadata, protection); an update (content,
// archive or pin) an update back to the entry's content, title,
// description and metadata. Rejected edits changed nothing and are
// skipped.
//
// Apply it with ApplyOptions.RollbackOf = r.ID and Baseline =
// RollbackBaseline(r): an entry changed since r fails its edit with
// MsgChanged, and a rollback skips the growth, shrink and protection
// guards (see Apply).
func RollbackOf(r Refinement) Proposal {
	reason := "rollback:" + r.ID
	p := Proposal{ID: "rollback_" + r.ID, Summary: "Rollback of " + r.ID, Edits: []Edit{}}
	for i := len(r.Edits) - 1; i >= 0; i-- {
		a := r.Edits[i]
		if !a.Applied {
			continue
		}
		e, ok := reverse(a)
		if !ok {
			continue
		}
		e.Kind, e.ID, e.Reason = a.Kind, a.ID, reason
		p.Edits = append(p.Edits, e)
	}
	return p
}

// reverse is the edit undoing a; ok is false when a's record has no
// content to restore. A record without BeforeEntry (the seed's legacy
// records; mull always writes it, so only a hand-made one) restores the
// content only.
func reverse(a AppliedEdit) (Edit, bool) {
	if a.Action == Create {
		return Edit{Action: Delete}, true
	}
	action := Update
	if a.Action == Delete {
		action = Create
	}
	before := a.BeforeEntry
	if before == nil {
		if a.Before == nil {
			return Edit{}, false
		}
		return Edit{Action: action, Content: ptr(*a.Before)}, true
	}
	e := Edit{
		Action:   action,
		Content:  ptr(before.Content),
		Title:    ptr(before.Title),
		Metadata: ptr(before.Metadata),
	}
	if a.Kind == KindSkill {
		e.Description = ptr(before.Description)
	}
	if action == Create {
		e.Protection = ptr(before.Protection)
	}
	return e, true
}

// RollbackBaseline is the baseline a rollback of r is applied against:
// the entries as r left them (its applied edits' AfterEntry; a deleted
// entry is absent). Rule 6 then fails the rollback edit of any entry
// changed since r.
func RollbackBaseline(r Refinement) State {
	s := State{}
	for _, a := range r.Edits {
		if a.Applied && a.AfterEntry != nil {
			s.kind(a.Kind)[a.ID] = *a.AfterEntry
		}
	}
	return s
}
