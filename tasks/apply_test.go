package tasks_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/lesson"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/tasks"
)

// The check: a revise without evidence, with a succeeded task, with
// a task whose snapshot lacked the lesson, and with a valid failed task:
// three refusals each naming its check, one accepted; every refusal is
// counted, and only the accepted one supersedes its target.
func TestApplyReviseThroughThePrecedentGate(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, nil)
		target := f.lesson("npm install fails")
		f.closedTask("task-ok", "s0", store.TaskSucceeded, target)
		f.closedTask("task-other", "s0", store.TaskFailed)
		f.closedTask("task-bad", "s0", store.TaskFailed, target)
		cases := []struct {
			evidence []string
			check    string
		}{
			{nil, lesson.GateNoEvidence},
			{[]string{"task-ok"}, lesson.GateSucceeded},
			{[]string{"task-other"}, lesson.GateNotInSnapshot},
			{[]string{"task-bad"}, ""},
		}
		for i, c := range cases {
			id := "task-r" + string(rune('0'+i))
			f.closedTask(id, "s1", store.TaskFailed, target)
			got, err := f.apply(id, doc(revise(target, c.evidence...)), tasks.ByJob)
			if err != nil {
				t.Fatalf("%v: %v", c.evidence, err)
			}
			r := got.Results[0]
			if c.check != "" {
				if !strings.HasPrefix(r.Refused, c.check+": ") || r.ID != 0 || got.LessonsRecorded != 0 {
					t.Fatalf("%v: %+v, want refused by %s", c.evidence, got, c.check)
				}
				if m := f.memory(target); m.State != memory.StateActive {
					t.Fatalf("%v: a refused revise changed its target: %s", c.evidence, m.State)
				}
				continue
			}
			if r.Refused != "" || r.ID == 0 || got.LessonsRecorded != 1 {
				t.Fatalf("valid evidence: %+v", got)
			}
			old, rev := f.memory(target), f.memory(r.ID)
			if old.State != memory.StateSuperseded || old.SupersededBy != r.ID || old.InvalidAt.IsZero() {
				t.Fatalf("target after the revise: %+v", old)
			}
			if rev.TaskID != id || rev.Origin != memory.OriginRetro || rev.Scope != memory.LessonWorkspace || rev.Text != lesson.Line(rev) {
				t.Fatalf("revised lesson: %+v", rev)
			}
		}
		st, err := s.ReflectionStats(ctx, s.DB, "")
		if err != nil {
			t.Fatal(err)
		}
		if st.Proposed["revise"] != 4 || st.Accepted["revise"] != 1 || st.Refusals[lesson.GateNoEvidence] != 1 ||
			st.Refusals[lesson.GateSucceeded] != 1 || st.Refusals[lesson.GateNotInSnapshot] != 1 || st.LessonsRecorded != 1 {
			t.Fatalf("stats: %+v", st)
		}
	})
}

// A task is reflected on once: the second Apply is refused and changes
// nothing.
func TestApplyOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, nil)
		f.closedTask("task-1", "s1", store.TaskFailed)
		l := m{"relation": "new", "kind": "failure", "problem": "go test ./... times out", "avoid": "running the whole suite on 2 cores"}
		first, err := f.apply("task-1", doc(l), tasks.ByAgent)
		if err != nil || first.LessonsRecorded != 1 {
			t.Fatalf("first: %+v %v", first, err)
		}
		before := storetest.Dump(t, s)
		_, err = f.apply("task-1", doc(l, m{"relation": "none"}), tasks.ByJob)
		var already *tasks.AlreadyReflectedError
		if !errors.As(err, &already) || already.By != tasks.ByAgent {
			t.Fatalf("second apply: %v", err)
		}
		if after := storetest.Dump(t, s); after != before {
			t.Fatalf("the refused second apply changed the store:\n%s\nwas\n%s", after, before)
		}
		got := f.memory(first.Results[0].ID)
		if got.Kind != memory.Failure || got.Scope != memory.LessonReflection || got.ScopeSession != "s1" ||
			got.Origin != memory.OriginTool || got.Src != memory.SrcAgent || got.TaskID != "task-1" {
			t.Fatalf("stored failure: %+v", got)
		}
		// An open task takes no reflection.
		f.closedTask("task-open", "s1", store.TaskOpen)
		var conflict *tasks.ConflictError
		if _, err := f.apply("task-open", doc(), tasks.ByAgent); !errors.As(err, &conflict) {
			t.Fatalf("open task: %v", err)
		}
		if _, err := f.apply("task-none", doc(), tasks.ByAgent); !errors.Is(err, tasks.ErrNotFound) {
			t.Fatalf("unknown task: %v", err)
		}
	})
}

