package api

import (
	"net/http"

	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/harness"
)

// BenchInject is GET /v1/bench/snapshots/{id}/inject's answer: the text
// the DSH plugin injects in a benchmark cell (its benchSnapshot mode)
// instead of the live digest or projection, and its tag.
type BenchInject struct {
	SnapshotID string             `json:"snapshot_id"`
	Kind       bench.SnapshotKind `json:"kind"`
	// Text is a memory snapshot's digest ("" on the side without
	// memory), or a harness snapshot's entries rendered as the projection
	// renders them ("# Continual Harness State" …).
	Text string `json:"text"`
	ETag string `json:"etag"`
	// Withheld: nothing of the snapshot may be injected. The plugin then
	// fails the cell rather than let it be judged on what it did not see.
	// Gating line by line (InjectText), no snapshot is withheld today.
	Withheld bool `json:"withheld,omitempty"`
}

// InjectText renders a snapshot as the plugin injects it, through the
// trust gate: a memory snapshot's digest is gated line by line
// (bench.GateDigest: the renderer's own lines kept, a quarantined line
// hidden, a credential redacted; gated whole, a real digest would be
// withheld every time, its headings being what a forged one imitates); a harness snapshot is
// projected as the live projection is (each entry gated by harness.Project,
// the query ranking it, maxPerKind of each kind). No refinement history
// is shown: both sides of a run see only their entries.
func InjectText(s bench.Snapshot, query string, maxPerKind int) (text string, withheld bool) {
	if s.Kind == bench.MemorySnapshot {
		if s.Digest == "" {
			return "", false
		}
		return bench.GateDigest(s.Digest), false
	}
	entries := s.Entries
	if entries == nil {
		entries = harness.State{}
	}
	p := harness.Project(entries, harness.Query([]string{query}), harness.ProjectOptions{MaxPerKind: maxPerKind})
	return p.Text, false
}

// benchInject is GET /v1/bench/snapshots/{id}/inject[?query=Q] (the
// cell's capability for that snapshot, or the admin): the snapshot's injected text with its ETag (304 when
// If-None-Match names it). No session is asked for: a benchmark cell's
// DSH has none mull knows yet.
func (s *Server) benchInject(w http.ResponseWriter, r *http.Request) {
	snap, err := s.deps.Bench.Snapshot(r.Context(), r.PathValue("id"))
	if err != nil {
		writeBenchError(w, err)
		return
	}
	maxPerKind := s.deps.Config.Harness.MaxInjectedPerKind
	text, withheld := InjectText(snap, r.URL.Query().Get("query"), maxPerKind)
	out := BenchInject{SnapshotID: snap.ID, Kind: snap.Kind, Text: text, ETag: quoteETag(harness.ETag(text)), Withheld: withheld}
	writeTagged(w, r, out.ETag, out)
}
