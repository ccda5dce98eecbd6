package api_test

import (
	"net/http"
	"reflect"
	"testing"

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
