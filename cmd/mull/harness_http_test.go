package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/internal/testwait"
	"github.com/mullhq/mull/learn/harness"
)

// do sends a request (body nil: none) and returns the status and the body.
func (p *serveProc) do(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(testwait.Context(t), method, p.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := ledgerHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s %s: %v", p.name, method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s %s: %v", p.name, method, path, err)
	}
	return resp.StatusCode, out
}

// call sends a request, wants the status and decodes the answer into out
// (nil: not decoded); it returns the raw answer.
func (p *serveProc) call(t *testing.T, method, path string, body any, want int, out any) []byte {
	t.Helper()
	code, b := p.do(t, method, path, body)
	if code != want {
		t.Fatalf("%s %s %s: %d %s, want %d", p.name, method, path, code, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s %s: %v in %s", p.name, method, path, err, b)
		}
	}
	return b
}

// push posts events to POST /v1/events.
func (p *serveProc) push(t *testing.T, evs ...events.Event) {
	t.Helper()
	p.call(t, http.MethodPost, "/v1/events", map[string]any{"events": evs}, http.StatusOK, nil)
}

// harnessWS is the workspace of every harness test session.
const harnessWS = "/p/harness"

// sessionEvent is an event of session, numbered n (its id and its time,
// a second apart).
func sessionEvent(session string, n int, typ events.Type, payload string) events.Event {
	return events.Event{ID: fmt.Sprintf("%s-%d", session, n), Type: typ, SessionID: session, Workspace: harnessWS,
		Time: time.Now().UTC().Truncate(time.Second).Add(time.Duration(n-1000) * time.Second), Payload: json.RawMessage(payload)}
}

// startSession makes session known: its start and a user message.
func (p *serveProc) startSession(t *testing.T, session string) {
	t.Helper()
	p.push(t, sessionEvent(session, 0, events.SessionStart, `{"title":"harness test"}`),
		sessionEvent(session, 1, events.UserMessage, `{"text":"make the deploy script idempotent","source":"user"}`))
}

// turnEnds are turn_end events from..to-1 of session (ids from 100).
func turnEnds(session string, from, to int) []events.Event {
	var evs []events.Event
	for n := from; n < to; n++ {
		evs = append(evs, sessionEvent(session, 100+n, events.TurnEnd, fmt.Sprintf(`{"turn":%d,"reason":"completed"}`, n+1)))
	}
	return evs
}

// edit is one edit as the API takes it (a map, so a test can send what
// harness.Edit would not: a bogus blast_radius, a missing field).
type edit = map[string]any

// applyResp is POST /v1/admin/harness/apply's 200 answer.
type applyResp struct {
	Refinement harness.Refinement `json:"refinement"`
	Pending    string             `json:"pending_proposal"`
}

// applyOpts are an apply's other fields.
type applyOpts struct {
	automatic bool
	baseline  map[string]int
}

// apply posts a proposal of edits to the session's store ("": global)
// and returns the refinement.
func (p *serveProc) apply(t *testing.T, session string, o applyOpts, edits ...edit) harness.Refinement {
	t.Helper()
	body := map[string]any{"proposal": map[string]any{"summary": "acceptance", "edits": edits}}
	if session != "" {
		body["session"] = session
	}
	if o.automatic {
		body["automatic"] = true
	}
	if o.baseline != nil {
		body["baseline"] = o.baseline
	}
	var out applyResp
	p.call(t, http.MethodPost, "/v1/admin/harness/apply", body, http.StatusOK, &out)
	if len(out.Refinement.Edits) != len(edits) {
		t.Fatalf("apply of %d edits: refinement %+v records %d", len(edits), out.Refinement, len(out.Refinement.Edits))
	}
	return out.Refinement
}

// mustApply applies edits and fails unless every one applied.
func (p *serveProc) mustApply(t *testing.T, session string, edits ...edit) harness.Refinement {
	t.Helper()
	ref := p.apply(t, session, applyOpts{}, edits...)
	for _, e := range ref.Edits {
		if !e.Applied {
			t.Fatalf("setup edit %s %s/%s rejected: %s", e.Action, e.Kind, e.ID, e.Error)
		}
	}
	return ref
}

// entryResp is GET /v1/admin/harness/entries/{id}'s answer.
type entryResp struct {
	Entry    harnesses.EntryView `json:"entry"`
	Versions []harnesses.Version `json:"versions"`
}

