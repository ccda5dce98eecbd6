package retrosession_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/memory"
	memsvc "github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Under scope global the digest and search read only the global library,
// so a retro writes its memories there (and plans against it); the
// handoff, playbooks and proposal stay the workspace's. What the retro
// learned shows in the workspace's digest.
func TestRetroUnderScopeGlobal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := startScoped(t, s, memory.ScopeGlobal, nil)
		session(t, s, "session-1")
		id := e.run(t, "session-1")

		if ms := memories(t, s); len(ms) != 0 {
			t.Fatalf("the workspace's library got %q under scope global", texts(ms))
		}
		g := global(t, s)
		if len(g) != 3 || g[0].Text != storedLesson(t, answer.Lessons[0].Text) || g[0].Origin != "retro" || g[0].SessionID != "session-1" {
			t.Fatalf("global library %q, want the answer's lesson, fact and method", texts(g))
		}
		if c := counts(t, s, id); c.Added != 3 || !c.Handoff || !c.Proposal || c.Playbooks != 1 {
			t.Fatalf("counts %+v", c)
		}
		if h, ok, _ := s.GetHandoff(ctx, s.DB, ws); !ok || h.JobID != id {
			t.Fatalf("handoff %+v, %t: want the workspace's", h, ok)
		}

		svc := memsvc.New(s, config.Memory{Scope: string(memory.ScopeGlobal)}, config.Default().Digest)
		d, err := svc.Digest(ctx, ws)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"cd to the directory holding go.mod first", "the repo uses pnpm, not npm", "Next: run them on Postgres."} {
			if !strings.Contains(d.Text, want) {
				t.Fatalf("digest under scope global lacks %q:\n%s", want, d.Text)
			}
		}

		// A second retro saying the same bumps the global entries.
		session(t, s, "session-2")
		id2 := e.run(t, "session-2")
		if c := counts(t, s, id2); c.Added != 0 || c.Bumped != 3 {
			t.Fatalf("second retro counts %+v: want 3 bumped in the global library", c)
		}
	})
}
