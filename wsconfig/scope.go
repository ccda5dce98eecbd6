package wsconfig

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
)

// ScopeChange is what switching a workspace's scope did, in the seed's
// words (002, 切换范围会改变"看得见什么"): which library stops being read,
// how many memories that hides, how to get them back. No data moves.
type ScopeChange struct {
	Workspace string      `json:"workspace"`
	Scope     ScopeSwitch `json:"scope"`
	Hidden    []Hidden    `json:"hidden"`
	Message   string      `json:"message"`
	// OverriddenByEnv: MULL_MEMORY_SCOPE pins the scope; the value is
	// stored but does not apply while the variable is set.
	OverriddenByEnv bool `json:"overridden_by_env"`
}

// ScopeSwitch is the effective scope before, the scope asked for, and the
// layer the effective scope now comes from.
type ScopeSwitch struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Source string `json:"source"`
}

// Hidden is a library the workspace no longer reads and its live memories
// by kind.
type Hidden struct {
	Library string         `json:"library"`
	Count   int            `json:"count"`
	ByKind  map[string]int `json:"by_kind"`
}

// SetScope switches workspace's scope through the API layer and says what
// becomes hidden.
func (s *Service) SetScope(ctx context.Context, workspace, scope, by string) (ScopeChange, error) {
	if err := CheckWorkspace(workspace); err != nil {
		return ScopeChange{}, err
	}
	before := s.Effective(workspace).Scope()
	eff, err := s.Set(ctx, workspace, map[string]*string{config.WSScope: &scope}, by)
	if err != nil {
		return ScopeChange{}, err
	}
	set, _ := eff.Get(config.WSScope)
	out := ScopeChange{Workspace: workspace, Scope: ScopeSwitch{From: before, To: strings.TrimSpace(scope), Source: set.Source},
		Hidden: []Hidden{}, OverriddenByEnv: strings.HasPrefix(set.Source, "env ")}
	for _, lib := range hiddenLibraries(before, eff.Scope()) {
		h, err := s.count(ctx, workspace, lib)
		if err != nil {
			return ScopeChange{}, err
		}
		out.Hidden = append(out.Hidden, h)
	}
	out.Message = message(out, before)
	return out, nil
}

// reads are the libraries ("workspace", "global") a scope reads.
func reads(scope string) []string {
	switch scope {
	case "global":
		return []string{"global"}
	case "both":
		return []string{"workspace", "global"}
	}
	return []string{"workspace"}
}

func hiddenLibraries(from, to string) []string {
	var out []string
	for _, lib := range reads(from) {
		if !slices.Contains(reads(to), lib) {
			out = append(out, lib)
		}
	}
	return out
}

func (s *Service) count(ctx context.Context, workspace, lib string) (Hidden, error) {
	name := workspace
	if lib == "global" {
		name = ""
	}
	counts, err := s.store.PanelMemoryCounts(ctx, s.store.DB, store.PanelMemoryFilter{Workspace: name, ByWorkspace: true})
	if err != nil {
		return Hidden{}, err
	}
	h := Hidden{Library: lib, ByKind: map[string]int{}}
	for _, c := range counts {
		if c.State == store.PanelLive {
			h.ByKind[c.Kind] += c.N
			h.Count += c.N
		}
	}
	return h, nil
}

func message(c ScopeChange, before string) string {
	var b strings.Builder
	if c.OverriddenByEnv {
		fmt.Fprintf(&b, "Stored scope %q for %s, but MULL_MEMORY_SCOPE is set and wins: the scope stays %q until that variable is unset and mull restarted. ", c.Scope.To, c.Workspace, before)
	} else {
		fmt.Fprintf(&b, "Scope of %s: %s → %s (from the next digest and search; no restart). ", c.Workspace, before, c.Scope.To)
	}
	if len(c.Hidden) == 0 {
		b.WriteString("Nothing becomes hidden: every library read before is still read. ")
	}
	for _, h := range c.Hidden {
		layer := "this workspace's own library"
		if h.Library == "global" {
			layer = "the global library"
		}
		fmt.Fprintf(&b, "Hidden now: %s, %d live memories%s; they leave the injected digest and search at once. ", layer, h.Count, kinds(h.ByKind))
	}
	if len(c.Hidden) > 0 {
		back := "both"
		if before != "both" {
			back = before + " or both"
		}
		fmt.Fprintf(&b, "To see them again, switch back: /mull scope %s (or PUT the scope). ", back)
	}
	b.WriteString("No data was moved or deleted: switching scope changes only what is read.")
	if c.Scope.To == "global" && !c.OverriddenByEnv {
		b.WriteString(" Under global nothing is promoted and nothing is copied back.")
	}
	return b.String()
}

func kinds(by map[string]int) string {
	if len(by) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%d %s", by[k], k))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
