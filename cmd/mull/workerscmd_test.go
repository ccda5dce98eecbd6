package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// openMigrated opens a fresh migrated database of a dialect for a CLI test.
func openMigrated(t *testing.T, dialect string) (*store.Store, []string) {
	t.Helper()
	ctx := context.Background()
	db := storetest.Database(t, dialect)
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx, false); err != nil {
		t.Fatal(err)
	}
	return s, []string{"--database-url", dbURL(db)}
}

// `mull workers list` shows each process's host, pid, queues, start and
// last beat, and whether it is live (within workers.dead_after, 45s).
func TestWorkersList(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			s, base := openMigrated(t, dialect)
			now := time.Now().UTC()
			for _, w := range []store.Worker{
				{ClientID: "live", Host: "box-a", PID: 4242, StartedAt: now.Add(-time.Hour), HeartbeatAt: now, Queues: []string{"llm", "default"}},
				{ClientID: "gone", Host: "box-b", PID: 99, StartedAt: now.Add(-2 * time.Hour), HeartbeatAt: now.Add(-10 * time.Minute)},
			} {
				if err := s.Heartbeat(ctx, w); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			code, out, errOut := mull(t, ctx, append(base, "workers", "list")...)
			if code != 0 {
				t.Fatalf("workers list: exit %d\n%s%s", code, out, errOut)
			}
			for _, want := range []string{`box-a\s+4242\s+default,llm\s+\S+\s+\d+s ago\s+yes\n`, `box-b\s+99\s+\S+\s+10m0s ago\s+no \(stopped beating\)\n`, `2 workers, 1 live`} {
				if !regexp.MustCompile(want).MatchString(out) {
					t.Errorf("workers list lacks %s:\n%s", want, out)
				}
			}
			code, out, errOut = mull(t, ctx, append(base, "workers", "list", "--json")...)
			var rows []store.WorkerStatus
			if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 || !rows[0].Live || rows[1].Live ||
				rows[0].PID != 4242 || strings.Join(rows[0].Queues, ",") != "default,llm" || rows[1].Queues == nil {
				t.Fatalf("workers list --json: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}
