package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// GET /v1/sessions/{id} says how the session's import from DSH's logs
// stands, as `mull sessions show` does; a session never read from a log
// has no import.
func TestSessionShowsItsImport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		srv := ingestServer(t, s, "", 0)
		expect(t, serve(srv, "POST", "/v1/events", batchJSON(eventJSON("e1", "session_start", `{"title":"t"}`))), http.StatusOK, nil)
		var one struct {
			store.Session
			Import *store.SessionImport `json:"import"`
		}
		expect(t, serve(srv, "GET", "/v1/sessions/session-1", ""), http.StatusOK, &one)
		if one.ID != "session-1" || one.Import != nil {
			t.Fatalf("pushed-only session: %+v", one)
		}
		bad := "/h/sessions/w/session-1/session.jsonl.zstd: zstd frame at byte 4096: does not decode"
		err := s.SaveDSHImportFile(context.Background(), store.DSHImportFile{
			Path: "/h/sessions/w/session-1/session.jsonl.zstd", SessionID: "session-1", LastSeq: 3, Damage: []string{bad}})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, serve(srv, "GET", "/v1/sessions/session-1", ""), http.StatusOK, &one)
		if one.Import == nil || one.Import.State != store.ImportIncomplete || !strings.Contains(one.Import.Reason, bad) {
			t.Fatalf("import %+v", one.Import)
		}
	})
}
