// Package lesson holds the pure rules of the dsh-lessons seed (000): what a
// structured lesson must say, who sees it, the decision environment a task
// freezes at its start, the precedent counts and gate, and how lessons are
// rendered. No SQL, no River, no HTTP here.
package lesson

import "time"

// MaxDetailed is how many lessons a snapshot keeps in full (the seed's 12);
// the rest are listed by id and problem only.
const MaxDetailed = 12

// Snapshot is the decision environment a task froze when it opened: the
// lessons in force for its session exactly as the agent's digest showed
// them. It is written once and never changed.
type Snapshot struct {
	// TakenAt is when the task opened.
	TakenAt time.Time `json:"taken_at"`
	// CommittedAt is when the digest the agent was served was published
	// (its watermark): lessons newer than that were not in the prompt.
	CommittedAt time.Time `json:"committed_at"`
	// Count is every lesson in force: len(Lessons) + len(Omitted).
	Count int `json:"count"`
	// Truncated: more than MaxDetailed were in force.
	Truncated bool `json:"truncated"`
	// Lessons are the first MaxDetailed, high → medium → low confidence,
	// newest first within a level.
	Lessons []Entry `json:"lessons"`
	// Omitted are the rest, by id and problem.
	Omitted []Omitted `json:"omitted"`
}

// Entry is one lesson as a snapshot keeps it in full.
type Entry struct {
	ID          int64  `json:"id"`
	Kind        string `json:"kind"`
	Scope       string `json:"scope"`
	Confidence  string `json:"confidence"`
	Problem     string `json:"problem"`
	Attempted   string `json:"attempted,omitempty"`
	Correction  string `json:"correction,omitempty"`
	AppliesWhen string `json:"applies_when,omitempty"`
	Avoid       string `json:"avoid,omitempty"`
	Instead     string `json:"instead,omitempty"`
}

// Omitted is a lesson in force that the snapshot lists without detail.
type Omitted struct {
	ID         int64  `json:"id"`
	Confidence string `json:"confidence,omitempty"`
	Problem    string `json:"problem"`
}

// IDs lists every lesson id in s, detailed first: what task_close records
// as environment_ids and what the precedent counts join on.
func (s Snapshot) IDs() []int64 {
	ids := make([]int64, 0, len(s.Lessons)+len(s.Omitted))
	for _, e := range s.Lessons {
		ids = append(ids, e.ID)
	}
	for _, o := range s.Omitted {
		ids = append(ids, o.ID)
	}
	return ids
}
