package dshlog

import (
	"encoding/json"
	"strings"
)

// row is one line of a session log: the header (line 1) or an event row.
// Packed streaming rows (text-chunks, reasoning-chunks, tool-call-chunks)
// have seq0 instead of seq, and are skipped: assistant/message holds the
// finished text.
type row struct {
	Type string          `json:"type"`
	Seq  *int64          `json:"seq"`
	Time int64           `json:"time"`
	Data json.RawMessage `json:"data"`

	// Header fields.
	ID              string `json:"id"`
	CreatedAt       int64  `json:"createdAt"`
	Cwd             string `json:"cwd"`
	DelegationDepth int    `json:"delegationDepth"`
	// ParentSession: the session a subagent child (or a fork) was started
	// from; SeedLength: how many leading rows it inherited from it.
	ParentSession string `json:"parentSession"`
	SeedLength    int64  `json:"seedLength"`
}

// block is one part of a message's content.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// tool-result blocks
	ToolCallID string  `json:"toolCallId"`
	Content    []block `json:"content"`
	IsError    bool    `json:"isError"`
}

type message struct {
	ID      string  `json:"id"`
	Role    string  `json:"role"`
	Content []block `json:"content"`
	Source  struct {
		Kind   string `json:"kind"`
		Plugin string `json:"plugin"`
		Form   string `json:"form"`
		CallID string `json:"callId"`
	} `json:"source"`
}

// texts joins the message's blocks of one type ("text" or "reasoning"),
// skipping the rest.
func texts(blocks []block, typ string) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == typ && strings.TrimSpace(b.Text) != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

type turnStart struct {
	Turn int `json:"turn"`
}

type assistantMessage struct {
	Turn    int     `json:"turn"`
	Message message `json:"message"`
}

type toolCall struct {
	Turn      int             `json:"turn"`
	CallID    string          `json:"callId"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type toolResult struct {
	Turn    int     `json:"turn"`
	Message message `json:"message"`
	Error   *struct {
		Name string `json:"name"`
		Code string `json:"code"`
	} `json:"error"`
}

type failure struct {
	Message string `json:"message"`
	Code    string `json:"code"`
	// Status and RequestID: the provider's HTTP status and x-request-id.
	Status    int    `json:"status"`
	RequestID string `json:"requestId"`
}

type turnEnd struct {
	Turn   int `json:"turn"`
	Reason struct {
		Kind  string   `json:"kind"`
		Error *failure `json:"error"`
		// Why an aborted turn stopped; shape not pinned down by DSH.
		Reason json.RawMessage `json:"reason"`
	} `json:"reason"`
}

type feedbackRecord struct {
	Text   string `json:"text"`
	Rating string `json:"rating"`
}

// argString is a tool call's arguments: DSH writes them as a string holding
// JSON; an object is taken as is.
func argString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}
