package reflection

import (
	"fmt"
	"strconv"
)

// The per-turn fallback (reflection.turn_fallback, off by default): a
// reflection per turn, whether or not the agent opened a task, so that
// forgetting task_start does not leave a stretch of work with no material
// at all. It guarantees a turn was checked at least once, not that it was
// checked well: 30% of the seed's tasks spanned several turns, and a turn
// cut out of one lacks its causes. The material says so.

// TurnBrief is the turn a fallback reflection is about.
type TurnBrief struct {
	// ID is the turn's task id, "turn-<session>-<turn>" (TurnID).
	ID        string
	SessionID string
	Turn      int
	// OpenTaskID is the task open across this turn, if any: the turn
	// belongs to its window, and its reflection reads it again.
	OpenTaskID string
	// Covered: a task's reflection already covers this turn (a task
	// closed in it), so the fallback has nothing to add.
	Covered bool
}

// TurnID is the id of a turn's fallback reflection (the tasks table's
// kind 'turn').
func TurnID(sessionID string, turn int) string {
	return "turn-" + sessionID + "-" + strconv.Itoa(turn)
}

// TurnDue reports whether a turn gets a fallback reflection: not when a
// task already covers it, and not when it is empty (no dialogue, no
// reasoning, no failures), so quiet turns do not flood the agent.
func TurnDue(turn TurnBrief, traj Trajectory) bool { return !turn.Covered && !traj.Empty() }

// TurnMaterial is the material of a turn's fallback reflection; ok is
// false when the turn is not due (TurnDue).
func TurnMaterial(turn TurnBrief, environment string, traj Trajectory, opts MaterialOptions) (string, bool) {
	if !TurnDue(turn, traj) {
		return "", false
	}
	id := turn.ID
	if id == "" {
		id = TurnID(turn.SessionID, turn.Turn)
	}
	return assemble(turnHead(turn, id), environment, traj, id, opts), true
}

// turnHead opens a turn's material: which turn, and that it is a fallback.
func turnHead(turn TurnBrief, id string) string {
	head := "REFLECTION MATERIAL for turn " + strconv.Itoa(turn.Turn) + " (" + oneLine(id, 200) + ")\n" + quoteNote + "\n\n" +
		"TURN " + strconv.Itoa(turn.Turn) + ": a per-turn fallback reflection, not the main one.\n" +
		"It makes sure this turn was checked at least once, not that it was checked correctly: a turn boundary is not a decision boundary. " +
		"A decision in this turn may have begun in an earlier turn or go on in the next, so judge what this turn shows, " +
		"and say so where a cause lies outside it.\n"
	if turn.OpenTaskID != "" {
		head += fmt.Sprintf("Task %s is open: this turn belongs to its task window, and that task's reflection will read it again. "+
			"Do not record the same lesson twice: leave a lesson that belongs to the task to the task's reflection (relation none here).\n",
			oneLine(turn.OpenTaskID, 200))
	}
	return head
}
