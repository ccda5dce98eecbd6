package retrosession_test

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/jobs/retroerror"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/llm/llmtest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// startScoped is start with both retro kinds working under a memory scope,
// their temporary directories tempDirs.
func startScoped(t *testing.T, s *store.Store, scope memory.Scope, tempDirs []string) *env {
	t.Helper()
	reply := &fakeds.Response{Content: mustJSON(answer)}
	sc := &fakeds.Script{Rules: []fakeds.Rule{{Kind: "retro_session", Response: reply}, {Kind: "retro_error", Response: reply}}}
	return startRetros(t, s, retros{llm: llmtest.Options{Fake: fakeds.Options{Script: sc}}, jobs: fast,
		withError: true, scope: scope, tempDirs: tempDirs})
}

// insert stores a memory of library lib recorded an hour ago.
func insert(t *testing.T, s *store.Store, lib string, m store.Memory) int64 {
	t.Helper()
	m.Workspace, m.TextNorm, m.RecordedAt = lib, memory.Normalize(m.Text), time.Now().UTC().Add(-time.Hour)
	m.Origin = cmp.Or(m.Origin, "panel")
	id, err := s.InsertMemory(context.Background(), s.DB, m)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// seedLibrary gives the workspace five memories worth promoting by score
// (15, 14, 13, 12 and an external one) and the global library a copy of the
// best one, written differently.
func seedLibrary(t *testing.T, s *store.Store) {
	t.Helper()
	insert(t, s, ws, store.Memory{Kind: "fact", Text: "Releases are cut with make release.", Importance: 10})
	insert(t, s, ws, store.Memory{Kind: "preference", Text: "answer in Chinese", Importance: 9})
	insert(t, s, ws, store.Memory{Kind: "lesson", Text: "run go vet before committing", Importance: 8})
	insert(t, s, ws, store.Memory{Kind: "fact", Text: "the CI runs on GitHub Actions", Importance: 7})
	insert(t, s, ws, store.Memory{Kind: "resource", Text: "the Go memory model page explains races", Importance: 10, Src: "web"})
	insert(t, s, "", store.Memory{Kind: "fact", Text: "releases are cut with make release"})
}

func global(t *testing.T, s *store.Store) []store.Memory {
	t.Helper()
	ms, err := s.ListMemories(context.Background(), s.DB, store.MemoryFilter{Workspaces: []string{""}, All: true, Oldest: true})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func texts(ms []store.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

// Under scope both a retro promotes the workspace's best three memories
// that the global library lacks, never an external one; running the job
// again changes nothing, and a later retro copies nothing twice.
func TestRetroPromotesUnderScopeBoth(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startScoped(t, s, memory.ScopeBoth, []string{"/var/scratch"})
		seedLibrary(t, s)
		session(t, s, "session-1")
		id := e.run(t, "session-1")

		g := global(t, s)
		want := []string{"releases are cut with make release", "answer in Chinese", "run go vet before committing", "the CI runs on GitHub Actions"}
		if got := texts(g); !slices.Equal(got, want) {
			t.Fatalf("global library %q, want %q", got, want)
		}
		for _, m := range g[1:] {
			if m.PromotedFrom != "proj" || m.Origin != "panel" || !m.InvalidAt.IsZero() || m.Quarantined {
				t.Fatalf("promoted copy %+v", m)
			}
		}
		if run, _, _ := s.GetRetroRun(ctx, s.DB, id); !strings.Contains(run.Counts, `"promoted":3`) {
			t.Fatalf("retro run counts %s", run.Counts)
		}

		// Killed after the commit: the rerun promotes nothing.
		job := &river.Job[retrosession.Args]{JobRow: &rivertype.JobRow{ID: id, Kind: "retro_session", Attempt: 2},
			Args: retrosession.Args{SessionID: "session-1"}}
		if err := e.worker.Work(ctx, job); err != nil {
			t.Fatal(err)
		}
		if got := texts(global(t, s)); !slices.Equal(got, want) {
			t.Fatalf("rerun changed the global library: %q", got)
		}

		// The next session end promotes the next best (the retro's own,
		// score 10), and never a second copy.
		session(t, s, "session-2")
		e.run(t, "session-2")
		g = global(t, s)
		seen := map[string]bool{}
		for _, m := range g {
			if seen[memory.Normalize(m.Text)] {
				t.Fatalf("promoted twice: %q in %q", m.Text, texts(g))
			}
			seen[memory.Normalize(m.Text)] = true
			if m.Src == "web" {
				t.Fatalf("promoted an external memory: %+v", m)
			}
		}
		if len(g) > len(want)+3 {
			t.Fatalf("second retro promoted %d, at most 3: %q", len(g)-len(want), texts(g))
		}
	})
}

// retro_error shares the pipeline, so it promotes too.
func TestRetroErrorPromotesUnderScopeBoth(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startScoped(t, s, memory.ScopeBoth, []string{"/var/scratch"})
		seedLibrary(t, s)
		session(t, s, "session-1")
		res, err := e.client.Insert(ctx, retroerror.Args{SessionID: "session-1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if row := enginetest.WaitFinal(t, e.events, res.Job.ID); row.State != rivertype.JobStateCompleted {
			t.Fatalf("retro_error job ended %s: %v", row.State, row.Errors)
		}
		if g := global(t, s); len(g) != 4 || g[1].PromotedFrom != "proj" {
			t.Fatalf("global library after retro_error %q", texts(g))
		}
		if run, _, _ := s.GetRetroRun(ctx, s.DB, res.Job.ID); !strings.Contains(run.Counts, `"promoted":3`) {
			t.Fatalf("retro run counts %s", run.Counts)
		}
	})
}

