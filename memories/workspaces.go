package memories

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/memory/digest"
)

// WorkspaceSettings gives a workspace's effective settings (wsconfig):
// its memory scope and digest quotas, which may differ from the global
// ones and change without a restart. Effective must not touch the
// database: it is asked inside transactions.
type WorkspaceSettings interface {
	Effective(workspace string) config.Effective
}

// WithWorkspaces makes every read and write ask ws for the workspace's
// scope and digest quotas at use time, so a changed setting applies to the
// workspace's next digest, search or write.
func (s *Service) WithWorkspaces(ws WorkspaceSettings) *Service {
	s.workspaces = ws
	return s
}

// scopeOf is workspace's memory scope: its own setting, or the service's.
// The global library ("") is read under the service's scope.
func (s *Service) scopeOf(workspace string) memory.Scope {
	if s.workspaces == nil || workspace == "" {
		return s.scope
	}
	return memory.Scope(s.workspaces.Effective(workspace).Scope())
}

// optsFor are the digest options of workspace: the service's, with the
// workspace's effective quotas.
func (s *Service) optsFor(workspace string) digest.Options {
	if s.workspaces == nil || workspace == "" {
		return s.opts
	}
	o := s.opts
	o.Quotas = maps.Clone(s.opts.Quotas)
	maps.Copy(o.Quotas, s.workspaces.Effective(workspace).Quotas())
	return o
}

// stateTag is what a published digest row records of the settings it was
// rendered under: the scope, and a hash of the quotas when they are not
// the service's. A row with another tag is not served: the workspace's
// next digest renders afresh under the new settings.
func (s *Service) stateTag(workspace string) string {
	tag := string(s.scopeOf(workspace))
	o := s.optsFor(workspace)
	if maps.Equal(o.Quotas, s.opts.Quotas) {
		return tag
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(o.Quotas)) {
		fmt.Fprintf(&b, "%s=%d;", k, o.Quotas[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return tag + ";quotas=" + hex.EncodeToString(sum[:6])
}
