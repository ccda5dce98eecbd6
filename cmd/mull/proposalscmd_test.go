package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// seedRetroOutput migrates a fresh database of dialect, stores two pending
// proposals and two playbooks as retros would, and returns its URL.
func seedRetroOutput(t *testing.T, dialect string) string {
	t.Helper()
	ctx := context.Background()
	db := storetest.Database(t, dialect)
	url := dbURL(db)
	if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	err = s.InTx(ctx, func(tx *sql.Tx) error {
		for i, ws := range []string{"/home/dev/app", "/home/dev/lib"} {
			if _, err := s.AddPendingProposal(ctx, tx, store.Proposal{ID: "retro-" + string(rune('1'+i)), Workspace: ws,
				Summary: "cache go modules in CI", Detail: "add actions/cache for ~/go/pkg/mod", SessionID: "session-1", JobID: 7,
				CreatedAt: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
				return err
			}
		}
		// bisect was written 31 days ago and never worked since: stale
		// (the list reads the real clock).
		written := map[string]time.Time{"bisect": time.Now().UTC().Add(-31 * 24 * time.Hour), "release": t0}
		for _, slug := range []string{"bisect", "release"} {
			if err := s.PutPlaybook(ctx, tx, store.Playbook{Workspace: "/home/dev/app", Slug: slug, Steps: []string{"tag", "push"},
				SessionID: "session-1", JobID: 7, UpdatedAt: written[slug]}); err != nil {
				return err
			}
		}
		_, err := s.UsePlaybook(ctx, tx, store.PlaybookUse{Workspace: "/home/dev/app", Slug: "release", Success: true, At: time.Now()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func TestProposalsCommands(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := seedRetroOutput(t, dialect)
			ctx := context.Background()
			p := func(args ...string) (int, string, string) {
				t.Helper()
				return mull(t, ctx, append([]string{"--database-url", url, "proposals"}, args...)...)
			}
			code, out, errOut := p("list")
			if code != 0 || !strings.Contains(out, "ID") || !strings.Contains(out, "retro-1") || !strings.Contains(out, "retro-2") || !strings.Contains(out, "pending") {
				t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, _ = p("list", "--workspace", "/home/dev/lib"); code != 0 || strings.Contains(out, "retro-1") || !strings.Contains(out, "retro-2") {
				t.Fatalf("list --workspace: exit %d\n%s", code, out)
			}
			if code, _, errOut = p("list", "--status", "maybe"); code != 2 || !strings.Contains(errOut, "status") {
				t.Fatalf("list --status maybe: exit %d\n%s", code, errOut)
			}
			code, out, _ = p("show", "retro-1")
			if code != 0 || !strings.Contains(out, "proposal retro-1  pending") || !strings.Contains(out, "actions/cache") {
				t.Fatalf("show: exit %d\n%s", code, out)
			}
			// A pending proposal has no decider: its JSON leaves decided_by
			// out, as the API does, in show and list.
			for _, args := range [][]string{{"show", "retro-1", "--json"}, {"list", "--json"}} {
				if code, out, _ = p(args...); code != 0 || !strings.Contains(out, "retro-1") || strings.Contains(out, "decided_by") {
					t.Fatalf("%v: exit %d\n%s", args, code, out)
				}
			}
			if code, _, errOut = p("show", "retro-9"); code != 1 || !strings.Contains(errOut, "no proposal retro-9") {
				t.Fatalf("show unknown: exit %d\n%s", code, errOut)
			}

			if code, _, errOut = p("reject", "retro-1"); code != 2 || !strings.Contains(errOut, "note: required") {
				t.Fatalf("reject without a note: exit %d\n%s", code, errOut)
			}
			code, out, errOut = p("reject", "retro-1", "--note", "the CI cache is already warm")
			if code != 0 || !strings.Contains(out, "rejected proposal retro-1") ||
				!strings.Contains(out, "kept the note as lesson memory 1: proposal rejected: cache go modules in CI -> the CI cache is already warm") {
				t.Fatalf("reject: exit %d\n%s%s", code, out, errOut)
			}
			if code, _, errOut = p("accept", "retro-1"); code != 1 || !strings.Contains(errOut, "already rejected") {
				t.Fatalf("accept a rejected one: exit %d\n%s", code, errOut)
			}
			if code, _, errOut = p("accept", "retro-9"); code != 1 || !strings.Contains(errOut, "no proposal retro-9") {
				t.Fatalf("accept unknown: exit %d\n%s", code, errOut)
			}
			var d memories.Decision
			code, out, _ = p("accept", "retro-2", "--note", "done in #12", "--json")
			if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || d.Proposal.Status != store.ProposalAccepted || d.Lesson != nil || d.Proposal.Note != "done in #12" ||
				d.Proposal.DecidedBy != store.DecidedByCLI {
				t.Fatalf("accept --json: exit %d, %v\n%s", code, err, out)
			}
			if code, out, _ = p("list", "--status", "pending"); code != 0 || out != "no proposals\n" {
				t.Fatalf("list --status pending: exit %d\n%s", code, out)
			}
			if code, out, _ = p("show", "retro-1"); code != 0 || !strings.Contains(out, "rejected 20") || !strings.Contains(out, "by admin (cli): the CI cache is already warm") {
				t.Fatalf("show decided: exit %d\n%s", code, out)
			}
			if code, out, _ = p("list"); code != 0 || !strings.Contains(out, "BY") || strings.Count(out, "admin (cli)") != 2 {
				t.Fatalf("list shows who decided: exit %d\n%s", code, out)
			}
			code, out, _ = mull(t, ctx, "--database-url", url, "memory", "show", "1")
			if code != 0 || !strings.Contains(out, "lesson") || !strings.Contains(out, "src user  origin command") {
				t.Fatalf("the lesson: exit %d\n%s", code, out)
			}
			if code, out, _ = p("reject", "--help"); code != 0 || !strings.Contains(out, "written") || !strings.Contains(out, "--note") {
				t.Fatalf("reject --help: exit %d\n%s", code, out)
			}
		})
	}
}

func TestPlaybooksCommands(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := seedRetroOutput(t, dialect)
			ctx := context.Background()
			pb := func(args ...string) (int, string, string) {
				t.Helper()
				return mull(t, ctx, append([]string{"--database-url", url, "playbooks"}, args...)...)
			}
			code, out, errOut := pb("list", "--workspace", "/home/dev/app")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "SLUG") ||
				!strings.HasPrefix(lines[1], "release") || !strings.Contains(lines[1], "0.67") || !strings.Contains(lines[1], " no ") ||
				!strings.HasPrefix(lines[2], "bisect") || !strings.Contains(lines[2], "0.50") || !strings.Contains(lines[2], "yes") || !strings.Contains(lines[2], "never") {
				t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
			}
			if code, _, errOut = pb("list"); code != 2 || !strings.Contains(errOut, "--workspace") {
				t.Fatalf("list without a workspace: exit %d\n%s", code, errOut)
			}
			if code, out, _ = pb("list", "--workspace", "/nowhere"); code != 0 || out != "no playbooks\n" {
				t.Fatalf("list of none: exit %d\n%s", code, out)
			}
			var list []memories.Playbook
			code, out, _ = pb("list", "--workspace", "/home/dev/app", "--json")
			if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 2 || list[0].VerifiedAt == nil || list[1].VerifiedAt != nil {
				t.Fatalf("list --json: exit %d, %v\n%s", code, err, out)
			}
		})
	}
}
