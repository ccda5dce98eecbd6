package lesson

import (
	"github.com/mullhq/mull/learn/memory"
	"slices"
	"strconv"
	"strings"
)

// TaskStatus is how a task ended (or that it has not).
type TaskStatus string

// The task statuses: open, then the seed's four outcomes.
const (
	TaskOpen      TaskStatus = "open"
	TaskSucceeded TaskStatus = "succeeded"
	TaskFailed    TaskStatus = "failed"
	TaskAbandoned TaskStatus = "abandoned"
	TaskAborted   TaskStatus = "aborted"
)

// Closed reports one of the four outcomes.
func (s TaskStatus) Closed() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskAbandoned || s == TaskAborted
}

// TaskOutcome is what the precedent rules read of one task: how it ended
// and which lessons were in its start snapshot (environment_ids).
type TaskOutcome struct {
	ID     string
	Status TaskStatus
	// Closed: the task has a close record. Only closed tasks count.
	Closed bool
	// EnvironmentIDs are the ids of its start snapshot, detailed and
	// omitted alike (Snapshot.IDs): both were in force.
	EnvironmentIDs []int64
	// Turn: a per-turn fallback's task (reflection.turn_fallback), whose
	// window and status mull chose, not the agent. It is neither precedent
	// nor evidence.
	Turn bool
}

// ended reports a task that has a close record with one of the outcomes.
func (t TaskOutcome) ended() bool { return t.Closed && t.Status.Closed() }

// Precedent is a lesson's record: the join of task start snapshots with
// task outcomes, no model's rating in it and no control group (seed 4.5:
// it counts exposure, it does not prove a lesson good).
type Precedent struct {
	// Verified counts succeeded tasks that had the lesson in force.
	Verified int `json:"verified"`
	// Counter counts failed tasks that had it in force.
	Counter int `json:"counter"`
	// Exposures counts every closed task that had it in force, abandoned
	// and aborted ones included: the lesson was in the agent's prompt, but
	// a task given up or cut off says nothing about whether following the
	// lesson works, so those count as exposures only.
	Exposures int `json:"exposures"`
}

// Precedents counts every lesson's precedent over tasks. Open tasks and
// tasks without a close record count nowhere; a lesson listed twice in one
// snapshot counts once for that task. A lesson in no closed task's
// snapshot has no entry (its zero Precedent).
func Precedents(tasks []TaskOutcome) map[int64]Precedent {
	out := map[int64]Precedent{}
	for _, t := range tasks {
		if !t.ended() || t.Turn {
			continue
		}
		seen := make(map[int64]bool, len(t.EnvironmentIDs))
		for _, id := range t.EnvironmentIDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			p := out[id]
			p.Exposures++
			switch t.Status {
			case TaskSucceeded:
				p.Verified++
			case TaskFailed:
				p.Counter++
			}
			out[id] = p
		}
	}
	return out
}

// FormatPrecedent is the seed's line: "Precedent: verified 19x, 1
// counterexample(s)".
func FormatPrecedent(p Precedent) string {
	return "Precedent: verified " + strconv.Itoa(p.Verified) + "x, " + strconv.Itoa(p.Counter) + " counterexample(s)"
}

// The checks of the precedent gate, as GateError.Check names them (and as
// reflection_items.refused_check stores them).
const (
	// GateNoEvidence: the challenge cited no evidence task at all.
	GateNoEvidence = "no_evidence"
	// GateUnknownOrOpen: an evidence task does not exist or has no close
	// record (the seed's check 1).
	GateUnknownOrOpen = "unknown_or_open"
	// GateSucceeded: an evidence task succeeded (check 2).
	GateSucceeded = "succeeded"
	// GateNotATask: an evidence id names a per-turn fallback's task, whose
	// boundary and status mull chose; only a task the agent opened and
	// closed can challenge a precedent.
	GateNotATask = "not_a_task"
	// GateNotInSnapshot: an evidence task's start snapshot did not have the
	// challenged lesson: it was not in force then (check 3).
	GateNotInSnapshot = "not_in_snapshot"
)

// GateError is a refusal of the precedent gate: which check failed, for
// which lesson and which evidence task.
type GateError struct {
	// Check is one of the Gate* names.
	Check string
	// Lesson is the challenged lesson.
	Lesson int64
	// TaskID is the evidence task that failed the check; "" for
	// GateNoEvidence.
	TaskID string
	// Open: with GateUnknownOrOpen, the task exists but is still open.
	Open bool
}

