package memory

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Scope is which libraries a workspace reads and writes (config
// memory.scope).
type Scope string

// The scopes.
const (
	// ScopeWorkspace keeps each workspace's memory to itself (the default).
	ScopeWorkspace Scope = "workspace"
	// ScopeGlobal reads and writes one library shared by all workspaces.
	ScopeGlobal Scope = "global"
	// ScopeBoth writes the workspace's library, reads it first and the global
	// one in the space left, and promotes the best entries to global.
	ScopeBoth Scope = "both"
)

// ReadsWorkspace reports whether the workspace's own library is served.
func (s Scope) ReadsWorkspace() bool { return s != ScopeGlobal }

// ReadsGlobal reports whether the global library is served.
func (s Scope) ReadsGlobal() bool { return s == ScopeGlobal || s == ScopeBoth }

// WritesGlobal reports whether new memories go to the global library.
func (s Scope) WritesGlobal() bool { return s == ScopeGlobal }

// Promotes reports whether session ends promote entries to global. mull
// follows its config and the seed's README (both promotes); the seed's last
// commit made both one-way, which config.Memory.Scope does not describe.
func (s Scope) Promotes() bool { return s == ScopeBoth }

// The seed's promotion limits.
const (
	PromoteMax      = 3
	PromoteMinScore = 10.0
)

// Promote picks the workspace memories to copy to the global library at a
// session end: live, not quarantined, not from an external src, scoring at
// least PromoteMinScore, never in the global library (by Normalize), the
// best PromoteMax by score. global is every row of the global library,
// invalidated and quarantined ones too: a global copy someone forgot (or
// that expired, or was superseded) stays gone, and the workspace original
// does not bring it back at the next session end. The copies are returned
// ready to write: global, PromotedFrom set to the workspace's base name,
// recorded now; the rest of their metadata (origin, src, importance, uses)
// travels with them so trust does not change in transit. Callers skip
// temporary workspaces (see TemporaryWorkspace).
func Promote(workspace, global []Memory, now time.Time) []Memory {
	have := map[string]bool{}
	for _, g := range global {
		have[Normalize(g.Text)] = true
	}
	type cand struct {
		m     Memory
		score float64
		i     int
	}
	var cands []cand
	for i, m := range workspace {
		if !m.ValidAt(now) || m.Quarantined || m.Src.External() || have[Normalize(m.Text)] {
			continue
		}
		if s := Score(m, now); s >= PromoteMinScore {
			cands = append(cands, cand{m, s, i})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.i, a.i))
	})
	var out []Memory
	for _, c := range cands {
		key := Normalize(c.m.Text)
		if len(out) == PromoteMax || have[key] {
			continue
		}
		have[key] = true
		out = append(out, PromotedCopy(c.m, now))
	}
	return out
}

// TemporaryWorkspace reports whether dir lies in a temporary directory
// (tests and one-off experiments live there): its entries are never
// broadcast to the global library. tempDirs are the machine's (os.TempDir()
// and friends); /tmp is always one.
func TemporaryWorkspace(dir string, tempDirs ...string) bool {
	norm := func(p string) string {
		return strings.ToLower(strings.TrimRight(strings.ReplaceAll(p, `\`, "/"), "/"))
	}
	target := norm(dir)
	if target == "" {
		return false
	}
	for _, root := range append(tempDirs, "/tmp") {
		base := norm(root)
		if base != "" && (target == base || strings.HasPrefix(target, base+"/")) {
			return true
		}
	}
	return false
}
