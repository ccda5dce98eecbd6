package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mullhq/mull/llm/fakeds"
)

// The labels the fake gives a refine_review's two calls, by what they ask
// for: the review's {approved, rationale} or the planner's {id, summary,
// edits}. A script rule answers one by its Kind.
const (
	callReview = "refine_review/review"
	callPlan   = "refine_review/plan"
)

// harnessFake is fakeds behind a handler that labels each refine_review
// call (callReview, callPlan) in the X-Mull-Job-Kind header the script's
// rules match, counts the calls, reports them as they arrive and as they
// are answered, and can hold planner calls until the test releases them.
type harnessFake struct {
	fake              *fakeds.Server
	arrived, answered chan string

	mu    sync.Mutex
	asked map[string]int
	hold  chan struct{}
}

func newHarnessFake() *harnessFake {
	return &harnessFake{fake: fakeds.New(fakeds.Options{KeepAliveEvery: 50 * time.Millisecond}),
		arrived: make(chan string, 256), answered: make(chan string, 256), asked: map[string]int{}}
}

// answer scripts the replies: the review's and the planner's (nil: the
// default responder's), each answered every time.
func (f *harnessFake) answer(t *testing.T, review, plan any) {
	t.Helper()
	var rules []fakeds.Rule
	for _, a := range []struct {
		kind  string
		reply any
	}{{callReview, review}, {callPlan, plan}} {
		if a.reply == nil {
			continue
		}
		b, err := json.Marshal(a.reply)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, fakeds.Rule{Kind: a.kind, Response: &fakeds.Response{Content: string(b)}})
	}
	if err := f.fake.SetScript(&fakeds.Script{Rules: rules}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.asked)
	f.drain()
}

// drain drops the reports of earlier calls.
func (f *harnessFake) drain() {
	for {
		select {
		case <-f.arrived:
		case <-f.answered:
		default:
			return
		}
	}
}

// holdPlans makes planner calls wait until release.
func (f *harnessFake) holdPlans() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = make(chan struct{})
}

// release lets the held planner calls go on, and later ones through.
func (f *harnessFake) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hold != nil {
		close(f.hold)
		f.hold = nil
	}
}

// calls is how many calls of the label reached the fake since answer.
func (f *harnessFake) calls(label string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[label]
}

func (f *harnessFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	label := r.Header.Get("X-Mull-Job-Kind")
	if label == "refine_review" {
		label = refineCall(body)
		r.Header.Set("X-Mull-Job-Kind", label)
	}
	f.mu.Lock()
	f.asked[label]++
	hold := f.hold
	f.mu.Unlock()
	f.arrived <- label
	if label == callPlan && hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	f.fake.ServeHTTP(w, r)
	if r.Context().Err() == nil {
		f.answered <- label
	}
}

// refineCall tells a refine_review's review call from its planner call by
// the answer format its last message ends with: the two share their system
// prompt and material (DeepSeek's prefix cache), only the ask, last,
// differs, so the format named last is the call's.
func refineCall(body []byte) string {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		return "refine_review"
	}
	ask := req.Messages[len(req.Messages)-1].Content
	plan, review := strings.LastIndex(ask, `"edits"`), strings.LastIndex(ask, `"approved"`)
	switch {
	case plan > review:
		return callPlan
	case review > plan:
		return callReview
	}
	return "refine_review"
}

// reviewAnswer is a review call's reply.
func reviewAnswer(approved bool, rationale string) map[string]any {
	return map[string]any{"approved": approved, "rationale": rationale}
}

// planAnswer is a planner call's reply.
func planAnswer(summary string, edits ...map[string]any) map[string]any {
	if edits == nil {
		edits = []map[string]any{}
	}
	return map[string]any{"id": "refine_planned", "summary": summary, "edits": edits}
}

// waitCall waits until a call of the label reaches the fake.
func (f *harnessFake) waitCall(t *testing.T, label string) {
	t.Helper()
	waitSignal(t, f.arrived, label)
}
