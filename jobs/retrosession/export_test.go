package retrosession

// SetBeforeApply makes w call f between a retro's answer and its apply
// transaction, so a test can hold retros there and let them apply at once.
func SetBeforeApply(w *Worker, f func()) { w.beforeApply = f }

// LibraryOf is the library a retro of workspace writes under w's settings.
func LibraryOf(w *Worker, workspace string) string { return w.library(workspace) }
