package ingest_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestConcurrentPushAndImport pushes and imports overlapping batches of the
// same sessions from two goroutines at once: every event is stored once,
// counted once, and each session ends once. Each session's first event is
// pushed before: a session the plugin pushes is live, whichever copy of its
// end is stored first (one only imported would be history and run no hook).
func TestConcurrentPushAndImport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		newClock(s, t0)
		h := newHooked(t, s)
		sessions := []string{"session-a", "session-b", "session-c"}
		// The sessions' events interleaved, each session's end in the middle.
		var all []events.Event
		for i := range 120 {
			for _, id := range sessions {
				e := ev(fmt.Sprintf("%s-%03d", id, i), id, events.ToolResult, time.Duration(i-120)*time.Second)
				if i == 60 {
					e = ev(id+"-end", id, events.SessionEnd, 0)
				}
				all = append(all, e)
			}
		}
		// push sends the first two thirds in order, import the last two
		// thirds backwards: the middle third, with the ends, is sent by both.
		third := len(all) / 3
		push, imp := all[:2*third], all[third:]
		batches := func(evs []events.Event, reverse bool) [][]events.Event {
			var out [][]events.Event
			for i := 0; i < len(evs); i += 25 {
				out = append(out, evs[i:min(i+25, len(evs))])
			}
			if reverse {
				for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
					out[i], out[j] = out[j], out[i]
				}
			}
			return out
		}
		var stored, dups [2]int
		first, err := h.svc.IngestBatch(context.Background(), push[:len(sessions)], store.SourcePush)
		if err != nil {
			t.Fatal(err)
		}
		stored[0], push = first.Stored, push[len(sessions):]
		var wg sync.WaitGroup
		for i, job := range []struct {
			source  string
			batches [][]events.Event
		}{{store.SourcePush, batches(push, false)}, {store.SourceImport, batches(imp, true)}} {
			wg.Go(func() {
				for _, b := range job.batches {
					res, err := h.svc.IngestBatch(context.Background(), b, job.source)
					if err != nil {
						t.Errorf("%s: %v", job.source, err)
						return
					}
					stored[i] += res.Stored
					dups[i] += res.Duplicates
				}
			})
		}
		wg.Wait()
		if stored[0]+stored[1] != len(all) || dups[0]+dups[1] != third {
			t.Fatalf("stored %v, duplicates %v; want %d stored, %d duplicates in all", stored, dups, len(all), third)
		}
		for _, id := range sessions {
			sess := session(t, s, id)
			if sess.Events != 120 || sess.Counts["tool_result"] != 119 || sess.Counts["session_end"] != 1 || sess.Status != store.SessionEnded {
				t.Fatalf("%s: %d events, counts %v, %s", id, sess.Events, sess.Counts, sess.Status)
			}
			evs, err := s.SessionEvents(context.Background(), id, 1000)
			if err != nil || len(evs) != 120 {
				t.Fatalf("%s: %d events stored (%v)", id, len(evs), err)
			}
		}
		if n := h.ended.Load(); n != int64(len(sessions)) || len(h.jobs(t)) != len(sessions) {
			t.Fatalf("hook ran %d times, %d jobs; want one per session", n, len(h.jobs(t)))
		}
	})
}

// BenchmarkIngest stores fresh batches of 100 events (10 sessions) and
// reports events per second.
func BenchmarkIngest(b *testing.B) {
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		b.Run(dialect, func(b *testing.B) {
			s := storetest.New(b, dialect)
			svc := ingest.New(s, ingest.Hooks{})
			ctx := context.Background()
			n := 0
			for b.Loop() {
				batch := make([]events.Event, 100)
				for i := range batch {
					id := fmt.Sprintf("bench-%d", n)
					batch[i] = events.Event{ID: id, Type: events.ToolResult, SessionID: fmt.Sprintf("session-%d", n%10),
						Workspace: ws, Time: time.Now().Add(-time.Hour),
						Payload: []byte(`{"tool":"bash","command":"go test ./...","exit_code":1,"is_error":true,"output":"FAIL"}`)}
					n++
				}
				if _, err := svc.IngestBatch(ctx, batch, store.SourcePush); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
