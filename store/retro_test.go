package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestHandoffAndRetroRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 123456000, time.UTC)
		if _, ok, err := s.GetHandoff(ctx, s.DB, "/w"); ok || err != nil {
			t.Fatalf("handoff before any: %v, %v", ok, err)
		}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.PutHandoff(ctx, tx, store.Handoff{Workspace: "/w", Text: "a\nb\nc", SessionID: "s1", JobID: 1, RecordedAt: t0}); err != nil {
				return err
			}
			return s.PutHandoff(ctx, tx, store.Handoff{Workspace: "/w", Text: "d\ne\nf", SessionID: "s2", JobID: 2, RecordedAt: t0.Add(time.Hour)})
		})
		if err != nil {
			t.Fatal(err)
		}
		h, ok, err := s.GetHandoff(ctx, s.DB, "/w")
		if !ok || err != nil || h.Text != "d\ne\nf" || h.SessionID != "s2" || h.JobID != 2 || !h.RecordedAt.Equal(t0.Add(time.Hour)) {
			t.Fatalf("handoff %+v, %v, %v", h, ok, err)
		}
		var first, second bool
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			r := store.RetroRun{JobID: 7, SessionID: "s2", Workspace: "/w", AppliedAt: t0, Counts: `{"added":1}`}
			if first, err = s.InsertRetroRun(ctx, tx, r); err != nil {
				return err
			}
			second, err = s.InsertRetroRun(ctx, tx, r)
			return err
		})
		if err != nil || !first || second {
			t.Fatalf("retro run marks: %v %v %v", first, second, err)
		}
		r, ok, err := s.GetRetroRun(ctx, s.DB, 7)
		if !ok || err != nil || r.Counts != `{"added":1}` || r.Workspace != "/w" || !r.AppliedAt.Equal(t0) {
			t.Fatalf("retro run %+v, %v, %v", r, ok, err)
		}
		if _, ok, err := s.GetRetroRun(ctx, s.DB, 8); ok || err != nil {
			t.Fatalf("unknown retro run: %v, %v", ok, err)
		}
	})
}

func TestPlaybooksAndProposals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		var added []bool
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			for i, steps := range [][]string{{"a", "b"}, {"c"}} {
				if err := s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: "fix-build", Steps: steps,
					SessionID: "s", JobID: int64(i + 1), UpdatedAt: t0}); err != nil {
					return err
				}
			}
			for i, id := range []string{"retro-1", "retro-2"} {
				ok, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: id, Workspace: "/w", Summary: "use pnpm",
					SessionID: "s", JobID: int64(i + 1), CreatedAt: t0})
				if err != nil {
					return err
				}
				added = append(added, ok)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		pbs, err := s.ListPlaybooks(ctx, s.DB, "/w")
		if err != nil || len(pbs) != 1 || len(pbs[0].Steps) != 1 || pbs[0].Steps[0] != "c" || pbs[0].JobID != 2 {
			t.Fatalf("playbooks %+v, %v", pbs, err)
		}
		ps, err := s.ListProposals(ctx, s.DB, "/w")
		if err != nil || len(ps) != 1 || ps[0].ID != "retro-1" || ps[0].Status != store.ProposalPending || !added[0] || added[1] {
			t.Fatalf("proposals %+v (added %v), %v", ps, added, err)
		}
	})
}

