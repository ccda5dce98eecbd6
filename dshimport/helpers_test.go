package dshimport

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
)

// The real DSH logs every developer and CI has at ../shared.
var fixtureHome = filepath.Join("..", "..", "shared", "fixtures", "dsh", "home")

// The fixture sessions: their log paths below a home, events (usage and
// session_title included), last seq.
var (
	s1 = session{"--home-dev-invoice-utils--/session-618f3e2a-04f1-4c07-ae0d-228954177258/session.jsonl.zstd", 20, 200}
	s2 = session{"--home-dev-docs-site--/session-84a3435d-c180-4f56-b4b3-055358da3772/session.jsonl.zstd", 17, 123}
	s3 = session{"--home-dev-weather-cli--/session-408c8942-fb3e-4b5d-b173-6ffaed7af3c2/session.jsonl.zstd", 13, 74}
	s4 = session{"--home-dev-shop-frontend--/session-293a9768-7a49-469f-a49b-03ee04ee1add/session.jsonl", 23, 192}
)

type session struct {
	rel     string
	events  int
	lastSeq int64
}

func (s session) in(home string) string {
	return filepath.Join(home, "sessions", filepath.FromSlash(s.rel))
}

// copyHome copies the fixture home into a temporary directory, writable.
func copyHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	err := filepath.WalkDir(fixtureHome, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fixtureHome, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(home, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(home, rel), b, 0o600)
	})
	if err != nil {
		t.Fatalf("copy the fixture home (the repo expects ../shared beside it): %v", err)
	}
	return home
}

// homeWith makes a home holding only the given sessions' logs, as in the
// fixtures.
func homeWith(t *testing.T, sessions ...session) string {
	t.Helper()
	home := t.TempDir()
	for _, s := range sessions {
		b, err := os.ReadFile(s.in(fixtureHome))
		if err != nil {
			t.Fatal(err)
		}
		writeLog(t, s.in(home), b)
	}
	return home
}

func writeLog(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// appendLog appends to a log, as DSH does.
func appendLog(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// allEvents is every event of a fixture log, read in one pass.
func allEvents(t *testing.T, s session) []events.Event {
	t.Helper()
	evs, _, err := dshlog.ReadFile(s.in(fixtureHome))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// fakeIngest stands in for ingest.Service: it keeps events by id, so a
// replayed event is a duplicate, and records every batch it was given.
type fakeIngest struct {
	mu      sync.Mutex
	stored  map[string]events.Event
	order   []string // ids in the order stored
	batches [][]events.Event
	sources []string
	// fail, when set, decides per batch (1-based) whether to fail it, and
	// whether the batch was stored before failing (a crash after commit).
	fail func(n int) (err error, storedFirst bool)
}

func newFakeIngest() *fakeIngest { return &fakeIngest{stored: map[string]events.Event{}} }

func (f *fakeIngest) Ingest(_ context.Context, batch []events.Event, source string) (int, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, append([]events.Event(nil), batch...))
	f.sources = append(f.sources, source)
	var failErr error
	if f.fail != nil {
		var storedFirst bool
		if failErr, storedFirst = f.fail(len(f.batches)); failErr != nil && !storedFirst {
			return 0, 0, failErr
		}
	}
	stored := 0
	for _, e := range batch {
		if _, dup := f.stored[e.ID]; !dup {
			f.stored[e.ID] = e
			f.order = append(f.order, e.ID)
			stored++
		}
	}
	return stored, len(batch) - stored, failErr
}

// sent counts how often each id was handed over.
func (f *fakeIngest) sent() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := map[string]int{}
	for _, b := range f.batches {
		for _, e := range b {
			n[e.ID]++
		}
	}
	return n
}

// requireStored checks the fake holds exactly these events.
func (f *fakeIngest) requireStored(t *testing.T, want ...[]events.Event) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, evs := range want {
		for _, e := range evs {
			n++
			got, ok := f.stored[e.ID]
			if !ok {
				t.Errorf("event %s (%s) never arrived", e.ID, e.Type)
				continue
			}
			if string(got.Payload) != string(e.Payload) || !got.Time.Equal(e.Time) {
				t.Errorf("event %s arrived as %s, want %s", e.ID, got.Payload, e.Payload)
			}
		}
	}
	if len(f.stored) != n {
		t.Errorf("%d events stored, want %d", len(f.stored), n)
	}
}

var errDown = errors.New("database is down")

func newImporter(s *store.Store, home string, ing Ingester) *Importer {
	return &Importer{
		Home: home, Store: s, Ingester: ing,
		Now: func() time.Time { return time.UnixMilli(1795977438816).Add(time.Hour) },
	}
}

func scanOK(t *testing.T, im *Importer) Summary {
	t.Helper()
	sum, err := im.Scan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func records(t *testing.T, s *store.Store) map[string]store.DSHImportFile {
	t.Helper()
	recs, err := s.DSHImportFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.DSHImportFile{}
	for _, r := range recs {
		out[r.Path] = r
	}
	return out
}
