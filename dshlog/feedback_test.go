package dshlog_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
)

// A message_feedback.json as DSH rc.8's storage-json backend writes it
// (pretty-printed, the domain's unit header first).
const feedbackFile = `{
  "unit": {
    "name": "message_feedback",
    "version": 0
  },
  "global": null,
  "tables": {
    "sessions": {
      "session-618f3e2a-04f1-4c07-ae0d-228954177258": {
        "session": {
          "createdAt": 1795977438816,
          "cwd": "/home/dev/invoice-utils"
        },
        "items": [
          {
            "messageId": "e529ff55-13c9-41ee-9531-5e43de47c269",
            "rating": "negative",
            "note": "  ran the whole suite when I asked for one test  ",
            "version": "0b3f8f0e-6a53-4a53-9d5e-2f1f7b0c9a11",
            "createdAt": 1795977450000,
            "updatedAt": 1795977460000
          },
          {
            "messageId": "7a18c00d-ff65-4ae2-8aa5-10653ecc9d82",
            "rating": "positive",
            "version": "5c2e4c55-0a51-4f0e-8f60-0b8e9c1f4d22",
            "createdAt": 1795977455000,
            "updatedAt": 1795977455000
          }
        ]
      }
    }
  }
}
`

func TestReadMessageFeedback(t *testing.T) {
	home := t.TempDir()
	path := dshlog.MessageFeedbackFile(home)
	if rows, err := dshlog.ReadMessageFeedback(path); rows != nil || err != nil {
		t.Fatalf("a home without the file: %v, %v; want no feedback and no error", rows, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(feedbackFile), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := dshlog.ReadMessageFeedback(path)
	if err != nil {
		t.Fatal(err)
	}
	const sid = "session-618f3e2a-04f1-4c07-ae0d-228954177258"
	evs, err := dshlog.FeedbackEvents(sid, "", rows[sid])
	if err != nil {
		t.Fatal(err)
	}
	requireValid(t, evs)
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	down := payload[events.FeedbackPayload](t, evs[1])
	if evs[1].ID != "dsh:"+sid+":feedback:e529ff55-13c9-41ee-9531-5e43de47c269:0b3f8f0e-6a53-4a53-9d5e-2f1f7b0c9a11" ||
		evs[1].Workspace != "/home/dev/invoice-utils" || evs[1].Time.UnixMilli() != 1795977460000 ||
		down.Rating != "down" || down.Text != "ran the whole suite when I asked for one test" || down.MessageID != "e529ff55-13c9-41ee-9531-5e43de47c269" {
		t.Errorf("the 👎: %+v %+v", evs[1], down)
	}
	if up := payload[events.FeedbackPayload](t, evs[0]); up.Rating != "up" || up.Text != "" {
		t.Errorf("the 👍 (older, first): %+v", up)
	}

	row := rows[sid]
	row.Items = append(row.Items, dshlog.FeedbackItem{MessageID: "m9", Rating: "meh", Version: "v"})
	if evs, err := dshlog.FeedbackEvents(sid, "/w", row); len(evs) != 2 || err == nil || !strings.Contains(err.Error(), `item 2 (message "m9", rating "meh"`) {
		t.Errorf("a foreign item: %d events, %v", len(evs), err)
	}
	if err := os.WriteFile(path, []byte(`{"unit":{"name":"settings","version":0},"tables":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dshlog.ReadMessageFeedback(path); err == nil || !strings.Contains(err.Error(), "message_feedback.json: not DSH's message feedback") {
		t.Errorf("another unit's file: %v", err)
	}
}