func TestUsePlaybook(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		use := func(slug string, success bool, at time.Time) (p store.Playbook, err error) {
			err = s.InTx(ctx, func(tx *sql.Tx) error {
				p, err = s.UsePlaybook(ctx, tx, store.PlaybookUse{Workspace: "/w", Slug: slug, Success: success, At: at})
				return err
			})
			return p, err
		}
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			return s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: "release", Steps: []string{"tag"}, UpdatedAt: t0})
		}); err != nil {
			t.Fatal(err)
		}
		p, err := use("release", false, t0.Add(time.Hour))
		if err != nil || p.Uses != 1 || p.Fails != 1 || p.Successes != 0 || !p.VerifiedAt.IsZero() {
			t.Fatalf("a failed use: %+v, %v", p, err)
		}
		p, err = use("release", true, t0.Add(2*time.Hour))
		if err != nil || p.Uses != 2 || p.Fails != 1 || p.Successes != 1 || !p.VerifiedAt.Equal(t0.Add(2*time.Hour)) {
			t.Fatalf("a successful use: %+v, %v", p, err)
		}
		if p, err = use("release", false, t0.Add(3*time.Hour)); err != nil || !p.VerifiedAt.Equal(t0.Add(2*time.Hour)) || p.Uses != 3 {
			t.Fatalf("a failure moved verified_at: %+v, %v", p, err)
		}
		// A newer retro replaces the steps; the record stays.
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			return s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: "release", Steps: []string{"tag", "push"}, UpdatedAt: t0.Add(4 * time.Hour)})
		}); err != nil {
			t.Fatal(err)
		}
		pbs, err := s.ListPlaybooks(ctx, s.DB, "/w")
		if err != nil || len(pbs) != 1 || pbs[0].Uses != 3 || pbs[0].Successes != 1 || !pbs[0].VerifiedAt.Equal(t0.Add(2*time.Hour)) || len(pbs[0].Steps) != 2 {
			t.Fatalf("list after use: %+v, %v", pbs, err)
		}
		if _, err := use("nope", true, t0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown slug: %v", err)
		}
	})
}

func TestDecideProposal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		decide := func(id, status, note string, at time.Time) (p store.Proposal, err error) {
			err = s.InTx(ctx, func(tx *sql.Tx) error {
				p, err = s.DecideProposal(ctx, tx, id, status, note, store.DecidedByPanel, at)
				return err
			})
			return p, err
		}
		add := func(id, ws string, at time.Time) {
			t.Helper()
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				ok, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: id, Workspace: ws, Summary: "summary of " + id, CreatedAt: at})
				if err == nil && !ok {
					err = fmt.Errorf("proposal %s not added", id)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		add("retro-1", "/w", t0)
		add("retro-2", "/v", t0.Add(time.Minute))
		if p, err := s.GetProposal(ctx, s.DB, "retro-1"); err != nil || p.Status != store.ProposalPending || !p.DecidedAt.IsZero() || p.Summary != "summary of retro-1" || p.DecidedBy != "" {
			t.Fatalf("get: %+v, %v", p, err)
		}
		if _, err := s.GetProposal(ctx, s.DB, "retro-9"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("get unknown: %v", err)
		}
		p, err := decide("retro-1", store.ProposalRejected, "we use bazel", t0.Add(time.Hour))
		if err != nil || p.Status != store.ProposalRejected || p.Note != "we use bazel" || !p.DecidedAt.Equal(t0.Add(time.Hour)) ||
			p.DecidedBy != store.DecidedByPanel {
			t.Fatalf("reject: %+v, %v", p, err)
		}
		if p, _ := s.GetProposal(ctx, s.DB, "retro-1"); p.DecidedBy != store.DecidedByPanel {
			t.Fatalf("decider not kept: %+v", p)
		}
		// A decision says who made it: none is refused, nothing stored.
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := s.DecideProposal(ctx, tx, "retro-2", store.ProposalAccepted, "", " ", t0)
			return err
		}); err == nil || !strings.Contains(err.Error(), "no decider") {
			t.Fatalf("decide with no decider: %v", err)
		}
		if p, _ := s.GetProposal(ctx, s.DB, "retro-2"); p.Status != store.ProposalPending {
			t.Fatalf("a refused decision changed %+v", p)
		}
		// Only mull's own deciders: anything else is refused, naming it.
		for _, by := range []string{"bob", "Agent", "admin (panel) "} {
			if err := s.InTx(ctx, func(tx *sql.Tx) error {
				_, err := s.DecideProposal(ctx, tx, "retro-2", store.ProposalAccepted, "", by, t0)
				return err
			}); err == nil || !strings.Contains(err.Error(), "is not an actor") || !strings.Contains(err.Error(), fmt.Sprintf("%q", by)) {
				t.Fatalf("decide by %q: %v", by, err)
			}
		}
		if p, _ := s.GetProposal(ctx, s.DB, "retro-2"); p.Status != store.ProposalPending || p.DecidedBy != "" {
			t.Fatalf("a refused decider changed %+v", p)
		}
		_, err = decide("retro-1", store.ProposalAccepted, "", t0.Add(2*time.Hour))
		if !errors.Is(err, store.ErrNotPending) || !strings.Contains(err.Error(), "already rejected") {
			t.Fatalf("decide twice: %v", err)
		}
		if p, _ := s.GetProposal(ctx, s.DB, "retro-1"); p.Status != store.ProposalRejected || p.Note != "we use bazel" {
			t.Fatalf("a second decision changed %+v", p)
		}
		if _, err := decide("retro-9", store.ProposalAccepted, "", t0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("decide unknown: %v", err)
		}
		if _, err := decide("retro-2", store.ProposalPending, "", t0); err == nil || errors.Is(err, store.ErrNotPending) {
			t.Fatalf("decide to pending: %v", err)
		}
		// A decided proposal frees the workspace for the next one.
		add("retro-3", "/w", t0.Add(2*time.Minute))

		ids := func(ps []store.Proposal, err error) string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range ps {
				out = append(out, p.ID)
			}
			return strings.Join(out, ",")
		}
		for _, c := range []struct {
			ws       string
			statuses []string
			want     string
		}{
			{"", nil, "retro-1,retro-2,retro-3"},
			{"/w", nil, "retro-1,retro-3"},
			{"/w", []string{store.ProposalPending}, "retro-3"},
			{"", []string{store.ProposalPending}, "retro-2,retro-3"},
			{"", []string{store.ProposalRejected, store.ProposalAccepted}, "retro-1"},
			{"/v", []string{store.ProposalRejected}, ""},
		} {
			if got := ids(s.ListProposals(ctx, s.DB, c.ws, c.statuses...)); got != c.want {
				t.Errorf("list %q %v: %s, want %s", c.ws, c.statuses, got, c.want)
			}
		}
	})
}

