package dshlog

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/mullhq/mull/events"
)

// usageState is what the usage and title rules carry from row to row,
// saved with the rest of State.
type usageState struct {
	// Provider and Model are the agent's route from the last request/context
	// row (or assistant message), for usage chunks, which do not name it.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// UsageStep is the "turn.step" whose usage was mapped last: DSH writes
	// each step's usage twice (the usage chunk, then the assistant/message's
	// copy), and mull keeps one.
	UsageStep string `json:"usage_step,omitempty"`
}

// UsageID is the id of a step's usage event: one per model response, keyed
// by its turn and step, since DSH writes the same usage on two rows. The
// bridge plugin (usageId) derives the same id from either row.
func UsageID(sessionID string, turn, step int) string {
	return "dsh:" + sessionID + ":usage:" + strconv.Itoa(turn) + "." + strconv.Itoa(step)
}

// dshUsage is DSH's usage object (dsh-llm-deepseek's mapUsage).
type dshUsage struct {
	InputTokens     int64  `json:"inputTokens"`
	OutputTokens    int64  `json:"outputTokens"`
	CacheReadTokens int64  `json:"cacheReadTokens"`
	ReasoningTokens *int64 `json:"reasoningTokens"`
}

// usageChunk is an assistant/chunk row, read only for its usage.
type usageChunk struct {
	Turn  int `json:"turn"`
	Step  int `json:"step"`
	Chunk struct {
		Type  string    `json:"type"`
		Usage *dshUsage `json:"usage"`
	} `json:"chunk"`
}

// usageMessage is the part of assistant/message the usage rule reads.
type usageMessage struct {
	Turn    int `json:"turn"`
	Step    int `json:"step"`
	Message struct {
		Source struct {
			Provider string `json:"provider"`
			Model    string `json:"model"`
		} `json:"source"`
	} `json:"message"`
	Usage *dshUsage `json:"usage"`
}

// requestContext is request/context: the route the agent's requests take.
type requestContext struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
}

// titleRow is session/title.
type titleRow struct {
	Title  string `json:"title"`
	Source struct {
		Kind string `json:"kind"`
	} `json:"source"`
}

// mapUsageRows maps the rows only the usage and title rules read:
// assistant/chunk (its usage chunk), request/context and session/title.
func (m *Mapper) mapUsageRows(r row, seq int64) ([]events.Event, error) {
	switch r.Type {
	case "assistant/chunk":
		var d usageChunk
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		if d.Chunk.Type != "usage" || d.Chunk.Usage == nil {
			return nil, nil
		}
		return m.usage(r, seq, d.Turn, d.Step, *d.Chunk.Usage), nil
	case "request/context":
		var d requestContext
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		m.setRoute(d.Provider, d.Model)
	case "session/title":
		var d titleRow
		if err := decode(r.Data, &d); err != nil {
			return nil, err
		}
		title := strings.TrimSpace(d.Title)
		if title == "" {
			return nil, nil
		}
		p := events.SessionTitlePayload{Title: cut(title, events.MaxTitle), Source: label(d.Source.Kind)}
		return []events.Event{m.event(events.SessionTitle, seq, "", r.Time, p)}, nil
	}
	return nil, nil
}

// messageUsage is the usage an assistant/message row carries, unless its
// step's usage chunk gave it already.
func (m *Mapper) messageUsage(r row, seq int64) []events.Event {
	var d usageMessage
	if json.Unmarshal(r.Data, &d) != nil || d.Usage == nil {
		return nil // the message's own decode reports a bad row
	}
	m.setRoute(d.Message.Source.Provider, d.Message.Source.Model)
	return m.usage(r, seq, d.Turn, d.Step, *d.Usage)
}

func (m *Mapper) setRoute(provider, model string) {
	if model = label(model); model != "" {
		m.Provider, m.Model = label(provider), model
	}
}

// usage is the step's usage event, once per step. Counts out of range
// (which mull would refuse, failing the whole import) are clamped to 0.
func (m *Mapper) usage(r row, seq int64, turn, step int, u dshUsage) []events.Event {
	key := strconv.Itoa(turn) + "." + strconv.Itoa(step)
	if turn > 0 && step > 0 && key == m.UsageStep {
		return nil
	}
	m.UsageStep = key
	p := events.UsagePayload{
		Model: m.Model, Provider: m.Provider, InputTokens: tokens(u.InputTokens),
		CacheReadTokens: tokens(u.CacheReadTokens), OutputTokens: tokens(u.OutputTokens),
		Turn: max(turn, 0), Step: max(step, 0),
	}
	if u.ReasoningTokens != nil {
		n := min(tokens(*u.ReasoningTokens), p.OutputTokens)
		p.ReasoningTokens = &n
	}
	e := m.event(events.Usage, seq, "usage", r.Time, p)
	if turn > 0 && step > 0 {
		e.ID = UsageID(m.SessionID, turn, step)
	}
	return []events.Event{e}
}

func tokens(n int64) int64 {
	if n < 0 || n > events.MaxTokens {
		return 0
	}
	return n
}

// label is s if mull takes it as a one-line name, else "": a bad model
// name or request id must not fail a whole import.
func label(s string) string {
	if events.CheckName(s, events.MaxName) != "" {
		return ""
	}
	return s
}

// failureDetail is the HTTP status and request id of a provider failure,
// kept on the error event when they are valid.
func failureDetail(f *failure) (status int, requestID string) {
	if f == nil {
		return 0, ""
	}
	if f.Status >= 100 && f.Status <= 599 {
		status = f.Status
	}
	if events.CheckName(f.RequestID, events.MaxIDLen) == "" {
		requestID = f.RequestID
	}
	return status, requestID
}
