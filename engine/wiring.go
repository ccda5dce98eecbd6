package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
)

// SessionHook runs, inside the ingest transaction, for each session a batch
// (or the idle sweep) ended; enqueue with client.InsertTx. An error rolls
// the batch back.
type SessionHook func(ctx context.Context, tx *sql.Tx, client *Client, s store.Session) error

// ErrorHook runs, inside the ingest transaction, for each newly stored
// agent error event.
type ErrorHook func(ctx context.Context, tx *sql.Tx, client *Client, e events.Event) error

// EventHook runs, inside the ingest transaction, for each newly stored
// event of the type it was added for (OnEvent), of a live session, after
// its session is saved (s is the session as saved). An error rolls the
// batch back.
type EventHook func(ctx context.Context, tx *sql.Tx, client *Client, s store.Session, e events.Event) error

// TurnHook is an EventHook on turn_end events (OnTurnEnded).
type TurnHook = EventHook

// wiring is what kinds contribute to a Registry besides their workers. It
// is written only while wiring, before any client is built, and read after.
type wiring struct {
	cron         []config.Cron
	sessionHooks []SessionHook
	errorHooks   []ErrorHook
	eventHooks   map[events.Type][]EventHook
	// client is the first client NewClient built over the registry: the one
	// the hooks enqueue with (atomic: tests build more clients while jobs
	// run).
	client atomic.Pointer[Client]
}

// Cron declares a built-in periodic job: every working process runs it,
// whatever the config says. The kind is args' (which must be registered by
// the time the client is built); args is marshalled to JSON once here.
// It panics on a wiring mistake (a name declared twice, args that do not
// marshal).
func (r *Registry) Cron(name, schedule string, args river.JobArgs) {
	if slices.ContainsFunc(r.cron, func(c config.Cron) bool { return c.Name == name }) {
		panic(fmt.Sprintf("jobs: built-in cron entry %q declared twice", name))
	}
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("jobs: built-in cron entry %q: args: %v", name, err))
	}
	r.cron = append(r.cron, config.Cron{Name: name, Kind: args.Kind(), Schedule: schedule, Args: string(raw)})
}

// Builtin lists the built-in cron entries, in the order they were declared.
func (r *Registry) Builtin() []config.Cron { return slices.Clone(r.cron) }

// OnSessionEnded adds a session-end hook; hooks run in the order added.
func (r *Registry) OnSessionEnded(h SessionHook) { r.sessionHooks = append(r.sessionHooks, h) }

// OnAgentError adds an agent-error hook; hooks run in the order added.
func (r *Registry) OnAgentError(h ErrorHook) { r.errorHooks = append(r.errorHooks, h) }

// OnEvent adds a hook on newly stored events of type t (turn_end,
// compaction_end, ...); the hooks of one type run in the order added.
func (r *Registry) OnEvent(t events.Type, h EventHook) {
	if r.eventHooks == nil {
		r.eventHooks = map[events.Type][]EventHook{}
	}
	r.eventHooks[t] = append(r.eventHooks[t], h)
}

// OnTurnEnded adds a turn-end hook: OnEvent(events.TurnEnd, h).
func (r *Registry) OnTurnEnded(h TurnHook) { r.OnEvent(events.TurnEnd, h) }

// SessionEnded runs every session-end hook in order; the first error
// stops it (and rolls the ingest transaction back). It reads the hooks
// when called, so it can be handed out before the kinds add theirs.
func (r *Registry) SessionEnded(ctx context.Context, tx *sql.Tx, client *Client, s store.Session) error {
	for _, h := range r.sessionHooks {
		if err := h(ctx, tx, client, s); err != nil {
			return err
		}
	}
	return nil
}

// AgentError runs every agent-error hook in order, like SessionEnded.
func (r *Registry) AgentError(ctx context.Context, tx *sql.Tx, client *Client, e events.Event) error {
	for _, h := range r.errorHooks {
		if err := h(ctx, tx, client, e); err != nil {
			return err
		}
	}
	return nil
}

// Event runs every hook added for e's type in order, like SessionEnded
// (none for a type nobody hooked).
func (r *Registry) Event(ctx context.Context, tx *sql.Tx, client *Client, s store.Session, e events.Event) error {
	return r.runEvent(ctx, e.Type, tx, client, s, e)
}

// TurnEnded runs every turn-end hook in order, like SessionEnded.
func (r *Registry) TurnEnded(ctx context.Context, tx *sql.Tx, client *Client, s store.Session, e events.Event) error {
	return r.runEvent(ctx, events.TurnEnd, tx, client, s, e)
}

func (r *Registry) runEvent(ctx context.Context, t events.Type, tx *sql.Tx, client *Client, s store.Session, e events.Event) error {
	for _, h := range r.eventHooks[t] {
		if err := h(ctx, tx, client, s, e); err != nil {
			return err
		}
	}
	return nil
}

// EventHooked reports whether a hook was added for events of type t: the
// ingest service asks, so it looks up whether a session is live only for
// events some kind hooks.
func (r *Registry) EventHooked(t events.Type) bool { return len(r.eventHooks[t]) > 0 }

// EventHooks reports how many hooks were added for events of type t.
func (r *Registry) EventHooks(t events.Type) int { return len(r.eventHooks[t]) }

// TurnHooked reports how many turn-end hooks were added.
func (r *Registry) TurnHooked() int { return r.EventHooks(events.TurnEnd) }

// Hooked reports how many session-end and agent-error hooks were added.
func (r *Registry) Hooked() (sessionEnded, agentError int) {
	return len(r.sessionHooks), len(r.errorHooks)
}

// Client is the first client NewClient built over the registry, or nil
// before one is: what work done outside a job (the ingest hooks) enqueues
// with. Inside a job, use river.ClientFromContext.
func (r *Registry) Client() *Client { return r.client.Load() }
