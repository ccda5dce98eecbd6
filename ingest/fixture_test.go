package ingest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
)

// t0 is the tests' "now"; event times are offsets from it.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const ws = "/home/dev/app"

// clock is a store clock tests move without racing the code that reads it.
type clock struct{ ns atomic.Int64 }

func newClock(s *store.Store, at time.Time) *clock {
	c := &clock{}
	c.set(at)
	s.SetClock(func() time.Time { return time.Unix(0, c.ns.Load()).UTC() })
	return c
}

func (c *clock) set(at time.Time) { c.ns.Store(at.UnixNano()) }

// ev builds a valid event of a type at t0+offset, with a payload that
// type accepts.
func ev(id, session string, typ events.Type, offset time.Duration) events.Event {
	payloads := map[events.Type]string{
		events.SessionStart: `{"title":"fix the build"}`,
		events.SessionEnd:   `{"reason":"completed"}`,
		events.TurnEnd:      `{"turn":1,"reason":"completed"}`,
		events.ToolResult:   `{"tool":"bash","command":"go test","exit_code":1,"is_error":true}`,
		events.Error:        `{"message":"provider timeout"}`,
		events.Feedback:     `{"rating":"down","text":"wrong file"}`,
		events.UserMessage:  `{"text":"hi"}`,
	}
	return events.Event{ID: id, Type: typ, SessionID: session, Workspace: ws, Time: t0.Add(offset),
		Payload: json.RawMessage(payloads[typ])}
}

// turns builds n tool_result events of one session, ids prefix-0…prefix-(n-1),
// a second apart from offset.
func turns(prefix, session string, n int, offset time.Duration) []events.Event {
	out := make([]events.Event, n)
	for i := range out {
		out[i] = ev(fmt.Sprintf("%s-%04d", prefix, i), session, events.ToolResult, offset+time.Duration(i)*time.Second)
	}
	return out
}

// hookArgs is the job the tests' SessionEnded hook enqueues.
type hookArgs struct {
	Session string `json:"session"`
}

func (hookArgs) Kind() string { return "ingest_test_hook" }

type hookWorker struct {
	river.WorkerDefaults[hookArgs]
}

func (hookWorker) Work(context.Context, *river.Job[hookArgs]) error { return nil }

// hooked is a service whose hooks enqueue a hookArgs job per ended session
// and count calls, over an insert-only River client.
type hooked struct {
	svc    *ingest.Service
	client *engine.Client
	ended  atomic.Int64
	errors atomic.Int64
	// fail, when set, makes SessionEnded fail after enqueuing.
	fail atomic.Bool
}

func newHooked(t *testing.T, s *store.Store) *hooked {
	t.Helper()
	return newHookedAge(t, s, 0)
}

// newHookedAge is newHooked with Hooks.MaxSessionAge set.
func newHookedAge(t *testing.T, s *store.Store, maxAge time.Duration) *hooked {
	t.Helper()
	h := &hooked{}
	reg := engine.NewRegistry(nil)
	engine.Add(reg, engine.Spec{}, &hookWorker{})
	h.client = enginetest.NewClient(t, s, reg, enginetest.Config(), false)
	h.svc = ingest.New(s, ingest.Hooks{
		SessionEnded: func(ctx context.Context, tx *sql.Tx, client *engine.Client, sess store.Session) error {
			if _, err := client.InsertTx(ctx, tx, hookArgs{Session: sess.ID}, nil); err != nil {
				return err
			}
			h.ended.Add(1)
			if h.fail.Load() {
				return fmt.Errorf("hook refuses %s", sess.ID)
			}
			return nil
		},
		AgentError: func(ctx context.Context, tx *sql.Tx, client *engine.Client, e events.Event) error {
			h.errors.Add(1)
			return nil
		},
		MaxSessionAge: maxAge,
	})
	h.svc.UseClient(h.client)
	return h
}

// jobs lists the sessions the hook enqueued jobs for, as committed.
func (h *hooked) jobs(t *testing.T) []string {
	t.Helper()
	res, err := h.client.JobList(context.Background(), river.NewJobListParams().Kinds("ingest_test_hook").First(1000))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range res.Jobs {
		var a hookArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a.Session)
	}
	return out
}

func ingestOK(t testing.TB, svc *ingest.Service, batch []events.Event, source string) ingest.Result {
	t.Helper()
	res, err := svc.IngestBatch(context.Background(), batch, source)
	if err != nil {
		t.Fatalf("IngestBatch: %v", err)
	}
	return res
}

func session(t *testing.T, s *store.Store, id string) store.Session {
	t.Helper()
	sess, err := s.GetSession(context.Background(), id)
	if err != nil {
		t.Fatalf("GetSession %s: %v", id, err)
	}
	return sess
}
