package api_test

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

type checkBody struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

type healthBody struct {
	Status     string                      `json:"status"`
	Database   checkBody                   `json:"database"`
	Migrations checkBody                   `json:"migrations"`
	Workers    checkBody                   `json:"workers"`
	Heartbeats checkBody                   `json:"heartbeats"`
	Reason     string                      `json:"reason"`
	Queues     map[string]map[string]int64 `json:"queues"`
}

func TestHealthz(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		f.run("")
		f.run("")
		f.dead()

		// Not yet marked working: unhealthy, and says why.
		var h healthBody
		expect(t, f.do("GET", "/healthz", ""), http.StatusServiceUnavailable, &h)
		if h.Status != "unhealthy" || h.Workers.OK || h.Workers.Detail != "not running" || !h.Database.OK || !h.Migrations.OK {
			t.Fatalf("health before SetWorking = %+v", h)
		}

		f.srv.SetWorking(true)
		h = healthBody{}
		expect(t, f.do("GET", "/healthz", ""), http.StatusOK, &h)
		if h.Status != "ok" || !h.Database.OK || h.Database.Detail != s.Where || !h.Migrations.OK ||
			!h.Workers.OK || h.Workers.Detail != "running" {
			t.Fatalf("health = %+v", h)
		}
		want := map[string]map[string]int64{"default": {"completed": 2, "discarded": 1}}
		if !reflect.DeepEqual(h.Queues, want) {
			t.Fatalf("queues = %v, want %v", h.Queues, want)
		}

		// Health is public: no token, no loopback needed.
		expect(t, f.do("GET", "/healthz", "", from("203.0.113.5:1234")), http.StatusOK, nil)

		f.srv.SetWorking(false)
		h = healthBody{}
		expect(t, f.do("GET", "/healthz", ""), http.StatusServiceUnavailable, &h)
		if h.Status != "unhealthy" || h.Workers.OK || h.Workers.Detail != "not running" {
			t.Fatalf("health after SetWorking(false) = %+v", h)
		}

		f.srv.WorkersDisabled()
		h = healthBody{}
		expect(t, f.do("GET", "/healthz", ""), http.StatusOK, &h)
		if h.Status != "ok" || !h.Workers.OK || h.Workers.Detail != "disabled in this process" {
			t.Fatalf("health with workers disabled = %+v", h)
		}
	})
}

func TestHealthzDatabaseDown(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "")
		// A second server over a store that is then closed; the client keeps
		// its own working store.
		other := storetest.New(t, s.Dialect)
		srv := f.server(other, "")
		srv.SetWorking(true)
		other.Close()

		var h healthBody
		expect(t, serve(srv, "GET", "/healthz", ""), http.StatusServiceUnavailable, &h)
		if h.Status != "unhealthy" || h.Database.OK || h.Database.Detail == "" || h.Migrations.OK || !h.Workers.OK {
			t.Fatalf("health with the database closed = %+v", h)
		}
		if h.Queues == nil || len(h.Queues) != 0 {
			t.Fatalf("queues with the database closed = %v, want {}", h.Queues)
		}
	})
}

// Jobs available on a queue no worker process beats for: 503 "degraded"
// with the reason, until a live heartbeat exists or the queue is paused.
func TestHealthzDegradedWithoutLiveWorkers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newFixture(t, s, "tok")
		f.srv.SetWorking(true)
		var h healthBody
		expect(t, f.do("GET", "/healthz", ""), http.StatusOK, &h)
		if h.Status != "ok" || !h.Heartbeats.OK || h.Reason != "" {
			t.Fatalf("health with nothing waiting = %+v", h)
		}
		// A queue the fixture's client does not work: the job waits there.
		reg := engine.NewRegistry(nil)
		engine.Add(reg, engine.Spec{Queue: "idle"}, river.WorkFunc(func(context.Context, *river.Job[idleArgs]) error { return nil }))
		inserter := enginetest.NewClient(t, s, reg, enginetest.Config(), false)
		if _, err := inserter.Insert(ctx, idleArgs{}, nil); err != nil {
			t.Fatal(err)
		}
		h = healthBody{}
		expect(t, f.do("GET", "/healthz", ""), http.StatusServiceUnavailable, &h)
		if h.Status != "degraded" || !strings.Contains(h.Reason, "no worker has a live heartbeat") || h.Heartbeats.OK ||
			!strings.Contains(h.Heartbeats.Detail, "1 jobs available on idle") {
			t.Fatalf("health with a job waiting and no heartbeat = %+v", h)
		}
		// The public answer keeps the status and the reason, no details.
		rec := f.do("GET", "/healthz", "", from("203.0.113.5:1234"))
		if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "idle") ||
			!strings.Contains(rec.Body.String(), `"degraded"`) || !strings.Contains(rec.Body.String(), "live heartbeat") {
			t.Fatalf("public degraded health = %d %s", rec.Code, rec.Body)
		}

		// A heartbeat older than workers.dead_after (45s) is no live worker.
		now := time.Now()
		beat := store.Worker{ClientID: "other", Host: "h", PID: 1, StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-46 * time.Second)}
		if err := s.Heartbeat(ctx, beat); err != nil {
			t.Fatal(err)
		}
		expect(t, f.do("GET", "/healthz", ""), http.StatusServiceUnavailable, nil)
		beat.HeartbeatAt = now
		if err := s.Heartbeat(ctx, beat); err != nil {
			t.Fatal(err)
		}
		h = healthBody{}
		expect(t, f.do("GET", "/healthz", ""), http.StatusOK, &h)
		if h.Status != "ok" || !h.Heartbeats.OK || h.Heartbeats.Detail != "1 live" {
			t.Fatalf("health with a live worker elsewhere = %+v", h)
		}

		// Gone again, but the queue is paused: its job waits for an
		// operator, not for a worker.
		if err := s.ForgetWorker(ctx, "other"); err != nil {
			t.Fatal(err)
		}
		if err := llm.PauseWithoutKey(ctx, f.c, s.Driver(), []string{"idle"}, now); err != nil {
			t.Fatal(err)
		}
		expect(t, f.do("GET", "/healthz", ""), http.StatusOK, nil)

		// Broken beats degraded.
		f.srv.SetWorking(false)
		h = healthBody{}
		expect(t, f.do("GET", "/healthz", ""), http.StatusServiceUnavailable, &h)
		if h.Status != "unhealthy" {
			t.Fatalf("health with this process's workers down = %+v", h)
		}
	})
}

// idleArgs is a kind no test worker works.
type idleArgs struct{}

func (idleArgs) Kind() string { return "apitest_idle" }
