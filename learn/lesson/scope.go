package lesson

import (
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/memory"
)

// maxSessionLen bounds a scope's session id as memory.Validate bounds
// session_id.
const maxSessionLen = 256

func knownScope(s memory.LessonScope) bool {
	for _, x := range memory.LessonScopes {
		if s == x {
			return true
		}
	}
	return false
}

func scopeProblem(s memory.LessonScope) string {
	if s == "" {
		return "required: one of global, workspace, session, reflection"
	}
	return fmt.Sprintf("%q is not one of global, workspace, session, reflection", s)
}

// CheckScope checks a lesson's scope against the fields that say whose it
// is (the seed's "scope and session_id consistency"):
//   - global: no workspace, no scope_session (shown to every session);
//   - workspace: a workspace, no scope_session;
//   - session: a scope_session, the named session;
//   - reflection: a scope_session, its source session, which is the
//     session it was written in (session_id) when that is recorded.
//
// A session lesson may keep the workspace it came from; it is shown by
// session alone.
func CheckScope(m memory.Memory) error {
	bad := func(field, format string, args ...any) error {
		return &memory.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
	}
	if problem := events.CheckName(m.ScopeSession, maxSessionLen); problem != "" {
		return bad("scope_session", "%s", problem)
	}
	ss := strings.TrimSpace(m.ScopeSession)
	switch m.Scope {
	case memory.LessonGlobal:
		if m.Workspace != "" {
			return bad("workspace", "must be empty for a global lesson (got %q); use scope workspace", m.Workspace)
		}
		if m.ScopeSession != "" {
			return bad("scope_session", "must be empty for a global lesson (got %q); use scope session", m.ScopeSession)
		}
	case memory.LessonWorkspace:
		if m.Workspace == "" {
			return bad("workspace", "required for a workspace lesson")
		}
		if m.ScopeSession != "" {
			return bad("scope_session", "must be empty for a workspace lesson (got %q)", m.ScopeSession)
		}
	case memory.LessonSession:
		if ss == "" {
			return bad("scope_session", "required for a session lesson: the session it is shown to")
		}
	case memory.LessonReflection:
		if ss == "" {
			return bad("scope_session", "required for a reflection lesson: its source session")
		}
		if m.SessionID != "" && m.ScopeSession != m.SessionID {
			return bad("scope_session", "%q is not the session the reflection was written in (session_id %q)", m.ScopeSession, m.SessionID)
		}
	default:
		return bad("scope", "%s", scopeProblem(m.Scope))
	}
	return nil
}

// ScopeOf is m's lesson scope. A lesson written before scopes (Scope "")
// is global without a workspace and workspace-scoped with one: who the
// digest showed it to.
func ScopeOf(m memory.Memory) memory.LessonScope {
	switch {
	case m.Scope != "":
		return m.Scope
	case m.Workspace == "":
		return memory.LessonGlobal
	}
	return memory.LessonWorkspace
}

// StateOf is m's lifecycle state: State, or for a row written before
// states, active while InvalidAt is zero and superseded after.
func StateOf(m memory.Memory) memory.State {
	switch {
	case m.State != "":
		return m.State
	case m.InvalidAt.IsZero():
		return memory.StateActive
	}
	return memory.StateSuperseded
}

// Viewer is the session a lesson list is built for.
type Viewer struct {
	Workspace string
	Session   string
	// At, when set, asks what was in force at that time (the digest's
	// watermark): recorded by then and not invalidated by then, promotions
	// recorded by then. Zero means now: active lessons.
	At time.Time
	// GlobalLibrary is memory.scope's ReadsGlobal: the global free-text
	// library is served to this workspace. A lesson written before the
	// lesson model (no scope) in the global library is shown only then, as
	// it was before; a lesson whose scope says global is shown everywhere.
	GlobalLibrary bool
}

// Sees reports whether m's scope shows it to v, before state and
// promotion: global to all, workspace to the sessions of its workspace,
// session to the named session, reflection to its source session.
func (v Viewer) Sees(m memory.Memory) bool {
	switch ScopeOf(m) {
	case memory.LessonGlobal:
		return m.Scope != "" || v.GlobalLibrary
	case memory.LessonWorkspace:
		return m.Workspace != "" && m.Workspace == v.Workspace
	case memory.LessonSession, memory.LessonReflection:
		return m.ScopeSession != "" && m.ScopeSession == v.Session
	}
	return false
}

