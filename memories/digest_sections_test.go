package memories_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A handoff, playbook or proposal change publishes at once, with no batch
// of memories: the retro writes them for the very next session.
func TestDigestDueOnSectionChange(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, c := newService(t, s, "workspace")
		write := func(f func(tx *sql.Tx) error) {
			t.Helper()
			if err := s.InTx(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		handoff := func(ws, text string) {
			t.Helper()
			write(func(tx *sql.Tx) error {
				return s.PutHandoff(ctx, tx, store.Handoff{Workspace: ws, Text: text, SessionID: "s", JobID: 1, RecordedAt: s.Now()})
			})
		}
		remember(t, svc, "/w", memory.Fact, "the build uses make")
		handoff("/w", "Next: fix the flaky test")
		d := digestOf(t, svc, "/w", memories.Digest{}, true, "fix the flaky test")

		// Nothing changed, or only another workspace: the same digest.
		c.add(time.Minute)
		handoff("/other", "Next: another workspace's work")
		d = digestOf(t, svc, "/w", d, false)

		// A retro at a session's end: a lesson (one memory, below the
		// batch) and a new handoff. Both reach the next digest.
		c.add(time.Minute)
		remember(t, svc, "/w", memory.Lesson, "run go vet before committing")
		d = digestOf(t, svc, "/w", d, false)
		handoff("/w", "Next: release 1.2")
		d = digestOf(t, svc, "/w", d, true, "release 1.2", "run go vet before committing")
		if strings.Contains(d.Text, "flaky test") {
			t.Fatalf("old handoff still served:\n%s", d.Text)
		}

		c.add(time.Minute)
		write(func(tx *sql.Tx) error {
			return s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: "release", Steps: []string{"tag", "push"},
				SessionID: "s", JobID: 2, UpdatedAt: s.Now()})
		})
		d = digestOf(t, svc, "/w", d, true, "release: tag → push")

		// A playbook's use is like a memory's bump: it waits for the next
		// publication, so the agent's own use keeps its cached prompt.
		c.add(time.Minute)
		if _, err := svc.UsePlaybook(ctx, store.PlaybookUse{Workspace: "/w", Slug: "release", Success: true}); err != nil {
			t.Fatal(err)
		}
		d = digestOf(t, svc, "/w", d, false, "(0 ok, 0 failed)")

		c.add(time.Minute)
		write(func(tx *sql.Tx) error {
			_, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: "retro-3", Workspace: "/w", Summary: "cache go modules in CI",
				SessionID: "s", JobID: 3, CreatedAt: s.Now()})
			return err
		})
		d = digestOf(t, svc, "/w", d, true, "cache go modules in CI", "(1 ok, 0 failed)")

		c.add(time.Minute)
		if _, err := svc.DecideProposal(ctx, "retro-3", store.ProposalAccepted, "", store.DecidedByCLI); err != nil {
			t.Fatal(err)
		}
		d = digestOf(t, svc, "/w", d, true)
		if strings.Contains(d.Text, "cache go modules") {
			t.Fatalf("accepted proposal still served:\n%s", d.Text)
		}

		// Published at the clock's reading: a read at the same instant is
		// not due again.
		digestOf(t, svc, "/w", d, false)
	})
}

// digestOf reads the digest of ws and checks it against the last one,
// prev: the same ETag and text when !changed, else a new ETag. It must
// contain each of want.
func digestOf(t *testing.T, svc *memories.Service, ws string, prev memories.Digest, changed bool, want ...string) memories.Digest {
	t.Helper()
	d, err := svc.Digest(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if changed && d.ETag == prev.ETag {
		t.Fatalf("digest not republished:\n%s", d.Text)
	}
	if !changed && (d.ETag != prev.ETag || d.Text != prev.Text) {
		t.Fatalf("digest republished:\n%s\nwas:\n%s", d.Text, prev.Text)
	}
	for _, w := range want {
		if !strings.Contains(d.Text, w) {
			t.Fatalf("digest lacks %q:\n%s", w, d.Text)
		}
	}
	return d
}

// Under scope global every workspace reads the global library, but its
// handoff, proposal and playbooks stay its own: one workspace's digest
// never carries another's handoff.
func TestGlobalScopeDigestKeepsEachWorkspacesHandoff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, _ := newService(t, s, "global")
		remember(t, svc, "/a", memory.Fact, "the build uses make")
		for ws, text := range map[string]string{"/a": "Next: release app a", "/b": "Next: fix lib b"} {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				return s.PutHandoff(ctx, tx, store.Handoff{Workspace: ws, Text: text, SessionID: "s", JobID: 1, RecordedAt: s.Now()})
			}); err != nil {
				t.Fatal(err)
			}
		}
		for _, ws := range []string{"/a", "/b", "/a"} {
			d, err := svc.Digest(ctx, ws)
			if err != nil {
				t.Fatal(err)
			}
			mine, theirs := "release app a", "fix lib b"
			if ws == "/b" {
				mine, theirs = theirs, mine
			}
			if !strings.Contains(d.Text, mine) || strings.Contains(d.Text, theirs) || !strings.Contains(d.Text, "the build uses make") {
				t.Fatalf("scope global, digest of %s:\n%s", ws, d.Text)
			}
		}
	})
}

// A digest published while a retro is applying (Postgres: it holds the
// library's lock and has stamped its handoff, not committed it) waits for
// the retro and carries its handoff. Rendered before the commit, with a
// publication time after the handoff's stamp, it would leave the handoff out
// until some later publication.
func TestPublishWaitsForARetroInFlight(t *testing.T) {
	s := storetest.New(t, store.Postgres)
	ctx := context.Background()
	svc, c := newService(t, s, "workspace")
	retro, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer retro.Rollback()
	if err := s.LockLibrary(ctx, retro, "/w"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutHandoff(ctx, retro, store.Handoff{Workspace: "/w", Text: "Next: release 1.2", SessionID: "s", JobID: 1, RecordedAt: s.Now()}); err != nil {
		t.Fatal(err)
	}
	c.add(time.Second)
	published := make(chan memories.Digest, 1)
	go func() {
		d, err := svc.Digest(ctx, "/w")
		if err != nil {
			t.Error(err)
		}
		published <- d
	}()
	waitForLockWaiter(t, s, "the publication", func() {
		select {
		case d := <-published:
			t.Fatalf("published while the retro held the library:\n%s", d.Text)
		default:
		}
	})
	if err := retro.Commit(); err != nil {
		t.Fatal(err)
	}
	if d := <-published; !strings.Contains(d.Text, "release 1.2") {
		t.Fatalf("the digest published after the retro lacks its handoff:\n%s", d.Text)
	}
}
