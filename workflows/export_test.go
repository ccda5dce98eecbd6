package workflows

// SetBeforeCommit lets tests fail a step's completion transaction at its
// very end, as a crash before commit would.
func (r *Runner) SetBeforeCommit(fn func(step string) error) { r.beforeCommit = fn }
