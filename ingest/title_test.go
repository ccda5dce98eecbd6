package ingest_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestSessionTitle: DSH's session/title rows name the session; the model's
// title wins over the fallback cut from the prompt, whichever comes first.
func TestSessionTitle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		newClock(s, t0)
		h := newHooked(t, s)
		title := func(id, text, source string, ago time.Duration) events.Event {
			e := ev(id, "session-1", events.SessionTitle, ago)
			e.Payload, _ = json.Marshal(events.SessionTitlePayload{Title: text, Source: source})
			return e
		}
		ingestOK(t, h.svc, []events.Event{title("t1", "The invoice tests are", "fallback", -3*time.Minute)}, store.SourceImport)
		if got := session(t, s, "session-1").Title; got != "The invoice tests are" {
			t.Fatalf("title %q after the fallback", got)
		}
		ingestOK(t, h.svc, []events.Event{title("t2", "Fix invoice discount tests", "provider", -2*time.Minute)}, store.SourcePush)
		ingestOK(t, h.svc, []events.Event{title("t3", "A later fallback", "fallback", -time.Minute)}, store.SourceImport)
		if got := session(t, s, "session-1").Title; got != "Fix invoice discount tests" {
			t.Fatalf("title %q; want the model's", got)
		}
	})
}
