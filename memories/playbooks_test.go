package memories_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func putPlaybook(t *testing.T, s *store.Store, ws, slug string, steps ...string) {
	t.Helper()
	if err := s.InTx(context.Background(), func(tx *sql.Tx) error {
		return s.PutPlaybook(context.Background(), tx, store.Playbook{Workspace: ws, Slug: slug, Steps: steps, UpdatedAt: s.Now()})
	}); err != nil {
		t.Fatal(err)
	}
}

// Uses move the counters and verified_at; the list is in the digest's
// order; staleness follows verified_at, not the last retro's rewrite, and a
// playbook never verified ages from its writing.
func TestPlaybookUses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, c := newService(t, s, "workspace")
		putPlaybook(t, s, "/w", "release", "tag", "push")
		putPlaybook(t, s, "/w", "bisect", "git bisect start")
		putPlaybook(t, s, "/w", "deploy", "make deploy")

		p, err := svc.UsePlaybook(ctx, store.PlaybookUse{Workspace: "/w", Slug: "release", Success: true})
		if err != nil || p.Uses != 1 || p.Successes != 1 || p.Fails != 0 || p.Stale || p.VerifiedAt == nil || !p.VerifiedAt.Equal(t0) || p.Rate != 2.0/3 {
			t.Fatalf("success: %+v, %v", p, err)
		}
		if p, err = svc.UsePlaybook(ctx, store.PlaybookUse{Workspace: "/w", Slug: "deploy", Success: false}); err != nil || p.Fails != 1 || p.Stale || p.VerifiedAt != nil || p.Rate != 1.0/3 {
			t.Fatalf("failure: %+v, %v", p, err)
		}
		if _, err := svc.UsePlaybook(ctx, store.PlaybookUse{Workspace: "/w", Slug: "nope", Success: true}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown slug: %v", err)
		}
		if _, err := svc.UsePlaybook(ctx, store.PlaybookUse{Workspace: "/other", Slug: "release", Success: true}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another workspace's slug: %v", err)
		}

		slugs := func() string {
			t.Helper()
			ps, err := svc.Playbooks(ctx, "/w")
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range ps {
				out = append(out, p.Slug)
			}
			return strings.Join(out, ",")
		}
		// All fresh (just written): by rate, 2/3, 1/2, 1/3.
		if got := slugs(); got != "release,bisect,deploy" {
			t.Fatalf("order %s", got)
		}
		d, _ := svc.Digest(ctx, "/w")
		if !strings.Contains(d.Text, "release: tag → push (1 ok, 0 failed)\n") || !strings.Contains(d.Text, "deploy: make deploy (0 ok, 1 failed)\n") {
			t.Fatalf("digest playbooks:\n%s", d.Text)
		}

		// 31 days on, all are stale; a newer retro rewrites release's steps:
		// still stale, since rewriting is not verifying.
		c.add(31 * 24 * time.Hour)
		putPlaybook(t, s, "/w", "release", "tag", "push", "announce")
		for _, p := range must(svc.Playbooks(ctx, "/w")) {
			if !p.Stale {
				t.Fatalf("after 31 days, %s is fresh: %+v", p.Slug, p)
			}
		}
		if got := slugs(); got != "release,bisect,deploy" {
			t.Fatalf("order when all are stale %s", got)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
