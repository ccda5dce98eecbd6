package memories

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
)

// The operator's paths over structured lessons (mull lessons, and the same
// over /v1/admin/lessons): list what a session sees, check, add, move,
// remove, deprecate. Each change is a lifecycle transition of
// learn/lesson under the library's lock, never a row removed.

// NotLessonError refuses a lesson operation on a memory that is not a
// structured lesson (a fact, a method, a free-text lesson from before the
// lesson model).
type NotLessonError struct {
	ID   int64
	Kind memory.Kind
}

func (e *NotLessonError) Error() string {
	return fmt.Sprintf("memory %d is a %s, not a structured lesson (lesson, directive or failure with fields); see mull memory show %d", e.ID, e.Kind, e.ID)
}

// NoSessionError refuses a lesson scoped to a session mull has no events
// from: a typo would otherwise make a lesson no session ever sees.
type NoSessionError struct {
	Field, Session string
}

func (e *NoSessionError) Error() string {
	return fmt.Sprintf("%s: mull has no session %q (a session lesson is shown to one named session; see mull sessions list)", e.Field, e.Session)
}

// LessonQuery is what `mull lessons list` asks for.
type LessonQuery struct {
	// Workspace and Session name the viewer; with only Session, the
	// session's workspace is read from the store.
	Workspace, Session string
	// All lists every lesson of the libraries, every state, quarantined
	// included, instead of what the viewer sees.
	All bool
}

// LessonView is a session's lessons as `mull lessons list` shows them.
type LessonView struct {
	// Lessons are in force now (lesson.InForce over the viewer's libraries
	// and the lessons scoped to its session), by id; with All, every
	// lesson stored.
	Lessons []memory.Memory `json:"lessons"`
	// InDigest are the ids the session's published digest shows
	// (LessonsInForce): what the agent actually reads until the next
	// watermark. A lesson in Lessons but not here is still a notice, or
	// in Omitted; one here but not in Lessons leaves the prompt at the
	// next publication.
	InDigest []int64 `json:"in_digest"`
	// Omitted are the ids of lessons in force at that digest's watermark
	// that its text left out (the lessons quota, MaxLines, the shrink or
	// drop, the render-time gate): neither in the prompt nor a notice, and
	// not in a task's snapshot. Empty for a digest published before mull
	// recorded what it shows.
	Omitted []int64 `json:"omitted"`
	// CommittedAt is that digest's published_at; zero when none was.
	CommittedAt time.Time `json:"committed_at,omitzero"`
}

// Lessons lists q's viewer's lessons: in force now, and which of them its
// published digest shows (see LessonView).
func (s *Service) Lessons(ctx context.Context, q LessonQuery) (LessonView, error) {
	ws, err := s.viewerWorkspace(ctx, q.Workspace, q.Session)
	if err != nil {
		return LessonView{}, err
	}
	var out LessonView
	published, omitted, at, err := s.lessonsPublished(ctx, s.store.DB, ws, q.Session)
	if err != nil {
		return out, err
	}
	out.CommittedAt, out.InDigest, out.Omitted = at, make([]int64, len(published)), make([]int64, len(omitted))
	for i, m := range published {
		out.InDigest[i] = m.ID
	}
	for i, m := range omitted {
		out.Omitted[i] = m.ID
	}
	f := store.LessonFilter{Quarantined: q.All}
	switch {
	case q.All && ws == "" && q.Session == "":
		// every library
	case ws != "":
		f.Workspaces = []string{ws, ""}
	default:
		f.Workspaces = []string{""}
	}
	rows, err := s.store.ListLessons(ctx, s.store.DB, f)
	if err != nil {
		return out, err
	}
	if q.Session != "" {
		scoped, err := s.store.ListLessons(ctx, s.store.DB, store.LessonFilter{Session: q.Session, Quarantined: q.All})
		if err != nil {
			return out, err
		}
		rows = mergeByID(rows, scoped)
	}
	all := FromRows(rows)
	if q.All {
		if q.Session != "" {
			all = slices.DeleteFunc(all, func(m memory.Memory) bool {
				return m.ScopeSession != "" && m.ScopeSession != q.Session
			})
		}
		out.Lessons = all
		return out, nil
	}
	out.Lessons = lesson.InForce(all, lesson.Viewer{Workspace: ws, Session: q.Session})
	return out, nil
}

