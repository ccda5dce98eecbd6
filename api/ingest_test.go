package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/api"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

const apiToken = "dsh-api-token"

// ingestServer is a server with ingest over s, an insert-only client, the
// API token apiTok (empty: none) and the admin token token.
func ingestServer(t *testing.T, s *store.Store, apiTok string, maxBody int64) *api.Server {
	t.Helper()
	cfg := enginetest.Config()
	cfg.APIToken, cfg.Ingest.MaxBody = apiTok, maxBody
	client := enginetest.NewClient(t, s, engine.NewRegistry(nil), cfg, false)
	svc := ingest.New(s, ingest.Hooks{})
	svc.UseClient(client)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := api.New(ctx, api.Deps{Store: s, Client: client, Registry: engine.NewRegistry(nil), Logger: enginetest.Logger(),
		AdminToken: token, Config: cfg, Ingest: svc})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// eventJSON is one event of session-1 in /w, a minute before now.
func eventJSON(id, typ, payload string) string {
	at := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339Nano)
	return fmt.Sprintf(`{"id":%q,"type":%q,"session_id":"session-1","workspace":"/w","time":%q,"payload":%s}`, id, typ, at, payload)
}

func batchJSON(evs ...string) string { return `{"events":[` + strings.Join(evs, ",") + `]}` }

type ingestBody struct {
	Stored     int `json:"stored"`
	Duplicates int `json:"duplicates"`
}

type sessionsBody struct {
	Sessions []store.Session `json:"sessions"`
	Count    int             `json:"count"`
}

func TestPostEventsAndSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := ingestServer(t, s, "", 0)
		body := batchJSON(eventJSON("e1", "session_start", `{"title":"t"}`),
			eventJSON("e2", "tool_result", `{"tool":"bash","exit_code":2,"is_error":true}`),
			eventJSON("e3", "feedback", `{"rating":"down","text":"no"}`))
		var got ingestBody
		expect(t, serve(srv, "POST", "/v1/events", body), http.StatusOK, &got)
		if got != (ingestBody{Stored: 3}) {
			t.Fatalf("first post: %+v", got)
		}
		expect(t, serve(srv, "POST", "/v1/events", body), http.StatusOK, &got)
		if got != (ingestBody{Duplicates: 3}) {
			t.Fatalf("replay: %+v", got)
		}

		var list sessionsBody
		expect(t, serve(srv, "GET", "/v1/sessions?workspace=/w&status=open", ""), http.StatusOK, &list)
		if list.Count != 1 || list.Sessions[0].ID != "session-1" || list.Sessions[0].Events != 3 ||
			list.Sessions[0].Counts["tool_result"] != 1 || list.Sessions[0].Title != "t" {
			t.Fatalf("sessions: %+v", list)
		}
		expect(t, serve(srv, "GET", "/v1/sessions?workspace=/elsewhere", ""), http.StatusOK, &list)
		if list.Count != 0 || list.Sessions == nil {
			t.Fatalf("other workspace: %+v", list)
		}
		expectError(t, serve(srv, "GET", "/v1/sessions?status=asleep", ""), http.StatusBadRequest, "status")
		expectError(t, serve(srv, "GET", "/v1/sessions?limit=-1", ""), http.StatusBadRequest, "limit")

		var one struct {
			store.Session
			LastEvents []store.Event `json:"last_events"`
		}
		expect(t, serve(srv, "GET", "/v1/sessions/session-1?events=2", ""), http.StatusOK, &one)
		if one.ID != "session-1" || len(one.LastEvents) != 2 || one.LastEvents[1].ID != "e3" || one.LastEvents[0].Source != "push" {
			t.Fatalf("session detail: %+v", one)
		}
		expectError(t, serve(srv, "GET", "/v1/sessions/session-nope", ""), http.StatusNotFound, "not found")
	})
}

func TestPostEventsBadBatchStoresNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := ingestServer(t, s, "", 0)
		good := eventJSON("e0", "session_start", `{}`)
		for _, c := range []struct {
			name, body string
			index      *int
			field      string
			want       string
		}{
			{"bad payload", batchJSON(good, eventJSON("e1", "turn_end", `{"turn":1,"reason":"completed"}`), eventJSON("e2", "feedback", `{"rating":"meh"}`)),
				ptr(2), "payload.rating", `event 2: payload.rating: "meh" is not one of down, up, none`},
			{"unknown event field", batchJSON(good, strings.Replace(eventJSON("e1", "error", `{"message":"x"}`), `"id"`, `"colour":"red","id"`, 1)),
				ptr(1), "colour", "event 1: colour: unknown field"},
			{"bad time", batchJSON(good, `{"id":"e1","type":"error","session_id":"s","workspace":"/w","time":"yesterday","payload":{"message":"x"}}`),
				ptr(1), "time", "event 1: time:"},
			{"wrong type", batchJSON(good, `{"id":7}`), ptr(1), "id", "event 1: id: want string"},
			{"unknown top-level field", `{"events":[` + good + `],"extra":1}`, nil, "body", "unknown field"},
			{"no events", `{}`, nil, "events", "required"},
			{"empty batch", `{"events":[]}`, nil, "events", "batch is empty"},
			{"not JSON", `events please`, nil, "body", "invalid JSON"},
		} {
			var got struct {
				Error string `json:"error"`
				Index *int   `json:"index"`
				Field string `json:"field"`
			}
			expect(t, serve(srv, "POST", "/v1/events", c.body), http.StatusBadRequest, &got)
			if !strings.Contains(got.Error, c.want) || got.Field != c.field || (got.Index == nil) != (c.index == nil) ||
				(c.index != nil && *got.Index != *c.index) {
				t.Fatalf("%s: %+v (index %v), want field %q, index %v, error containing %q", c.name, got, deref(got.Index), c.field, deref(c.index), c.want)
			}
		}
		var list sessionsBody
		expect(t, serve(srv, "GET", "/v1/sessions", ""), http.StatusOK, &list)
		if list.Count != 0 {
			t.Fatalf("rejected batches stored sessions: %+v", list)
		}
	})
}

func TestPostEventsTooLarge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := ingestServer(t, s, "", 2048)
		var evs []string
		for i := range 20 {
			evs = append(evs, eventJSON(fmt.Sprintf("e%d", i), "user_message", `{"text":"hello"}`))
		}
		big := batchJSON(evs...)
		expectError(t, serve(srv, "POST", "/v1/events", big), http.StatusRequestEntityTooLarge, "ingest.max_body")
		// Without a Content-Length the limit holds while reading.
		unknownLength := func(r *http.Request) { r.ContentLength = -1 }
		expectError(t, serve(srv, "POST", "/v1/events", big, unknownLength), http.StatusRequestEntityTooLarge, "over 2048 bytes")
		var got ingestBody
		expect(t, serve(srv, "POST", "/v1/events", batchJSON(evs[:3]...)), http.StatusOK, &got)
		if got.Stored != 3 {
			t.Fatalf("small batch: %+v", got)
		}
	})
}

func TestAPIToken(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := ingestServer(t, s, apiToken, 0)
		body := batchJSON(eventJSON("e1", "session_start", `{}`))
		for _, route := range [][2]string{{"POST", "/v1/events"}, {"GET", "/v1/sessions"}, {"GET", "/v1/sessions/session-1"}} {
			for name, opts := range map[string][]reqOpt{
				"no header":       nil,
				"wrong token":     {bearer("nope")},
				"admin token":     {bearer(token)},
				"token plus more": {bearer(apiToken + "x")},
				"no Bearer":       {header("Authorization", apiToken)},
			} {
				rec := serve(srv, route[0], route[1], body, opts...)
				if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") != `Bearer realm="mull"` {
					t.Fatalf("%s %s with %s: %d, WWW-Authenticate %q", route[0], route[1], name, rec.Code, rec.Header().Get("WWW-Authenticate"))
				}
			}
		}
		var list sessionsBody
		expect(t, serve(srv, "GET", "/v1/sessions", ""), http.StatusUnauthorized, nil)
		expect(t, serve(srv, "GET", "/v1/sessions", "", bearer(apiToken)), http.StatusOK, &list)
		if list.Count != 0 {
			t.Fatalf("refused posts stored sessions: %+v", list)
		}
		var got ingestBody
		expect(t, serve(srv, "POST", "/v1/events", body, bearer(apiToken), from("203.0.113.5:1234")), http.StatusOK, &got)
		if got.Stored != 1 {
			t.Fatalf("post with the token: %+v", got)
		}
		expect(t, serve(srv, "GET", "/v1/sessions/session-1", "", header("Authorization", "bearer "+apiToken)), http.StatusOK, nil)

		// Without an API token the DSH routes are open, from anywhere.
		open := ingestServer(t, s, "", 0)
		expect(t, serve(open, "GET", "/v1/sessions", "", from("203.0.113.5:1234")), http.StatusOK, nil)
	})
}

func ptr(i int) *int { return &i }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
