package benches_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mullhq/mull/benches"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// With bench.executor = dsh, a service not told of an admin token starts
// no run, of either kind, whatever else the request holds: a 409 coded
// <action>:dsh-needs-tokens naming the missing token, and nothing is
// stored. Told of one, it starts the run; with the llm executor no token
// is needed.
func TestDSHRunsNeedTokens(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{Executor: config.BenchExecutorDSH}, false, fixed(50))
		e.addFrozen(t, "demo", "c1")
		mem := benches.MemoryRunRequest{Workspace: "/w", Set: "demo", Runs: 1}
		for _, tc := range []struct {
			name         string
			admin, api   bool
			want, absent string
		}{
			{"neither token", false, false, "MULL_ADMIN_TOKEN", ""},
			{"no API token", true, false, "MULL_API_TOKEN", "Set MULL_ADMIN_TOKEN"},
			{"no admin token", false, true, "MULL_ADMIN_TOKEN", "and MULL_API_TOKEN"},
		} {
			svc := e.svc.WithTokens(tc.admin, tc.api)
			_, err := svc.StartMemoryRun(ctx, e.client, mem)
			var ce *benches.CodedError
			if !errors.As(err, &ce) || ce.Code != "benchmark:memory:dsh-needs-tokens" || ce.Status != http.StatusConflict ||
				!strings.Contains(ce.Msg, "Set "+tc.want) && !strings.Contains(ce.Msg, "and "+tc.want) || !strings.Contains(ce.Msg, "loopback") ||
				tc.absent != "" && strings.Contains(ce.Msg, tc.absent) {
				t.Fatalf("memory run, %s: %v", tc.name, err)
			}
			if _, err := svc.StartRun(ctx, e.client, benches.RunRequest{Reference: "ref", Refinement: "r"}); codeOf(err) != "benchmark:run:dsh-needs-tokens" {
				t.Fatalf("refinement run, %s: %v", tc.name, err)
			}
		}
		if runs, err := e.svc.Runs(ctx, benches.RunFilter{}); err != nil || len(runs) != 0 {
			t.Fatalf("runs after the refusals: %+v %v", runs, err)
		}
		run, err := e.svc.WithTokens(true, true).StartMemoryRun(ctx, e.client, mem)
		if err != nil || run.Executor != config.BenchExecutorDSH {
			t.Fatalf("with both tokens: %+v %v", run, err)
		}

		llm := newEnv(t, s, config.Bench{}, false, fixed(50))
		if _, err := llm.svc.StartMemoryRun(ctx, llm.client, mem); err != nil {
			t.Fatalf("llm executor without an admin token: %v", err)
		}
	})
}