// Error is "<check>: <why>", the form a refused reflection item reports.
func (e *GateError) Error() string {
	lesson, task := LessonRef(e.Lesson), quoteTaskID(e.TaskID)
	why := ""
	switch e.Check {
	case GateNoEvidence:
		why = "challenging precedent " + lesson + " needs evidence_task_ids: closed tasks that did not succeed and had " + lesson + " in force when they started"
	case GateUnknownOrOpen:
		if e.Open {
			why = "evidence task " + task + " is still open; only a closed task is evidence"
		} else {
			why = "evidence task " + task + " does not exist"
		}
	case GateSucceeded:
		why = "evidence task " + task + " succeeded; one success does not challenge a precedent"
	case GateNotATask:
		why = "evidence " + task + " is a per-turn reflection's window, not a task the agent opened and closed; it cannot challenge a precedent"
	case GateNotInSnapshot:
		why = "evidence task " + task + " did not have " + lesson + " in its start snapshot: the lesson was not in force then"
	default:
		why = "precedent gate refused challenging " + lesson
	}
	return e.Check + ": " + why
}

// maxQuotedTaskID caps a task id echoed in a refusal: the id is the
// model's and the refusal goes back to it.
const maxQuotedTaskID = 80

func quoteTaskID(id string) string {
	if r := []rune(id); len(r) > maxQuotedTaskID {
		id = string(r[:maxQuotedTaskID]) + "…"
	}
	return strconv.Quote(id)
}

// CheckEvidence is the precedent gate (seed 2.3): changing a lesson that is
// in force needs evidence that it did not work. It guards a reflection's
// revise and a retro's or consolidation's supersede of a lesson alike.
// Every evidence task must (1) exist and be closed, (2) not have succeeded
// ("one success does not challenge a precedent"), and (3) have had the
// challenged lesson in its start snapshot. No evidence at all is refused
// too. The first failing task is named, in the order given; nil means
// every check passed. Whether the task matches the lesson's applies_when
// is a semantic judgment the gate leaves to the model (seed check 4).
//
// lookup finds a task by id; ok false means no such task. An evidence id
// is trimmed of surrounding space before lookup, and a blank one is an
// unknown task.
func CheckEvidence(challenged int64, evidenceIDs []string, lookup func(id string) (TaskOutcome, bool)) error {
	return CheckEvidenceLineage([]int64{challenged}, evidenceIDs, lookup)
}

// CheckEvidenceLineage is CheckEvidence for a lesson that was promoted:
// lineage is the challenged lesson's id first, then the ids it was
// promoted from (Lineage). Promotion is a state transition, not a new
// lesson, so a task whose snapshot held any of them had it in force.
func CheckEvidenceLineage(lineage []int64, evidenceIDs []string, lookup func(id string) (TaskOutcome, bool)) error {
	challenged := lineage[0]
	if len(evidenceIDs) == 0 {
		return &GateError{Check: GateNoEvidence, Lesson: challenged}
	}
	for _, raw := range evidenceIDs {
		id := strings.TrimSpace(raw)
		t, ok := TaskOutcome{}, false
		if id != "" {
			t, ok = lookup(id)
		}
		refuse := func(check string) error {
			return &GateError{Check: check, Lesson: challenged, TaskID: id, Open: ok && check == GateUnknownOrOpen}
		}
		switch {
		case !ok || !t.ended():
			return refuse(GateUnknownOrOpen)
		case t.Turn:
			return refuse(GateNotATask)
		case t.Status == TaskSucceeded:
			return refuse(GateSucceeded)
		case !slices.ContainsFunc(lineage, func(id int64) bool { return slices.Contains(t.EnvironmentIDs, id) }):
			return refuse(GateNotInSnapshot)
		}
	}
	return nil
}

// maxLineage bounds how far Lineage follows PromotedFromID.
const maxLineage = 16

// Lineage is m's id, then the ids it was promoted from, nearest first, as
// far as get finds them (at most maxLineage; a cycle stops it).
func Lineage(m memory.Memory, get func(id int64) (memory.Memory, bool)) []int64 {
	out := []int64{m.ID}
	for next := m.PromotedFromID; next != 0 && len(out) < maxLineage && !slices.Contains(out, next); {
		out = append(out, next)
		src, ok := get(next)
		if !ok {
			break
		}
		next = src.PromotedFromID
	}
	return out
}