// live reports whether m is in force for v's time: active now, or valid at
// v.At (every non-active state sets InvalidAt, so the timeline says it).
func (v Viewer) live(m memory.Memory) bool {
	if m.Quarantined {
		return false
	}
	if v.At.IsZero() {
		return StateOf(m) == memory.StateActive && m.InvalidAt.IsZero()
	}
	return m.ValidAt(v.At)
}

// InForce is the lessons v's session sees, in the order given: the
// structured kinds only, active (or valid at v.At), not quarantined, whose
// scope shows them to v, and not covered by a promotion.
//
// Promotion is a state transition, not a copy: a lesson D with
// PromotedFromID X covers X (and X's own source, up the chain) on D's
// paths. Promoted to global, X is hidden on every path; to a named session
// S, only in S (X still shows in its own source session); to a workspace,
// in that workspace's sessions. Coverage is the promotion's fact, not D's
// state: when D is later revised, deprecated or deleted, X does not come
// back (it was moved, and its history stays).
func InForce(all []memory.Memory, v Viewer) []memory.Memory {
	byID := make(map[int64]memory.Memory, len(all))
	for _, m := range all {
		byID[m.ID] = m
	}
	covered := map[int64]bool{}
	for _, d := range all {
		if d.PromotedFromID == 0 || !d.Kind.Structured() || !v.Sees(d) {
			continue
		}
		if !v.At.IsZero() && !d.RecordedAt.IsZero() && d.RecordedAt.After(v.At) {
			continue
		}
		seen := map[int64]bool{d.ID: true}
		for x := d.PromotedFromID; x != 0 && !seen[x]; x = byID[x].PromotedFromID {
			seen[x] = true
			covered[x] = true
		}
	}
	var out []memory.Memory
	for _, m := range all {
		if m.Kind.Structured() && v.live(m) && v.Sees(m) && !covered[m.ID] {
			out = append(out, m)
		}
	}
	return out
}

// Target is where a lesson is promoted or moved to.
type Target struct {
	Scope memory.LessonScope
	// Session is the named session of a session target.
	Session string
	// Workspace is the workspace of a workspace target.
	Workspace string
}

// String is the target as ParseTarget reads it.
func (t Target) String() string {
	switch t.Scope {
	case memory.LessonSession:
		return "session:" + t.Session
	case memory.LessonWorkspace:
		return "workspace:" + t.Workspace
	}
	return string(t.Scope)
}

// ParseTarget reads a move target as the CLI takes it: "global",
// "session:S" or "workspace:W". reflection is not a target: a lesson is
// reflected in its session, never moved there.
func ParseTarget(s string) (Target, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	switch {
	case kind == "global" && !hasArg:
		return Target{Scope: memory.LessonGlobal}, nil
	case kind == "session" && strings.TrimSpace(arg) != "":
		return Target{Scope: memory.LessonSession, Session: strings.TrimSpace(arg)}, nil
	case kind == "workspace" && strings.TrimSpace(arg) != "":
		return Target{Scope: memory.LessonWorkspace, Workspace: strings.TrimSpace(arg)}, nil
	}
	return Target{}, fmt.Errorf("move target %q: want global, session:<session id> or workspace:<absolute path>", s)
}