// A reflection cannot retire a lesson wider than it may write: its agent
// can make its own evidence (open a task, fail it), so a global lesson,
// shown in every workspace, is revised by an operator, not by a revise.
func TestApplyReviseOutOfReach(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, nil)
		g := memory.Memory{Kind: memory.Lesson, Scope: memory.LessonGlobal, Origin: memory.OriginPanel,
			Lesson: &memory.LessonFields{Problem: "pushed to main without a review", Correction: "open a pull request and wait for one approving review",
				Confidence: memory.ConfidenceHigh, Boundary: "every repository of this team"}}
		g, _, err := lesson.New(g, f.s.Now())
		if err != nil {
			t.Fatal(err)
		}
		gid, err := s.InsertMemory(context.Background(), s.DB, memories.ToRow(g))
		if err != nil {
			t.Fatal(err)
		}
		f.closedTask("task-ev", "s1", store.TaskFailed, gid)
		f.closedTask("task-now", "s1", store.TaskFailed, gid)
		got, err := f.apply("task-now", doc(revise(gid, "task-ev")), tasks.ByAgent)
		if err != nil {
			t.Fatal(err)
		}
		if r := got.Results[0]; !strings.HasPrefix(r.Refused, tasks.RefusedScope+": ") || got.LessonsRecorded != 0 {
			t.Fatalf("revise of a global lesson: %+v, want refused by %s", got, tasks.RefusedScope)
		}
		if m := f.memory(gid); m.State != memory.StateActive {
			t.Fatalf("the global lesson is %s after a refused revise", m.State)
		}
	})
}

// Promotion is a state transition: a revise of the promoted lesson may cite
// a failed task that had its source in force.
func TestApplyReviseAcrossAPromotion(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, nil)
		m := memory.Memory{Workspace: "/w", Kind: memory.Lesson, Scope: memory.LessonReflection, ScopeSession: "s0", SessionID: "s0",
			Origin: memory.OriginPanel, Lesson: &memory.LessonFields{Problem: "npm install fails on the lockfile",
				Correction: "read the project's notes first, then run the package manager the lockfile names"}}
		m, _, err := lesson.New(m, f.s.Now())
		if err != nil {
			t.Fatal(err)
		}
		src, err := s.InsertMemory(context.Background(), s.DB, memories.ToRow(m))
		if err != nil {
			t.Fatal(err)
		}
		f.closedTask("task-old", "s0", store.TaskFailed, src)
		r, err := s.GetMemory(context.Background(), s.DB, src)
		if err != nil {
			t.Fatal(err)
		}
		d, err := lesson.Promote(memories.FromRow(r), lesson.Target{Scope: memory.LessonWorkspace, Workspace: "/w"}, "promoted for the whole workspace", f.s.Now())
		if err != nil {
			t.Fatal(err)
		}
		did, err := s.InsertMemory(context.Background(), s.DB, memories.ToRow(d))
		if err != nil {
			t.Fatal(err)
		}
		f.closedTask("task-now", "s1", store.TaskFailed, did)
		got, err := f.apply("task-now", doc(revise(did, "task-old")), tasks.ByJob)
		if err != nil {
			t.Fatal(err)
		}
		if res := got.Results[0]; res.Refused != "" || got.LessonsRecorded != 1 {
			t.Fatalf("revise of a promoted lesson with its source's evidence: %+v", got)
		}
	})
}
