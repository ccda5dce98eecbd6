package dshlog

import (
	"encoding/json"
	"strings"

	"github.com/mullhq/mull/events"
)

// dshUsage is DSH's usage object (dsh-llm-deepseek's mapUsage).
type dshUsage struct {
	InputTokens     int64  `json:"inputTokens"`
	OutputTokens    int64  `json:"outputTokens"`
	CacheReadTokens int64  `json:"cacheReadTokens"`
	ReasoningTokens *int64 `json:"reasoningTokens"`
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

// titleRow is session/title.
type titleRow struct {
	Title  string `json:"title"`
	Source struct {
		Kind string `json:"kind"`
	} `json:"source"`
}

// messageUsage is the usage event of an assistant/message row: DSH writes a
// step's usage twice, as the usage chunk and as this copy, and the copy is
// the one that names the model and needs nothing from earlier rows (an
// import resumed mid-file has no earlier rows). Counts out of range, which
// mull would refuse and so fail the whole batch, are zeroed.
func (m *Mapper) messageUsage(r row, seq int64) []events.Event {
	var d usageMessage
	if json.Unmarshal(r.Data, &d) != nil || d.Usage == nil {
		return nil // the message's own decode reports a bad row
	}
	u := d.Usage
	p := events.UsagePayload{
		Model: label(d.Message.Source.Model), Provider: label(d.Message.Source.Provider),
		InputTokens: tokens(u.InputTokens), CacheReadTokens: tokens(u.CacheReadTokens), OutputTokens: tokens(u.OutputTokens),
		Turn: max(d.Turn, 0), Step: max(d.Step, 0),
	}
	if u.ReasoningTokens != nil {
		n := min(tokens(*u.ReasoningTokens), p.OutputTokens)
		p.ReasoningTokens = &n
	}
	return []events.Event{m.event(events.Usage, seq, "usage", r.Time, p)}
}

// title is the session_title event of a session/title row.
func (m *Mapper) title(r row, seq int64) ([]events.Event, error) {
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
