package ingest

import (
	"encoding/json"
	"time"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/store"
)

// apply folds a session's newly stored events into it and reports whether
// they ended it. The rules:
//   - counts and first/last event times cover every stored event, late ones
//     included;
//   - a session_end ends an open session (ended_at is its time, end_reason
//     its payload's reason, "ended" without one);
//   - ended is final: later events are counted, but do not reopen it and do
//     not end it again;
//   - idle was a guess: an event newer than the session's last, other than
//     a session_end, reopens it (it can then end, and run the hooks,
//     again); older events arriving late (an import catching up) leave it
//     idle, and a bare session_end only records the real end: the hooks
//     ran when it went idle;
//   - session_start sets the title and the primary flag; a session_title
//     sets the title too, except that a "fallback" title (DSH's cut of the
//     prompt) never replaces one already set.
func apply(sess *store.Session, created bool, fresh []events.Event) (ended bool) {
	if sess.Counts == nil {
		sess.Counts = map[string]int64{}
	}
	if created {
		sess.FirstEventAt, sess.LastEventAt = fresh[0].Time, fresh[0].Time
	}
	if sess.Status == store.SessionIdle && !created && newer(fresh, sess.LastEventAt) {
		sess.Status, sess.EndedAt, sess.EndReason = store.SessionOpen, nil, ""
	}
	for _, e := range fresh {
		sess.Counts[string(e.Type)]++
		sess.Events++
		if e.Time.Before(sess.FirstEventAt) {
			sess.FirstEventAt = e.Time
		}
		if e.Time.After(sess.LastEventAt) {
			sess.LastEventAt = e.Time
		}
		switch e.Type {
		case events.SessionStart:
			var p events.SessionStartPayload
			_ = json.Unmarshal(e.Payload, &p) // validated already
			if p.Title != "" {
				sess.Title = p.Title
			}
			if p.Primary != nil {
				sess.Primary = *p.Primary
			}
		case events.SessionTitle:
			applyTitle(sess, e)
		case events.SessionEnd:
			if sess.Status == store.SessionEnded {
				continue
			}
			var p events.SessionEndPayload
			_ = json.Unmarshal(e.Payload, &p)
			at := e.Time
			ended = sess.Status == store.SessionOpen
			sess.Status, sess.EndedAt, sess.EndReason = store.SessionEnded, &at, p.Reason
			if p.Reason == "" {
				sess.EndReason = "ended"
			}
		}
	}
	return ended
}

// applyTitle takes a session_title's title, unless it is DSH's fallback
// and the session has a title: the model's title may arrive first (pushed)
// and the fallback later (imported).
func applyTitle(sess *store.Session, e events.Event) {
	var p events.SessionTitlePayload
	_ = json.Unmarshal(e.Payload, &p) // validated already
	if p.Source == "fallback" && sess.Title != "" {
		return
	}
	sess.Title = p.Title
}

// newer reports whether an event other than a session_end happened after t:
// the session went on.
func newer(evs []events.Event, t time.Time) bool {
	for _, e := range evs {
		if e.Type != events.SessionEnd && e.Time.After(t) {
			return true
		}
	}
	return false
}

// earliest is the time of a session's first event in a batch.
func earliest(evs []events.Event) time.Time {
	t := evs[0].Time
	for _, e := range evs[1:] {
		if e.Time.Before(t) {
			t = e.Time
		}
	}
	return t
}
