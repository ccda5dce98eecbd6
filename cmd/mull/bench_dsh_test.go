package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// With bench.executor = dsh and no admin token, `mull bench memory` and
// `mull bench run` start nothing (exit 1, the error naming
// MULL_ADMIN_TOKEN and why): the run's DSH cells would reach a mull whose
// every loopback caller is its admin. With only the admin token they
// still refuse, naming MULL_API_TOKEN; with both the same memory run
// starts.
func TestBenchDSHNeedsTokens(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			c := cli{t, context.Background(), []string{"--database-url", dbURL(storetest.Database(t, dialect))}}
			m, must := c.run, c.must
			must("migrate")
			must("bench", "cases", "add", "--file", "../../examples/bench-cases.json")
			must("bench", "cases", "freeze", "--set", "demo")
			t.Setenv("MULL_BENCH_EXECUTOR", "dsh")
			t.Setenv("MULL_BENCH_DSH_COMMAND", "dsh-not-run-here")
			t.Setenv("MULL_ADMIN_TOKEN", "")
			for _, args := range [][]string{
				{"bench", "memory", "--cases", "demo", "--workspace", "/w"},
				{"bench", "run", "refine_x", "--reference", "before"},
			} {
				code, out, errOut := m(args...)
				if code != 1 || !strings.Contains(errOut, "dsh-needs-tokens") || !strings.Contains(errOut, "MULL_ADMIN_TOKEN") ||
					!strings.Contains(errOut, "loopback") {
					t.Fatalf("%v without an admin token: exit %d\n%s%s", args, code, out, errOut)
				}
			}
			if out := must("bench", "list"); strings.Contains(out, "bench_") {
				t.Fatalf("runs after the refusals:\n%s", out)
			}
			t.Setenv("MULL_ADMIN_TOKEN", "adm-cli-test")
			if code, out, errOut := m("bench", "memory", "--cases", "demo", "--workspace", "/w"); code != 1 ||
				!strings.Contains(errOut, "MULL_API_TOKEN") || strings.Contains(errOut, "MULL_ADMIN_TOKEN (") {
				t.Fatalf("with only an admin token: exit %d\n%s%s", code, out, errOut)
			}
			t.Setenv("MULL_API_TOKEN", "api-cli-test")
			if out := must("bench", "memory", "--cases", "demo", "--workspace", "/w"); !strings.Contains(out, "bench_") {
				t.Fatalf("with both tokens:\n%s", out)
			}
		})
	}
}
