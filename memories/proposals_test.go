package memories_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// propose stores a pending proposal as a retro would.
func propose(t *testing.T, s *store.Store, id, ws, summary string) {
	t.Helper()
	err := s.InTx(context.Background(), func(tx *sql.Tx) error {
		ok, err := s.AddPendingProposal(context.Background(), tx, store.Proposal{ID: id, Workspace: ws, Summary: summary,
			SessionID: "session-" + id, JobID: 1, CreatedAt: s.Now()})
		if err == nil && !ok {
			t.Fatalf("proposal %s not stored (another pending?)", id)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A rejection needs a note and leaves it as the user's lesson, in the
// decision's transaction; an accept leaves none; a decision stands.
func TestDecideProposal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, c := newService(t, s, "workspace")
		propose(t, s, "retro-1", "/w", "cache go modules in CI")

		var fe *memory.FieldError
		if _, err := svc.DecideProposal(ctx, "retro-1", store.ProposalRejected, "  ", store.DecidedByCLI); !errors.As(err, &fe) || fe.Field != "note" {
			t.Fatalf("reject without a note: %v", err)
		}
		if _, err := svc.DecideProposal(ctx, "retro-1", store.ProposalPending, "", store.DecidedByCLI); !errors.As(err, &fe) || fe.Field != "status" {
			t.Fatalf("decide to pending: %v", err)
		}
		if _, err := svc.DecideProposal(ctx, "retro-1", store.ProposalRejected, strings.Repeat("x", memories.MaxNoteRunes+1), store.DecidedByCLI); !errors.As(err, &fe) || fe.Field != "note" {
			t.Fatalf("a note too long: %v", err)
		}
		if p, _ := svc.Proposal(ctx, "retro-1"); p.Status != store.ProposalPending {
			t.Fatalf("a refused decision changed %+v", p)
		}

		c.add(time.Hour)
		d, err := svc.DecideProposal(ctx, "retro-1", store.ProposalRejected, "the CI cache is already warm", store.DecidedByCLI)
		if err != nil || d.Proposal.Status != store.ProposalRejected || !d.Proposal.DecidedAt.Equal(t0.Add(time.Hour)) ||
			d.Proposal.Note != "the CI cache is already warm" || d.Lesson == nil || d.Proposal.DecidedBy != store.DecidedByCLI {
			t.Fatalf("reject: %+v, %v", d, err)
		}
		l := d.Lesson.Memory
		if l.ID == 0 || l.Kind != memory.Lesson || l.Src != memory.SrcUser || l.Origin != memory.OriginCommand || l.Workspace != "/w" ||
			l.Text != "proposal rejected: cache go modules in CI -> the CI cache is already warm" || l.SessionID != "session-retro-1" {
			t.Fatalf("lesson %+v", l)
		}
		if got, err := svc.Get(ctx, l.ID); err != nil || got.Text != l.Text || memory.Untrusted(got) {
			t.Fatalf("stored lesson %+v, %v", got, err)
		}
		_, err = svc.DecideProposal(ctx, "retro-1", store.ProposalAccepted, "", store.DecidedByCLI)
		if !errors.Is(err, store.ErrNotPending) || !strings.Contains(err.Error(), "already rejected") {
			t.Fatalf("decide twice: %v", err)
		}
		if _, err := svc.DecideProposal(ctx, "retro-9", store.ProposalAccepted, "", store.DecidedByCLI); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("decide unknown: %v", err)
		}

		// The same rejection again is a duplicate lesson: one more use, and
		// a verification by the one who rejects it this time.
		propose(t, s, "retro-2", "/w", "Cache Go modules in CI.")
		d2, err := svc.DecideProposal(ctx, "retro-2", store.ProposalRejected, "the CI cache is already warm", store.DecidedByPanel)
		if err != nil || !d2.Lesson.Duplicate || d2.Lesson.Memory.ID != l.ID || d2.Lesson.Memory.Uses != 1 || !d2.Lesson.Verified ||
			d2.Lesson.Memory.VerifiedBy != store.ActorPanel {
			t.Fatalf("second rejection: %+v, %v", d2.Lesson, err)
		}
		if got, _ := svc.Get(ctx, l.ID); got.VerifiedBy != store.ActorPanel || got.VerifiedAt.IsZero() {
			t.Fatalf("the repeated lesson verified by %q at %v, want the panel", got.VerifiedBy, got.VerifiedAt)
		}

		propose(t, s, "retro-3", "/w", "add a lint step")
		d3, err := svc.DecideProposal(ctx, "retro-3", store.ProposalAccepted, "", store.DecidedByCLI)
		if err != nil || d3.Lesson != nil || d3.Proposal.Status != store.ProposalAccepted {
			t.Fatalf("accept: %+v, %v", d3, err)
		}
		if lessons, _ := svc.List(ctx, store.MemoryFilter{Kind: string(memory.Lesson)}); len(lessons) != 1 {
			t.Fatalf("lessons %+v, want the one rejection's", lessons)
		}

		list, err := svc.Proposals(ctx, "/w", store.ProposalRejected)
		if err != nil || len(list) != 2 || list[0].ID != "retro-1" || list[1].ID != "retro-2" {
			t.Fatalf("rejected proposals %+v, %v", list, err)
		}
		if all, _ := svc.Proposals(ctx, "", ""); len(all) != 3 {
			t.Fatalf("all proposals %+v", all)
		}
		if _, err := svc.Proposals(ctx, "", "maybe"); !errors.As(err, &fe) || fe.Field != "status" {
			t.Fatalf("list by a bad status: %v", err)
		}
	})
}

