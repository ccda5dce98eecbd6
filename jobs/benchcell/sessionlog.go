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
// It reads in one pass and holds no more than the evidence's caps and the
// log's tail: a long session is not kept whole in memory first.
func SessionEvidence(path string, exitOK bool) (Outcome, error) {
	r, err := dshlog.Open(path, dshlog.Pos{})
	if err != nil {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: err}
	}
	defer r.Close()
	m := dshlog.NewMapper(dshlog.State{})
	ev := newEvidence(exitOK)
	log := &tail{max: MaxLog}
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
		for _, e := range got {
			ev.add(e)
		}
		log.add(line)
	}
	if log.seen == 0 {
		return Outcome{}, &Failure{Reason: bench.DSHFailed, Err: errors.New("the session log is empty")}
	}
	return Outcome{Evidence: ev.done(), Log: log.array()}, nil
}

// evidenceOf folds a session's events, one at a time, into the evidence.
type evidenceOf struct {
	ev    bench.Evidence
	ended string
}

func newEvidence(exitOK bool) *evidenceOf {
	return &evidenceOf{ev: bench.Evidence{Completed: exitOK, Actions: []string{}, Observations: []string{}},
		ended: "the session log has no turn end"}
}

func (b *evidenceOf) add(e events.Event) {
	ev := &b.ev
	switch e.Type {
	case events.AssistantMessage:
		var p events.MessagePayload
		if json.Unmarshal(e.Payload, &p) == nil && p.Text != "" {
			ev.Summary = cutRunes(p.Text, MaxSummary)
		}
	case events.ToolResult:
		var p events.ToolResultPayload
		if json.Unmarshal(e.Payload, &p) != nil {
			return
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
			b.ended = "the turn ended: " + p.Reason
			if p.Error != "" {
				b.ended += ": " + p.Error
				ev.Observations = appendCapped(ev.Observations, "turn ended in error: "+p.Error, ObservationRun)
			}
		}
	}
}

// done is the evidence; a session with no assistant text says how its
// turn ended instead.
func (b *evidenceOf) done() bench.Evidence {
	if b.ev.Summary == "" {
		b.ev.Summary = cutRunes("DSH wrote no assistant text; "+b.ended, MaxSummary)
	}
	return b.ev
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

// tail keeps the last rows of a log that fit, whole, in a JSON array of
// at most max bytes, dropping the oldest as rows come: where the run
// ended is what matters, and a cut row would not be JSON.
type tail struct {
	max  int
	rows [][]byte
	// size is the array's length in bytes: the brackets, each row and one
	// separator per row (one more than the array needs).
	size int
	seen int
}

func (t *tail) add(row []byte) {
	t.seen++
	t.rows = append(t.rows, bytes.Clone(row))
	t.size += len(row) + 1
	for len(t.rows) > 0 && 2+t.size > t.max {
		t.size -= len(t.rows[0]) + 1
		t.rows[0] = nil // let the dropped row go
		t.rows = t.rows[1:]
	}
}

// array is the rows kept, as a JSON array.
func (t *tail) array() json.RawMessage {
	out := make([]byte, 0, 2+t.size)
	out = append(out, '[')
	for i, r := range t.rows {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']')
}

// tailArray is rows as a JSON array of at most max bytes: the last rows
// that fit, whole.
func tailArray(rows [][]byte, max int) json.RawMessage {
	t := &tail{max: max}
	for _, r := range rows {
		t.add(r)
	}
	return t.array()
}