func (s *Service) viewerWorkspace(ctx context.Context, ws, session string) (string, error) {
	if ws != "" || session == "" {
		return ws, nil
	}
	sess, err := s.store.GetSession(ctx, session)
	if errors.Is(err, store.ErrNotFound) {
		return "", &NoSessionError{Field: "session", Session: session}
	}
	return sess.Workspace, err
}

// CheckLessons runs the structure checker (lesson.Check) over every lesson
// stored, every state and quarantined ones included, and every declared
// conflict.
func (s *Service) CheckLessons(ctx context.Context) ([]lesson.Problem, error) {
	rows, err := s.store.ListLessons(ctx, s.store.DB, store.LessonFilter{Quarantined: true})
	if err != nil {
		return nil, err
	}
	links, err := s.store.ListLinks(ctx, s.store.DB, nil)
	if err != nil {
		return nil, err
	}
	return lesson.Check(FromRows(rows), Conflicts(links)), nil
}

// Conflicts converts stored links to the rules' conflicts.
func Conflicts(links []store.Link) []memory.Conflict {
	out := make([]memory.Conflict, len(links))
	for i, l := range links {
		out[i] = memory.Conflict{From: l.FromID, To: l.ToID, Kind: memory.ConflictKind(l.Kind), Note: l.Note, RecordedAt: l.RecordedAt}
	}
	return out
}

// LessonWrite is an operator's new lesson.
type LessonWrite struct {
	Kind  memory.Kind        `json:"kind"`
	Scope memory.LessonScope `json:"scope"`
	// Workspace is the workspace of a workspace lesson; a session or
	// reflection lesson takes its session's when it is empty.
	Workspace string `json:"workspace,omitempty"`
	// Session is the named session of a session lesson, the source session
	// of a reflection lesson.
	Session string              `json:"session,omitempty"`
	Fields  memory.LessonFields `json:"fields"`
}

// AddLesson writes an operator's lesson through origin p.Origin, built by
// lesson.New (each field through the trust gate; a quarantined field
// quarantines the lesson: kept, flagged, never served, reported as a
// *QuarantinedError; then lesson.Validate). A bad field is a
// *memory.FieldError naming it; a session no event named, *NoSessionError.
func (s *Service) AddLesson(ctx context.Context, w LessonWrite, p memory.Provenance) (Written, error) {
	if w.Kind == "" {
		w.Kind = memory.Lesson // the seed's compatibility rule: no kind means lesson
	}
	if !w.Kind.Structured() {
		return Written{}, &memory.FieldError{Field: "kind", Problem: fmt.Sprintf("%q is not one of lesson, directive, failure", w.Kind)}
	}
	m := memory.Memory{Kind: w.Kind, Scope: w.Scope, Workspace: w.Workspace, Origin: p.Origin, JobID: p.JobID}
	switch w.Scope {
	case memory.LessonSession, memory.LessonReflection:
		m.ScopeSession = strings.TrimSpace(w.Session)
		if w.Scope == memory.LessonReflection {
			m.SessionID = m.ScopeSession
		}
		if m.ScopeSession != "" {
			sess, err := s.store.GetSession(ctx, m.ScopeSession)
			if errors.Is(err, store.ErrNotFound) {
				return Written{}, &NoSessionError{Field: "session", Session: m.ScopeSession}
			} else if err != nil {
				return Written{}, err
			}
			m.Workspace = cmp.Or(m.Workspace, sess.Workspace)
		}
	case memory.LessonWorkspace, memory.LessonGlobal:
		if w.Session != "" {
			return Written{}, &memory.FieldError{Field: "session", Problem: fmt.Sprintf("only a session or reflection lesson names a session (scope is %s)", w.Scope)}
		}
	}
	f := w.Fields
	m.Lesson = &f
	m, redacted, err := lesson.New(m, s.store.Now())
	if err != nil {
		return Written{Redacted: redacted}, err
	}
	var out Written
	err = s.store.InTx(ctx, func(tx *sql.Tx) error {
		if err := s.store.LockLibrary(ctx, tx, m.Workspace); err != nil {
			return err
		}
		// Stamped once the lock is held, as every memory writer does: a
		// publication waiting on it sees the lesson recorded before it.
		m.RecordedAt = s.store.Now()
		var err error
		out.Memory = m
		out.Memory.ID, err = s.store.InsertMemory(ctx, tx, ToRow(m))
		return err
	})
	if err != nil {
		return Written{}, err
	}
	out.Redacted = redacted
	if m.Quarantined {
		return out, &QuarantinedError{ID: out.Memory.ID, Reason: m.QuarantineReason}
	}
	return out, nil
}

