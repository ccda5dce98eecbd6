package ledgersweep_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/jobs/ledgersweep"
	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A call that took a fact's retry lease and never reported back (its
// process was killed) leaves the lease held; once it is past
// ledger.lease_ttl the sweep releases it and says so, and a sweep with
// nothing to do logs nothing.
func TestSweepReleasesAnAbandonedLease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		s.SetClock(func() time.Time { return now })
		cfg := config.Default().Ledger
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, nil))
		svc := negledger.New(s, cfg, logger)
		w := &ledgersweep.Worker{Ledger: svc, Logger: logger}
		if err := w.Work(ctx, &river.Job[ledgersweep.Args]{}); err != nil {
			t.Fatal(err)
		}
		if logs.Len() != 0 {
			t.Fatalf("an empty sweep logged: %s", logs.String())
		}

		exit := 1
		call := negledger.Call{ToolCallID: "call-1", Tool: "bash", Args: map[string]any{"command": "go test ./..."},
			Cwd: "/w", Session: "session-1", Workspace: "/w"}
		rec, err := svc.Observe(ctx, negledger.ObserveRequest{Call: call, Outcome: negledger.Outcome{Status: negledger.Failed, ExitCode: &exit}})
		if err != nil || rec.FactID == 0 {
			t.Fatalf("observe: %+v, %v", rec, err)
		}
		now = now.Add(cfg.CommandRetryAfter.D() + time.Second)
		call.ToolCallID = "call-2"
		chk, err := svc.Check(ctx, negledger.CheckRequest{Call: call})
		if err != nil || chk.Verdict != ledger.AnswerVerifyRetry || chk.LeaseID == "" {
			t.Fatalf("check after command_retry_after: %+v, %v; want verify-retry with a lease", chk, err)
		}
		// The holder dies here. Within the TTL the lease stays.
		now = now.Add(cfg.LeaseTTL.D() - time.Second)
		if err := w.Work(ctx, &river.Job[ledgersweep.Args]{}); err != nil {
			t.Fatal(err)
		}
		if f, err := svc.Get(ctx, rec.FactID); err != nil || f.Lease == nil {
			t.Fatalf("inside the TTL: lease %+v, %v; want it held", f.Lease, err)
		}
		now = now.Add(2 * time.Second)
		if err := w.Work(ctx, &river.Job[ledgersweep.Args]{}); err != nil {
			t.Fatal(err)
		}
		if f, err := svc.Get(ctx, rec.FactID); err != nil || f.Lease != nil {
			t.Fatalf("past the TTL: lease %+v, %v; want it released", f.Lease, err)
		}
		if !strings.Contains(logs.String(), "swept the negative ledger") || !strings.Contains(logs.String(), "leases_released=1") {
			t.Errorf("log: %s", logs.String())
		}
	})
}
