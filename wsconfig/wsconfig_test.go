package wsconfig_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
	"github.com/mullhq/mull/wsconfig"
)

// syncBuffer is a log sink the watcher's goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// check is one watcher tick's outcome.
type check struct {
	changed bool
	err     error
}

// watching starts the watcher over file with a tick channel the test
// drives; each tick's outcome arrives on the returned channel.
func watching(t *testing.T, s *store.Store, file string, log *slog.Logger) (*wsconfig.Service, chan<- time.Time, <-chan check) {
	t.Helper()
	svc, err := wsconfig.New(s, config.Source{File: file}, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ticks, done := make(chan time.Time), make(chan check, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		svc.Run(ctx, ticks, func(changed bool, err error) { done <- check{changed, err} })
	}()
	t.Cleanup(func() { cancel(); <-finished })
	return svc, ticks, done
}

func tick(t *testing.T, ticks chan<- time.Time, done <-chan check) check {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Patience(t))
	defer cancel()
	select {
	case ticks <- time.Now():
	case <-ctx.Done():
		t.Fatal("the watcher took no tick")
	}
	select {
	case c := <-done:
		return c
	case <-ctx.Done():
		t.Fatal("the watcher did not finish its check")
	}
	return check{}
}

// An edit of the file is taken in on the next tick; a bad edit keeps the
// last good file and logs the key and the problem; fixing it is taken in.
func TestWatcherReloadsAndKeepsLastGood(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		file := filepath.Join(t.TempDir(), "mull.toml")
		write(t, file, "[workspaces.\"/p\"]\nscope = \"global\"\n")
		var logs syncBuffer
		svc, ticks, done := watching(t, s, file, slog.New(slog.NewTextHandler(&logs, nil)))
		if got := svc.Effective("/p").Scope(); got != "global" {
			t.Fatalf("scope at start %s", got)
		}
		if c := tick(t, ticks, done); c.changed || c.err != nil {
			t.Fatalf("an unchanged file reloaded: %+v", c)
		}

		// A longer file: its size changes whatever the clock's resolution.
		write(t, file, "[workspaces.\"/p\"]\nscope = \"both\"\nretro = false\n")
		if c := tick(t, ticks, done); !c.changed || c.err != nil {
			t.Fatalf("edit not taken in: %+v", c)
		}
		if e := svc.Effective("/p"); e.Scope() != "both" || e.RetroOn() {
			t.Fatalf("after the edit: %+v", e)
		}

		write(t, file, "[workspaces.\"/p\"]\nscope = \"everywhere\"\nretro = false\n")
		c := tick(t, ticks, done)
		var ce *config.Error
		if c.changed || !errors.As(c.err, &ce) || ce.Key != `workspaces."/p".scope` {
			t.Fatalf("bad edit: %+v", c)
		}
		if e := svc.Effective("/p"); e.Scope() != "both" {
			t.Fatalf("a bad edit replaced the last good file: %+v", e)
		}
		if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, `key="workspaces.\"/p\".scope"`) ||
			!strings.Contains(l, "everywhere") {
			t.Fatalf("log of the bad edit: %s", l)
		}
		// An unknown key anywhere in the file is refused the same way.
		write(t, file, "[workspaces.\"/p\"]\nscope = \"global\"\n[memory]\nscop = \"both\"\n")
		if c := tick(t, ticks, done); c.changed || !errors.As(c.err, &ce) || ce.Key != "memory.scop" {
			t.Fatalf("unknown key: %+v", c)
		}
		write(t, file, "[workspaces.\"/p\"]\nscope = \"workspace\"\n")
		if c := tick(t, ticks, done); !c.changed || c.err != nil || svc.Effective("/p").Scope() != "workspace" {
			t.Fatalf("fixed file: %+v, scope %s", c, svc.Effective("/p").Scope())
		}

		// A file that goes missing is reported once, not on every tick,
		// and the last good one stays.
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		before := strings.Count(logs.String(), "level=WARN")
		for range 3 {
			if c := tick(t, ticks, done); c.changed || c.err == nil {
				t.Fatalf("missing file: %+v", c)
			}
		}
		if n := strings.Count(logs.String(), "level=WARN") - before; n != 1 || svc.Effective("/p").Scope() != "workspace" {
			t.Fatalf("missing file: %d warnings, scope %s; want one warning and the last good file", n, svc.Effective("/p").Scope())
		}
	})
}