// getLesson reads a structured lesson in tx, or ErrNotFound /
// *NotLessonError.
func (s *Service) getLesson(ctx context.Context, tx *sql.Tx, id int64) (memory.Memory, error) {
	row, err := s.store.GetMemory(ctx, tx, id)
	if err != nil {
		return memory.Memory{}, err
	}
	m, err := FromRowChecked(row)
	if err != nil {
		return m, err
	}
	if !m.Kind.Structured() || m.Lesson == nil {
		return m, &NotLessonError{ID: id, Kind: m.Kind}
	}
	return m, nil
}

// Moved is what MoveLesson did: the new lesson and the one it covers.
type Moved struct {
	Lesson memory.Memory `json:"lesson"`
	From   memory.Memory `json:"from"`
}

// MoveLesson promotes lesson id to t (lesson.Promote): a state transition,
// not a copy. The derived lesson is a new write, so it is built again by
// lesson.New (the trust gate, field by field); a quarantined result is refused, nothing stored.
// boundary "" keeps the source's. A session target must be a session mull
// knows.
func (s *Service) MoveLesson(ctx context.Context, id int64, t lesson.Target, boundary string) (Moved, error) {
	if t.Scope == memory.LessonSession {
		if _, err := s.store.GetSession(ctx, t.Session); errors.Is(err, store.ErrNotFound) {
			return Moved{}, &NoSessionError{Field: "to", Session: t.Session}
		} else if err != nil {
			return Moved{}, err
		}
	}
	var out Moved
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		src, err := s.getLesson(ctx, tx, id)
		if err != nil {
			return err
		}
		if src.Quarantined {
			return fmt.Errorf("lesson %d is quarantined (%s): it is never served, so it cannot be moved", id, src.QuarantineReason)
		}
		d, err := lesson.Promote(src, t, boundary, s.store.Now())
		if err != nil {
			return err
		}
		if d, _, err = lesson.New(d, s.store.Now()); err != nil {
			return err
		}
		if d.Quarantined {
			return fmt.Errorf("lesson %d: the trust gate quarantines the moved lesson (%s); nothing was moved", id, d.QuarantineReason)
		}
		if err := s.store.LockLibraries(ctx, tx, src.Workspace, d.Workspace); err != nil {
			return err
		}
		if d.ID, err = s.store.InsertMemory(ctx, tx, ToRow(d)); err != nil {
			return err
		}
		out = Moved{Lesson: d, From: src}
		return nil
	})
	return out, err
}

// Removal is what removing a lesson does, shown before it is done.
type Removal struct {
	Lesson memory.Memory `json:"lesson"`
	// Removed: the tombstone was written; false for a preview.
	Removed bool `json:"removed"`
	// Links are the declared conflicts that name it; they stay, pointing
	// at a tombstone.
	Links []store.Link `json:"links"`
	// PromotedTo are lessons moved from it; they stay in force.
	PromotedTo []int64 `json:"promoted_to"`
	// Exposures counts the closed tasks that had it in force; their
	// snapshots keep it.
	Exposures int `json:"exposures"`
}

// RemoveLesson previews, or with confirm writes, lesson id's tombstone
// (lesson.Delete): never served again, its rows and history kept.
func (s *Service) RemoveLesson(ctx context.Context, id int64, reason string, confirm bool) (Removal, error) {
	reason = cmp.Or(strings.TrimSpace(reason), "removed by an operator")
	var out Removal
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		m, err := s.getLesson(ctx, tx, id)
		if err != nil {
			return err
		}
		out.Lesson = m
		if out.Links, err = s.store.ListLinks(ctx, tx, []int64{id}); err != nil {
			return err
		}
		rows, err := s.store.ListLessons(ctx, tx, store.LessonFilter{Quarantined: true})
		if err != nil {
			return err
		}
		for _, r := range rows {
			if r.PromotedFromID == id {
				out.PromotedTo = append(out.PromotedTo, r.ID)
			}
		}
		p, err := s.store.PrecedentCounts(ctx, tx, []int64{id})
		if err != nil {
			return err
		}
		out.Exposures = p[id].Exposures
		if _, err := lesson.Delete(m, reason, s.store.Now()); err != nil {
			return err
		}
		if !confirm {
			return nil
		}
		out.Lesson, err = s.transition(ctx, tx, m, memory.StateDeleted, reason)
		out.Removed = err == nil
		return err
	})
	return out, err
}

