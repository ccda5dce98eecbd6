package benchcell

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/bench"
)

// The caps of the evidence a DSH run gives (learn/bench's: the judge
// reads it, the run's record keeps it).
const (
	MaxSummary     = 2000 // runes of the summary
	MaxItems       = 50   // actions, observations
	MaxItem        = 2000 // runes of an action
	ObservationRun = 400  // runes of a tool result's head an observation keeps
	MaxLog         = 256 << 10
)

// SessionEvidence maps a DSH session log (session.jsonl, or .jsonl.zstd)
// to a cell's evidence:
//
//   - completed: DSH exited 0 (exitOK);
//   - summary: the last assistant text (or, when the agent wrote none, how
//     its turn ended), at most MaxSummary runes;
//   - actions: each tool call, "tool args" (bash's command, other tools'
//     JSON arguments), at most MaxItems;
//   - observations: each tool result's head ("tool: output", "failed" when
//     it did), at most MaxItems; the turn's error when it ended in one;
//   - the log itself, its rows as a JSON array of at most MaxLog bytes,
//     the tail kept when it is longer (where the run ended).
//
// The rows are read with dshlog, the importer's reader: a half-written
// last line is left out; a log that is not a DSH session log is an error.
func SessionEvidence(path string, exitOK bool) (Outcome, error) {
	r, err := dshlog.Open(path, dshlog.Pos{})
	if err != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: err}
	}
	defer r.Close()
	m := dshlog.NewMapper(dshlog.State{})
	var rows [][]byte
	var evs []events.Event
	for {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: fmt.Errorf("read the session log: %w", err)}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		got, err := m.Map(line)
		if err != nil {
			return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: fmt.Errorf("session log: %w", r.Corrupt(err))}
		}
		evs = append(evs, got...)
		rows = append(rows, bytes.Clone(line))
	}
	if len(rows) == 0 {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: errors.New("the session log is empty")}
	}
	return Outcome{Evidence: evidence(evs, exitOK), Log: tailArray(rows, MaxLog)}, nil
}

// evidence maps a session's events.
func evidence(evs []events.Event, exitOK bool) bench.Evidence {
	ev := bench.Evidence{Completed: exitOK, Actions: []string{}, Observations: []string{}}
	ended := "the session log has no turn end"
	for _, e := range evs {
		switch e.Type {
		case events.AssistantMessage:
			var p events.MessagePayload
			if json.Unmarshal(e.Payload, &p) == nil && p.Text != "" {
				ev.Summary = p.Text
			}
		case events.ToolResult:
			var p events.ToolResultPayload
			if json.Unmarshal(e.Payload, &p) != nil {
				continue
			}
			ev.Actions = appendCapped(ev.Actions, p.Tool+" "+p.Command, MaxItem)
			head := p.Tool + ": " + p.Output
			if p.IsError {
				head = p.Tool + " failed: " + p.Output
			}
			ev.Observations = appendCapped(ev.Observations, head, ObservationRun)
		case events.TurnEnd:
			var p events.TurnEndPayload
			if json.Unmarshal(e.Payload, &p) == nil {
				ended = "the turn ended: " + p.Reason
				if p.Error != "" {
					ended += ": " + p.Error
					ev.Observations = appendCapped(ev.Observations, "turn ended in error: "+p.Error, ObservationRun)
				}
			}
		}
	}
	if ev.Summary == "" {
		ev.Summary = "DSH wrote no assistant text; " + ended
	}
	ev.Summary = cutRunes(ev.Summary, MaxSummary)
	return ev
}

func appendCapped(list []string, s string, runes int) []string {
	if len(list) >= MaxItems {
		return list
	}
	return append(list, cutRunes(s, runes))
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// tailArray is rows as a JSON array of at most max bytes: the last rows
// that fit, whole (a cut row would not be JSON).
func tailArray(rows [][]byte, max int) json.RawMessage {
	size, first := 2, len(rows)
	for first > 0 {
		n := len(rows[first-1]) + 1
		if size+n > max {
			break
		}
		size += n
		first--
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, r := range rows[first:] {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']')
}
