package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The fixture sessions spoiled by the tests below.
const (
	invoiceID = "session-618f3e2a-04f1-4c07-ae0d-228954177258" // zstd
	weatherID = "session-408c8942-fb3e-4b5d-b173-6ffaed7af3c2" // zstd
	shopID    = "session-293a9768-7a49-469f-a49b-03ee04ee1add" // plain
)

// spoiledHome copies the fixture home and corrupts the first block header
// of the invoice log's 11th frame, as the log had; it returns the
// home and the bad frame's offset.
func spoiledHome(t *testing.T) (home string, frame int) {
	t.Helper()
	fixtures := filepath.Join("..", "..", "..", "shared", "fixtures", "dsh", "home")
	if _, err := os.Stat(fixtures); err != nil {
		t.Skipf("fixtures not found beside the checkout: %v", err)
	}
	home = t.TempDir()
	if err := os.CopyFS(home, os.DirFS(fixtures)); err != nil {
		t.Fatal(err)
	}
	path := logPath(home, invoiceID)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	frame = nthFrame(t, b, 10)
	var h zstd.Header
	if err := h.Decode(b[frame:]); err != nil {
		t.Fatal(err)
	}
	bh, size := frame+h.HeaderSize, 100_000
	b[bh] = b[bh]&7 | byte(size<<3)
	b[bh+1], b[bh+2] = byte(size>>5), byte(size>>13)
	writeOld(t, path, b)
	return home, frame
}

// logPath is a fixture session's log in home.
func logPath(home, id string) string {
	m, _ := filepath.Glob(filepath.Join(home, "sessions", "*", id, "session.jsonl*"))
	if len(m) != 1 {
		return ""
	}
	return m[0]
}

// nthFrame is the offset of a zstd log's frame n (0-based).
func nthFrame(t *testing.T, b []byte, n int) int {
	t.Helper()
	at := -4
	for range n + 1 {
		i := bytes.Index(b[at+4:], []byte{0x28, 0xb5, 0x2f, 0xfd})
		if i < 0 {
			t.Fatalf("fewer than %d frames", n+1)
		}
		at += 4 + i
	}
	return at
}

// writeOld writes a log last modified three days ago: long settled.
func writeOld(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-72 * time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// A corrupt frame and a cut log: named errors (file and offset), exit 1,
// the frames after the bad one imported, and every later run and sessions
// show still saying the import is incomplete.
func TestImportDSHReportsDamageEveryRun(t *testing.T) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			home, frame := spoiledHome(t)
			shop := logPath(home, shopID)
			plain, err := os.ReadFile(shop)
			if err != nil {
				t.Fatal(err)
			}
			cut := bytes.Index(plain, []byte(`{"type":"tool/result","seq":110`)) + 25
			writeOld(t, shop, plain[:cut])
			badFrame := fmt.Sprintf("%s: zstd frame at byte %d: ", logPath(home, invoiceID), frame)
			ctx := context.Background()
			base := []string{"--database-url", dbURL(storetest.Database(t, dialect))}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			code, out, errOut := mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...)
			if code != 1 || !strings.Contains(out, "error: "+badFrame) || !strings.Contains(out, "0 waiting for DSH to finish writing, 2 incomplete") ||
				!strings.Contains(out, "incomplete: session "+invoiceID+": "+badFrame) ||
				!strings.Contains(out, "incomplete: session "+shopID+": the log is cut short: "+shop+": line ") ||
				!strings.Contains(errOut, "2 session logs were not imported whole") {
				t.Fatalf("first import: %d\n%s%s", code, out, errOut)
			}
			// The frames after the bad one were read: the session's last turn end is there.
			code, out, _ = mull(t, ctx, append(base, "sessions", "show", invoiceID, "--json")...)
			if code != 0 || !strings.Contains(out, `"turn_end": 1`) || !strings.Contains(out, `"state": "incomplete"`) {
				t.Fatalf("sessions show --json: %d\n%s", code, out)
			}

			for range 2 {
				code, out, errOut = mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...)
				if code != 1 || strings.Contains(out, "error:") || !strings.Contains(out, "events: 0 read") ||
					strings.Count(out, "incomplete: session ") != 2 || !strings.Contains(out, "incomplete: session "+invoiceID+": "+badFrame) {
					t.Fatalf("later import: %d\n%s%s", code, out, errOut)
				}
			}
			code, out, _ = mull(t, ctx, append(base, "sessions", "show", invoiceID)...)
			if code != 0 || !strings.Contains(out, "import: incomplete ("+badFrame) {
				t.Fatalf("sessions show: %d\n%s", code, out)
			}
			code, out, _ = mull(t, ctx, append(base, "sessions", "show", weatherID)...)
			if code != 0 || !strings.Contains(out, "import: complete, checked ") {
				t.Fatalf("sessions show of a whole log: %d\n%s", code, out)
			}

			// Once the cut log is whole, only the corrupt one is left.
			writeOld(t, shop, plain)
			code, out, _ = mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home)...)
			if code != 1 || strings.Count(out, "incomplete: session ") != 1 || strings.Contains(out, shopID) {
				t.Fatalf("after completing the cut log: %d\n%s", code, out)
			}
		})
	}
}

// --learn runs no retro for a session DSH is still writing, and tells the
// user which imports are incomplete (their retros are told so).
func TestImportDSHLearnWaitsForALogBeingWritten(t *testing.T) {
	t.Setenv("MULL_IMPORT_SETTLE", "24h") // the file written now stays "being written" however slow the machine
	home, _ := spoiledHome(t)
	weather := logPath(home, weatherID)
	b, err := os.ReadFile(weather)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(weather, b[:len(b)/2], 0o600); err != nil { // DSH is writing it now
		t.Fatal(err)
	}
	oldIn, oldTerm := importStdin, stdinIsTerminal
	t.Cleanup(func() { importStdin, stdinIsTerminal = oldIn, oldTerm })
	stdinIsTerminal = func() bool { return false }
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			base := []string{"--database-url", dbURL(storetest.Database(t, dialect))}
			if code, out, errOut := mull(t, ctx, append(base, "migrate")...); code != 0 {
				t.Fatalf("migrate: %d %s%s", code, out, errOut)
			}
			code, out, errOut := mull(t, ctx, append(base, "import", "dsh", "--dsh-home", home, "--learn", "--yes")...)
			if code != 1 || !strings.Contains(out, "1 waiting for DSH to finish writing, 1 incomplete") ||
				!strings.Contains(out, "learn: session "+weatherID+": no retro yet, DSH is still writing its log") ||
				!strings.Contains(out, "learn: session "+invoiceID+": its import is incomplete (") ||
				!strings.Contains(out, "learn: 3 sessions") || !strings.Contains(out, "3 retros enqueued") {
				t.Fatalf("import --learn: %d\n%s%s", code, out, errOut)
			}
			code, out, _ = mull(t, ctx, append(base, "sessions", "show", weatherID)...)
			if code != 0 || !strings.Contains(out, "import: waiting (DSH is still writing it: "+weather+": the zstd frame at byte ") {
				t.Fatalf("sessions show: %d\n%s", code, out)
			}
		})
	}
}
