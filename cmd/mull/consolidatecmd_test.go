package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestConsolidateRun: --dry-run plans without a worker and changes
// nothing; an unknown workspace exits 2; with a worker, a run is followed
// chunk by chunk to its counts and cost, and status shows the watermark;
// the second run finds nothing to merge.
func TestConsolidateRun(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			db := storetest.Database(t, dialect)
			url := dbURL(db)
			ctx := context.Background()
			if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			const ws = "/home/dev/tidy"
			s, err := store.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			texts := []string{
				"the repo uses pnpm, not npm", "This repo uses pnpm, not npm!",
				"the api server listens on port 8080 in production", "the api server listens on port 8081 in production (checked)",
				"ci runs on forgejo actions with a self-hosted runner named tallow",
				"go test needs -race and -count=1 in the store package to catch the pool bug",
			}
			for _, text := range texts {
				if _, err := s.InsertMemory(ctx, s.DB, store.Memory{Workspace: ws, Kind: "fact", Text: text,
					TextNorm: memory.Normalize(text), Origin: "retro", Src: "agent", RecordedAt: time.Now().UTC().Add(-time.Hour)}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			fake := fakeds.New(fakeds.Options{})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			t.Setenv("MULL_CONSOLIDATE_MIN_MEMORIES", "3")
			base := []string{"--database-url", url}
			cons := func(args ...string) (int, string, string) {
				t.Helper()
				return mull(t, ctx, append(append(base, "consolidate"), args...)...)
			}

			code, out, errOut := cons("run", "/home/dev/none")
			if code != 2 || !strings.Contains(errOut, `workspace "/home/dev/none" has no memories`) {
				t.Fatalf("unknown workspace: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = cons("run", ws, "--dry-run")
			for _, want := range []string{`"/home/dev/tidy": 6 live memories, 6 new since memory 0`, "2 candidate clusters in 1 chunks",
				"This repo uses pnpm, not npm!", "dry run: nothing was enqueued or changed"} {
				if code != 0 || !strings.Contains(out, want) {
					t.Fatalf("dry run: exit %d, want %q in\n%s%s", code, want, out, errOut)
				}
			}
			if code, out, _ = mull(t, ctx, append(base, "jobs", "list", "--kind", "consolidate")...); code != 0 || !strings.Contains(out, "0 jobs") {
				t.Fatalf("the dry run enqueued a job: exit %d\n%s", code, out)
			}
			// The nightly sweep is listed with the cron entries, off-peak.
			if code, out, _ = mull(t, ctx, append(base, "jobs", "list")...); code != 0 ||
				!regexp.MustCompile(`consolidate-sweep +consolidate_sweep +30 18 \* \* \* +\S+T18:30:00Z +built-in`).MatchString(out) {
				t.Fatalf("jobs list does not show the consolidation sweep: exit %d\n%s", code, out)
			}

			stop := startWorker(t, base)
			defer stop()
			code, out, errOut = cons("run", ws)
			for _, want := range []string{"enqueued consolidate job", "run wf_", "merge_001 done (1/1 chunks): 2 clusters, 1 merged, 1 rejected",
				"derive done: 3 principles, 1 hypotheses, 3 prefetch added", "merged    1 clusters; 2 memories superseded",
				"rejected  1 merges (fidelity check)", "llm       2 calls;", "$0.0"} {
				if code != 0 || !strings.Contains(out, want) {
					t.Fatalf("run: exit %d, want %q in\n%s%s", code, want, out, errOut)
				}
			}
			t.Logf("consolidate run output:\n%s", out)

			code, out, errOut = cons("run", ws, "--json")
			var r consolidateResult
			if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
				t.Fatalf("run --json: exit %d, %v\n%s%s", code, err, out, errOut)
			}
			if r.Status != "succeeded" || r.Counts == nil || r.Counts.Merged != 0 || r.Counts.Rejected != 0 || r.RunID == "" {
				t.Fatalf("second run %+v", r)
			}

			// What the runs wrote themselves is not news to a dry run
			// either, as it is not to the planner.
			if code, out, errOut = cons("run", ws, "--dry-run"); code != 0 || !strings.Contains(out, " 0 new since memory ") {
				t.Fatalf("dry run after the runs: exit %d\n%s%s", code, out, errOut)
			}

			code, out, errOut = cons("status", ws)
			if code != 0 || !strings.Contains(out, `"/home/dev/tidy"`) || !strings.Contains(out, "finished run "+r.RunID) {
				t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}
