package reflection

import (
	"cmp"
	"fmt"
	"strings"
)

// The missed-task nudge (the seed's missedTaskNudge): when a turn did
// substantive work and no task covers it, say so once at the turn's end.
// It is decided per turn, not per session — the seed's old rule ("has this
// session ever opened a task?") exempted a session for good after one
// task, and missed four turns of 127, 73, 21 and 62 calls. It is a
// statement, not a command: whether work is a task is the agent's call.

// TurnActivity is what one turn did, as the nudge reads it.
type TurnActivity struct {
	// ToolCalls are the names of the turn's tool calls, task tools
	// included (they are not counted as work).
	ToolCalls []string
	// FilesChanged counts the files the turn changed.
	FilesChanged int
	// TaskBoundary: task_start or task_end was called this turn (also
	// read from ToolCalls).
	TaskBoundary bool
	// TaskOpen: the session has an open task (a task spanning turns).
	TaskOpen bool
	// NudgesServed counts the nudges served this session so far.
	NudgesServed int
}

// NudgeOptions are the nudge's numbers. The zero value of a field takes
// its default.
type NudgeOptions struct {
	// MinCalls is reflection.nudge_min_calls: the tool calls (task tools
	// not counted) that make a turn substantive. Defaults to 8 (the
	// seed's missedTaskMinCalls).
	MinCalls int
	// MaxPerSession is reflection.nudge_max_per_session. Defaults to 2
	// (the seed's missedTaskMaxPerSession).
	MaxPerSession int
}

// DefaultNudge are the seed's numbers.
var DefaultNudge = NudgeOptions{MinCalls: 8, MaxPerSession: 2}

// WithDefaults fills the zero fields from DefaultNudge.
func (o NudgeOptions) WithDefaults() NudgeOptions {
	return NudgeOptions{MinCalls: cmp.Or(o.MinCalls, DefaultNudge.MinCalls), MaxPerSession: cmp.Or(o.MaxPerSession, DefaultNudge.MaxPerSession)}
}

// WorkCalls counts the turn's tool calls that are work: all but TaskTools.
func (a TurnActivity) WorkCalls() int {
	n := 0
	for _, c := range a.ToolCalls {
		if !IsTaskTool(c) {
			n++
		}
	}
	return n
}

// Substantive reports work worth a task: at least MinCalls work calls, or
// a file changed.
func (a TurnActivity) Substantive(o NudgeOptions) bool {
	return a.WorkCalls() >= o.WithDefaults().MinCalls || a.FilesChanged > 0
}

func (a TurnActivity) boundary() bool {
	if a.TaskBoundary {
		return true
	}
	for _, c := range a.ToolCalls {
		if c == "task_start" || c == "task_end" {
			return true
		}
	}
	return false
}

// Nudge decides whether the turn's end gets the missed-task notice, and
// its text. No nudge when the turn used the task boundary (task_start or
// task_end), when a task is open (a task's middle turn is in its window),
// when the turn did no substantive work, or when the session has had
// MaxPerSession nudges.
func Nudge(a TurnActivity, o NudgeOptions) (string, bool) {
	o = o.WithDefaults()
	if a.boundary() || a.TaskOpen || !a.Substantive(o) || a.NudgesServed >= o.MaxPerSession {
		return "", false
	}
	return NudgeText(a), true
}

// NudgeText is the notice: what work was done, that it is not recorded if
// it is a task, that not opening one is allowed but should be a judgement,
// and that it is not a request to open a task after the fact.
func NudgeText(a TurnActivity) string {
	var work []string
	if n := a.WorkCalls(); n > 0 {
		work = append(work, plural(n, "tool call"))
	}
	if a.FilesChanged > 0 {
		work = append(work, plural(a.FilesChanged, "file")+" changed")
	}
	return fmt.Sprintf("This turn did substantive work (%s) and no task covers it. "+
		"If this work fits a task, its decisions are not being recorded now. "+
		"Not opening a task is your choice; make sure it was a judgement, not an oversight. "+
		"This is not a request to open a task after the fact: a task opened now would hold none of the decisions already made. "+
		"If the next piece of work is a task, task_start as its first action records it.",
		strings.Join(work, ", "))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
