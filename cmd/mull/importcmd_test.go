package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// Importing the fixture DSH home twice stores its events once; the sessions
// appear with their counts.
func TestImportDSHTwice(t *testing.T) {
	home := filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home")
	if _, err := os.Stat(home); err != nil {
		t.Skipf("fixtures not found beside the checkout: %v", err)
	}
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			url := dbURL(storetest.Database(t, dialect))
			ctx := context.Background()
			base := []string{"--database-url", url}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			code, out, errOut := mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...)
			if code != 0 || !strings.Contains(out, "41 stored, 0 duplicates") || !strings.Contains(errOut, "files 4/4") {
				t.Fatalf("first import: %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...)
			if code != 0 || !strings.Contains(out, "0 stored") {
				t.Fatalf("second import: %d\n%s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "sessions", "list", "--workspace", "/home/dev/weather-cli")...)
			if code != 0 || !strings.Contains(out, "error=1") || !strings.Contains(out, "tool_result=2") {
				t.Fatalf("sessions list: %d\n%s", code, out)
			}
		})
	}
}