// Promote derives the lesson that moves src to t: a new active lesson
// (ID 0, recorded now) with src's kind, text, fields and provenance (so
// trust does not change in transit), scoped to t, and PromotedFromID =
// src.ID; its uses and verification travel with it, as memory.Promote's
// copies' do. src itself is not changed: InForce stops showing it on the
// derived lesson's paths. boundary says why the lesson belongs to its new
// scope; "" keeps src's, and with none the promotion is refused (the seed's
// boundary rule). The derived lesson is validated (Validate) before it is
// returned.
func Promote(src memory.Memory, t Target, boundary string, now time.Time) (memory.Memory, error) {
	switch {
	case !src.Kind.Structured() || src.Lesson == nil:
		return memory.Memory{}, fmt.Errorf("lesson %d: only a structured lesson can be promoted", src.ID)
	case src.ID == 0:
		return memory.Memory{}, fmt.Errorf("promote: the source lesson has no id (store it first)")
	case StateOf(src) != memory.StateActive || !src.InvalidAt.IsZero():
		return memory.Memory{}, fmt.Errorf("lesson %d is %s: only an active lesson can be promoted", src.ID, StateOf(src))
	case t.Scope == memory.LessonReflection || !knownScope(t.Scope):
		return memory.Memory{}, fmt.Errorf("lesson %d: %q is not a promotion target (global, session:S, workspace:W)", src.ID, t.Scope)
	}
	d := src
	f := *src.Lesson
	if b := strings.TrimSpace(boundary); b != "" {
		f.Boundary = b
	}
	d.Lesson = &f
	d.ID, d.PromotedFromID, d.RecordedAt = 0, src.ID, now.UTC()
	d.State, d.InvalidAt, d.InvalidReason, d.SupersededBy = memory.StateActive, time.Time{}, "", 0
	d.Scope, d.ScopeSession = t.Scope, ""
	switch t.Scope {
	case memory.LessonGlobal:
		d.Workspace = ""
	case memory.LessonWorkspace:
		d.Workspace = t.Workspace
	case memory.LessonSession:
		d.ScopeSession = t.Session
	}
	if d.Scope == src.Scope && d.Workspace == src.Workspace && d.ScopeSession == src.ScopeSession {
		return memory.Memory{}, fmt.Errorf("lesson %d is already %s", src.ID, t)
	}
	if err := Validate(d); err != nil {
		return memory.Memory{}, fmt.Errorf("promote lesson %d to %s: %w", src.ID, t, err)
	}
	return d, nil
}

// TransitionError is a lifecycle change the rules refuse.
type TransitionError struct {
	ID       int64
	From, To memory.State
	Why      string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("lesson %d: cannot go from %s to %s: %s", e.ID, e.From, e.To, e.Why)
}

// Transition moves m to state to at now, for reason, and returns the
// changed memory. The legal moves:
//
//	active     → superseded, deprecated, deleted
//	superseded → deleted
//	deprecated → deleted
//
// Nothing goes back to active (reviving would rewrite "what was believed
// at T"; write a new lesson instead) and nothing leaves deleted (a
// tombstone). The first move out of active sets InvalidAt and the reason
// (memory.Invalidated); a later move to deleted keeps them, since history
// is not rewritten, and only changes State.
func Transition(m memory.Memory, to memory.State, reason string, supersededBy int64, now time.Time) (memory.Memory, error) {
	from := StateOf(m)
	refuse := func(why string) (memory.Memory, error) {
		return memory.Memory{}, &TransitionError{ID: m.ID, From: from, To: to, Why: why}
	}
	switch {
	case to == memory.StateActive:
		return refuse("a lesson is never revived; write a new one")
	case from == memory.StateDeleted:
		return refuse("deleted is a tombstone")
	case from == to:
		return refuse("it already is")
	case from != memory.StateActive && to != memory.StateDeleted:
		return refuse("only an active lesson can be " + string(to))
	case to == memory.StateSuperseded && supersededBy == m.ID && m.ID != 0:
		return refuse("a lesson cannot supersede itself")
	case to == memory.StateSuperseded && supersededBy == 0 && strings.TrimSpace(reason) == "":
		return refuse("name the lesson that supersedes it or give a reason")
	case to != memory.StateSuperseded && to != memory.StateDeprecated && to != memory.StateDeleted:
		return refuse("unknown state")
	}
	if to != memory.StateSuperseded {
		supersededBy = 0
	}
	m = m.Invalidated(now, reason, supersededBy)
	m.State = to
	return m, nil
}

// Deprecate marks an active lesson no longer recommended; its text and
// history stay (deprecate --list shows it).
func Deprecate(m memory.Memory, reason string, now time.Time) (memory.Memory, error) {
	return Transition(m, memory.StateDeprecated, reason, 0, now)
}

// Delete writes m's tombstone: never served again, kept for history.
func Delete(m memory.Memory, reason string, now time.Time) (memory.Memory, error) {
	return Transition(m, memory.StateDeleted, reason, 0, now)
}

// Supersede marks an active lesson replaced by lesson by (a revise), or
// by a reason when no single lesson replaces it.
func Supersede(m memory.Memory, by int64, reason string, now time.Time) (memory.Memory, error) {
	return Transition(m, memory.StateSuperseded, reason, by, now)
}
