// Package reflecttask is the reflect_task job (seed 000): a closed task's
// decision trajectory and the lessons in force at its start become
// structured lessons (new, repeat, revise, none), through the precedent gate
// and, when configured, the adversarial review. Its turn-end hook
// (turnend.go) serves the missed-task nudge and, with
// reflection.turn_fallback, makes a substantive turn no task covered a
// task of kind turn and enqueues its reflection.
package reflecttask

import "github.com/riverqueue/river"

// Args name the closed task to reflect on.
type Args struct {
	TaskID string `json:"task_id"`
}

// Kind is the River job kind.
func (Args) Kind() string { return "reflect_task" }

// InsertOpts make the job unique per task, over every state: a task is
// reflected on once, so closing it again, a replayed turn_end or a second
// enqueue adds no job.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}
}
