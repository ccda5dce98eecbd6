package dshimport

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// TestImportMessageFeedback: a home's per-message 👍/👎 (DSH's web
// profile keeps them in storages/message_feedback.json) arrive as feedback
// events after their session's log, for the sessions the home has logs
// of; an unchanged file is not sent again, a changed one only adds the
// new revision.
func TestImportMessageFeedback(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := homeWith(t, s1)
		const sid = "session-618f3e2a-04f1-4c07-ae0d-228954177258"
		item := func(msg, rating, note, version string, at int64) map[string]any {
			return map[string]any{"messageId": msg, "rating": rating, "note": note, "version": version, "createdAt": at, "updatedAt": at}
		}
		write := func(items ...map[string]any) {
			doc := map[string]any{"unit": map[string]any{"name": "message_feedback", "version": 0}, "global": nil,
				"tables": map[string]any{"sessions": map[string]any{
					sid:                 map[string]any{"session": map[string]any{"createdAt": 1795977438816, "cwd": "/home/dev/invoice-utils"}, "items": items},
					"session-elsewhere": map[string]any{"session": map[string]any{"createdAt": 1, "cwd": "/home/dev/x"}, "items": []any{item("m", "negative", "", "v", 2)}},
				}}}
			b, _ := json.MarshalIndent(doc, "", "  ")
			p := dshlog.MessageFeedbackFile(home)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		write(item("e529ff55-13c9-41ee-9531-5e43de47c269", "negative", "run only the failing test", "11111111-1111-4111-8111-111111111111", 1795977450000))
		ing := newFakeIngest()
		im := newImporter(s, home, ing)
		sum := scanOK(t, im)
		if sum.Events != s1.events+1 || sum.Stored != s1.events+1 || len(sum.Errors) != 0 {
			t.Fatalf("summary %+v", sum)
		}
		last := ing.order[len(ing.order)-1]
		if last != "dsh:"+sid+":feedback:e529ff55-13c9-41ee-9531-5e43de47c269:11111111-1111-4111-8111-111111111111" {
			t.Fatalf("last event stored %s, want the 👎 after the log", last)
		}
		var p events.FeedbackPayload
		if err := json.Unmarshal(ing.stored[last].Payload, &p); err != nil || p.Rating != "down" || p.Text != "run only the failing test" {
			t.Errorf("the 👎: %s", ing.stored[last].Payload)
		}

		n := len(ing.batches)
		if sum := scanOK(t, im); sum.Events != 0 || len(ing.batches) != n {
			t.Fatalf("an unchanged home sent again: %+v", sum)
		}

		// The person changes their mind: a new version.
		write(item("e529ff55-13c9-41ee-9531-5e43de47c269", "positive", "", "22222222-2222-4222-8222-222222222222", 1795977460000))
		later := time.Now().Add(time.Minute)
		if err := os.Chtimes(dshlog.MessageFeedbackFile(home), later, later); err != nil {
			t.Fatal(err)
		}
		if sum := scanOK(t, im); sum.Stored != 1 || sum.Unchanged != 1 {
			t.Fatalf("after the change: %+v", sum)
		}

		if err := os.WriteFile(dshlog.MessageFeedbackFile(home), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dshlog.MessageFeedbackFile(home), later.Add(time.Minute), later.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if sum := scanOK(t, im); len(sum.Errors) != 1 || !strings.Contains(sum.Errors[0].String(), "message_feedback.json: not DSH's message feedback") {
			t.Fatalf("a broken file: %+v", sum.Errors)
		}
	})
}
