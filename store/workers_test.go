package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

func TestListWorkers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		a := store.Worker{ClientID: "a", Host: "h1", PID: 10, StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-time.Minute),
			Queues: []string{"maintenance", "default", "llm"}}
		b := store.Worker{ClientID: "b", Host: "h2", PID: 20, StartedAt: now.Add(-time.Hour), HeartbeatAt: now}
		for _, w := range []store.Worker{a, b} {
			if err := s.Heartbeat(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.ListWorkers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a.Queues = []string{"default", "llm", "maintenance"}
		if want := []store.Worker{b, a}; !reflect.DeepEqual(got, want) {
			t.Fatalf("workers = %+v, want %+v (newest beat first, queues sorted)", got, want)
		}
		for since, want := range map[time.Time]int64{now.Add(-time.Hour): 2, now.Add(-time.Minute): 2, now.Add(-time.Second): 1, now.Add(time.Second): 0} {
			if n, err := s.LiveWorkers(ctx, since); err != nil || n != want {
				t.Errorf("live since %s = %d, %v; want %d", since, n, err, want)
			}
		}
		// A later beat keeps the queues the process now says it works.
		a.HeartbeatAt, a.Queues = now.Add(time.Minute), []string{"llm"}
		if err := s.Heartbeat(ctx, a); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ListWorkers(ctx); len(got) != 2 || got[0].ClientID != "a" || !reflect.DeepEqual(got[0].Queues, []string{"llm"}) {
			t.Fatalf("after a beat: %+v", got)
		}
	})
}
