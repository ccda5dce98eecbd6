package harness

import (
	"fmt"
	"slices"
)

// Fate is a wrap-up suggestion's verdict.
type Fate string

// The fates.
const (
	Keep    Fate = "keep"
	Promote Fate = "promote"
	Archive Fate = "archive"
)

// Suggestion is one wrap-up suggestion.
type Suggestion struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Fate   Fate   `json:"fate"`
	Reason string `json:"reason"`
}

// Wrapup classifies a session's local entries (the seed's suggestWrapup):
// never injected → archive; injected and no same-id global → promote;
// else keep. injections counts a local entry's injections (nil reads as
// none). Reasons are the seed's, verbatim. The order is deterministic:
// kinds in the seed's order, then id (the seed's is its object order).
// Like the seed it classifies every local entry, archived ones too.
func Wrapup(local, global State, injections func(k Kind, id string) int) []Suggestion {
	var out []Suggestion
	for _, k := range Kinds {
		ids := make([]string, 0, len(local[k]))
		for id := range local[k] {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			n := 0
			if injections != nil {
				n = injections(k, id)
			}
			s := Suggestion{ID: id, Kind: k}
			_, covered := global.Get(k, id)
			switch {
			case n == 0:
				s.Fate, s.Reason = Archive, fmt.Sprintf("never injected (%d uses)", n)
			case !covered:
				s.Fate, s.Reason = Promote, fmt.Sprintf("%d injections, no same-id global", n)
			default:
				s.Fate, s.Reason = Keep, fmt.Sprintf("%d injections, global already covers id", n)
			}
			out = append(out, s)
		}
	}
	return out
}