// A value another process wrote to the database applies here on the next
// tick; the file layer shows through once the API value is cleared.
func TestWatcherReloadsAPISettings(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		file := filepath.Join(t.TempDir(), "mull.toml")
		write(t, file, "[memory]\nscope = \"both\"\n[workspaces.\"/p\"]\nledger.mode = \"block\"\n")
		svc, ticks, done := watching(t, s, file, slog.New(slog.DiscardHandler))
		other := wsconfig.NewStatic(s, config.Config{}, nil, slog.New(slog.DiscardHandler))
		mode := "off"
		if _, err := other.Set(context.Background(), "/p", map[string]*string{"ledger.mode": &mode}, wsconfig.ByAdmin); err != nil {
			t.Fatal(err)
		}
		if got, _ := svc.Effective("/p").Get(config.WSLedgerMode); got.Value != "block" || got.Source != config.SourceWorkspaceFile {
			t.Fatalf("before the tick: %+v", got)
		}
		tick(t, ticks, done)
		if got, _ := svc.Effective("/p").Get(config.WSLedgerMode); got.Value != "off" || got.Source != config.SourceWorkspaceAPI {
			t.Fatalf("after the tick: %+v", got)
		}
		if got, _ := svc.Effective("/p").Get(config.WSScope); got.Value != "both" || got.Source != config.SourceGlobalFile {
			t.Fatalf("global scope: %+v", got)
		}
		if _, err := svc.Set(context.Background(), "/p", map[string]*string{"ledger.mode": nil}, wsconfig.ByCLI); err != nil {
			t.Fatal(err)
		}
		if got := svc.Effective("/p").LedgerMode(); got != "block" {
			t.Fatalf("cleared: %s", got)
		}
	})
}

// A change with one bad key stores nothing.
func TestSetIsAllOrNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		svc := wsconfig.NewStatic(s, config.Config{}, nil, slog.New(slog.DiscardHandler))
		global, bad := "global", "-3"
		_, err := svc.Set(ctx, "/p", map[string]*string{"scope": &global, "budget": &bad}, wsconfig.ByAdmin)
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != "budget" {
			t.Fatalf("error %v, want one naming budget", err)
		}
		rows, err := s.WorkspaceSettings(ctx, s.DB)
		if err != nil || len(rows) != 0 {
			t.Fatalf("stored %+v %v", rows, err)
		}
		for _, ws := range []string{"", "  ", "/p\x00q"} {
			if _, err := svc.Set(ctx, ws, map[string]*string{"scope": &global}, wsconfig.ByAdmin); !errors.As(err, &ce) || ce.Key != "workspace" {
				t.Fatalf("workspace %q: %v", ws, err)
			}
		}
	})
}

// An edit that keeps the file's size and modification time (two writes
// within the filesystem's time resolution) is still taken in: the stat
// alone cannot tell, the content hash does.
func TestWatcherSeesSameSizeSameTimeEdit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		file := filepath.Join(t.TempDir(), "mull.toml")
		mod := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		writeAt := func(text string) {
			write(t, file, text)
			if err := os.Chtimes(file, mod, mod); err != nil {
				t.Fatal(err)
			}
		}
		writeAt("[workspaces.\"/p\"]\nbudget = 1000\n")
		svc, ticks, done := watching(t, s, file, slog.New(slog.DiscardHandler))
		if c := tick(t, ticks, done); c.changed || c.err != nil {
			t.Fatalf("an unchanged file reloaded: %+v", c)
		}

		writeAt("[workspaces.\"/p\"]\nbudget = 2000\n")
		if fi, err := os.Stat(file); err != nil || fi.Size() != int64(len("[workspaces.\"/p\"]\nbudget = 1000\n")) || !fi.ModTime().Equal(mod) {
			t.Fatalf("the edit changed the stat: %v %v", fi, err)
		}
		if c := tick(t, ticks, done); !c.changed || c.err != nil {
			t.Fatalf("same-size, same-time edit not taken in: %+v", c)
		}
		if got, _ := svc.Effective("/p").Get(config.WSBudget); got.Value != "2000" {
			t.Fatalf("budget after the edit: %+v", got)
		}
		if c := tick(t, ticks, done); c.changed || c.err != nil {
			t.Fatalf("the same content reloaded again: %+v", c)
		}
	})
}
