package benchcap_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/benchcap"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

var (
	key   = []byte("0123456789abcdef0123456789abcdef")
	now   = time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	cellA = benchcap.Claims{Run: "bench_1", Side: bench.Candidate, Case: "build", Iteration: 1, Snapshot: "snap-a",
		Job: 42, Kind: "bench_cell", Attempt: 1, Started: now.UnixMilli(), Workspace: "/w", Expires: now.Add(5 * time.Minute).Unix()}
)

// A capability verifies to its claims until it expires; after, it is
// refused however valid its MAC.
func TestMintVerify(t *testing.T) {
	tok := benchcap.Mint(key, cellA)
	if !benchcap.Is(tok) {
		t.Fatalf("%q lacks the prefix", tok)
	}
	got, err := benchcap.Verify(key, tok, now)
	if err != nil || got != cellA {
		t.Fatalf("verify: %+v %v", got, err)
	}
	if _, err := benchcap.Verify(key, tok, cellA.ExpiresAt()); !errors.Is(err, benchcap.ErrExpired) {
		t.Errorf("at expiry: %v", err)
	}
	if _, err := benchcap.Verify([]byte("another key, another database!!"), tok, now); !errors.Is(err, benchcap.ErrTampered) {
		t.Errorf("another key: %v", err)
	}
}

// Any change to a token is refused: its claims rewritten (another
// snapshot, a later expiry) with the old MAC, its MAC changed, or its
// shape broken.
func TestTampered(t *testing.T) {
	tok := benchcap.Mint(key, cellA)
	payload, sig, _ := strings.Cut(strings.TrimPrefix(tok, benchcap.Prefix), ".")
	other := cellA
	other.Snapshot, other.Expires = "snap-b", now.Add(time.Hour).Unix()
	forged, _, _ := strings.Cut(strings.TrimPrefix(benchcap.Mint(key, other), benchcap.Prefix), ".")
	flip := []byte(sig)
	flip[0] ^= 1
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	edited := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), "snap-a", "snap-b", 1)))
	for name, bad := range map[string]struct {
		tok  string
		want error
	}{
		"claims swapped":  {benchcap.Prefix + forged + "." + sig, benchcap.ErrTampered},
		"claims edited":   {benchcap.Prefix + edited + "." + sig, benchcap.ErrTampered},
		"mac changed":     {benchcap.Prefix + payload + "." + string(flip), benchcap.ErrTampered},
		"mac dropped":     {benchcap.Prefix + payload, benchcap.ErrMalformed},
		"mac not base64":  {benchcap.Prefix + payload + ".!!", benchcap.ErrMalformed},
		"no prefix":       {payload + "." + sig, benchcap.ErrMalformed},
		"mac truncated":   {tok[:len(tok)-3], benchcap.ErrTampered},
		"empty":           {"", benchcap.ErrMalformed},
		"payload missing": {benchcap.Prefix + "." + sig, benchcap.ErrMalformed},
	} {
		if _, err := benchcap.Verify(key, bad.tok, now); !errors.Is(err, bad.want) {
			t.Errorf("%s: %v, want %v", name, err, bad.want)
		}
	}
}

// A capability is live while the job attempt that minted it runs, and
// refused, saying how its cell ended, once the job completed, once a
// retry started the next attempt, once a snooze gave the attempt back and
// the job started again under the same number, or when the job is gone.
func TestLive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		j := storetest.StartJob(t, s, "bench_cell")
		mint := func() benchcap.Claims {
			c := cellA
			c.Job, c.Attempt, c.Started = j.Row.ID, j.Row.Attempt, j.Row.AttemptedAt.UnixMilli()
			return c
		}
		ended := func(c benchcap.Claims, want string) {
			t.Helper()
			err := benchcap.Live(t.Context(), s, c)
			if !errors.Is(err, benchcap.ErrEnded) || !strings.Contains(err.Error(), want) {
				t.Errorf("%v, want ErrEnded saying %q", err, want)
			}
		}
		first := mint()
		if err := benchcap.Live(t.Context(), s, first); err != nil {
			t.Fatalf("while its attempt runs: %v", err)
		}
		j.Retry()
		second := mint()
		ended(first, "attempt 1 of this cell's job")
		if err := benchcap.Live(t.Context(), s, second); err != nil {
			t.Fatalf("the retry's own: %v", err)
		}
		j.Snooze()
		ended(second, "snoozed")
		third := mint()
		if err := benchcap.Live(t.Context(), s, third); err != nil {
			t.Fatalf("after the snooze, its own: %v", err)
		}
		j.Complete()
		ended(third, "is no longer running (state completed)")
		gone := third
		gone.Job += 1000
		ended(gone, "no longer exists")
	})
}
