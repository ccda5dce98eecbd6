package tasks

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/learn/trust"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// Who reflected (Apply's by).
const (
	ByJob   = store.ReflectedByJob
	ByAgent = store.ReflectedByAgent
)

// The checks besides the precedent gate's (lesson.Gate*) that refuse one
// lesson of a reflection while the rest applies. Each is counted in
// reflection_items, so `mull lessons stats` shows them.
const (
	// CheckTarget: a repeat or revise names a lesson that is not in force
	// for the task's session (unknown, not a lesson, quarantined, no
	// longer active, or in a scope the session does not see).
	CheckTarget = "target"
	// CheckConflict: a declared conflict names no stored lesson.
	CheckConflict = "conflict"
	// CheckSession: a session-scope lesson names a session mull never saw.
	CheckSession = "session"
	// CheckWithdrawn: the lesson's adversarial review withdrew it.
	CheckWithdrawn = "withdrawn"
)

// Result is what became of one lesson of a reflection.
type Result struct {
	Index    int    `json:"index"`
	Relation string `json:"relation"`
	// ID is the lesson written (new, revise), or the stored one a repeat
	// (or a new lesson it already held) added evidence to.
	ID int64 `json:"id,omitempty"`
	// Refused is "<check>: <why>" when a check refused the lesson; none of
	// it was stored.
	Refused string `json:"refused,omitempty"`
	// Quarantined: stored, but a field reads like an instruction; it is
	// kept for review and never served.
	Quarantined bool `json:"quarantined,omitempty"`
	// Duplicate: a new lesson the library already held, in force in the
	// same scope; it counted as a repeat of ID.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Applied is what Apply did.
type Applied struct {
	ReflectionID int64 `json:"reflection_id"`
	// LessonsRecorded counts the lessons written (new and revise).
	LessonsRecorded int      `json:"lessons_recorded"`
	Results         []Result `json:"results"`
}

// Apply carries a validated reflection out on the library, in tx: the one
// path of the reflect_task job (by job, with its job id) and the agent's
// task_reflect (by agent). Per lesson, in order:
//
//   - new: a lesson in its scope (reflection: the task's session; session:
//     the named session, which must exist; workspace: the task's; global)
//     with the task's id, through the trust gate (lesson.New); one the
//     library already holds in force in that scope gets one more use
//     instead;
//   - repeat: the target, a lesson in force for the task's session, gets
//     one more use, nothing else;
//   - revise: with reflection.precedent_gate on, the evidence passes
//     lesson.CheckEvidence first; then the new version is stored and the
//     target superseded by it;
//   - none: nothing stored (its row counts in the stats);
//   - declared conflicts become links (their lessons must exist);
//   - a lesson its review withdrew stores nothing.
//
// A refused lesson is recorded with the check that refused it and the rest
// applies. A lesson whose fields are not a valid lesson refuses the whole
// reflection with a *reflection.FieldError naming lessons[i].<field>
// before anything is written. The task must be closed and not reflected
// on: a second Apply is an *AlreadyReflectedError and changes nothing. The
// libraries written are locked (store.LockLibrary) so a digest publication
// sees all of it or none.
func (s *Service) Apply(ctx context.Context, tx *sql.Tx, taskID string, refl reflection.Reflection, by string, jobID int64) (Applied, error) {
	if refl.TaskID != "" && refl.TaskID != taskID {
		return Applied{}, &reflection.FieldError{Field: "task_id", Reason: fmt.Sprintf("%q is not this task (%s)", refl.TaskID, taskID)}
	}
	t, err := s.reflectable(ctx, tx, taskID)
	if err != nil {
		return Applied{}, err
	}
	a := applier{s: s, tx: tx, task: t, by: by, jobID: jobID, now: s.store.Now()}
	if err := a.prepare(ctx, refl); err != nil {
		return Applied{}, err
	}
	// The clock is read again now that prepare holds the libraries' locks,
	// as every memory writer does: a publication that held them first has
	// a time before this one, so what is written here, superseded lessons
	// included, counts toward the next batch and is not stamped into the
	// past of the digest already published.
	now := s.store.Now()
	a.now = now
	for i := range a.built {
		a.built[i].RecordedAt = now.UTC()
	}
	if err := s.store.MarkTaskReflected(ctx, tx, t.ID, by, now); err != nil {
		return Applied{}, err
	}
	out := Applied{Results: []Result{}}
	// The assessment is kept for the operator (mull tasks show) through the
	// write-time gate, credentials redacted; it is never served as a lesson.
	rec := store.Reflection{TaskID: t.ID, By: by, JobID: jobID, Assessment: trust.Check(refl.Assessment).Text, Verdict: string(refl.Verdict()),
		Critique: critiqueJSON(refl), RecordedAt: now}
	for i, it := range refl.Lessons {
		row, res, err := a.apply(ctx, it, a.built[i])
		if err != nil {
			return Applied{}, fmt.Errorf("apply lessons[%d] of task %s: %w", it.Index, t.ID, err)
		}
		if row.MemoryID != 0 {
			out.LessonsRecorded++
		}
		rec.Items = append(rec.Items, row)
		out.Results = append(out.Results, res)
	}
	rec.LessonsRecorded = out.LessonsRecorded
	if out.ReflectionID, err = s.store.InsertReflection(ctx, tx, rec); err != nil {
		return Applied{}, err
	}
	return out, nil
}

// reflectable reads the task in tx: closed and not yet reflected on.
func (s *Service) reflectable(ctx context.Context, tx *sql.Tx, id string) (store.Task, error) {
	t, err := s.store.GetTask(ctx, tx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return t, fmt.Errorf("no task %q: %w", id, ErrNotFound)
	case err != nil:
		return t, err
	case t.Status == store.TaskOpen:
		return t, &ConflictError{TaskID: id, Reason: "is still open: end it (task_end) before reflecting on it"}
	case !t.ReflectedAt.IsZero():
		return t, &AlreadyReflectedError{ID: t.ID, By: t.ReflectedBy, At: t.ReflectedAt}
	}
	return t, nil
}

// applier applies one reflection.
type applier struct {
	s     *Service
	tx    *sql.Tx
	task  store.Task
	by    string
	jobID int64
	now   time.Time
	// built are the lessons the items write, by item (zero for the rest),
	// gated and validated by prepare.
	built []memory.Memory
}

// prepare builds and validates every lesson the reflection writes, so a bad
// one refuses the whole before anything is written, and locks the
// libraries it touches.
func (a *applier) prepare(ctx context.Context, refl reflection.Reflection) error {
	a.built = make([]memory.Memory, len(refl.Lessons))
	libs := []string{a.task.Workspace, ""}
	for i, it := range refl.Lessons {
		if it.TargetID > 0 {
			if m, err := a.s.store.GetMemory(ctx, a.tx, it.TargetID); err == nil {
				libs = append(libs, m.Workspace)
			}
		}
		if !it.Stores() {
			continue
		}
		m, _, err := lesson.New(a.lessonOf(it), a.now)
		if err != nil {
			var fe *memory.FieldError
			if errors.As(err, &fe) {
				return &reflection.FieldError{Field: fmt.Sprintf("lessons[%d].%s", it.Index, fe.Field), Reason: fe.Problem}
			}
			return fmt.Errorf("lessons[%d]: %w", it.Index, err)
		}
		a.built[i] = m
	}
	// In the one order every writer takes (workspaces sorted, then global).
	return a.s.store.LockLibraries(ctx, a.tx, libs...)
}

// use is a use of a lesson this reflection repeats, for the use log: the
// task's session and workspace, and the job when a job reflects.
func (a *applier) use() store.MemoryUse {
	return store.MemoryUse{Cause: store.UseReflection, Workspace: a.task.Workspace, JobID: a.jobID, SessionID: a.task.SessionID, At: a.now}
}

// lessonOf is the lesson an item writes, before the gate: its scope's
// library and sessions, the task, and the path's origin. A job's lesson is
// a model's output and scores as a retro's (untrusted, capped); the
// agent's comes through its tool.
func (a *applier) lessonOf(it reflection.Item) memory.Memory {
	f := it.Fields
	m := memory.Memory{Kind: cmp.Or(it.Kind, memory.Lesson), Scope: cmp.Or(it.Scope, memory.LessonReflection),
		Workspace: a.task.Workspace, SessionID: a.task.SessionID, TaskID: a.task.ID, JobID: a.jobID, Lesson: &f,
		Origin: memory.OriginRetro}
	if a.by == ByAgent {
		m.Origin, m.Src = memory.OriginTool, memory.SrcAgent
	}
	switch m.Scope {
	case memory.LessonGlobal:
		m.Workspace = ""
	case memory.LessonSession:
		m.ScopeSession = it.SessionID
	case memory.LessonReflection:
		m.ScopeSession = a.task.SessionID
	}
	return m
}

// apply carries one item out and says what became of it.
func (a *applier) apply(ctx context.Context, it reflection.Item, m memory.Memory) (store.ReflectionItem, Result, error) {
	row := store.ReflectionItem{Index: it.Index, Relation: string(it.Relation), TargetID: it.TargetID}
	if it.Critique != nil {
		// Through the write-time gate, as every stored text of a reflection.
		if b, err := json.Marshal(it.Critique.Gated()); err == nil {
			row.Critique, row.Verdict = string(b), string(it.Critique.Verdict)
		}
	}
	res := Result{Index: it.Index, Relation: string(it.Relation)}
	refuse := func(check, why string) (store.ReflectionItem, Result, error) {
		row.RefusedCheck, row.RefusedReason = check, why
		res.Refused = check + ": " + why
		return row, res, nil
	}
	if it.Withdrawn() {
		return refuse(CheckWithdrawn, "its adversarial review withdrew it; nothing is stored")
	}
	var target memory.Memory
	if it.Relation == reflection.Repeat || it.Relation == reflection.Revise {
		var why string
		var err error
		if target, why, err = a.inForce(ctx, it.TargetID); err != nil || why != "" {
			if err != nil {
				return row, res, err
			}
			return refuse(CheckTarget, why)
		}
	}
	switch it.Relation {
	case reflection.None:
		return row, res, nil
	case reflection.Repeat:
		res.ID = target.ID
		return row, res, a.s.store.BumpUses(ctx, a.tx, a.use(), target.ID)
	case reflection.Revise:
		if why := a.outOfReach(target); why != "" {
			return refuse(RefusedScope, why)
		}
		if a.s.cfg.GateOn() {
			var lookupErr error
			lineage := lesson.Lineage(target, a.memoryByID(ctx, &lookupErr))
			err := lesson.CheckEvidenceLineage(lineage, it.EvidenceTaskIDs, a.outcome(ctx, &lookupErr))
			if lookupErr != nil {
				return row, res, lookupErr
			}
			var ge *lesson.GateError
			if errors.As(err, &ge) {
				return refuse(ge.Check, strings.TrimPrefix(ge.Error(), ge.Check+": "))
			}
			if err != nil {
				return row, res, err
			}
		}
	}
	if check, why, err := a.checkRefs(ctx, it); err != nil || why != "" {
		if err != nil {
			return row, res, err
		}
		return refuse(check, why)
	}
	return a.write(ctx, it, m, target, row, res)
}

// write stores an accepted new or revised lesson, its conflicts and, for a
// revise, the target's supersession.
func (a *applier) write(ctx context.Context, it reflection.Item, m memory.Memory, target memory.Memory,
	row store.ReflectionItem, res Result) (store.ReflectionItem, Result, error) {
	var id int64
	if it.Relation == reflection.New && !m.Quarantined {
		dup, ok, err := a.duplicate(ctx, m)
		if err != nil {
			return row, res, err
		}
		if ok {
			// Said again: one more use of the one stored, as a repeat.
			id, row.TargetID, res.Duplicate = dup, dup, true
			if err := a.s.store.BumpUses(ctx, a.tx, a.use(), dup); err != nil {
				return row, res, err
			}
		}
	}
	if id == 0 {
		var err error
		if id, err = a.s.store.InsertMemory(ctx, a.tx, memories.ToRow(m)); err != nil {
			return row, res, err
		}
		row.MemoryID, res.Quarantined = id, m.Quarantined
	}
	res.ID = id
	for _, c := range it.Conflicts {
		if c.With == id {
			continue // a lesson does not conflict with itself
		}
		if _, err := a.s.store.InsertLink(ctx, a.tx, store.Link{FromID: id, ToID: c.With, Kind: string(c.Kind), Note: gatedNote(c.Note),
			RecordedAt: a.now, JobID: a.jobID, TaskID: a.task.ID}); err != nil {
			return row, res, err
		}
	}
	if it.Relation != reflection.Revise || m.Quarantined {
		// A quarantined version is kept for review and never served: it
		// must not retire the lesson it would replace either.
		return row, res, nil
	}
	reason := fmt.Sprintf("revised by %s, reflecting on task %s", lesson.LessonRef(id), a.task.ID)
	if _, err := lesson.Supersede(target, id, reason, a.now); err != nil {
		return row, res, err
	}
	return row, res, a.s.store.SetMemoryState(ctx, a.tx, target.ID, store.StateSuperseded, a.now, reason, id)
}

// memoryByID reads a memory for lesson.Lineage; a read error other than
// not found is kept in *errp.
func (a *applier) memoryByID(ctx context.Context, errp *error) func(int64) (memory.Memory, bool) {
	return func(id int64) (memory.Memory, bool) {
		r, err := a.s.store.GetMemory(ctx, a.tx, id)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && *errp == nil {
				*errp = err
			}
			return memory.Memory{}, false
		}
		return memories.FromRow(r), true
	}
}

