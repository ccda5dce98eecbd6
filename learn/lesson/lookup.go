package lesson

import (
	"strconv"
	"strings"

	"github.com/mullhq/mull/learn/memory"
)

// MaxLookupExpanded is how many of the other lessons in force a lookup
// shows with their problem (the seed's 10); the rest are listed by id.
const MaxLookupExpanded = 10

// TaskInfo is what a lookup shows of a lesson's source task.
type TaskInfo struct {
	ID        string
	SessionID string
	Goal      string
	Expected  string
	Status    TaskStatus
	Result    string
	// OpenSeq and CloseSeq are the session event seqs of task_open and
	// task_close: the timeline to go back to the conversation with.
	// CloseSeq is 0 while the task is open.
	OpenSeq, CloseSeq int64
}

// LookupSection is a further block of a lookup answer, after the lesson's
// own: the hook for what a lesson carries beyond its fields (an adversarial
// review's critique: argument, rounds, residual, validity), which never
// reaches the system prompt and is read here on demand.
type LookupSection struct {
	// Title is the block's heading, e.g. "CRITIQUE".
	Title string
	// Lines are shown indented, each through the render-time gate.
	Lines []string
}

// Lookup is everything lessons_lookup(id) answers with.
type Lookup struct {
	// Lesson is the lesson as stored now.
	Lesson memory.Memory
	// Precedent is its record over every closed task.
	Precedent Precedent
	// Sections follow the lesson's own block (see LookupSection).
	Sections []LookupSection
	// Source is the task whose reflection wrote it; nil when no task did
	// (an operator's lesson, a retro's).
	Source *TaskInfo
	// Environment is Source's start snapshot; nil when there is none.
	Environment *Snapshot
	// Counterexamples are closed failed tasks that had the lesson in force
	// (newest first, at most MaxLookupCounterexamples): the evidence a
	// revise must cite, shown so a justified revise can be written at all.
	Counterexamples []string
}

// MaxLookupCounterexamples caps the counterexample task ids a lookup lists.
const MaxLookupCounterexamples = 5

// RenderLookup renders l in the seed's shape:
//
//	LESSON L42
//	  problem:     …
//	  correction:  …
//	  applies when: …
//	  confidence:  high
//	  …kind, scope, state, precedent
//
//	SOURCE TASK task-…
//	  goal:     …
//	  expected: …
//	  status:   succeeded
//	  result:   …
//	  timeline: session events seq 9743..9831
//
//	OTHER LESSONS IN FORCE WHEN THAT TASK STARTED (11 total):
//	  [E2 L17] (reflection, medium) …
//	  (+1 more in force, not expanded: L9)
//
// The total is every lesson of the snapshot, detailed and omitted alike, so
// it matches the snapshot's count. At most MaxLookupExpanded are shown with
// their problem and every other id is listed after them, so no id is lost.
// Should the lesson itself have been in force then, it keeps its place,
// marked, and is not expanded again. Every stored text goes through the
// render-time gate: the answer goes into the agent's context.
func RenderLookup(l Lookup) string {
	blocks := []string{lookupLessonBlock(l.Lesson, l.Precedent, l.Counterexamples)}
	for _, s := range l.Sections {
		blocks = append(blocks, lookupSectionBlock(s))
	}
	blocks = append(blocks, lookupSourceBlock(l.Source))
	if l.Source != nil {
		blocks = append(blocks, lookupOthersBlock(l.Lesson.ID, l.Environment))
	}
	return strings.Join(blocks, "\n\n")
}

// lookupLines collects "  label value" lines, skipping empty values; labels
// carry their own padding, the seed's.
type lookupLines []string

func (b *lookupLines) add(label, value string) {
	if strings.TrimSpace(value) != "" {
		*b = append(*b, "  "+label+envField(value))
	}
}

func (b lookupLines) String() string { return strings.Join(b, "\n") }

