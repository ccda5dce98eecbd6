package dshlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mullhq/mull/events"
)

// Per-message feedback: the 👍/👎 (and an optional note) a person gives one
// assistant message in DSH's web UI. DSH 0.1.0-rc.8's
// @deepseek-ai/dsh-message-feedback keeps it outside the session log, in
// its storage-domain "message_feedback" (table "sessions", one row per
// session id), which the web profile's JSON backend writes to
// <home>/storages/message_feedback.json:
//
//	{"unit": {"name": "message_feedback", "version": 0}, "global": null,
//	 "tables": {"sessions": {"<session id>": {"session": {"createdAt", "cwd"},
//	   "items": [{"messageId", "rating": "positive"|"negative", "note"?,
//	              "version", "createdAt", "updatedAt"}]}}}}
//
// The same row reaches a plugin live, as the domain/changed event's value.

// MessageFeedbackFile is where a DSH home keeps per-message feedback.
func MessageFeedbackFile(home string) string {
	return filepath.Join(home, "storages", "message_feedback.json")
}

// FeedbackRow is one session's per-message feedback.
type FeedbackRow struct {
	Session struct {
		CreatedAt int64  `json:"createdAt"`
		Cwd       string `json:"cwd"`
	} `json:"session"`
	Items []FeedbackItem `json:"items"`
}

// FeedbackItem is the current feedback on one assistant message.
type FeedbackItem struct {
	MessageID string `json:"messageId"`
	Rating    string `json:"rating"`
	Note      string `json:"note"`
	Version   string `json:"version"`
	CreatedAt int64  `json:"createdAt"`
	UpdatedAt int64  `json:"updatedAt"`
}

// ReadMessageFeedback reads a message_feedback.json: its rows by session
// id. A missing file is no feedback (DSH writes it on the first rating; the
// headless profile never does). A file that is not DSH's format is an
// error naming the file and what is wrong.
func ReadMessageFeedback(path string) (map[string]FeedbackRow, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Unit struct {
			Name    string `json:"name"`
			Version *int   `json:"version"`
		} `json:"unit"`
		Tables struct {
			Sessions map[string]FeedbackRow `json:"sessions"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: not DSH's message feedback: %w", path, err)
	}
	if doc.Unit.Name != "message_feedback" || doc.Unit.Version == nil || *doc.Unit.Version != 0 {
		return nil, fmt.Errorf(`%s: not DSH's message feedback: want unit {"name":"message_feedback","version":0}`, path)
	}
	return doc.Tables.Sessions, nil
}

// FeedbackID is the id of the feedback event for one revision of one
// message's feedback; the bridge plugin gives the event it pushes the same
// id. A new rating or note is a new version, so a new event: the newest
// counts (learn/retro).
func FeedbackID(sessionID, messageID, version string) string {
	return "dsh:" + sessionID + ":feedback:" + messageID + ":" + version
}

// FeedbackEvents maps one session's row to feedback events, one per item,
// in the order of their last change: rating "down" (negative) or "up"
// (positive), the note as text, at the item's updatedAt. workspace is the
// session's (the row's cwd when empty). An item that is not DSH's shape
// (no message id or version, another rating) is skipped and named in the
// error, the others are kept.
func FeedbackEvents(sessionID, workspace string, row FeedbackRow) ([]events.Event, error) {
	if workspace == "" {
		workspace = row.Session.Cwd
	}
	var out []events.Event
	var bad []string
	for i, it := range row.Items {
		rating := map[string]string{"negative": "down", "positive": "up"}[it.Rating]
		if rating == "" || it.MessageID == "" || it.Version == "" {
			bad = append(bad, fmt.Sprintf("item %d (message %q, rating %q, version %q)", i, it.MessageID, it.Rating, it.Version))
			continue
		}
		p := events.FeedbackPayload{Rating: rating, Text: cut(strings.TrimSpace(it.Note), events.MaxSummary), MessageID: it.MessageID}
		out = append(out, events.Event{
			ID: FeedbackID(sessionID, it.MessageID, it.Version), Type: events.Feedback, SessionID: sessionID,
			Workspace: workspace, Time: time.UnixMilli(max(it.UpdatedAt, it.CreatedAt)).UTC(), Payload: marshal(p),
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	if bad != nil {
		return out, fmt.Errorf("session %s: message feedback not in DSH's format: %s", sessionID, strings.Join(bad, "; "))
	}
	return out, nil
}
