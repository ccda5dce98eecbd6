package memories

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/reflection"
	"github.com/mullhq/mull/store"
)

// LookupError is a lessons_lookup of a lesson the agent may not read: it
// does not exist, is not a structured lesson, is quarantined (never
// served) or is a tombstone. The API answers 404 with it.
type LookupError struct {
	ID  int64
	Why string
}

func (e *LookupError) Error() string { return lesson.LessonRef(e.ID) + ": " + e.Why }

// Looked is lessons_lookup's answer: the seed-shaped text and, for a
// program, what the lesson is, without any of its stored text (the text
// is in Text, through the render-time gate).
type Looked struct {
	Text   string       `json:"text"`
	Lesson LookedLesson `json:"lesson"`
}

// LookedLesson is the lesson's machine fields.
type LookedLesson struct {
	ID        int64              `json:"id"`
	Ref       string             `json:"ref"`
	Kind      memory.Kind        `json:"kind"`
	Scope     memory.LessonScope `json:"scope"`
	State     memory.State       `json:"state"`
	TaskID    string             `json:"task_id,omitempty"`
	Precedent lesson.Precedent   `json:"precedent"`
}

// LookupLesson answers lessons_lookup(id): lesson.RenderLookup with the
// lesson, its precedent over every closed task, its source task and that
// task's start snapshot, and the adversarial review of it when one was
// stored. A superseded or deprecated lesson is shown with its state; a
// deleted, quarantined, unknown or non-lesson id is a *LookupError.
//
// asker is who looks: a lesson is shown only to a session its scope
// reaches, or one that had it in a task's start environment (it was in
// force for that session when it was frozen); any other is a *LookupError,
// as if it did not exist, so ids cannot be walked across sessions and
// workspaces. A session's workspace is its own, not the request's.
func (s *Service) LookupLesson(ctx context.Context, id int64, asker Asker) (Looked, error) {
	var l lesson.Lookup
	err := s.store.InTx(ctx, func(tx *sql.Tx) error {
		m, err := s.getLesson(ctx, tx, id)
		if err == nil {
			err = s.mayLookUp(ctx, tx, m, asker)
		}
		var nl *NotLessonError
		switch {
		case errors.Is(err, store.ErrNotFound):
			return &LookupError{ID: id, Why: "no such lesson"}
		case errors.As(err, &nl):
			return &LookupError{ID: id, Why: fmt.Sprintf("memory %d is a %s, not a lesson", id, nl.Kind)}
		case err != nil:
			return err
		case m.Quarantined:
			return &LookupError{ID: id, Why: "quarantined by the trust gate; it is never served"}
		case lesson.StateOf(m) == memory.StateDeleted:
			return &LookupError{ID: id, Why: "deleted (a tombstone); it is never served"}
		}
		l.Lesson = m
		p, err := s.store.PrecedentCounts(ctx, tx, []int64{id})
		if err != nil {
			return err
		}
		pc := p[id]
		l.Precedent = lesson.Precedent{Verified: pc.Verified, Counter: pc.Counter, Exposures: pc.Exposures}
		if pc.Counter > 0 {
			if l.Counterexamples, err = s.store.CounterexampleTasks(ctx, tx, id, lesson.MaxLookupCounterexamples); err != nil {
				return err
			}
		}
		if m.TaskID == "" {
			return nil
		}
		return s.lookupSource(ctx, tx, &l)
	})
	if err != nil {
		return Looked{}, err
	}
	m := l.Lesson
	// source_text is the agent's own account; it is never injected.
	f := *m.Lesson
	f.SourceText = ""
	l.Lesson.Lesson = &f
	return Looked{Text: lesson.RenderLookup(l), Lesson: LookedLesson{ID: m.ID, Ref: lesson.LessonRef(m.ID), Kind: m.Kind,
		Scope: lesson.ScopeOf(m), State: lesson.StateOf(m), TaskID: m.TaskID, Precedent: l.Precedent}}, nil
}