// RefusedScope is the check that refuses a revise of a lesson wider than
// the reflection may write (reflection.WritableScopes).
const RefusedScope = "scope"

// outOfReach says why target is not a lesson this task's reflection may
// retire ("" when it may): a revise supersedes its target everywhere it is
// shown, so a reflection, whose evidence its own agent can make (open a
// task, fail it), may revise only its session's and its workspace's
// lessons. A global lesson, or another session's, changes by an operator's
// hand (mull lessons deprecate, move, remove).
func (a *applier) outOfReach(target memory.Memory) string {
	ref := lesson.LessonRef(target.ID)
	switch lesson.ScopeOf(target) {
	case memory.LessonWorkspace:
		if target.Workspace == a.task.Workspace {
			return ""
		}
		return fmt.Sprintf("%s is another workspace's lesson; a reflection revises only its own workspace's and session's", ref)
	case memory.LessonReflection:
		if target.ScopeSession == a.task.SessionID {
			return ""
		}
	}
	return fmt.Sprintf("%s is a %s lesson: a reflection revises only its own workspace's and session's; an operator changes it with mull lessons", ref, lesson.ScopeOf(target))
}

// inForce reads lesson id and says why it is not in force for the task's
// session ("" when it is).
func (a *applier) inForce(ctx context.Context, id int64) (memory.Memory, string, error) {
	r, err := a.s.store.GetMemory(ctx, a.tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return memory.Memory{}, fmt.Sprintf("%s does not exist", lesson.LessonRef(id)), nil
	}
	if err != nil {
		return memory.Memory{}, "", err
	}
	m := memories.FromRow(r)
	v := lesson.Viewer{Workspace: a.task.Workspace, Session: a.task.SessionID}
	switch {
	case !m.Kind.Structured():
		return m, fmt.Sprintf("%s is a %s memory, not a lesson", lesson.LessonRef(id), m.Kind), nil
	case m.Quarantined:
		return m, fmt.Sprintf("%s is quarantined", lesson.LessonRef(id)), nil
	case lesson.StateOf(m) != memory.StateActive || !m.InvalidAt.IsZero():
		return m, fmt.Sprintf("%s is %s, no longer in force", lesson.LessonRef(id), lesson.StateOf(m)), nil
	case !v.Sees(m):
		return m, fmt.Sprintf("%s is not in force for session %s (its scope is %s)", lesson.LessonRef(id), a.task.SessionID, lesson.ScopeOf(m)), nil
	}
	return m, "", nil
}

