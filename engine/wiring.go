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

// wiring is what kinds contribute to a Registry besides their workers. It
// is written only while wiring, before any client is built, and read after.
type wiring struct {
	cron         []config.Cron
	sessionHooks []SessionHook
	errorHooks   []ErrorHook
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

// Hooked reports how many session-end and agent-error hooks were added.
func (r *Registry) Hooked() (sessionEnded, agentError int) {
	return len(r.sessionHooks), len(r.errorHooks)
}

// Client is the first client NewClient built over the registry, or nil
// before one is: what work done outside a job (the ingest hooks) enqueues
// with. Inside a job, use river.ClientFromContext.
func (r *Registry) Client() *Client { return r.client.Load() }
