package memories

import (
	"encoding/json"
	"fmt"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
)

// ToRow and FromRow convert between learn's Memory and the store's row: the
// store does not import learn. A lesson's structured fields travel as JSON.
func ToRow(m memory.Memory) store.Memory {
	return store.Memory{
		ID: m.ID, Workspace: m.Workspace, Kind: string(m.Kind), Text: m.Text, TextNorm: memory.Normalize(m.Text),
		Importance: m.Importance, Src: string(m.Src), Origin: string(m.Origin), Uses: m.Uses, SessionID: m.SessionID,
		JobID: m.JobID, RecordedAt: m.RecordedAt, VerifiedAt: m.VerifiedAt, VerifiedBy: m.VerifiedBy, TTLDays: m.TTLDays,
		InvalidAt: m.InvalidAt, InvalidReason: m.InvalidReason, SupersededBy: m.SupersededBy, Quarantined: m.Quarantined,
		QuarantineReason: m.QuarantineReason, PromotedFrom: m.PromotedFrom,
		Scope: string(m.Scope), ScopeSession: m.ScopeSession, Lesson: LessonJSON(m.Lesson), TaskID: m.TaskID,
		State: string(m.State), PromotedFromID: m.PromotedFromID,
	}
}

// FromRow converts a row back. A row whose lesson JSON does not decode (the
// store refuses to write one) gets a nil Lesson; FromRowChecked says why.
func FromRow(r store.Memory) memory.Memory {
	m, _ := FromRowChecked(r)
	return m
}

// FromRowChecked is FromRow that reports a lesson JSON it could not decode.
func FromRowChecked(r store.Memory) (memory.Memory, error) {
	m := memory.Memory{
		ID: r.ID, Workspace: r.Workspace, Kind: memory.Kind(r.Kind), Text: r.Text, Importance: r.Importance,
		Src: memory.Src(r.Src), Origin: memory.Origin(r.Origin), Uses: r.Uses, SessionID: r.SessionID, JobID: r.JobID,
		RecordedAt: r.RecordedAt, VerifiedAt: r.VerifiedAt, VerifiedBy: r.VerifiedBy, TTLDays: r.TTLDays, InvalidAt: r.InvalidAt,
		InvalidReason: r.InvalidReason, SupersededBy: r.SupersededBy, Quarantined: r.Quarantined,
		QuarantineReason: r.QuarantineReason, PromotedFrom: r.PromotedFrom,
		Scope: memory.LessonScope(r.Scope), ScopeSession: r.ScopeSession, TaskID: r.TaskID,
		State: memory.State(r.State), PromotedFromID: r.PromotedFromID,
	}
	lesson, err := ParseLesson(r.Lesson)
	if err != nil {
		return m, fmt.Errorf("memory %d: %w", r.ID, err)
	}
	m.Lesson = lesson
	return m, nil
}

// LessonJSON is the stored form of a lesson's fields: ” for none.
func LessonJSON(f *memory.LessonFields) string {
	if f == nil {
		return ""
	}
	b, _ := json.Marshal(f) // a struct of strings always marshals
	return string(b)
}

// ParseLesson reads LessonJSON's form back: nil for ”.
func ParseLesson(s string) (*memory.LessonFields, error) {
	if s == "" {
		return nil, nil
	}
	var f memory.LessonFields
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return nil, fmt.Errorf("lesson fields %q: %w", s, err)
	}
	return &f, nil
}

// FromRows converts a slice of rows.
func FromRows(rows []store.Memory) []memory.Memory {
	out := make([]memory.Memory, len(rows))
	for i, r := range rows {
		out[i] = FromRow(r)
	}
	return out
}
