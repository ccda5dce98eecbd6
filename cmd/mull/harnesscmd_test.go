package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// proposalFile writes a test file under dir and returns its path.
func proposalFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeFile(t, p, body)
	return p
}

// `mull harness` over one entry's life, as an operator uses it: apply
// (the admin body and a bare proposal) creates and updates, a rule's
// rejection is printed with the seed's message, list, show (now, at a
// time, every version), history, archive and restore, pin and unpin, a
// rollback and its refused repeat; --json on each; bad flags exit 2.
func TestHarnessCommands(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			ctx := context.Background()
			dir := t.TempDir()
			base := []string{"--database-url", dbURL(db)}
			h := func(args ...string) (int, string, string) {
				t.Helper()
				return mull(t, ctx, append(append(base, "harness"), args...)...)
			}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			create := proposalFile(t, dir, "create.json", `{"proposal":{"summary":"note the build","edits":[
				{"action":"create","kind":"memory","id":"build","content":"0123456789","title":"Build"},
				{"action":"create","kind":"skill","id":"Not_Kebab","content":"x"}]}}`)
			code, out, errOut := h("apply", create)
			if code != 0 || !strings.Contains(out, "applied   create memory/build") ||
				!strings.Contains(out, "rejected  create skill/Not_Kebab: "+harness.MsgSkillKebab) || !strings.Contains(out, "1 applied, 1 rejected") {
				t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
			}
			created := strings.Fields(out)[1]
			beforeUpdate := time.Now().UTC()
			update := proposalFile(t, dir, "update.json", `{"summary":"grow","edits":[
				{"action":"update","kind":"memory","id":"build","content":"012345678901234","reason":"more detail"}]}`)
			code, out, errOut = h("apply", update, "--json")
			var applied harnesses.Applied
			if err := json.Unmarshal([]byte(out), &applied); code != 0 || err != nil || !applied.Refinement.Edits[0].Applied {
				t.Fatalf("apply a bare proposal --json: exit %d, %v\n%s%s", code, err, out, errOut)
			}

			code, out, _ = h("list")
			if code != 0 || !strings.Contains(out, "KIND") || !strings.Contains(out, "memory  build  2") || !strings.Contains(out, "Build") {
				t.Fatalf("list: exit %d\n%s", code, out)
			}
			code, out, _ = h("list", "--kind", "memory", "--json")
			var list []harnesses.EntryView
			if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 1 || list[0].Content != "012345678901234" {
				t.Fatalf("list --json: exit %d, %v\n%s", code, err, out)
			}
			code, out, _ = h("show", "build", "--versions")
			var shown struct {
				Entry    harnesses.EntryView `json:"entry"`
				Versions []harnesses.Version `json:"versions"`
			}
			if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || shown.Entry.Version != 2 || len(shown.Versions) != 2 ||
				shown.Versions[0].RefinementID != created {
				t.Fatalf("show --versions: exit %d, %v\n%s", code, err, out)
			}
			code, out, _ = h("show", "build", "--at", beforeUpdate.Format(time.RFC3339Nano))
			if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || shown.Entry.Content != "0123456789" {
				t.Fatalf("show --at: exit %d, %v\n%s", code, err, out)
			}
			if code, _, errOut = h("show", "nothing"); code != 1 || !strings.Contains(errOut, "not found") {
				t.Fatalf("show an unknown entry: exit %d\n%s", code, errOut)
			}

			code, out, _ = h("archive", "build", "--reason", "stale")
			if code != 0 || !strings.Contains(out, "applied   update memory/build") {
				t.Fatalf("archive: exit %d\n%s", code, out)
			}
			if code, out, _ = h("list"); code != 0 || strings.Contains(out, "build") {
				t.Fatalf("list after archive: exit %d\n%s", code, out)
			}
			if code, out, _ = h("list", "--archived"); code != 0 || !strings.Contains(out, "archived") {
				t.Fatalf("list --archived: exit %d\n%s", code, out)
			}
			if code, out, _ = h("archive", "build", "--restore"); code != 0 || !strings.Contains(out, "1 applied") {
				t.Fatalf("restore: exit %d\n%s", code, out)
			}
			if code, out, _ = h("pin", "build", "--kind", "memory"); code != 0 || !strings.Contains(out, "1 applied") {
				t.Fatalf("pin: exit %d\n%s", code, out)
			}
			if code, out, _ = h("list"); code != 0 || !strings.Contains(out, "active,pinned") || !strings.Contains(out, "memory  build  5") {
				t.Fatalf("list after pin: exit %d\n%s", code, out)
			}
			code, out, _ = h("pin", "build", "--unpin", "--json")
			if err := json.Unmarshal([]byte(out), &applied); code != 0 || err != nil || !applied.Refinement.Edits[0].Applied {
				t.Fatalf("unpin --json: exit %d, %v\n%s", code, err, out)
			}
			unpin := applied.Refinement.ID

			code, out, _ = h("history")
			if code != 0 || !strings.Contains(out, "ROLLED BACK BY") || !strings.Contains(out, created) || strings.Count(out, "\n") != 7 {
				t.Fatalf("history: exit %d\n%s", code, out)
			}
			code, out, _ = h("rollback", unpin)
			if code != 0 || !strings.Contains(out, "refinement rollback_"+unpin+" (global, rolling back "+unpin+"): 1 applied") ||
				!strings.Contains(out, "rollback:"+unpin) {
				t.Fatalf("rollback: exit %d\n%s", code, out)
			}
			if code, _, errOut = h("rollback", unpin); code == 0 || !strings.Contains(errOut, "rolled back already") {
				t.Fatalf("a second rollback: exit %d\n%s", code, errOut)
			}
			code, out, _ = h("history", "--scope", "global", "--json")
			var hist []harnesses.RefinementView
			if err := json.Unmarshal([]byte(out), &hist); code != 0 || err != nil || len(hist) != 7 || hist[0].RollbackOf != unpin ||
				hist[1].RolledBackBy != "rollback_"+unpin {
				t.Fatalf("history --json: exit %d, %v\n%s", code, err, out)
			}
			if code, out, _ = h("reviews"); code != 0 || !strings.Contains(out, "no reviews") {
				t.Fatalf("reviews: exit %d\n%s", code, out)
			}
			if code, out, _ = h("reviews", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
				t.Fatalf("reviews --json: exit %d\n%s", code, out)
			}

			bogus := proposalFile(t, dir, "bogus.json", `{"summary":"s","edits":[{"action":"create","kind":"memory","id":"x","content":"c","blastRadius":"general"}]}`)
			empty := proposalFile(t, dir, "empty.json", `{"proposal":{"summary":"s","edits":[]}}`)
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"list", "--kind", "tool"}, "--kind"},
				{[]string{"show", "build", "--at", "yesterday"}, "--at"},
				{[]string{"history", "--scope", "both"}, "--scope"},
				{[]string{"history", "--limit", "0"}, "--limit"},
				{[]string{"reviews", "--limit", "1001"}, "--limit"},
				{[]string{"archive", "build", "--reason", strings.Repeat("x", 501)}, "--reason"},
				{[]string{"apply", bogus}, `unknown field "blastRadius"`},
				{[]string{"apply", empty}, "proposal.edits"},
				{[]string{"apply", filepath.Join(dir, "missing.json")}, "missing.json"},
				{[]string{"refine"}, "--session is required unless --global"},
				{[]string{"refine", "--session", "nobody", "--no-wait"}, `no session "nobody"`},
				{[]string{"refine", "--global", "--instruction", strings.Repeat("x", 2001)}, "--instruction"},
			} {
				if code, out, errOut := h(tc.args...); code != 2 || !strings.Contains(errOut, tc.want) {
					t.Errorf("%v: exit %d, want 2 and %q\n%s%s", tc.args, code, tc.want, out, errOut)
				}
			}
		})
	}
}