// A workspace in a temporary directory, or any workspace under scope
// workspace, promotes nothing.
func TestRetroPromotesNothing(t *testing.T) {
	for name, c := range map[string]struct {
		scope    memory.Scope
		tempDirs []string
	}{
		"temporary workspace": {memory.ScopeBoth, []string{"/var/scratch", "/home/dev"}},
		"scope workspace":     {memory.ScopeWorkspace, nil},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, s *store.Store) {
				e := startScoped(t, s, c.scope, c.tempDirs)
				seedLibrary(t, s)
				session(t, s, "session-1")
				id := e.run(t, "session-1")
				if g := global(t, s); len(g) != 1 {
					t.Fatalf("global library %q, want only its own entry", texts(g))
				}
				if run, _, _ := s.GetRetroRun(context.Background(), s.DB, id); strings.Contains(run.Counts, "promoted") || !strings.Contains(run.Counts, `"added":3`) {
					t.Fatalf("retro run counts %s", run.Counts)
				}
			})
		})
	}
}

// A promoted copy someone forgot (invalidated in the global library) stays
// forgotten: the next retro does not promote the workspace's original
// again.
func TestForgottenGlobalCopyIsNotPromotedAgain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startScoped(t, s, memory.ScopeBoth, []string{"/var/scratch"})
		seedLibrary(t, s)
		session(t, s, "session-1")
		e.run(t, "session-1")
		var forgot int64
		for _, m := range global(t, s) {
			if m.Text == "answer in Chinese" {
				forgot = m.ID
			}
		}
		if forgot == 0 {
			t.Fatalf("the first retro did not promote %q: %q", "answer in Chinese", texts(global(t, s)))
		}
		if _, err := s.InvalidateMemory(ctx, s.DB, forgot, time.Now().UTC(), "forgotten by the user", 0); err != nil {
			t.Fatal(err)
		}

		session(t, s, "session-2")
		e.run(t, "session-2")
		for _, m := range global(t, s) {
			if memory.Normalize(m.Text) == "answer in chinese" && m.ID != forgot {
				t.Fatalf("the forgotten copy was promoted again as %+v", m)
			}
		}
	})
}
