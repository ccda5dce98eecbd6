package store_test

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

var errRollBack = errors.New("roll back")

func TestMemoryUseLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		var a, b int64
		if err := s.InTx(ctx, func(tx *sql.Tx) (err error) {
			m := store.Memory{Workspace: "/w", Kind: "fact", Text: "uses tabs", TextNorm: "uses tabs", Origin: "tool", RecordedAt: t0, Uses: 5}
			if a, err = s.InsertMemory(ctx, tx, m); err != nil {
				return err
			}
			m.Text, m.TextNorm, m.Uses = "go 1.26", "go 1.26", 0
			b, err = s.InsertMemory(ctx, tx, m)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		bump := func(u store.MemoryUse, ids ...int64) error {
			return s.InTx(ctx, func(tx *sql.Tx) error { return s.BumpUses(ctx, tx, u, ids...) })
		}
		if err := bump(store.MemoryUse{Cause: store.UseSearch, Workspace: "/w", SessionID: "s1", At: t0.Add(time.Minute)}, a, b, 999); err != nil {
			t.Fatal(err)
		}
		if err := bump(store.MemoryUse{Cause: store.UseRetro, Workspace: "/w", JobID: 7, SessionID: "s1"}, a); err != nil {
			t.Fatal(err)
		}
		if err := bump(store.MemoryUse{Cause: store.UseWrite, Workspace: "/w", Origin: "panel"}, a, a); err != nil {
			t.Fatal(err)
		}
		// A bump rolled back leaves neither the total nor its row.
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if err := s.BumpUses(ctx, tx, store.MemoryUse{Cause: store.UseSearch}, a, b); err != nil {
				return err
			}
			return errRollBack
		})
		if !errors.Is(err, errRollBack) {
			t.Fatalf("rolled-back bump: %v", err)
		}
		if err := bump(store.MemoryUse{}, a); err == nil || !strings.Contains(err.Error(), "no cause") {
			t.Fatalf("a bump without a cause: %v", err)
		}
		ma, _ := s.GetMemory(ctx, s.DB, a)
		mb, _ := s.GetMemory(ctx, s.DB, b)
		if ma.Uses != 5+3 || mb.Uses != 1 {
			t.Fatalf("uses a=%d b=%d, want 8 and 1", ma.Uses, mb.Uses)
		}
		uses, err := s.MemoryUses(ctx, s.DB, store.MemoryUseFilter{MemoryID: a})
		if err != nil || len(uses) != 3 {
			t.Fatalf("uses of a: %+v, %v", uses, err)
		}
		if u := uses[0]; u.Cause != store.UseWrite || u.Origin != "panel" || u.MemoryID != a || u.At.IsZero() {
			t.Fatalf("newest use %+v", u)
		}
		if u := uses[1]; u.Cause != store.UseRetro || u.JobID != 7 || u.SessionID != "s1" {
			t.Fatalf("retro use %+v", u)
		}
		if u := uses[2]; u.Cause != store.UseSearch || !u.At.Equal(t0.Add(time.Minute)) || u.Workspace != "/w" || u.SessionID != "s1" {
			t.Fatalf("search use %+v", u)
		}
		if n, err := s.CountMemoryUses(ctx, s.DB, store.MemoryUseFilter{MemoryID: a}); n != 3 || err != nil {
			t.Fatalf("count of a: %d, %v", n, err)
		}
		page, err := s.MemoryUses(ctx, s.DB, store.MemoryUseFilter{MemoryID: a, Limit: 2, Offset: 2})
		if err != nil || len(page) != 1 || page[0].ID != uses[2].ID {
			t.Fatalf("second page: %+v, %v", page, err)
		}
		byJob, err := s.MemoryUses(ctx, s.DB, store.MemoryUseFilter{JobID: 7})
		if err != nil || len(byJob) != 1 || byJob[0].MemoryID != a {
			t.Fatalf("uses of job 7: %+v, %v", byJob, err)
		}
		if n, _ := s.CountMemoryUses(ctx, s.DB, store.MemoryUseFilter{MemoryID: b}); n != 1 {
			t.Fatalf("count of b: %d", n)
		}
	})
}

func TestPlaybookUseLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			for _, slug := range []string{"release", "bisect"} {
				if err := s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/w", Slug: slug, Steps: []string{"go"}, UpdatedAt: t0}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		use := func(slug string, ok bool) error {
			return s.InTx(ctx, func(tx *sql.Tx) error {
				_, err := s.UsePlaybook(ctx, tx, store.PlaybookUse{Workspace: "/w", Slug: slug, Success: ok,
					ReportedBy: store.PlaybookByAgent, SessionID: "s1"})
				return err
			})
		}
		for _, u := range []struct {
			slug string
			ok   bool
		}{{"release", true}, {"release", false}, {"release", true}, {"bisect", false}} {
			if err := use(u.slug, u.ok); err != nil {
				t.Fatal(err)
			}
		}
		if err := use("nope", true); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown playbook: %v", err)
		}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := s.UsePlaybook(ctx, tx, store.PlaybookUse{Workspace: "/w", Slug: "release", Success: true}); err != nil {
				return err
			}
			return errRollBack
		})
		if !errors.Is(err, errRollBack) {
			t.Fatal(err)
		}
		for _, c := range []struct {
			f    store.PlaybookUseFilter
			want int
		}{
			{store.PlaybookUseFilter{Workspace: "/w"}, 4},
			{store.PlaybookUseFilter{Workspace: "/w", Slug: "release"}, 3},
			{store.PlaybookUseFilter{Workspace: "/w", Slug: "release", Outcome: store.OutcomeSuccess}, 2},
			{store.PlaybookUseFilter{Workspace: "/w", Slug: "release", Outcome: store.OutcomeFail}, 1},
			{store.PlaybookUseFilter{Workspace: "/w", Outcome: store.OutcomeFail}, 2},
			{store.PlaybookUseFilter{Workspace: "/other"}, 0},
		} {
			rows, err := s.PlaybookUses(ctx, s.DB, c.f)
			n, cerr := s.CountPlaybookUses(ctx, s.DB, c.f)
			if err != nil || cerr != nil || len(rows) != c.want || n != c.want {
				t.Fatalf("%+v: %d rows, count %d (%v, %v), want %d", c.f, len(rows), n, err, cerr, c.want)
			}
		}
		rows, _ := s.PlaybookUses(ctx, s.DB, store.PlaybookUseFilter{Workspace: "/w", Limit: 1})
		if len(rows) != 1 || rows[0].Slug != "bisect" || rows[0].Success || rows[0].ReportedBy != store.PlaybookByAgent || rows[0].SessionID != "s1" {
			t.Fatalf("newest use %+v", rows)
		}
		pbs, _ := s.ListPlaybooks(ctx, s.DB, "/w")
		for _, p := range pbs {
			if p.Slug == "release" && (p.Uses != 3 || p.Successes != 2 || p.Fails != 1) {
				t.Fatalf("release's totals %+v disagree with its rows", p)
			}
		}
		if _, err := s.PlaybookUses(ctx, s.DB, store.PlaybookUseFilter{Workspace: "/w", Outcome: "maybe"}); err == nil || !strings.Contains(err.Error(), `outcome "maybe"`) {
			t.Fatalf("bad outcome: %v", err)
		}
	})
}

func TestErrorRetroLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		if err := s.InTx(ctx, func(tx *sql.Tx) error {
			for i, job := range []int64{11, 12} {
				at := t0.Add(time.Duration(i) * time.Minute)
				if err := s.LogErrorRetro(ctx, tx, store.ErrorRetroSchedule{SessionID: "s1", At: at, JobID: job, Due: at.Add(6 * time.Second)}); err != nil {
					return err
				}
			}
			return s.FoldErrorRetros(ctx, tx, "s1", 12)
		}); err != nil {
			t.Fatal(err)
		}
		rows, err := s.ErrorRetroSchedules(ctx, s.DB, "s1", 10)
		if err != nil || len(rows) != 2 {
			t.Fatalf("schedules %+v, %v", rows, err)
		}
		if r := rows[0]; r.JobID != 12 || !r.Folded || !r.Due.Equal(t0.Add(time.Minute+6*time.Second)) {
			t.Fatalf("newest %+v", r)
		}
		if r := rows[1]; r.JobID != 11 || r.Folded || !r.At.Equal(t0) {
			t.Fatalf("oldest %+v", r)
		}
		if rows, _ := s.ErrorRetroSchedules(ctx, s.DB, "s2", 10); len(rows) != 0 {
			t.Fatalf("another session's: %+v", rows)
		}
	})
}
