package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/overhead"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The fixture logs' four sessions (FORMAT.md §4).
var fixtureSessions = map[string]string{
	"session-618f3e2a-04f1-4c07-ae0d-228954177258": "/home/dev/invoice-utils",
	"session-84a3435d-c180-4f56-b4b3-055358da3772": "/home/dev/docs-site",
	"session-408c8942-fb3e-4b5d-b173-6ffaed7af3c2": "/home/dev/weather-cli",
	"session-293a9768-7a49-469f-a49b-03ee04ee1add": "/home/dev/shop-frontend",
}

// TestOverheadOnFixtureLogs imports the real DSH fixture logs, runs each
// session's retro against the fake DeepSeek (whose token counts follow the
// real prompt's bytes, see fakeds.TextTokens), and reports what mull's
// learning cost next to the agent's own usage: issue 10's goal is mull's
// cost at most 2% of the agent's. Prices are the default table with no peak
// window, so the figure does not depend on the hour the test runs.
func TestOverheadOnFixtureLogs(t *testing.T) {
	home := filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home")
	if _, err := os.Stat(home); err != nil {
		t.Skipf("fixtures not found beside the checkout: %v", err)
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			url := dbURL(storetest.Database(t, dialect))
			fake := fakeds.New(fakeds.Options{})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			cfgFile := filepath.Join(t.TempDir(), "mull.toml")
			if err := os.WriteFile(cfgFile, []byte("[llm]\npeak = []\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("MULL_LLM_BASE_URL", srv.URL)
			t.Setenv("DEEPSEEK_API_KEY", "sk-test")
			t.Setenv("MULL_WORKERS_FETCH_COOLDOWN", "10ms")
			t.Setenv("MULL_WORKERS_FETCH_POLL_INTERVAL", "50ms")
			base := []string{"--database-url", url, "--config", cfgFile}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			if code, out, errOut := mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...); code != 0 {
				t.Fatalf("import: %d\n%s%s", code, out, errOut)
			}

			// Before any retro: the agent's side alone.
			r := overheadJSON(t, ctx, base)
			if r.Total.Agent.Steps != 17 || r.Total.Mull.Calls != 0 || r.Total.Ratio == nil || *r.Total.Ratio != 0 {
				t.Fatalf("before the retros: %+v", r.Total)
			}

			stopWorker := startWorker(t, base)
			for _, id := range slices.Sorted(maps.Keys(fixtureSessions)) {
				if code, out, errOut := mull(t, ctx, append(base, "retro", "run", id)...); code != 0 {
					t.Fatalf("retro run %s: %d\n%s%s", id, code, out, errOut)
				}
			}
			stopWorker()

			r = overheadJSON(t, ctx, base)
			tot := r.Total
			// Days are UTC days: the agent worked on 2026-11-29, the retros run today.
			if len(r.Workspaces) != 4 || len(r.Days) != 8 || tot.Agent.Steps != 17 || tot.Agent.UnpricedSteps != 0 ||
				tot.Mull.Calls != 4 || tot.Mull.CostByKind["retro_session"] != tot.Mull.CostNanoUSD || tot.Ratio == nil {
				t.Fatalf("after the retros: %d workspaces, %d days, total %+v", len(r.Workspaces), len(r.Days), tot)
			}
			// FORMAT.md's tables: 17 steps, 12,968 uncached and 142,208
			// cache-hit prompt tokens, 995 output tokens.
			if tot.Agent.PromptTokens != 12968+142208 || tot.Agent.CacheHitTokens != 142208 || tot.Agent.OutputTokens != 995 {
				t.Errorf("agent tokens %+v", tot.Agent)
			}
			ratio := *tot.Ratio
			t.Logf("fixture logs: agent %d steps, %d prompt tokens (%.1f%% cache hits), %d output, $%.6f; "+
				"mull %d retros, %d prompt tokens (%.1f%% cache hits), %d output, $%.6f; mull/agent = %.1f%% (goal <= 2%%)",
				tot.Agent.Steps, tot.Agent.PromptTokens, 100*float64(tot.Agent.CacheHitTokens)/float64(tot.Agent.PromptTokens),
				tot.Agent.OutputTokens, usd(tot.Agent.CostNanoUSD), tot.Mull.Calls, tot.Mull.PromptTokens,
				100**tot.MullCacheHitShare, tot.Mull.CompletionTokens, usd(tot.Mull.CostNanoUSD), 100*ratio)
			for _, w := range r.Workspaces {
				t.Logf("  %-24s agent %5d prompt tokens $%.6f | mull %5d prompt tokens $%.6f | %.1f%%", w.Workspace,
					w.Agent.PromptTokens, usd(w.Agent.CostNanoUSD), w.Mull.PromptTokens, usd(w.Mull.CostNanoUSD), 100**w.Ratio)
			}
			if ratio <= 0.02 {
				return
			}
			// Not met: say what drives it. A retro costs about the same
			// whatever the session's length (its excerpt is capped), while
			// the agent pays per step; the fixture sessions are one short
			// turn each, their prompts mostly cache hits at 1/50 of the miss
			// price.
			perRetro := float64(tot.Mull.CostNanoUSD) / float64(tot.Mull.Calls)
			perStep := float64(tot.Agent.CostNanoUSD) / float64(tot.Agent.Steps)
			missShare := float64(tot.Mull.PromptTokens-tot.Mull.CacheHitTokens) * 0.30 / 1e6
			outShare := float64(tot.Mull.CompletionTokens) * 1.20 / 1e6
			t.Logf("the 2%% goal is NOT met on the fixture logs (%.1f%%): a retro costs $%.6f, an agent step $%.6f, so a session "+
				"needs about %.0f steps of this size before one retro is 2%% of it; these have %.1f on average. Of mull's cost, "+
				"uncached prompt tokens are %.0f%% and output tokens %.0f%%; the agent's prompts are %.0f%% cache hits.",
				100*ratio, perRetro/1e9, perStep/1e9, perRetro/0.02/perStep, float64(tot.Agent.Steps)/4,
				100*missShare/(missShare+outShare), 100*outShare/(missShare+outShare),
				100*float64(tot.Agent.CacheHitTokens)/float64(tot.Agent.PromptTokens))

			code, out, errOut := mull(t, ctx, append(base, "report", "overhead")...)
			if code != 0 || !strings.Contains(out, "/home/dev/invoice-utils") || !strings.Contains(out, "TOTAL") || !strings.Contains(out, "RATIO") {
				t.Fatalf("report overhead: %d\n%s%s", code, out, errOut)
			}
			t.Logf("mull report overhead:\n%s", out)
			code, out, errOut = mull(t, ctx, append(base, "report", "overhead", "--workspace", "/home/dev/weather-cli", "--since", "2026-11-01")...)
			if code != 0 || strings.Contains(out, "invoice-utils") || !strings.Contains(out, "weather-cli") {
				t.Fatalf("report overhead --workspace: %d\n%s%s", code, out, errOut)
			}
			if code, _, errOut = mull(t, ctx, append(base, "report", "overhead", "--since", "last tuesday")...); code != 2 || !strings.Contains(errOut, "--since") {
				t.Fatalf("a bad --since: %d %s", code, errOut)
			}
			code, out, _ = mull(t, ctx, append(base, "sessions", "show", "session-618f3e2a-04f1-4c07-ae0d-228954177258")...)
			if code != 0 || !strings.Contains(out, "title Fix failing invoice discount tests") || !strings.Contains(out, "usage=5") ||
				!strings.Contains(out, "agent usage: 5 steps, 46763 prompt tokens (78.6% cache hits), 392 output tokens (130 reasoning), $0.001849") {
				t.Fatalf("sessions show: %d\n%s", code, out)
			}
		})
	}
}

func overheadJSON(t *testing.T, ctx context.Context, base []string) overhead.Report {
	t.Helper()
	code, out, errOut := mull(t, ctx, append(base, "report", "overhead", "--json")...)
	var r overhead.Report
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("report overhead --json: %d, %v\n%s%s", code, err, out, errOut)
	}
	return r
}