func lookupLessonBlock(m memory.Memory, p Precedent, counter []string) string {
	e := snapshotEntry(m)
	b := lookupLines{"LESSON " + LessonRef(m.ID)}
	b.add("problem:     ", e.Problem)
	b.add("attempted:   ", e.Attempted)
	b.add("correction:  ", e.Correction)
	b.add("avoid:       ", e.Avoid)
	b.add("instead:     ", e.Instead)
	b.add("applies when: ", e.AppliesWhen)
	conf := e.Confidence
	if m.Lesson == nil || memory.Confidence(conf) != m.Lesson.Confidence {
		conf += " (unrated)"
	}
	b.add("confidence:  ", conf)
	b.add("kind:        ", e.Kind)
	b.add("scope:       ", lookupScope(m))
	if f := m.Lesson; f != nil {
		b.add("boundary:    ", f.Boundary)
		b.add("narrowed:    ", f.Narrowed)
		b.add("source:      ", f.Source)
	}
	b.add("state:       ", lookupState(m))
	b.add("precedent:   ", strings.TrimPrefix(FormatPrecedent(p), "Precedent: ")+
		"; in force in "+strconv.Itoa(p.Exposures)+" closed task(s)")
	if len(counter) > 0 {
		ids := make([]string, 0, min(len(counter), MaxLookupCounterexamples))
		for _, id := range counter[:min(len(counter), MaxLookupCounterexamples)] {
			ids = append(ids, envField(id))
		}
		more := ""
		if n := p.Counter - len(ids); n > 0 {
			more = " (+" + strconv.Itoa(n) + " more)"
		}
		b.add("counterexamples: ", strings.Join(ids, ", ")+more)
	}
	return b.String()
}

// lookupScope is the scope with whom it names: the workspace or session.
func lookupScope(m memory.Memory) string {
	s := snapshotScope(m)
	switch {
	case s == memory.LessonWorkspace && m.Workspace != "":
		return string(s) + " " + m.Workspace
	case (s == memory.LessonSession || s == memory.LessonReflection) && m.ScopeSession != "":
		return string(s) + " " + m.ScopeSession
	}
	return string(s)
}

// lookupState is m's lifecycle: "" reads active, or superseded once
// invalidated; a replacement is named.
func lookupState(m memory.Memory) string {
	s := m.State
	if s == "" {
		s = memory.StateActive
		if !m.InvalidAt.IsZero() {
			s = memory.StateSuperseded
		}
	}
	out := string(s)
	if m.SupersededBy > 0 {
		out += " by " + LessonRef(m.SupersededBy)
	}
	return out
}

func lookupSectionBlock(s LookupSection) string {
	b := lookupLines{envField(s.Title)}
	for _, l := range s.Lines {
		b.add("", l)
	}
	return b.String()
}

func lookupSourceBlock(t *TaskInfo) string {
	if t == nil {
		return "SOURCE TASK (none: no task's reflection wrote this lesson)"
	}
	b := lookupLines{"SOURCE TASK " + envField(t.ID)}
	b.add("goal:     ", t.Goal)
	b.add("expected: ", t.Expected)
	b.add("status:   ", string(t.Status))
	b.add("result:   ", t.Result)
	b.add("timeline: ", lookupTimeline(t))
	b.add("session:  ", t.SessionID)
	return b.String()
}

func lookupTimeline(t *TaskInfo) string {
	switch {
	case t.OpenSeq == 0 && t.CloseSeq == 0:
		return "(no session events recorded)"
	case t.CloseSeq == 0:
		return "session events seq " + strconv.FormatInt(t.OpenSeq, 10) + ".. (task still open)"
	}
	return "session events seq " + strconv.FormatInt(t.OpenSeq, 10) + ".." + strconv.FormatInt(t.CloseSeq, 10)
}

const lookupOthersHead = "OTHER LESSONS IN FORCE WHEN THAT TASK STARTED ("

func lookupOthersBlock(self int64, s *Snapshot) string {
	if s == nil {
		return lookupOthersHead + "no snapshot recorded)"
	}
	b := []string{lookupOthersHead + strconv.Itoa(len(s.Lessons)+len(s.Omitted)) + " total):"}
	expanded := 0
	var rest []string
	show := func(ref, head string, id int64) {
		switch {
		case id == self:
			b = append(b, "  "+ref+" (this lesson, shown above)")
		case expanded < MaxLookupExpanded:
			b = append(b, "  "+ref+" "+head)
			expanded++
		default:
			rest = append(rest, LessonRef(id))
		}
	}
	for i, e := range s.Lessons {
		show(envEntryRef(i+1, e.ID), envEntryHead(e), e.ID)
	}
	for _, o := range s.Omitted {
		show("["+LessonRef(o.ID)+"]", envTagged(envField(o.Problem), o.Confidence), o.ID)
	}
	if len(b) == 1 {
		b = append(b, "  (none)")
	}
	if len(rest) > 0 {
		b = append(b, "  (+"+strconv.Itoa(len(rest))+" more in force, not expanded: "+strings.Join(rest, ", ")+")")
	}
	return strings.Join(b, "\n")
}
