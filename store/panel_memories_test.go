package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func ids(ms []store.Memory) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// The panel's list filters by library, kind, scope, state, origin, src and
// text, pages newest first, and counts by kind and panel state; the
// in-force queries follow the bi-temporal rule.
func TestPanelMemories(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		add := func(m store.Memory, at time.Time) int64 {
			t.Helper()
			m.RecordedAt = at
			if m.Origin == "" {
				m.Origin = "tool"
			}
			m.TextNorm = m.Text
			id, err := s.InsertMemory(ctx, s.DB, m)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		fact := add(store.Memory{Workspace: "/w", Kind: "fact", Text: "uses pnpm"}, t0)
		pref := add(store.Memory{Workspace: "/w", Kind: "preference", Text: "short answers", Origin: "command", Src: "user"}, t0.Add(time.Minute))
		glob := add(store.Memory{Kind: "fact", Text: "tabs in go"}, t0.Add(2*time.Minute))
		quar := add(store.Memory{Workspace: "/w", Kind: "fact", Text: "obey me", Quarantined: true}, t0.Add(3*time.Minute))
		lesson := add(store.Memory{Workspace: "/w", Kind: "lesson", Text: "a lesson", Scope: "session", ScopeSession: "s1", Lesson: `{"problem":"p"}`}, t0.Add(4*time.Minute))
		old := add(store.Memory{Workspace: "/w", Kind: "fact", Text: "uses npm"}, t0.Add(-time.Hour))
		if _, err := s.InvalidateMemory(ctx, s.DB, old, t0.Add(30*time.Minute), "pnpm now", fact); err != nil {
			t.Fatal(err)
		}
		list := func(f store.PanelMemoryFilter) []int64 {
			t.Helper()
			ms, err := s.PanelMemories(ctx, s.DB, f)
			if err != nil {
				t.Fatal(err)
			}
			return ids(ms)
		}
		for _, tc := range []struct {
			name string
			f    store.PanelMemoryFilter
			want []int64
		}{
			{"all", store.PanelMemoryFilter{}, []int64{lesson, quar, glob, pref, fact, old}},
			{"global library", store.PanelMemoryFilter{ByWorkspace: true}, []int64{glob}},
			{"workspace live facts", store.PanelMemoryFilter{Workspace: "/w", ByWorkspace: true, Kind: "fact", State: store.PanelLive}, []int64{fact}},
			{"scope session", store.PanelMemoryFilter{Scope: "session"}, []int64{lesson}},
			{"scope workspace", store.PanelMemoryFilter{Scope: "workspace"}, []int64{quar, pref, fact, old}},
			{"quarantined", store.PanelMemoryFilter{State: store.PanelQuarantined}, []int64{quar}},
			{"superseded", store.PanelMemoryFilter{State: store.StateSuperseded}, []int64{old}},
			{"origin", store.PanelMemoryFilter{Origin: "command"}, []int64{pref}},
			{"src", store.PanelMemoryFilter{Src: "user"}, []int64{pref}},
			{"text", store.PanelMemoryFilter{Terms: []string{"pnpm", "tabs"}}, []int64{glob, fact}},
			{"text with a wildcard is literal", store.PanelMemoryFilter{Terms: []string{"%"}}, []int64{}},
			{"page 2", store.PanelMemoryFilter{Limit: 2, Offset: 2}, []int64{glob, pref}},
		} {
			if got := list(tc.f); !slices.Equal(got, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
		if _, err := s.PanelMemories(ctx, s.DB, store.PanelMemoryFilter{State: "gone"}); err == nil {
			t.Fatal("an unknown state was accepted")
		}
		counts, err := s.PanelMemoryCounts(ctx, s.DB, store.PanelMemoryFilter{Workspace: "/w", ByWorkspace: true, Kind: "ignored"})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.MemoryCount{{"fact", "live", 1}, {"fact", "quarantined", 1}, {"fact", "superseded", 1},
			{"lesson", "live", 1}, {"preference", "live", 1}}
		if !slices.Equal(counts, want) {
			t.Fatalf("counts %v, want %v", counts, want)
		}

		// In force at t0+10m: old (not yet invalidated), fact and pref
		// (recorded by then), glob; never quar; not lesson (later).
		at := t0.Add(10 * time.Minute)
		got, err := s.MemoriesInForce(ctx, s.DB, []string{"/w", ""}, at, 0, 0)
		if err != nil || !slices.Equal(ids(got), []int64{lesson, glob, pref, fact, old}) {
			t.Fatalf("in force at %s: %v %v", at, ids(got), err)
		}
		got, _ = s.MemoriesInForce(ctx, s.DB, []string{"/w"}, t0.Add(2*time.Second), 0, 0)
		if !slices.Equal(ids(got), []int64{fact, old}) {
			t.Fatalf("in force at t0+2s: %v", ids(got))
		}
		added, removed, err := s.MemoriesInForceChanged(ctx, s.DB, []string{"/w"}, t0.Add(2*time.Second), t0.Add(time.Hour), 10)
		if err != nil || !slices.Equal(ids(added), []int64{lesson, pref}) || !slices.Equal(ids(removed), []int64{old}) {
			t.Fatalf("changed: added %v removed %v %v", ids(added), ids(removed), err)
		}
		// old was stored last, recorded before: the largest id recorded by
		// then is the watermark.
		if wm, err := s.MaxMemoryIDAt(ctx, s.DB, t0.Add(90*time.Second)); err != nil || wm != old {
			t.Fatalf("watermark at t0+90s: %d %v, want %d", wm, err, old)
		}
		if wm, err := s.MaxMemoryIDAt(ctx, s.DB, t0.Add(-2*time.Hour)); err != nil || wm != 0 {
			t.Fatalf("watermark before everything: %d %v", wm, err)
		}

		sup, prom, err := s.MemoryRelated(ctx, s.DB, fact)
		if err != nil || !slices.Equal(ids(sup), []int64{old}) || len(prom) != 0 {
			t.Fatalf("related: %v %v %v", ids(sup), ids(prom), err)
		}
		libs, err := s.MemoryLibraries(ctx, s.DB, 10)
		if err != nil || !slices.Equal(libs, []store.LibraryCount{{"", 1}, {"/w", 5}}) {
			t.Fatalf("libraries: %v %v", libs, err)
		}
		if refl, err := s.MemoryReflections(ctx, s.DB, lesson); err != nil || len(refl) != 0 {
			t.Fatalf("reflections: %v %v", refl, err)
		}
	})
}
