package retrosession

import (
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/memory"
)

// Workspaces give a workspace's effective settings (wsconfig.Service).
type Workspaces interface {
	Effective(workspace string) config.Effective
}

// scope is the memory scope a retro of workspace writes under: the
// workspace's own setting, or Scope.
func (w *Worker) scope(workspace string) memory.Scope {
	if w.Workspaces == nil || workspace == "" {
		return w.Scope
	}
	return memory.Scope(w.Workspaces.Effective(workspace).Scope())
}