// checkRefs says which check an accepted lesson's references fail and why
// ("" none): the session a session-scope lesson names, and its conflicts'
// lessons.
func (a *applier) checkRefs(ctx context.Context, it reflection.Item) (string, string, error) {
	if it.Scope == memory.LessonSession && it.SessionID != "" {
		_, err := a.s.store.GetSessionIn(ctx, a.tx, it.SessionID)
		if errors.Is(err, store.ErrNotFound) {
			return CheckSession, fmt.Sprintf("session %q is unknown to mull", it.SessionID), nil
		}
		if err != nil {
			return "", "", err
		}
	}
	for j, c := range it.Conflicts {
		_, err := a.s.store.GetMemory(ctx, a.tx, c.With)
		if errors.Is(err, store.ErrNotFound) {
			return CheckConflict, fmt.Sprintf("conflicts[%d] names %s, which does not exist", j, lesson.LessonRef(c.With)), nil
		}
		if err != nil {
			return "", "", err
		}
	}
	return "", "", nil
}

// duplicate finds a live lesson of m's library with m's text, kind and
// scope: saying it again is a repeat of it.
func (a *applier) duplicate(ctx context.Context, m memory.Memory) (int64, bool, error) {
	r, ok, err := a.s.store.FindMemoryByNorm(ctx, a.tx, m.Workspace, memory.Normalize(m.Text))
	if err != nil || !ok {
		return 0, false, err
	}
	d := memories.FromRow(r)
	same := d.Kind == m.Kind && lesson.ScopeOf(d) == m.Scope && d.ScopeSession == m.ScopeSession
	return d.ID, same, nil
}

