package engine_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/store"
)

type tickArgs struct {
	Every string `json:"every,omitempty"`
}

func (tickArgs) Kind() string { return "wiring_tick" }

type emptyArgs struct{}

func (emptyArgs) Kind() string { return "" }

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), want) {
			t.Fatalf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

// The kind comes from the Args type, once: the spec carries none, the
// registry lists it, and a second Add of it or an empty kind is a wiring
// mistake found at boot.
func TestAddTakesKindFromArgs(t *testing.T) {
	reg := engine.NewRegistry(nil)
	w := river.WorkFunc(func(context.Context, *river.Job[tickArgs]) error { return nil })
	engine.Add(reg, engine.Spec{Queue: "maintenance"}, w)
	if s, ok := reg.Spec("wiring_tick"); !ok || s.Queue != "maintenance" || s.MaxAttempts != 5 {
		t.Fatalf("spec %+v, %v", s, ok)
	}
	if es := reg.Specs(); len(es) != 1 || es[0].Kind != "wiring_tick" {
		t.Fatalf("specs %+v", es)
	}
	mustPanic(t, `kind "wiring_tick" registered twice`, func() { engine.Add(reg, engine.Spec{}, w) })
	mustPanic(t, "empty Kind()", func() {
		engine.Add(reg, engine.Spec{}, river.WorkFunc(func(context.Context, *river.Job[emptyArgs]) error { return nil }))
	})
}

// A built-in cron entry names its kind through its args; names are unique.
func TestRegistryCron(t *testing.T) {
	reg := engine.NewRegistry(nil)
	reg.Cron("tick", "@every 1m", tickArgs{})
	reg.Cron("tock", "@every 5m", tickArgs{Every: "5m"})
	got := reg.Builtin()
	if len(got) != 2 || got[0].Kind != "wiring_tick" || got[0].Args != "{}" || got[1].Args != `{"every":"5m"}` || got[1].Schedule != "@every 5m" {
		t.Fatalf("builtin %+v", got)
	}
	mustPanic(t, `"tick" declared twice`, func() { reg.Cron("tick", "@every 1h", tickArgs{}) })
}

// The hook chains run in order and stop at the first error.
func TestRegistryHooks(t *testing.T) {
	reg := engine.NewRegistry(nil)
	var ran []string
	hook := func(name string, err error) engine.SessionHook {
		return func(context.Context, *sql.Tx, *engine.Client, store.Session) error {
			ran = append(ran, name)
			return err
		}
	}
	if err := reg.SessionEnded(context.Background(), nil, nil, store.Session{}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	reg.OnSessionEnded(hook("a", nil))
	reg.OnSessionEnded(hook("b", boom))
	reg.OnSessionEnded(hook("c", nil))
	if err := reg.SessionEnded(context.Background(), nil, nil, store.Session{}); !errors.Is(err, boom) || strings.Join(ran, "") != "ab" {
		t.Fatalf("ran %v, err %v; want a then b's error", ran, err)
	}
	if se, ae := reg.Hooked(); se != 3 || ae != 0 {
		t.Fatalf("hooked %d, %d", se, ae)
	}
}