// Under scope global the rejection's lesson goes to the global library.
func TestRejectUnderScopeGlobal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		svc, _ := newService(t, s, "global")
		propose(t, s, "retro-1", "/w", "use npm")
		d, err := svc.DecideProposal(context.Background(), "retro-1", store.ProposalRejected, "we use pnpm", store.DecidedByCLI)
		if err != nil || d.Lesson == nil || !d.Lesson.Memory.Global() {
			t.Fatalf("reject: %+v, %v", d, err)
		}
	})
}

// A rejection and a retro of one workspace at once do not deadlock on
// Postgres: the retro holds the library's lock and inserts its proposal;
// the rejection takes the lock before it touches the pending proposal, so
// it waits instead of holding that row while the retro's insert waits on
// it. (It used to update the row first: "deadlock detected".)
func TestRejectWhileARetroHoldsTheLibrary(t *testing.T) {
	s := storetest.New(t, store.Postgres)
	ctx := context.Background()
	svc, _ := newService(t, s, "workspace")
	if err := s.InTx(ctx, func(tx *sql.Tx) error {
		_, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: "retro-1", Workspace: "/w", Summary: "cache go modules in CI",
			SessionID: "s1", JobID: 1, CreatedAt: s.Now()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	retro, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer retro.Rollback()
	if err := s.LockLibrary(ctx, retro, "/w"); err != nil {
		t.Fatal(err)
	}
	rejected := make(chan error, 1)
	go func() {
		_, err := svc.DecideProposal(ctx, "retro-1", store.ProposalRejected, "we vendor modules instead", store.DecidedByCLI)
		rejected <- err
	}()
	waitForLockWaiter(t, s, "the rejection", func() {
		select {
		case err := <-rejected:
			t.Fatalf("the rejection finished while the retro held the library: %v", err)
		default:
		}
	})
	// The retro's own proposal: refused by the one still pending, at once.
	ok, err := s.AddPendingProposal(ctx, retro, store.Proposal{ID: "retro-2", Workspace: "/w", Summary: "pin the Go version",
		SessionID: "s2", JobID: 2, CreatedAt: s.Now()})
	if err != nil || ok {
		t.Fatalf("retro's proposal: ok %t, %v; want refused while retro-1 is pending", ok, err)
	}
	if err := retro.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-rejected; err != nil {
		t.Fatalf("reject: %v", err)
	}
}
