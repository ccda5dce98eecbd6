package refinereview

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/harnesses"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// maxEvents bounds the session events a review reads: the trajectory is
// tail-biased and capped at harness.max_trajectory_chars (12,000 by
// default), which far fewer events fill.
const maxEvents = 2000

// material is what one job's calls read, loaded once before the first
// call: both calls see the same bytes, and the baseline is the store as
// the planner saw it.
type material struct {
	in harness.MaterialInput
	// Baseline is the target store before the calls (rule 6's baseline).
	Baseline harness.State
	Route    harness.Route
}

// load reads the session's events into the trajectory, the harness the
// model is shown (the session's merged view, or the global store for a
// refine without a session), the target store's baseline and the recent
// refinements.
func (w *Worker) load(ctx context.Context, a Args) (material, error) {
	m := material{in: harness.MaterialInput{Trigger: a.Trigger}}
	var err error
	if m.Baseline, err = w.Harness.State(ctx, a.Scope()); err != nil {
		return m, fmt.Errorf("read the harness baseline of %s: %w", a.Scope().Key(), err)
	}
	if m.Baseline == nil {
		m.Baseline = harness.State{} // nil would mean "the store now" to ApplyTx
	}
	if a.Session == "" {
		m.in.State = m.Baseline
	} else if m.in.State, err = w.Harness.Merged(ctx, a.Session); err != nil {
		return m, fmt.Errorf("read the harness of session %s: %w", a.Session, err)
	}
	// The session's local refinements and the global ones, or the global
	// ones alone for a refine without a session; as many as the prompt shows.
	f := harnesses.HistoryFilter{Session: a.Session, Limit: harness.HistoryInPrompt}
	if a.Session == "" {
		f.Scope = "global"
	}
	hist, err := w.Harness.History(ctx, f)
	if err != nil {
		return m, fmt.Errorf("read the refinement history: %w", err)
	}
	for _, r := range slices.Backward(hist) { // oldest first, as the seed lists them
		m.in.History = append(m.in.History, r.Refinement)
	}
	if a.Session == "" {
		return m, nil
	}
	evs, err := w.Store.EventsBySeq(ctx, w.Store.DB, a.Session, 0, math.MaxInt64, maxEvents)
	if err != nil {
		return m, err
	}
	turns, cacheReads := Turns(evs)
	m.in.Trajectory, m.Route = harness.Trajectory(harness.TrajectoryInput{Turns: turns, MaxChars: w.Config.MaxTrajectoryChars,
		SignalRatio: w.Config.TrajectorySignalRatio, CacheReads: cacheReads})
	return m, nil
}

// Turns maps a session's stored events to the trajectory's turns, in
// order, and sums the prompt cache hits of its usage events (the seed's
// route A is taken when the session's own prefix was warm). Events the
// trajectory has no use for (session and task bookkeeping, files seen,
// titles) are left out, and so is an event whose payload does not parse.
func Turns(evs []store.Event) (turns []harness.Turn, cacheReads int64) {
	for _, e := range evs {
		if events.Type(e.Type) == events.Usage {
			var u events.UsagePayload
			if json.Unmarshal(e.Payload, &u) == nil {
				cacheReads += u.CacheReadTokens
			}
			continue
		}
		if t, ok := turn(e); ok {
			turns = append(turns, t)
		}
	}
	return turns, cacheReads
}

func turn(e store.Event) (harness.Turn, bool) {
	t := harness.Turn{At: e.Time, Type: e.Type}
	var ok bool
	switch events.Type(e.Type) {
	case events.UserMessage, events.AssistantMessage:
		var p events.MessagePayload
		ok = json.Unmarshal(e.Payload, &p) == nil && strings.TrimSpace(p.Text) != ""
		t.Text = p.Text
	case events.ToolResult:
		var p events.ToolResultPayload
		ok = json.Unmarshal(e.Payload, &p) == nil
		t.Text, t.Failed = toolText(p), p.IsError
	case events.Error:
		var p events.ErrorPayload
		ok = json.Unmarshal(e.Payload, &p) == nil
		t.Text, t.Failed = joinNonEmpty(": ", p.Code, p.Message), true
	case events.Feedback:
		var p events.FeedbackPayload
		ok = json.Unmarshal(e.Payload, &p) == nil
		t.Text = joinNonEmpty(": ", "rating "+p.Rating, p.Text)
	case events.TurnEnd:
		var p events.TurnEndPayload
		ok = json.Unmarshal(e.Payload, &p) == nil
		t.Text = joinNonEmpty(": ", fmt.Sprintf("turn %d %s", p.Turn, p.Reason), p.Error)
		t.Failed = p.Reason == "error"
	case events.CompactionEnd:
		ok, t.Text = true, "context compacted"
	}
	return t, ok
}

// toolText is a tool call as one line: the tool, its command, how it
// ended, its output.
func toolText(p events.ToolResultPayload) string {
	head := joinNonEmpty(" ", p.Tool, p.Command)
	var end []string
	if p.ExitCode != nil {
		end = append(end, fmt.Sprintf("exit %d", *p.ExitCode))
	}
	if p.ErrorCode != "" {
		end = append(end, p.ErrorCode)
	}
	if p.IsError && len(end) == 0 {
		end = append(end, "failed")
	}
	if len(end) > 0 {
		head += " (" + strings.Join(end, ", ") + ")"
	}
	return joinNonEmpty(": ", head, strings.TrimSpace(p.Output))
}

func joinNonEmpty(sep string, parts ...string) string {
	parts = slices.DeleteFunc(parts, func(s string) bool { return strings.TrimSpace(s) == "" })
	return strings.Join(parts, sep)
}