// TestHarnessRefineFollows: `mull harness refine` with --no-wait only
// enqueues; without a worker it gives up at --timeout (exit 1, the job
// stays queued); another instruction while it is queued exits 1 naming
// the job; with one (`mull worker` in-process, the fake DeepSeek's
// default plan) it follows the job and prints the verdict and the applied
// edit; --json has the review and the refinement.
func TestHarnessRefineFollows(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			ctx := context.Background()
			if code, out, errOut := mull(t, ctx, "--database-url", dbURL(db), "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			seedRetroSessions(t, db)
			fake := fakeds.New(fakeds.Options{})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			base := []string{"--database-url", dbURL(db)}
			refine := func(args ...string) (int, string, string) {
				t.Helper()
				return mull(t, ctx, append(append(base, "harness", "refine", "--session", "session-flaky"), args...)...)
			}
			code, out, errOut := refine("--no-wait")
			m := regexp.MustCompile(`enqueued as job (\d+): refine_review of the local store`).FindStringSubmatch(out)
			if code != 0 || m == nil {
				t.Fatalf("--no-wait: exit %d\n%s%s", code, out, errOut)
			}
			first := m[1]
			code, out, errOut = refine("--timeout", "300ms")
			if code != 1 || !strings.Contains(out, "already queued or running: following job "+first) || !strings.Contains(errOut, "stays queued") {
				t.Fatalf("no worker: exit %d, want 1 following job %s\n%s%s", code, first, out, errOut)
			}
			// Another instruction would be dropped by joining the queued job.
			code, out, errOut = refine("--instruction", "note why the tests failed", "--no-wait")
			if busy := "a review of this store is already queued as job " + first + "; try again after it"; code != 1 || !strings.Contains(errOut, busy) {
				t.Fatalf("another refine while one is queued: exit %d, want 1 and %q\n%s%s", code, busy, out, errOut)
			}

			stop := startWorker(t, base)
			defer stop()
			code, out, errOut = refine()
			for _, want := range []string{"following job " + first, "review: approved (manual, local store)", "refinement refine_" + first + " (local): 1 applied, 0 rejected",
				"applied   create memory/"} {
				if code != 0 || !strings.Contains(out, want) {
					t.Fatalf("refine: exit %d, want %q in\n%s%s", code, want, out, errOut)
				}
			}
			t.Logf("harness refine output:\n%s", out)
			code, out, errOut = refine("--json", "--instruction", "note why the tests failed")
			var st api.RefineStatus
			if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.State != "completed" || st.Review == nil ||
				!strings.Contains(errOut, "enqueued as job") {
				t.Fatalf("refine --json: exit %d, %v\n%s%s", code, err, out, errOut)
			}
			t.Logf("second refine: %+v review %+v", st, *st.Review)
		})
	}
}
