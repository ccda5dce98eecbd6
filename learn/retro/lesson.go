package retro

import (
	"strings"
	"time"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
)

// The boundary mull writes on a retro's lesson: the retro prompt asks for
// no boundary, and the lesson model needs one outside scope reflection, so
// the lesson says where it was learned (lessons_lookup shows it; it is not
// injected).
const (
	RetroBoundary       = "learned by a session retro in this workspace"
	RetroBoundaryGlobal = "learned by a session retro (global library)"
)

// Structure makes a retro's LESSONS line, m as memory.New built it from
// "error -> root cause -> fix", a structured lesson: problem is the error
// and its root cause, correction the fix, scope the workspace (global
// under scope global, where the retro writes to the global library),
// mull's boundary, no confidence (a retro does not rate it). The fields go
// through lesson.New, the write-time gate field by field, and Text becomes
// lesson.Line: "<error> (root cause: <cause>) → <fix>". A line the gate
// quarantined as a whole stays quarantined. It returns the credentials
// redacted by the field gate.
func Structure(m memory.Memory, now time.Time) (memory.Memory, int, error) {
	parts := strings.Split(strings.ReplaceAll(m.Text, "→", "->"), "->")
	if len(parts) != 3 {
		// checkEntry refuses such a line before; kept whole as a problem.
		parts = []string{m.Text, "", ""}
	}
	errText, cause, fix := strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), strings.TrimSpace(parts[2])
	problem := errText
	if cause != "" {
		problem += " (root cause: " + cause + ")"
	}
	wasQuarantined, reason := m.Quarantined, m.QuarantineReason
	m.Kind = memory.Lesson
	m.Scope, m.Lesson = memory.LessonWorkspace, &memory.LessonFields{Problem: problem, Correction: fix, Boundary: RetroBoundary}
	if m.Workspace == "" {
		m.Scope, m.Lesson.Boundary = memory.LessonGlobal, RetroBoundaryGlobal
	}
	out, n, err := lesson.New(m, now)
	if err != nil {
		return memory.Memory{}, n, err
	}
	if wasQuarantined && !out.Quarantined {
		out.Quarantined, out.QuarantineReason = true, reason
	}
	return out, n, nil
}