// entry reads an entry of the session's store with every version; ok is
// false when it is not found (404).
func (p *serveProc) entry(t *testing.T, session string, kind harness.Kind, id string) (entryResp, bool) {
	t.Helper()
	q := url.Values{"kind": {string(kind)}, "versions": {"1"}}
	if session != "" {
		q.Set("session", session)
	}
	code, b := p.do(t, http.MethodGet, "/v1/admin/harness/entries/"+url.PathEscape(id)+"?"+q.Encode(), nil)
	switch code {
	case http.StatusNotFound:
		return entryResp{}, false
	case http.StatusOK:
	default:
		t.Fatalf("%s get entry %s/%s: %d %s", p.name, kind, id, code, b)
	}
	var out entryResp
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("entry %s/%s: %v in %s", kind, id, err, b)
	}
	return out, true
}

// mustEntry reads an entry that must exist.
func (p *serveProc) mustEntry(t *testing.T, session string, kind harness.Kind, id string) entryResp {
	t.Helper()
	e, ok := p.entry(t, session, kind, id)
	if !ok {
		t.Fatalf("entry %s/%s of session %q: not found", kind, id, session)
	}
	return e
}

// reviews lists a session's review rows, newest first.
func (p *serveProc) reviews(t *testing.T, session string) []harnesses.ReviewRow {
	t.Helper()
	var out struct {
		Reviews []harnesses.ReviewRow `json:"reviews"`
	}
	p.call(t, http.MethodGet, "/v1/admin/harness/reviews?session="+url.QueryEscape(session), nil, http.StatusOK, &out)
	return out.Reviews
}

// waitReviews polls until the session has at least n review rows (the
// test's deadline bounds it) and returns them.
func (p *serveProc) waitReviews(t *testing.T, session string, n int) []harnesses.ReviewRow {
	t.Helper()
	deadline := time.Now().Add(testwait.Patience(t))
	for {
		rs := p.reviews(t, session)
		if len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s has %d review rows, want %d: %+v", session, len(rs), n, rs)
		}
		<-time.After(50 * time.Millisecond)
	}
}

// history lists the refinements of a session's store and the global one.
func (p *serveProc) history(t *testing.T, session string) []harnesses.RefinementView {
	t.Helper()
	var out struct {
		Refinements []harnesses.RefinementView `json:"refinements"`
	}
	p.call(t, http.MethodGet, "/v1/admin/harness/refinements?limit=1000&session="+url.QueryEscape(session), nil, http.StatusOK, &out)
	return out.Refinements
}

// refine enqueues a manual refine of the session's store and returns the
// answer (job_id, duplicate).
func (p *serveProc) refine(t *testing.T, session, instruction string) refineResp {
	t.Helper()
	var out refineResp
	p.call(t, http.MethodPost, "/v1/admin/harness/refine", map[string]any{"session": session, "instruction": instruction},
		http.StatusAccepted, &out)
	if out.JobID == 0 {
		t.Fatalf("refine of %s: no job id", session)
	}
	return out
}

// refineStatus is GET /v1/harness/refine/{job_id}'s answer.
type refineStatus struct {
	JobID      int64                     `json:"job_id"`
	State      rivertype.JobState        `json:"state"`
	Attempt    int                       `json:"attempt"`
	Review     *harnesses.ReviewRow      `json:"review"`
	Refinement *harnesses.RefinementView `json:"refinement"`
	Errors     []string                  `json:"errors"`
}

// refineResp is the 202 of a refine.
type refineResp struct {
	JobID     int64 `json:"job_id"`
	Duplicate bool  `json:"duplicate"`
}

// waitRefine polls GET /v1/harness/refine/{job_id}?session= (the
// session that enqueued the job) until the job is finalized and returns
// its status.
func (p *serveProc) waitRefine(t *testing.T, session string, jobID int64) refineStatus {
	t.Helper()
	deadline := time.Now().Add(testwait.Patience(t))
	for {
		var st refineStatus
		p.call(t, http.MethodGet, fmt.Sprintf("/v1/harness/refine/%d?session=%s", jobID, url.QueryEscape(session)), nil, http.StatusOK, &st)
		switch st.State {
		case rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("refine_review job %d still %s at attempt %d: %v", jobID, st.State, st.Attempt, st.Errors)
		}
		<-time.After(50 * time.Millisecond)
	}
}