// A handoff drawn from older evidence than the stored one's is not
// stored; one as new or newer is, and one without a source time (or over
// a stored one without) always is.
func TestPutNewerHandoff(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		put := func(job int64, source time.Time) bool {
			t.Helper()
			var ok bool
			if err := s.InTx(ctx, func(tx *sql.Tx) (err error) {
				ok, err = s.PutNewerHandoff(ctx, tx, store.Handoff{Workspace: "/w", Text: fmt.Sprint("from job ", job),
					SessionID: "s", JobID: job, RecordedAt: t0.Add(time.Hour), SourceAt: source})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return ok
		}
		for _, c := range []struct {
			job     int64
			source  time.Time
			want    bool
			storedJ int64
		}{
			{1, time.Time{}, true, 1},              // first: nothing stored
			{2, t0, true, 2},                       // over one without a source time
			{3, t0.Add(-time.Minute), false, 2},    // older evidence: kept out
			{4, t0, true, 4},                       // as new: replaces
			{5, t0.Add(time.Microsecond), true, 5}, // newer
			{6, time.Time{}, true, 6},              // no source time: replaces
		} {
			if got := put(c.job, c.source); got != c.want {
				t.Fatalf("job %d: stored %t, want %t", c.job, got, c.want)
			}
			h, _, err := s.GetHandoff(ctx, s.DB, "/w")
			if err != nil || h.JobID != c.storedJ {
				t.Fatalf("after job %d: handoff %+v, %v; want job %d's", c.job, h, err, c.storedJ)
			}
			if c.want && !h.SourceAt.Equal(c.source) {
				t.Fatalf("job %d: source time %v, want %v", c.job, h.SourceAt, c.source)
			}
		}
	})
}

