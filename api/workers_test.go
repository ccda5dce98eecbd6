package api_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestAdminWorkers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s, "tok")
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		for _, w := range []store.Worker{
			{ClientID: "a", Host: "box-a", PID: 1, StartedAt: now.Add(-time.Hour), HeartbeatAt: now, Queues: []string{"default", "llm"}},
			{ClientID: "b", Host: "box-b", PID: 2, StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-time.Hour)},
		} {
			if err := s.Heartbeat(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		expect(t, f.do("GET", "/v1/admin/workers", "", from("203.0.113.5:1")), http.StatusUnauthorized, nil)
		var body struct {
			Workers   []store.WorkerStatus `json:"workers"`
			Live      int                  `json:"live"`
			DeadAfter string               `json:"dead_after"`
		}
		expect(t, f.do("GET", "/v1/admin/workers", "", bearer("tok")), http.StatusOK, &body)
		if body.Live != 1 || body.DeadAfter != "45s" || len(body.Workers) != 2 {
			t.Fatalf("workers = %+v", body)
		}
		a, b := body.Workers[0], body.Workers[1]
		if !a.Live || a.Host != "box-a" || a.PID != 1 || !reflect.DeepEqual(a.Queues, []string{"default", "llm"}) ||
			!a.HeartbeatAt.Equal(now) || !a.StartedAt.Equal(now.Add(-time.Hour)) || b.Live || b.Host != "box-b" {
			t.Fatalf("workers = %+v", body.Workers)
		}
	})
}
