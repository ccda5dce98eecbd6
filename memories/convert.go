package memories

import (
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
)

// ToRow and FromRow convert between learn's Memory and the store's row: the
// store does not import learn.
func ToRow(m memory.Memory) store.Memory {
	return store.Memory{
		ID: m.ID, Workspace: m.Workspace, Kind: string(m.Kind), Text: m.Text, TextNorm: memory.Normalize(m.Text),
		Importance: m.Importance, Src: string(m.Src), Origin: string(m.Origin), Uses: m.Uses, SessionID: m.SessionID,
		JobID: m.JobID, RecordedAt: m.RecordedAt, VerifiedAt: m.VerifiedAt, TTLDays: m.TTLDays, InvalidAt: m.InvalidAt,
		InvalidReason: m.InvalidReason, SupersededBy: m.SupersededBy, Quarantined: m.Quarantined,
		QuarantineReason: m.QuarantineReason, PromotedFrom: m.PromotedFrom,
	}
}

// FromRow converts a row back.
func FromRow(r store.Memory) memory.Memory {
	return memory.Memory{
		ID: r.ID, Workspace: r.Workspace, Kind: memory.Kind(r.Kind), Text: r.Text, Importance: r.Importance,
		Src: memory.Src(r.Src), Origin: memory.Origin(r.Origin), Uses: r.Uses, SessionID: r.SessionID, JobID: r.JobID,
		RecordedAt: r.RecordedAt, VerifiedAt: r.VerifiedAt, TTLDays: r.TTLDays, InvalidAt: r.InvalidAt,
		InvalidReason: r.InvalidReason, SupersededBy: r.SupersededBy, Quarantined: r.Quarantined,
		QuarantineReason: r.QuarantineReason, PromotedFrom: r.PromotedFrom,
	}
}

// FromRows converts a slice of rows.
func FromRows(rows []store.Memory) []memory.Memory {
	out := make([]memory.Memory, len(rows))
	for i, r := range rows {
		out[i] = FromRow(r)
	}
	return out
}
