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
// <action>:dsh-needs-admin-token naming MULL_ADMIN_TOKEN, and nothing is
// stored. Told of one, it starts the run; with the llm executor no token
// is needed.
func TestDSHRunsNeedAdminToken(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s, config.Bench{Executor: config.BenchExecutorDSH}, false, fixed(50))
		e.addFrozen(t, "demo", "c1")
		mem := benches.MemoryRunRequest{Workspace: "/w", Set: "demo", Runs: 1}
		_, err := e.svc.StartMemoryRun(ctx, e.client, mem)
		var ce *benches.CodedError
		if !errors.As(err, &ce) || ce.Code != "benchmark:memory:dsh-needs-admin-token" || ce.Status != http.StatusConflict ||
			!strings.Contains(ce.Msg, "MULL_ADMIN_TOKEN") || !strings.Contains(ce.Msg, "loopback") {
			t.Fatalf("memory run without an admin token: %v", err)
		}
		if _, err := e.svc.StartRun(ctx, e.client, benches.RunRequest{Reference: "ref", Refinement: "r"}); codeOf(err) != "benchmark:run:dsh-needs-admin-token" {
			t.Fatalf("refinement run without an admin token: %v", err)
		}
		if runs, err := e.svc.Runs(ctx, benches.RunFilter{}); err != nil || len(runs) != 0 {
			t.Fatalf("runs after the refusals: %+v %v", runs, err)
		}
		run, err := e.svc.WithAdminToken(true).StartMemoryRun(ctx, e.client, mem)
		if err != nil || run.Executor != config.BenchExecutorDSH {
			t.Fatalf("with an admin token: %+v %v", run, err)
		}

		llm := newEnv(t, s, config.Bench{}, false, fixed(50))
		if _, err := llm.svc.StartMemoryRun(ctx, llm.client, mem); err != nil {
			t.Fatalf("llm executor without an admin token: %v", err)
		}
	})
}