// outcome is the precedent gate's view of the store's tasks, in tx; a read
// that fails for another reason than a missing task is kept in *failed.
func (a *applier) outcome(ctx context.Context, failed *error) func(id string) (lesson.TaskOutcome, bool) {
	return func(id string) (lesson.TaskOutcome, bool) {
		t, err := a.s.store.GetTask(ctx, a.tx, id)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && *failed == nil {
				*failed = err
			}
			return lesson.TaskOutcome{}, false
		}
		return lesson.TaskOutcome{ID: t.ID, Status: lesson.TaskStatus(t.Status), Closed: !t.ClosedAt.IsZero(),
			EnvironmentIDs: t.EnvironmentIDs, Turn: t.Kind == store.TaskKindTurn}, true
	}
}

// critiqueJSON is the reviews of a reflection's lessons, by index, as the
// reflection row keeps them (empty: none).
func critiqueJSON(r reflection.Reflection) string {
	type reviewed struct {
		Index    int                  `json:"index"`
		Critique *reflection.Critique `json:"critique"`
	}
	var out []reviewed
	for _, it := range r.Lessons {
		if it.Critique != nil {
			g := it.Critique.Gated()
			out = append(out, reviewed{it.Index, &g})
		}
	}
	if len(out) == 0 {
		return ""
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}

// gatedNote is a declared conflict's note through the write-time gate: it
// is the model's or the agent's text, shown beside the pair in [CONFLICTS].
func gatedNote(note string) string {
	if note == "" {
		return ""
	}
	v := trust.Check(note)
	if v.Quarantined {
		return "(withheld by the trust gate: " + v.Reason + ")"
	}
	return trust.OneLine(v.Text)
}
