package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestServeFakeLLMEndToEnd: `mull serve --fake-llm` works an LLM job with no
// network; the operator sees the call, the budget, and can pause and resume
// the LLM queue and change a limit at runtime.
func TestServeFakeLLMEndToEnd(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := dbURL(storetest.Database(t, dialect))
			ctx := context.Background()
			base := []string{"--database-url", url}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			t.Setenv("DEEPSEEK_API_KEY", "")
			serveCtx, stopServe := context.WithCancel(ctx)
			var serveLog syncBuffer
			served := make(chan int, 1)
			go func() {
				served <- run(serveCtx, append(base, "--listen", "127.0.0.1:0", "serve", "--fake-llm"), &serveLog, &serveLog)
			}()
			defer func() {
				stopServe()
				select {
				case <-served:
				case <-testwait.After(t):
					t.Error("serve did not stop")
				}
			}()

			code, out, errOut := mull(t, ctx, append(base, "probe", "--llm", "--wait", "--workspace", "/home/dev/app", "--timeout", "60s")...)
			if code != 0 || !strings.Contains(out, "llm_probe job") || !strings.Contains(out, "completed") {
				t.Fatalf("probe --llm: %d\n%s%s\nserve log:\n%s", code, out, errOut, serveLog.String())
			}
			code, out, _ = mull(t, ctx, append(base, "llm", "calls")...)
			if code != 0 || !strings.Contains(out, "llm_probe") || !strings.Contains(out, "deepseek-v4-flash") || !strings.Contains(out, "1 calls") {
				t.Fatalf("llm calls: %d\n%s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "budget")...)
			if code != 0 || !strings.Contains(out, "workspace:/home/dev/app") || !strings.Contains(out, "400000") {
				t.Fatalf("budget: %d\n%s", code, out)
			}
			code, out, errOut = mull(t, ctx, append(base, "budget", "set", "kind:llm_probe", "50000")...)
			if code != 0 {
				t.Fatalf("budget set: %d %s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, append(base, "budget", "--json")...)
			if code != 0 || !strings.Contains(out, `"key": "kind:llm_probe"`) || !strings.Contains(out, `"limit_tokens": 50000`) {
				t.Fatalf("budget after set: %d\n%s", code, out)
			}

			code, out, _ = mull(t, ctx, append(base, "queues", "pause", "llm")...)
			if code != 0 || !strings.Contains(out, "paused llm") {
				t.Fatalf("queues pause: %d %s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "queues", "list")...)
			if code != 0 || !strings.Contains(out, "PAUSED") {
				t.Fatalf("queues list: %d %s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "queues", "resume", "llm")...)
			if code != 0 || !strings.Contains(out, "resumed llm") {
				t.Fatalf("queues resume: %d %s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "probe", "--llm", "--wait", "--timeout", "60s")...)
			if code != 0 || !strings.Contains(out, "completed") {
				t.Fatalf("probe after resume: %d %s", code, out)
			}
			if code, _, errOut := mull(t, ctx, append(base, "budget", "set", "bogus", "5")...); code != 2 || !strings.Contains(errOut, "bogus") {
				t.Fatalf("budget set bogus: %d %s", code, errOut)
			}
		})
	}
}
