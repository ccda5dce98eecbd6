package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestLLMCallsShowsRunningAndLost: `mull llm calls` shows a call in flight
// and one lost to a dead worker, and `mull llm usage` counts the lost one
// as failed but not the running one.
func TestLLMCallsShowsRunningAndLost(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.Database(t, dialect)
			s, err := store.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Migrate(ctx, false); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			for i, job := range []int64{7, 8} {
				c := store.LLMCall{JobID: job, Kind: "retro_session", Model: "deepseek-v4-flash", CreatedAt: now.Add(time.Duration(i-20) * time.Minute)}
				if err := s.StartLLMCall(ctx, &c); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := s.MarkLostLLMCalls(ctx, now.Add(-15*time.Minute)); err != nil || n != 2 {
				t.Fatalf("MarkLostLLMCalls = %d, %v", n, err)
			}
			c := store.LLMCall{JobID: 9, Kind: "retro_session", Model: "deepseek-v4-flash", CreatedAt: now}
			if err := s.StartLLMCall(ctx, &c); err != nil {
				t.Fatal(err)
			}
			s.Close()

			base := []string{"--database-url", dbURL(db)}
			code, out, errOut := mull(t, ctx, append(base, "llm", "calls")...)
			if code != 0 {
				t.Fatalf("llm calls: exit %d\n%s%s", code, out, errOut)
			}
			for _, want := range []string{`\s9\s.*\s-\s+running\n`, `\s7\s.*\s-\s+lost \(worker_died\)\n`, `3 calls`} {
				if !regexp.MustCompile(want).MatchString(out) {
					t.Errorf("llm calls lacks %s:\n%s", want, out)
				}
			}
			code, out, errOut = mull(t, ctx, append(base, "llm", "usage", "--by", "kind", "--json")...)
			if code != 0 || !strings.Contains(out, `"calls": 3`) || !strings.Contains(out, `"failed": 2`) {
				t.Fatalf("llm usage: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}