// DeprecateLesson marks lesson id no longer recommended (lesson.Deprecate):
// it stops being served; text and history stay.
func (s *Service) DeprecateLesson(ctx context.Context, id int64, reason string) (memory.Memory, error) {
	if strings.TrimSpace(reason) == "" {
		return memory.Memory{}, &memory.FieldError{Field: "reason", Problem: "required: say why it is no longer recommended"}
	}
	var out memory.Memory
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		m, err := s.getLesson(ctx, tx, id)
		if err != nil {
			return err
		}
		out, err = s.transition(ctx, tx, m, memory.StateDeprecated, reason)
		return err
	})
	return out, err
}

// transition applies lesson.Transition's rule, then stores it under the
// library's lock, the clock read once the lock is held.
func (s *Service) transition(ctx context.Context, tx *sql.Tx, m memory.Memory, to memory.State, reason string) (memory.Memory, error) {
	if err := s.store.LockLibrary(ctx, tx, m.Workspace); err != nil {
		return m, err
	}
	next, err := lesson.Transition(m, to, reason, 0, s.store.Now())
	if err != nil {
		return m, err
	}
	err = s.store.SetMemoryState(ctx, tx, m.ID, string(to), next.InvalidAt, next.InvalidReason, 0)
	if err != nil {
		return m, err
	}
	row, err := s.store.GetMemory(ctx, tx, m.ID)
	return FromRow(row), err
}

// DeprecatedLessons lists the deprecated lessons of a workspace's library
// and the global one ("": every library), by id.
func (s *Service) DeprecatedLessons(ctx context.Context, workspace string) ([]memory.Memory, error) {
	f := store.LessonFilter{States: []string{string(memory.StateDeprecated)}, Quarantined: true}
	if workspace != "" {
		f.Workspaces = []string{workspace, ""}
	}
	rows, err := s.store.ListLessons(ctx, s.store.DB, f)
	return FromRows(rows), err
}

// LessonStats is what `mull lessons stats` shows: the relation
// distribution of the reflections and the precedent gate's refusals, so a
// gate that turns revise off is visible. Every relation is listed, zero
// counts included.
type LessonStats struct {
	Reflections     int            `json:"reflections"`
	ByReflectedBy   map[string]int `json:"by_reflected_by"`
	LessonsRecorded int            `json:"lessons_recorded"`
	// Proposed counts items by relation, refused ones included; Accepted
	// only those no check refused.
	Proposed map[string]int `json:"proposed"`
	Accepted map[string]int `json:"accepted"`
	// Refusals counts refused items by the check that refused them.
	Refusals map[string]int `json:"refusals"`
}

// Relations are the reflection relations in the seed's order.
var Relations = []string{store.RelationNew, store.RelationRepeat, store.RelationRevise, store.RelationNone}

// LessonStats counts the reflections on tasks of a workspace ("": all).
func (s *Service) LessonStats(ctx context.Context, workspace string) (LessonStats, error) {
	st, err := s.store.ReflectionStats(ctx, s.store.DB, workspace)
	if err != nil {
		return LessonStats{}, err
	}
	out := LessonStats{Reflections: st.Reflections, ByReflectedBy: st.ByReflectedBy, LessonsRecorded: st.LessonsRecorded,
		Proposed: st.Proposed, Accepted: st.Accepted, Refusals: st.Refusals}
	for _, r := range Relations {
		out.Proposed[r] += 0
		out.Accepted[r] += 0
	}
	for _, by := range []string{store.ReflectedByJob, store.ReflectedByAgent} {
		out.ByReflectedBy[by] += 0
	}
	return out, nil
}
