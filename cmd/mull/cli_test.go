package main

import (
	"context"
	"slices"
	"testing"

	"github.com/mullhq/mull/store/storetest"
)

// migratedDB is the URL of a fresh database of dialect that `mull
// migrate` has migrated.
func migratedDB(t *testing.T, ctx context.Context, dialect string) string {
	t.Helper()
	url := dbURL(storetest.Database(t, dialect))
	if code, out, errOut := mull(t, ctx, "--database-url", url, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	return url
}

// cli runs mull with base (the database's flag, and any other every
// command takes) before each command's own arguments.
type cli struct {
	t    *testing.T
	ctx  context.Context
	base []string
}

// run is one command: its exit code, stdout and stderr.
func (c cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	return mull(c.t, c.ctx, append(slices.Clone(c.base), args...)...)
}

// must is one command that must exit 0: its stdout.
func (c cli) must(args ...string) string {
	c.t.Helper()
	code, out, errOut := c.run(args...)
	if code != 0 {
		c.t.Fatalf("%v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}
