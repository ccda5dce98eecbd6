package harness

import (
	"cmp"
	"fmt"

	"github.com/mullhq/mull/learn/trust"
)

// msgIDAltered is the gate's reason for an id it would have to rewrite.
const msgIDAltered = "the id holds a credential or characters the gate rewrites"

// GateEdit passes an edit's texts (content, title, description, reason)
// through the trust gate: redacted text replaces the original (redacted
// counts how many credentials), a quarantined text rejects the edit with
// MsgQuarantined and the gate's reason.
//
// The id, the action, kind, blast radius and protection, and a given
// metadata's source session pass the gate too: every text of an edit can
// reach a prompt or a rule's message (the projection, SKILL.md, the
// planner's history). An id is the entry's identity and cannot be
// rewritten, so an id the gate would change (a credential, an invisible
// character, a decomposed accent NFKC composes) rejects the edit like a quarantined text.
//
// A rejected edit comes back without the texts that failed the gate (an
// id that failed is ""), so the refinement's record never holds them; the
// caller keeps the raw edit for the quarantine table.
func GateEdit(e Edit) (out Edit, redacted int, rejected string) {
	out = e
	reject := func(reason string) {
		if rejected == "" {
			rejected = fmt.Sprintf(MsgQuarantined, reason)
		}
	}
	// text gates one given text: its redacted form, or nil when quarantined.
	text := func(s *string) *string {
		if s == nil {
			return nil
		}
		v := trust.Check(*s)
		redacted += v.Redacted
		if v.Quarantined {
			reject(v.Reason)
			return nil
		}
		return &v.Text
	}
	// word gates a field that must be one of a few words: a quarantined one
	// is blanked, and a redacted one is left redacted, to fail Validate
	// with a message that does not repeat the credential.
	word := func(s string) string {
		v := trust.Check(s)
		if v.Quarantined {
			reject(v.Reason)
			return ""
		}
		return v.Text
	}
	out.Action = Action(word(string(e.Action)))
	out.Kind = Kind(word(string(e.Kind)))
	out.BlastRadius = BlastRadius(word(string(e.BlastRadius)))
	if e.Protection != nil {
		p := Protection(word(string(*e.Protection)))
		out.Protection = &p
	}
	if v := trust.Check(e.ID); v.Quarantined || v.Text != e.ID {
		out.ID = ""
		reject(cmp.Or(v.Reason, msgIDAltered))
	}
	out.Content = text(e.Content)
	out.Title = text(e.Title)
	out.Description = text(e.Description)
	out.Reason = ""
	if r := text(&e.Reason); r != nil {
		out.Reason = *r
	}
	if e.Metadata != nil {
		m := *e.Metadata
		m.SourceSession = ""
		if s := text(&e.Metadata.SourceSession); s != nil {
			m.SourceSession = *s
		}
		out.Metadata = &m
	}
	return out, redacted, rejected
}