// The database holds one pending proposal per workspace: a second insert
// that skips the store's function fails, AddPendingProposal reports it not
// stored, and two transactions adding at once store one without an error.
func TestOnePendingProposal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		add := func(tx *sql.Tx, id, ws string) (bool, error) {
			return s.AddPendingProposal(ctx, tx, store.Proposal{ID: id, Workspace: ws, Summary: "summary of " + id, CreatedAt: t0})
		}
		tx1, err := s.DB.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx1.Rollback()
		if ok, err := add(tx1, "retro-1", "/w"); !ok || err != nil {
			t.Fatalf("first: %t, %v", ok, err)
		}
		// The second waits for the first (Postgres: on the index; SQLite:
		// for the one connection) and then stores nothing.
		type result struct {
			ok  bool
			err error
		}
		second := make(chan result, 1)
		go func() {
			var r result
			r.err = s.InTx(ctx, func(tx *sql.Tx) (err error) {
				r.ok, err = add(tx, "retro-2", "/w")
				return err
			})
			second <- r
		}()
		if err := tx1.Commit(); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-second:
			if r.ok || r.err != nil {
				t.Fatalf("second at once: stored %t, %v; want not stored, no error", r.ok, r.err)
			}
		case <-testwait.After(t):
			t.Fatal("the second insert did not return")
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `insert into proposals (id, workspace, summary, status, session_id, job_id, created_at)
				values ('retro-3', '/w', 'x', 'pending', 's', 3, $1)`, t0)
			return err
		})
		if err == nil {
			t.Fatal("a second pending proposal of /w was inserted past the index")
		}
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			if ok, err := add(tx, "retro-4", "/v"); !ok || err != nil {
				return fmt.Errorf("another workspace's: %t, %v", ok, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if ps, err := s.ListProposals(ctx, s.DB, "", store.ProposalPending); err != nil || len(ps) != 2 || ps[0].ID != "retro-1" || ps[1].ID != "retro-4" {
			t.Fatalf("pending %+v, %v", ps, err)
		}
	})
}

// Migration 011 applies to a database that has data, a race's two pending
// proposals in one workspace included: the oldest stays pending, the rest
// of the data is kept, and the handoff written before it has no source
// time, so the next retro replaces it.
func TestMigration011OnExistingData(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
		// A database from before 011: take it back out by hand.
		for _, q := range []string{`drop index proposals_one_pending`, `alter table handoffs drop column source_at`,
			`delete from mull_migrations where version = 11`} {
			if _, err := s.DB.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			for i, p := range []struct{ id, ws string }{{"retro-1", "/w"}, {"retro-2", "/w"}, {"retro-3", "/w"}, {"retro-4", "/v"}, {"retro-5", "/w"}} {
				if ok, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: p.id, Workspace: p.ws, Summary: "summary of " + p.id,
					CreatedAt: t0.Add(time.Duration(i) * time.Minute)}); err != nil || !ok {
					return fmt.Errorf("seed %s: %t, %v", p.id, ok, err)
				}
			}
			if _, err := s.DecideProposal(ctx, tx, "retro-5", store.ProposalRejected, "no", store.DecidedByCLI, t0); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `insert into handoffs (workspace, text, session_id, job_id, recorded_at)
				values ('/w', 'old handoff', 's0', 9, $1)`, t0)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}

		planned, err := s.Migrate(ctx, true)
		if err != nil || len(planned) != 1 || planned[0].Line != "mull" || planned[0].Version != 11 || planned[0].Name != "retro_guards" {
			t.Fatalf("dry run %+v, %v; want mull 011_retro_guards alone", planned, err)
		}
		if steps, err := s.Migrate(ctx, false); err != nil || len(steps) != 1 || steps[0].Version != 11 {
			t.Fatalf("migrate %+v, %v", steps, err)
		}

		ps, err := s.ListProposals(ctx, s.DB, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.ID+":"+p.Status)
		}
		if want := "retro-1:pending retro-4:pending retro-5:rejected"; strings.Join(got, " ") != want {
			t.Fatalf("proposals after 011: %s, want %s", strings.Join(got, " "), want)
		}
		h, ok, err := s.GetHandoff(ctx, s.DB, "/w")
		if !ok || err != nil || h.Text != "old handoff" || !h.SourceAt.IsZero() {
			t.Fatalf("handoff after 011: %+v, %t, %v", h, ok, err)
		}
		err = s.InTx(ctx, func(tx *sql.Tx) error {
			if ok, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: "retro-6", Workspace: "/w", Summary: "x", CreatedAt: t0}); ok || err != nil {
				return fmt.Errorf("a second pending of /w after 011: %t, %v", ok, err)
			}
			if ok, err := s.PutNewerHandoff(ctx, tx, store.Handoff{Workspace: "/w", Text: "new", SessionID: "s1", JobID: 10,
				RecordedAt: t0, SourceAt: t0.Add(-time.Hour)}); !ok || err != nil {
				return fmt.Errorf("the first retro after 011 did not replace the handoff: %t, %v", ok, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
