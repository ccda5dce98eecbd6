package dshlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/events"
)

// MaxEventsPerRow is the most events one row maps to (turn/end with an
// error gives turn_end and error), for callers sizing batches.
const MaxEventsPerRow = 2

// SessionStartID is the id of a session's session_start event.
func SessionStartID(sessionID string) string { return "dsh:" + sessionID + ":session_start" }

// Call is a tool call waiting for its result.
type Call struct {
	Tool    string `json:"tool"`
	Command string `json:"command,omitempty"`
}

// State is everything a Mapper carries from one row to the next. Saved with
// a Pos, it lets a later Mapper resume mid-file.
type State struct {
	// SessionID and Workspace come from the header; empty before it.
	SessionID string `json:"session_id"`
	Workspace string `json:"workspace"`
	// Turn is the turn in progress (from turn/start), for user messages.
	Turn int `json:"turn"`
	// LastSeq is the highest row seq mapped, -1 before the first row.
	LastSeq int64 `json:"last_seq"`
	// Calls are tool calls seen without their results yet, by callId.
	Calls map[string]Call `json:"calls,omitempty"`
	// SeedLength: rows with a lower seq are the parent's history a forked
	// session inherited (header seedLength), mapped in the parent's log.
	SeedLength int64 `json:"seed_length,omitempty"`
}

// Mapper maps the rows of one session log, in order, to mull events.
type Mapper struct {
	State
}

// NewMapper starts mapping at a saved state; the zero State starts a file.
func NewMapper(s State) *Mapper {
	if s.SessionID == "" {
		s.LastSeq = -1
	}
	return &Mapper{State: s}
}

// Map maps one line. A line that is not valid JSON, a first line that is
// not a session header, or a known row whose data does not fit DSH's format
// is an error, and leaves the state as it was.
func (m *Mapper) Map(line []byte) ([]events.Event, error) {
	if len(strings.TrimSpace(string(line))) == 0 {
		return nil, nil
	}
	var r row
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("bad JSON: %w", err)
	}
	if m.SessionID == "" {
		return m.header(r)
	}
	if r.Seq == nil {
		return nil, nil // packed streaming rows, a repeated header
	}
	if *r.Seq < m.SeedLength {
		m.LastSeq = max(m.LastSeq, *r.Seq)
		return nil, nil // inherited: the parent's log has these rows
	}
	evs, err := m.mapRow(r, *r.Seq)
	if err != nil {
		return nil, fmt.Errorf("seq %d %s: %w", *r.Seq, r.Type, err)
	}
	m.LastSeq = max(m.LastSeq, *r.Seq)
	return evs, nil
}

func (m *Mapper) header(r row) ([]events.Event, error) {
	if r.Type != "session" || r.ID == "" {
		return nil, errors.New(`not a DSH session log: line 1 is not a {"type":"session","id":…} header`)
	}
	m.SessionID, m.Workspace, m.LastSeq, m.SeedLength = r.ID, r.Cwd, -1, max(r.SeedLength, 0)
	primary := r.DelegationDepth == 0
	e := m.event(events.SessionStart, 0, "", r.CreatedAt, events.SessionStartPayload{Primary: &primary, Parent: r.ParentSession})
	e.ID = SessionStartID(m.SessionID)
	return []events.Event{e}, nil
}

func (m *Mapper) mapRow(r row, seq int64) ([]events.Event, error) {
	switch r.Type {
	case "session/title":
		return m.title(r, seq)
	case "turn/start":
		var d turnStart
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		m.Turn = d.Turn
	case "user/message":
		var d message
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		return m.userMessage(r, seq, d), nil
	case "assistant/message":
		var d assistantMessage
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		usage := m.messageUsage(r, seq)
		text, reasoning := texts(d.Message.Content, "text"), texts(d.Message.Content, "reasoning")
		if text == "" && reasoning == "" {
			return usage, nil
		}
		p := events.MessagePayload{Text: cut(text, events.MaxText), Turn: d.Turn, MessageID: d.Message.ID,
			Reasoning: cut(reasoning, events.MaxReasoning)}
		return append([]events.Event{m.event(events.AssistantMessage, seq, "", r.Time, p)}, usage...), nil
	case "tool/call":
		var d toolCall
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		if m.Calls == nil {
			m.Calls = map[string]Call{}
		}
		m.Calls[d.CallID] = Call{Tool: d.Name, Command: cut(command(d.Name, argString(d.Arguments)), events.MaxText)}
	case "tool/result":
		var d toolResult
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		return []events.Event{m.toolResult(r, seq, d)}, nil
	case "turn/end":
		var d turnEnd
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		return m.turnEnd(r, seq, d), nil
	case "compaction/end":
		var d struct {
			Error json.RawMessage `json:"error"`
		}
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		if len(d.Error) > 0 && string(d.Error) != "null" {
			return nil, nil
		}
		return []events.Event{m.event(events.CompactionEnd, seq, "", r.Time, events.CompactionEndPayload{})}, nil
	case "feedback/record":
		var d feedbackRecord
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		return []events.Event{m.feedbackRecord(r, seq, d)}, nil
	}
	return nil, nil
}

