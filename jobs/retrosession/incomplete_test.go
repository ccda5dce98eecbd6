package retrosession_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A session whose DSH log was imported incompletely (cut short, settled)
// gets its retro, and the excerpt the model reads says events are missing;
// a complete one's does not, nor a session DSH never logged.
func TestRetroOfAnIncompleteImportSaysSo(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := start(t, s, script(mustJSON(answer), ""))
		for _, f := range []store.DSHImportFile{
			{Path: "/h/sessions/a/session-cut/session.jsonl.zstd", SessionID: "session-cut", LastSeq: 9,
				Tail: "/h/sessions/a/session-cut/session.jsonl.zstd: the zstd frame at byte 900 is cut short: the file ends at byte 950"},
			{Path: "/h/sessions/a/session-whole/session.jsonl.zstd", SessionID: "session-whole", LastSeq: 9},
		} {
			if err := s.SaveDSHImportFile(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct {
			session string
			note    bool
		}{{"session-cut", true}, {"session-whole", false}, {"session-pushed", false}} {
			session(t, s, tt.session)
			e.run(t, tt.session)
			reqs := e.fake.Requests()
			last := reqs[len(reqs)-1]
			user := last.Messages[len(last.Messages)-1].Content
			if got := strings.Contains(user, retro.IncompleteNote); got != tt.note || !strings.Contains(user, "go test ./...") {
				t.Errorf("%s: note in the excerpt %t, want %t:\n%s", tt.session, got, tt.note, user)
			}
		}
	})
}
