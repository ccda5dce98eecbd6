package engine_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
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

// Event hooks are kept per event type: Event runs the hooks of its
// event's type in order and stops at the first error; TurnEnded runs the
// turn_end ones (OnTurnEnded is OnEvent(turn_end)).
func TestRegistryEventHooks(t *testing.T) {
	reg := engine.NewRegistry(nil)
	var ran []string
	hook := func(name string, err error) engine.EventHook {
		return func(context.Context, *sql.Tx, *engine.Client, store.Session, events.Event) error {
			ran = append(ran, name)
			return err
		}
	}
	boom := errors.New("boom")
	reg.OnEvent(events.CompactionEnd, hook("c1", nil))
	reg.OnEvent(events.CompactionEnd, hook("c2", boom))
	reg.OnEvent(events.CompactionEnd, hook("c3", nil))
	reg.OnTurnEnded(hook("t1", nil))
	ctx := context.Background()
	if err := reg.Event(ctx, nil, nil, store.Session{}, events.Event{Type: events.Feedback}); err != nil || len(ran) != 0 {
		t.Fatalf("an unhooked type ran %v, %v", ran, err)
	}
	if err := reg.Event(ctx, nil, nil, store.Session{}, events.Event{Type: events.CompactionEnd}); !errors.Is(err, boom) || strings.Join(ran, ",") != "c1,c2" {
		t.Fatalf("ran %v, err %v; want c1 then c2's error", ran, err)
	}
	ran = nil
	if err := reg.TurnEnded(ctx, nil, nil, store.Session{}, events.Event{Type: events.TurnEnd}); err != nil || strings.Join(ran, ",") != "t1" {
		t.Fatalf("turn ended ran %v, %v", ran, err)
	}
	if !reg.EventHooked(events.CompactionEnd) || reg.EventHooked(events.Feedback) || reg.EventHooks(events.CompactionEnd) != 3 || reg.TurnHooked() != 1 {
		t.Fatalf("hook counts wrong")
	}
}