// feedbackRecord maps DSH's /feedback: free text, which DSH records without
// a rating, and mull does not guess one from the words. A rating DSH may
// add later ("up", "down") is kept. The 👍/👎 on a message live elsewhere
// (MessageFeedback).
func (m *Mapper) feedbackRecord(r row, seq int64, d feedbackRecord) events.Event {
	p := events.FeedbackPayload{Rating: "none", Text: cut(strings.TrimSpace(d.Text), events.MaxSummary)}
	if d.Rating == "up" || d.Rating == "down" {
		p.Rating = d.Rating
	}
	return m.event(events.Feedback, seq, "", r.Time, p)
}

func (m *Mapper) userMessage(r row, seq int64, d message) []events.Event {
	kind := d.Source.Kind
	if (kind != "user" && kind != "plugin") || d.Source.Form == "recall" {
		return nil
	}
	text := texts(d.Content, "text")
	if text == "" {
		return nil
	}
	p := events.MessagePayload{Text: cut(text, events.MaxText), Source: kind, Turn: m.Turn}
	return []events.Event{m.event(events.UserMessage, seq, "", r.Time, p)}
}

func (m *Mapper) toolResult(r row, seq int64, d toolResult) events.Event {
	callID := d.Message.Source.CallID
	var res block
	if len(d.Message.Content) > 0 {
		res = d.Message.Content[0]
		if callID == "" {
			callID = res.ToolCallID
		}
	}
	call, ok := m.Calls[callID]
	delete(m.Calls, callID)
	if !ok || call.Tool == "" {
		call.Tool = "unknown" // a result whose call this log does not hold
	}
	output := texts(res.Content, "text")
	p := events.ToolResultPayload{
		CallID: callID, Tool: call.Tool, Command: call.Command, IsError: res.IsError,
		Output: cut(output, events.MaxOutput), Turn: d.Turn,
	}
	if code, ok := exitCode(output); ok {
		p.ExitCode = &code
		p.IsError = p.IsError || code != 0
	} else if call.Tool == "bash" && !res.IsError {
		zero := 0 // DSH marks only non-zero exits
		p.ExitCode = &zero
	}
	if d.Error != nil {
		p.ErrorCode = d.Error.Code
	}
	return m.event(events.ToolResult, seq, "", r.Time, p)
}

func (m *Mapper) turnEnd(r row, seq int64, d turnEnd) []events.Event {
	p := events.TurnEndPayload{Turn: d.Turn, Reason: d.Reason.Kind}
	switch d.Reason.Kind {
	case "completed", "max-tokens":
	case "error":
		if d.Reason.Error != nil {
			p.Error = cut(d.Reason.Error.Message, events.MaxText)
		}
	default: // "aborted", and kinds newer than this importer
		p.Reason = "aborted"
		if why := argString(d.Reason.Reason); why != "" && why != "null" {
			p.Error = cut(why, events.MaxText)
		}
	}
	out := []events.Event{m.event(events.TurnEnd, seq, "", r.Time, p)}
	if p.Reason == "error" {
		e := events.ErrorPayload{Message: p.Error, Turn: d.Turn}
		if d.Reason.Error != nil {
			e.Code = d.Reason.Error.Code
		}
		e.Status, e.RequestID = failureDetail(d.Reason.Error)
		if strings.TrimSpace(e.Message) == "" {
			e.Message = "the turn ended in an error (" + e.Code + ")"
		}
		out = append(out, m.event(events.Error, seq, "error", r.Time, e))
	}
	return out
}

func (m *Mapper) event(t events.Type, seq int64, suffix string, ms int64, payload any) events.Event {
	return events.Event{
		ID: events.DSHID(m.SessionID, seq, suffix), Type: t, SessionID: m.SessionID, Workspace: m.Workspace,
		Time: time.UnixMilli(ms).UTC(), Payload: marshal(payload),
	}
}

func decode(data json.RawMessage, v any) error {
	if len(data) == 0 {
		return errors.New("no data")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}

// command is what a tool call ran: bash's command line, else the arguments.
func command(tool, args string) string {
	if tool == "bash" {
		var a struct {
			Command string `json:"command"`
		}
		if json.Unmarshal([]byte(args), &a) == nil && a.Command != "" {
			return a.Command
		}
	}
	return args
}

var exitMarker = regexp.MustCompile(`\[exit code: (-?\d+)\]\s*$`)

// exitCode reads the "[exit code: N]" DSH's bash appends to failed runs.
func exitCode(output string) (int, bool) {
	m := exitMarker.FindStringSubmatch(output)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// marshal encodes a payload without escaping <, > and & (tool output is
// full of them) so that stored payloads read as they were written.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("dshlog: encode %T: %v", v, err)) // payload structs always encode
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
