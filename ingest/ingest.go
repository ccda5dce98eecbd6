// Package ingest stores batches of DSH session events and keeps each
// session's summary (status, first and last event, counts by type) in step,
// in one transaction per batch. It also ends sessions that went silent.
// What a session's end or an agent error should start (the learning jobs)
// is not decided here: Hooks run inside the same transaction, so whatever
// they enqueue commits with the events that caused it, or not at all.
//
// Both the HTTP API (source "push") and the DSH log importer (source
// "import") call IngestBatch, possibly at once for the same session: events
// are keyed by their client id, so the one that stores an event first
// counts it and the other skips it.
package ingest

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/history"
	"github.com/mullhq/mull/store"
)

// Hooks are what storing events triggers. Each runs inside the transaction
// that stored the events (or marked the session idle): enqueue jobs there
// with client.InsertTx. An error rolls the whole batch back. Nil funcs do
// nothing. The client is passed in because hooks are built while wiring,
// before the River client exists. mull's are jobs.Register's: the job
// registry's chains (engine.Registry.SessionEnded, AgentError) and client.
type Hooks struct {
	// SessionEnded runs once for each session a batch ended (its
	// session_end was stored) or EndIdle found idle, after the session is
	// saved. An idle session ends again only after an event newer than its
	// last reopened it (see apply for the rules).
	SessionEnded func(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session) error
	// AgentError runs for each newly stored error event, in batch order,
	// after its session is saved and before SessionEnded.
	AgentError func(ctx context.Context, tx *sql.Tx, client *engine.Client, e events.Event) error
	// Event runs for each newly stored event of a live session whose type
	// Hooked reports, in batch order, after its session is saved, after
	// AgentError and before SessionEnded; s is the session as saved.
	// mull's is the job registry's (engine.Registry.Event and
	// EventHooked): the kinds' OnEvent and OnTurnEnded hooks.
	Event func(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session, e events.Event) error
	// Hooked says which event types Event runs for; nil: none.
	Hooked func(t events.Type) bool
	// TurnEnded runs for each newly stored turn_end event of a live
	// session, like Event (after it, for the same event): a hook of
	// turn_end alone, for callers without a registry.
	TurnEnded func(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session, e events.Event) error
	// MaxSessionAge is learn.max_session_age: a session whose last event
	// is older runs no hook (see learn/history). Zero: no age limit.
	MaxSessionAge time.Duration
	// Client, when set, is asked for the client each time a hook runs, so
	// the hooks can be wired before the client exists: mull passes the job
	// registry's (engine.Registry.Client, set by engine.NewClient).
	// UseClient overrides it.
	Client func() *engine.Client
}

// Service stores event batches. Build one in main and share it between the
// API, the importer and the session_idle worker.
type Service struct {
	store  *store.Store
	hooks  Hooks
	client *engine.Client
}

// New makes a Service over a store. Its clock is the store's (Store.Now),
// so validation, recorded_at and idle cutoffs agree, and tests move them
// together with Store.SetClock.
func New(s *store.Store, hooks Hooks) *Service {
	return &Service{store: s, hooks: hooks}
}

// UseClient gives the service the River client its hooks enqueue with,
// instead of Hooks.Client (tests that build their own client). Call it
// before the service stores anything.
func (s *Service) UseClient(c *engine.Client) { s.client = c }

// Result says what a batch changed.
type Result struct {
	// Stored events are new; Duplicates were stored before (or appear twice
	// in the batch) and changed nothing.
	Stored     int `json:"stored"`
	Duplicates int `json:"duplicates"`
	// Sessions are the ids of the sessions the batch named, sorted.
	Sessions []string `json:"sessions"`
	// Ended are the sessions this batch ended, sorted.
	Ended []string `json:"ended,omitempty"`
}

