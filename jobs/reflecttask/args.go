// Package reflecttask is the reflect_task job (seed 000): a closed task's
// decision trajectory and the lessons in force at its start become
// structured lessons (new, repeat, revise, none), through the precedent gate
// and, when configured, the adversarial review.
package reflecttask

// Args name the closed task to reflect on.
type Args struct {
	TaskID string `json:"task_id"`
}

// Kind is the River job kind.
func (Args) Kind() string { return "reflect_task" }
