package memory

import (
	"time"

	"github.com/mullhq/mull/learn/trust"
)

// Write is what a writer (the agent's remember tool, a job, an operator) may
// say about a new memory. Origin, times, TTL and quarantine are mull's to set,
// so they are not here: a caller cannot claim them.
type Write struct {
	Workspace  string `json:"workspace"`
	Kind       Kind   `json:"kind"`
	Text       string `json:"text"`
	Importance int    `json:"importance,omitempty"`
	Src        Src    `json:"src,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
}

// Provenance is what mull knows about the path that wrote a memory.
type Provenance struct {
	Origin       Origin
	JobID        int64
	PromotedFrom string
	// By is who writes, when a person or an agent does (an actor of the
	// store: "admin (panel)", "admin (cli)", "agent"…): a write that
	// repeats a memory and vouches for it verifies it in By's name, so the
	// memory services require it there. New does not store it.
	By string
}

// New builds the memory to store from a write, the way every write path
// must: the text passes the trust gate (trust.Check: normalization,
// credential redaction, the instruction check) as written, before it is
// flattened, because the gate looks at line starts; instruction-like text
// is quarantined (kept, flagged, never shown) with the gate's reason, the
// redacted text becomes one line, and the TTL is derived from it. A text
// neither database can store (a NUL byte, invalid UTF-8) is refused before
// the gate, so nothing is stripped silently. It returns how many
// credentials were redacted, and a *FieldError when the result is not a
// valid memory.
func New(w Write, p Provenance, now time.Time) (Memory, int, error) {
	if err := CheckWrite(w); err != nil {
		return Memory{}, 0, err
	}
	m := Memory{
		Workspace:    w.Workspace,
		Kind:         w.Kind,
		Importance:   w.Importance,
		Src:          w.Src,
		Origin:       p.Origin,
		SessionID:    w.SessionID,
		JobID:        p.JobID,
		PromotedFrom: p.PromotedFrom,
		RecordedAt:   now.UTC(),
	}
	v := trust.Check(w.Text)
	m.Quarantined, m.QuarantineReason = v.Quarantined, v.Reason
	m.Text = OneLine(v.Text)
	m.TTLDays = Volatility(m.Text)
	if err := Validate(m); err != nil {
		return Memory{}, v.Redacted, err
	}
	return m, v.Redacted, nil
}

// OneLine turns text into a single trimmed line: a memory is one line in
// the digest, so an embedded newline could forge a section heading there.
func OneLine(s string) string { return trust.OneLine(s) }