// lookupSource fills l's source task, its snapshot and the critique of the
// lesson from the task's reflections. A task row gone missing leaves the
// source out rather than failing the lookup.
func (s *Service) lookupSource(ctx context.Context, tx *sql.Tx, l *lesson.Lookup) error {
	t, err := s.store.GetTask(ctx, tx, l.Lesson.TaskID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	l.Source = &lesson.TaskInfo{ID: t.ID, SessionID: t.SessionID, Goal: t.Goal, Expected: t.Expected,
		Status: lesson.TaskStatus(t.Status), Result: t.Result, OpenSeq: t.OpenSeq, CloseSeq: t.CloseSeq}
	if t.Environment != "" {
		var snap lesson.Snapshot
		if err := json.Unmarshal([]byte(t.Environment), &snap); err != nil {
			return fmt.Errorf("task %s: environment: %w", t.ID, err)
		}
		l.Environment = &snap
	}
	refls, err := s.store.ListReflections(ctx, tx, t.ID)
	if err != nil {
		return err
	}
	for _, r := range refls {
		for _, it := range r.Items {
			if it.MemoryID != l.Lesson.ID {
				continue
			}
			if c, ok := critiqueOf(r, it); ok {
				l.Sections = append(l.Sections, CritiqueSection(c))
			}
		}
	}
	return nil
}

// critiqueOf reads the stored review of item it of reflection r: the
// item's own critique (one object), or else the reflection's reviews of
// its lessons by index ([{"index": n, "critique": …}], as tasks.Apply
// writes them).
func critiqueOf(r store.Reflection, it store.ReflectionItem) (reflection.Critique, bool) {
	if it.Critique != "" {
		var c reflection.Critique
		if err := json.Unmarshal([]byte(it.Critique), &c); err == nil {
			return c, true
		}
	}
	var many []struct {
		Index    int                  `json:"index"`
		Critique *reflection.Critique `json:"critique"`
	}
	if r.Critique != "" && json.Unmarshal([]byte(r.Critique), &many) == nil {
		for _, c := range many {
			if c.Index == it.Index && c.Critique != nil {
				return *c.Critique, true
			}
		}
	}
	return reflection.Critique{}, false
}

// CritiqueSection is a lesson's adversarial review as a lookup block: the
// argument fields in the seed's order, each steelman round, the residual,
// the validity and the verdict. It never reaches the system prompt.
func CritiqueSection(c reflection.Critique) lesson.LookupSection {
	var lines []string
	add := func(label, v string) {
		if strings.TrimSpace(v) != "" {
			lines = append(lines, label+": "+v)
		}
	}
	for _, k := range reflection.ArgumentFields {
		add(k, c.Argument[k])
	}
	for i, r := range c.SteelmanRounds {
		add(fmt.Sprintf("round %d threatens %s", i+1, r.Threatens), r.Argument+" / response: "+r.Response+" / survives: "+r.Survives)
	}
	add("opposition_residual", c.OppositionResidual)
	var validity []string
	for _, v := range [][2]string{{"deductive", c.Validity.Deductive}, {"inductive", c.Validity.Inductive},
		{"premise_truth", c.Validity.PremiseTruth}} {
		if strings.TrimSpace(v[1]) != "" {
			validity = append(validity, v[0]+" "+v[1])
		}
	}
	add("validity", strings.Join(validity, "; "))
	add("verdict", string(c.Verdict))
	if len(c.UnresolvedKeys) > 0 {
		add("unresolved", strings.Join(c.UnresolvedKeys, ", "))
	}
	return lesson.LookupSection{Title: "CRITIQUE", Lines: lines}
}

// Asker is the session (and workspace) a lookup is for.
type Asker struct {
	Workspace string
	Session   string
}

// mayLookUp refuses a lesson asker's session does not see and never had in
// a task's environment, with the same answer as an unknown id.
func (s *Service) mayLookUp(ctx context.Context, tx *sql.Tx, m memory.Memory, asker Asker) error {
	ws := asker.Workspace
	if asker.Session != "" {
		sess, err := s.store.GetSessionIn(ctx, tx, asker.Session)
		switch {
		case err == nil:
			ws = sess.Workspace
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	if (lesson.Viewer{Workspace: ws, Session: asker.Session, GlobalLibrary: s.scopeOf(ws).ReadsGlobal()}).Sees(m) {
		return nil
	}
	if asker.Session != "" {
		saw, err := s.store.SessionSawLesson(ctx, tx, asker.Session, m.ID)
		if err != nil || saw {
			return err
		}
	}
	return store.ErrNotFound
}