// IngestBatch validates a batch as a whole and stores its new events,
// updates their sessions and runs the hooks, all in one transaction. A bad
// event fails the batch with the *events.FieldError from
// events.ValidateBatch (callers answer 400 with it) and stores nothing.
// source is store.SourcePush or store.SourceImport. The caller's slice is
// not changed.
//
// Hooks run only for live sessions (history.Live): ones with an event the
// bridge plugin pushed, whose last event is not older than
// Hooks.MaxSessionAge. An import of sessions mull never had pushed stores
// history and starts nothing; a pushed session whose end the import
// happened to store first still learns.
func (s *Service) IngestBatch(ctx context.Context, batch []events.Event, source string) (Result, error) {
	if source != store.SourcePush && source != store.SourceImport {
		return Result{}, fmt.Errorf("ingest: source %q is not %s or %s", source, store.SourcePush, store.SourceImport)
	}
	batch = slices.Clone(batch) // ValidateBatch normalizes in place
	if err := events.ValidateBatch(batch, s.store.Now()); err != nil {
		return Result{}, err
	}
	var res Result
	err := s.store.InTx(ctx, func(tx *sql.Tx) (err error) {
		res, err = s.ingest(ctx, tx, batch, source)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// IngestTx is IngestBatch inside the caller's transaction: the task
// service stores a task_open or task_close event with the task's own row,
// so the session exists, its seq advances and the task's window bounds
// commit together. An error leaves tx for the caller to roll back.
func (s *Service) IngestTx(ctx context.Context, tx *sql.Tx, batch []events.Event, source string) (Result, error) {
	if source != store.SourcePush && source != store.SourceImport {
		return Result{}, fmt.Errorf("ingest: source %q is not %s or %s", source, store.SourcePush, store.SourceImport)
	}
	batch = slices.Clone(batch)
	if err := events.ValidateBatch(batch, s.store.Now()); err != nil {
		return Result{}, err
	}
	return s.ingest(ctx, tx, batch, source)
}

// ingest stores a validated batch in tx and runs its hooks.
func (s *Service) ingest(ctx context.Context, tx *sql.Tx, batch []events.Event, source string) (Result, error) {
	unique := firstOfEachID(batch)
	bySession := groupBySession(unique)
	res := Result{Sessions: sortedKeys(bySession)}
	inserted, ended, touched, err := s.writeBatch(ctx, tx, unique, bySession, res.Sessions, source)
	if err != nil {
		return Result{}, err
	}
	res.Stored = len(inserted)
	for _, sess := range ended {
		res.Ended = append(res.Ended, sess.ID)
	}
	stored := slices.DeleteFunc(slices.Clone(unique), func(e events.Event) bool { return !inserted[e.ID] })
	live, err := s.liveSessions(ctx, tx, touched, stored, ended, source)
	if err != nil {
		return Result{}, err
	}
	stored = slices.DeleteFunc(stored, func(e events.Event) bool { return !live[e.SessionID] })
	ended = slices.DeleteFunc(ended, func(sess store.Session) bool { return !live[sess.ID] })
	if err := s.runHooks(ctx, tx, stored, ended, touched); err != nil {
		return Result{}, err
	}
	res.Duplicates = len(batch) - res.Stored
	return res, nil
}

// writeBatch does the writes of one batch: lock its sessions (sorted, so two
// batches never wait on each other in a cycle), insert the events, fold the
// newly stored ones into their sessions. It returns the ids it stored, the
// sessions the batch ended and every session it saved, by id.
func (s *Service) writeBatch(ctx context.Context, tx *sql.Tx, unique []events.Event, bySession map[string][]events.Event,
	ids []string, source string) (map[string]bool, []store.Session, map[string]store.Session, error) {
	type locked struct {
		sess    store.Session
		created bool
	}
	sessions := make(map[string]locked, len(ids))
	for _, id := range ids {
		evs := bySession[id]
		sess, created, err := s.store.LockSession(ctx, tx, id, evs[0].Workspace, earliest(evs))
		if err != nil {
			return nil, nil, nil, err
		}
		sessions[id] = locked{sess, created}
	}
	inserted, err := s.store.InsertEvents(ctx, tx, rows(unique, source))
	if err != nil {
		return nil, nil, nil, err
	}
	var ended []store.Session
	touched := make(map[string]store.Session, len(ids))
	for _, id := range ids {
		l := sessions[id]
		fresh := slices.DeleteFunc(slices.Clone(bySession[id]), func(e events.Event) bool { return !inserted[e.ID] })
		if len(fresh) == 0 {
			if l.created { // its events all belong to other sessions
				if err := s.store.DeleteEmptySession(ctx, tx, id); err != nil {
					return nil, nil, nil, err
				}
			}
			continue
		}
		// seq follows the batch's order (the order the session sent them),
		// after the events stored before it.
		freshIDs := make([]string, len(fresh))
		for i, e := range fresh {
			freshIDs[i] = e.ID
		}
		if err := s.store.NumberEvents(ctx, tx, id, l.sess.Events, freshIDs); err != nil {
			return nil, nil, nil, err
		}
		endedNow := apply(&l.sess, l.created, fresh)
		if err := s.store.SaveSession(ctx, tx, &l.sess); err != nil {
			return nil, nil, nil, err
		}
		touched[id] = l.sess
		if endedNow {
			ended = append(ended, l.sess)
		}
	}
	return inserted, ended, touched, nil
}

// liveSessions says which sessions with a hook to run are live.
func (s *Service) liveSessions(ctx context.Context, tx *sql.Tx, touched map[string]store.Session,
	stored []events.Event, ended []store.Session, source string) (map[string]bool, error) {
	need := map[string]bool{}
	for _, sess := range ended {
		need[sess.ID] = true
	}
	for _, e := range stored {
		if e.Type == events.Error || e.Type == events.TurnEnd || s.hooked(e.Type) {
			need[e.SessionID] = true
		}
	}
	live := make(map[string]bool, len(need))
	now := s.store.Now()
	for id := range need {
		pushed := source == store.SourcePush
		if !pushed {
			var err error
			if pushed, err = s.store.SessionPushed(ctx, tx, id); err != nil {
				return nil, err
			}
		}
		live[id], _ = history.Live(history.Facts{Pushed: pushed, LastEventAt: touched[id].LastEventAt, Now: now, MaxAge: s.hooks.MaxSessionAge})
	}
	return live, nil
}

func (s *Service) runHooks(ctx context.Context, tx *sql.Tx, stored []events.Event, ended []store.Session, touched map[string]store.Session) error {
	if s.hooks.AgentError != nil {
		for _, e := range stored {
			if e.Type != events.Error {
				continue
			}
			client, err := s.needClient()
			if err != nil {
				return err
			}
			if err := s.hooks.AgentError(ctx, tx, client, e); err != nil {
				return fmt.Errorf("ingest: agent error hook for event %s: %w", e.ID, err)
			}
		}
	}
	if err := s.eventsStored(ctx, tx, stored, touched); err != nil {
		return err
	}
	for _, sess := range ended {
		if err := s.sessionEnded(ctx, tx, sess); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) sessionEnded(ctx context.Context, tx *sql.Tx, sess store.Session) error {
	if s.hooks.SessionEnded == nil {
		return nil
	}
	client, err := s.needClient()
	if err != nil {
		return err
	}
	if err := s.hooks.SessionEnded(ctx, tx, client, sess); err != nil {
		return fmt.Errorf("ingest: session ended hook for %s: %w", sess.ID, err)
	}
	return nil
}

// eventsStored runs the Event and TurnEnded hooks, event by event.
func (s *Service) eventsStored(ctx context.Context, tx *sql.Tx, stored []events.Event, touched map[string]store.Session) error {
	for _, e := range stored {
		type hook = func(context.Context, *sql.Tx, *engine.Client, store.Session, events.Event) error
		var run []hook
		if s.hooked(e.Type) {
			run = append(run, s.hooks.Event)
		}
		if e.Type == events.TurnEnd && s.hooks.TurnEnded != nil {
			run = append(run, s.hooks.TurnEnded)
		}
		for _, h := range run {
			client, err := s.needClient()
			if err != nil {
				return err
			}
			if err := h(ctx, tx, client, touched[e.SessionID], e); err != nil {
				return fmt.Errorf("ingest: %s hook for event %s: %w", e.Type, e.ID, err)
			}
		}
	}
	return nil
}

// hooked reports whether the Event hook runs for events of type t.
func (s *Service) hooked(t events.Type) bool {
	return s.hooks.Event != nil && s.hooks.Hooked != nil && s.hooks.Hooked(t)
}

func (s *Service) needClient() (*engine.Client, error) {
	c := s.client
	if c == nil && s.hooks.Client != nil {
		c = s.hooks.Client()
	}
	if c == nil {
		return nil, errors.New("ingest: hooks need a River client and none exists yet (build it with engine.NewClient over the hooks' registry, or call UseClient)")
	}
	return c, nil
}

// firstOfEachID drops later events whose id the batch already holds.
func firstOfEachID(batch []events.Event) []events.Event {
	seen := make(map[string]bool, len(batch))
	out := make([]events.Event, 0, len(batch))
	for _, e := range batch {
		if !seen[e.ID] {
			seen[e.ID] = true
			out = append(out, e)
		}
	}
	return out
}

func groupBySession(evs []events.Event) map[string][]events.Event {
	out := map[string][]events.Event{}
	for _, e := range evs {
		out[e.SessionID] = append(out[e.SessionID], e)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func rows(evs []events.Event, source string) []store.Event {
	out := make([]store.Event, len(evs))
	for i, e := range evs {
		out[i] = store.Event{ID: e.ID, SessionID: e.SessionID, Workspace: e.Workspace, Type: string(e.Type),
			Time: e.Time, Payload: e.Payload, Source: source}
	}
	// Sorted ids: two batches that overlap lock their events in one order.
	slices.SortFunc(out, func(a, b store.Event) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
