package memories_test

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/negledger"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// ledgerDigest is a workspace-scope digest service over s reading the
// negative ledger, with lessons.commit_every commitEvery.
func ledgerDigest(t *testing.T, s *store.Store, commitEvery int) (*memories.Service, *negledger.Service, *clock) {
	t.Helper()
	svc, c := newService(t, s, "workspace")
	cfg := config.Default()
	cfg.Lessons.CommitEvery = commitEvery
	// A cooldown longer than digest.watermark_age: a command fact whose
	// retry is due is no constraint any more (ledger.Constrains), and the
	// tests look at facts past watermark_age.
	cfg.Ledger.CommandRetryAfter = config.Duration(2 * cfg.Digest.WatermarkAge.D())
	led := negledger.New(s, cfg.Ledger, slog.New(slog.DiscardHandler))
	return svc.WithLessons(cfg.Lessons, cfg.Reflection).WithLedger(led), led, c
}

func failBash(t *testing.T, led *negledger.Service, callID, command string) int64 {
	t.Helper()
	exit := 2
	out, err := led.Observe(context.Background(), negledger.ObserveRequest{Call: negledger.Call{ToolCallID: callID, Tool: "bash",
		Args: map[string]any{"command": command}, Cwd: "/w", Session: "session-1", Workspace: "/w"},
		Outcome: negledger.Outcome{Status: negledger.Failed, ExitCode: &exit}})
	if err != nil || out.FactID == 0 {
		t.Fatalf("observe %s: %+v, %v", command, out, err)
	}
	return out.FactID
}

func digestText(t *testing.T, svc *memories.Service, ws string) string {
	t.Helper()
	d, err := svc.Digest(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	return d.Text
}

// A recorded fact reaches the Known failures block, and a resolved one
// leaves it; each is a lesson change, published at once with
// lessons.commit_every 1. Another workspace never sees it.
func TestDigestShowsLedgerFacts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc, led, c := ledgerDigest(t, s, 1)
		if text := digestText(t, svc, "/w"); strings.Contains(text, "Known failures") {
			t.Fatalf("a digest before any fact:\n%s", text)
		}
		c.now = c.now.Add(time.Second)
		id := failBash(t, led, "call-1", "make {{test}}")
		text := digestText(t, svc, "/w")
		if !strings.Contains(text, "#### Known failures\n") || !strings.Contains(text, "- command exited 2 (bash) [make ｛｛test｝｝]") ||
			!strings.Contains(text, "  retry: at ") {
			t.Fatalf("the fact is not a Known failures constraint:\n%s", text)
		}
		if other := digestText(t, svc, "/elsewhere"); strings.Contains(other, "command exited") {
			t.Fatalf("another workspace shows /w's fact:\n%s", other)
		}
		c.now = c.now.Add(time.Second)
		if _, err := led.Resolve(ctx, id, "the Makefile was fixed"); err != nil {
			t.Fatal(err)
		}
		if text := digestText(t, svc, "/w"); strings.Contains(text, "command exited") {
			t.Fatalf("a resolved fact is still shown:\n%s", text)
		}
	})
}

// A fact an agent recorded over POST /v1/ledger/facts (source api) is
// its say-so: the digest shows it marked unverified, as it marks an
// agent-written lesson, while the fact mull observed itself (auto) is
// shown unmarked.
func TestDigestMarksAgentRecordedFacts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		svc, led, c := ledgerDigest(t, s, 1)
		c.now = c.now.Add(time.Second)
		failBash(t, led, "call-1", "make test")
		ctx := context.Background()
		if err := s.InTx(ctx, func(tx *sql.Tx) error { // an explicit fact needs a session mull knows
			_, _, err := s.LockSession(ctx, tx, "session-1", "/w", c.now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		f, err := led.Record(ctx, negledger.RecordRequest{OperationID: "op-1", Session: "session-1", Workspace: "/w",
			Fingerprint: ledger.Fingerprint{Kind: ledger.APIUnavailable, Endpoint: "https://api.example.com/v2"},
			Claim:       "the v2 API answers 410 Gone",
			Evidence:    []ledger.Witness{{Role: ledger.Outcome, Kind: ledger.WitnessErrorCode, Code: "HTTP_410"}},
			Retry:       &ledger.RetryCondition{Type: ledger.RetryManual}})
		if err != nil || f.Source != ledger.SourceAPI {
			t.Fatalf("record = %+v, %v", f, err)
		}
		text := digestText(t, svc, "/w")
		if !strings.Contains(text, "- the v2 API answers 410 Gone 〈unverified〉\n") {
			t.Errorf("the agent's fact is not marked unverified:\n%s", text)
		}
		if !strings.Contains(text, "- command exited 2 (bash) [make test]\n") {
			t.Errorf("mull's own fact is not shown unmarked:\n%s", text)
		}
	})
}

// A new fact rides the lessons' batch: with lessons.commit_every 2 one
// fact publishes nothing, so the prompt (and DSH's cache of it) stays
// byte-identical; the second fact completes the batch; and a lone fact
// older than digest.watermark_age is published anyway. A repeat of a
// fact's failure (a counter, a new evidence version) is not a change.
func TestLedgerFactsRideTheLessonBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		svc, led, c := ledgerDigest(t, s, 2)
		first := digestText(t, svc, "/w")
		c.now = c.now.Add(time.Second)
		failBash(t, led, "call-1", "make test")
		if text := digestText(t, svc, "/w"); text != first {
			t.Fatalf("one fact of a batch of 2 republished:\n%s", text)
		}
		failBash(t, led, "call-2", "make test") // a repeat: counts nothing toward the batch
		if text := digestText(t, svc, "/w"); text != first {
			t.Fatalf("a repeat failure republished:\n%s", text)
		}
		failBash(t, led, "call-3", "make lint")
		text := digestText(t, svc, "/w")
		if !strings.Contains(text, "[make test]") || !strings.Contains(text, "[make lint]") {
			t.Fatalf("the second fact did not publish the batch:\n%s", text)
		}
		c.now = c.now.Add(time.Second)
		failBash(t, led, "call-4", "make vet")
		if got := digestText(t, svc, "/w"); got != text {
			t.Fatalf("a lone fact republished before watermark_age:\n%s", got)
		}
		c.now = c.now.Add(config.Default().Digest.WatermarkAge.D())
		if got := digestText(t, svc, "/w"); !strings.Contains(got, "[make vet]") {
			t.Fatalf("a lone fact past watermark_age is not published:\n%s", got)
		}
	})
}
