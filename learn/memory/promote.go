package memory

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// PromotedCopy is the global library's copy of workspace memory m,
// promoted now: global, PromotedFrom set to the workspace's base name,
// recorded now and live; its other metadata (origin, src, importance,
// uses) travels with it, so trust does not change in transit.
func PromotedCopy(m Memory, now time.Time) Memory {
	p := m
	p.ID, p.Workspace, p.RecordedAt = 0, "", now.UTC()
	p.PromotedFrom = filepath.Base(filepath.Clean(strings.ReplaceAll(m.Workspace, `\`, "/")))
	p.SupersededBy, p.InvalidAt, p.InvalidReason = 0, time.Time{}, ""
	return p
}

// PromoteRefusal is why a person's promotion of m, a memory of workspace,
// to the global library is refused, or "" when it may go: the automatic
// rules (Promote) but the score, which a person's choice replaces. global
// maps the normalized text of every global row (forgotten ones too) to
// its id: a copy someone invalidated is not made again. A structured
// lesson moves by its own transition (lesson.Promote), not by a copy.
func PromoteRefusal(m Memory, workspace string, global map[string]int64, now time.Time) string {
	switch {
	case m.Workspace != workspace:
		return fmt.Sprintf("not a memory of workspace %q", workspace)
	case m.Quarantined:
		return "quarantined by the trust gate: never served, never promoted"
	case !m.ValidAt(now):
		return "invalidated (" + m.InvalidReason + "): only a live memory is promoted"
	case m.Src.External():
		return fmt.Sprintf("its source is external (%s): content from outside is reference only and never broadcast to every workspace", m.Src)
	case m.Kind.Structured() && (m.Lesson != nil || m.Scope != ""):
		return "a structured lesson: it moves with 'mull lessons move ID --to global', a transition, not a copy"
	}
	if id, ok := global[Normalize(m.Text)]; ok {
		return fmt.Sprintf("the global library has it already (memory %d; a forgotten copy stays forgotten)", id)
	}
	return ""
}
