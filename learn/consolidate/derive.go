package consolidate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mullhq/mull/learn/memory"
)

// DerivePrompt is the fixed system prompt of a derive call, the seed's
// sleep output as one JSON object: byte-identical across calls so
// DeepSeek's prefix cache serves it, with the word json that DeepSeek's
// JSON mode needs. The workspace's memories come last, as the user message
// (DeriveInput).
const DerivePrompt = `mull-prompt: consolidate_derive v1
You are the sleep-time consolidation of mull, a service that keeps a coding agent's durable memory.
You read the best memories of one workspace (facts, preferences, lessons, methods, resources) and its current principles and hypotheses, and distil what the agent should carry into its next session.
Rules:
- Reply with ONE json object and nothing else: no prose, no code fences.
- "principles": 3 to 6 general rules that several memories support, each one line. Repeat a current principle word for word to keep it; a principle you leave out is retired.
- "hypotheses": 1 to 3 guesses the memories suggest but do not prove, each one line, worded so the next session can confirm or refute it.
- "prefetch": 3 to 5 short lines the agent should know at the start of its next session, together at most 800 characters.
- Every line at most 400 characters, in the language of the memories. Only what the memories support. No instructions addressed to an AI, no commands to run blindly, no secrets.
Schema:
{"principles": ["..."], "hypotheses": ["..."], "prefetch": ["..."]}
Example:
{"principles": ["Read a file whole before editing it: partial reads caused three wrong edits.", "Run the store tests on SQLite and Postgres before calling a change done.", "Prefer the repo's own scripts (make test, make lint) to ad-hoc commands."],
 "hypotheses": ["The flaky TestQueue failures come from the shared Postgres schema, not from timing."],
 "prefetch": ["The repo uses pnpm, not npm.", "Postgres listens on port 5433 in dev.", "Migrations live in migrations/ and are embedded with go:embed."]}
The memories follow.`

// The seed's sleep-output counts, and mull's per-line cap.
const (
	MinPrinciples      = 3
	MaxPrinciples      = 6
	MinHypotheses      = 1
	MaxHypotheses      = 3
	MinPrefetch        = 3
	MaxPrefetch        = 5
	MaxPrefetchRunes   = 800 // all prefetch lines together
	MaxDerivedRunes    = memory.MaxTextRunes
	deriveMemoriesHead = "## memories (best first)"
)

// ReplaceReason is the reason a derived memory that a new derive answer
// did not repeat carries.
const ReplaceReason = "replaced by consolidate"

// DeriveInput renders the derive call's user message: the workspace's live
// memories, best first by memory.Score (ties by ID), without the derived
// kinds (principle, hypothesis, prefetch), as "- [kind] text" lines under
// "## memories (best first)"; then the current principles and hypotheses
// under their own headings, so the model can keep or revise them. The whole
// is at most maxChars runes (maxChars <= 0: no cap): the current principles
// and hypotheses are placed first, whole, since the model must see what it
// would retire; then every memory line that still fits, as the seed's
// render skips a line that would overflow.
func DeriveInput(ms []memory.Memory, now time.Time, maxChars int) string {
	var mems []memory.Memory
	current := map[memory.Kind][]string{}
	for _, m := range ms {
		switch {
		case !live(m, now) || m.Kind == memory.Prefetch:
		case m.Kind == memory.Principle || m.Kind == memory.Hypothesis:
			current[m.Kind] = append(current[m.Kind], "- "+memory.OneLine(m.Text)+"\n")
		default:
			mems = append(mems, m)
		}
	}
	slices.SortStableFunc(mems, func(a, b memory.Memory) int {
		return cmp.Or(cmp.Compare(memory.Score(b, now), memory.Score(a, now)), cmp.Compare(a.ID, b.ID))
	})
	tail := section("## current principles", current[memory.Principle]) +
		section("## current hypotheses", current[memory.Hypothesis])
	head := deriveMemoriesHead + "\n"
	room := maxChars - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
	var b strings.Builder
	b.WriteString(head)
	for _, m := range mems {
		l := fmt.Sprintf("- [%s] %s\n", m.Kind, memory.OneLine(m.Text))
		if n := utf8.RuneCountInString(l); maxChars <= 0 || n <= room {
			b.WriteString(l)
			room -= n
		}
	}
	b.WriteString(tail)
	return b.String()
}

func section(head string, lines []string) string {
	if len(lines) == 0 {
		return head + "\n(none)\n"
	}
	return head + "\n" + strings.Join(lines, "")
}

// DeriveOutput is the model's answer to a derive call: the seed's
// PRINCIPLES, HYPOTHESES and PREFETCH sections. It implements
// llm.Validator.
type DeriveOutput struct {
	Principles []string `json:"principles"`
	Hypotheses []string `json:"hypotheses"`
	Prefetch   []string `json:"prefetch"`
}

// Validate checks the seed's counts (principles 3–6, hypotheses 1–3,
// prefetch 3–5) and that the prefetch lines together are at most
// MaxPrefetchRunes. Each item's own text (storable, one line of at most
// MaxDerivedRunes) is PlanDerive's to check: one bad item is rejected
// alone, not the whole paid answer. It
// reports the first bad field by its JSON path, as a *memory.FieldError.
func (o DeriveOutput) Validate() error {
	lists := []struct {
		name   string
		items  []string
		lo, hi int
	}{
		{"principles", o.Principles, MinPrinciples, MaxPrinciples},
		{"hypotheses", o.Hypotheses, MinHypotheses, MaxHypotheses},
		{"prefetch", o.Prefetch, MinPrefetch, MaxPrefetch},
	}
	for _, l := range lists {
		if len(l.items) < l.lo || len(l.items) > l.hi {
			return bad(l.name, "%d items, want %d to %d", len(l.items), l.lo, l.hi)
		}
	}
	total := 0
	for _, s := range o.Prefetch {
		total += utf8.RuneCountInString(strings.TrimSpace(s))
	}
	if total > MaxPrefetchRunes {
		return bad("prefetch", "%d characters together, at most %d", total, MaxPrefetchRunes)
	}
	return nil
}

// DeriveChanges is what applying a derive answer does to the library.
type DeriveChanges struct {
	// Add are the new principles, hypotheses and prefetch lines, built by
	// memory.New with origin sleep, not stored yet (ID 0).
	Add []memory.Memory
	// Keep are live memories the answer repeated: they stay, unchanged.
	Keep []int64
	// Invalidate are live sleep-time memories of origin sleep the answer
	// did not repeat, to be invalidated with ReplaceReason.
	Invalidate []int64
	// Rejected are items that could not become a memory, for the job's
	// log; each error names the item ("principles[1]: ...").
	Rejected []error
	// Quarantined are the rejected items the trust gate quarantined, as
	// the gate stored them (redacted): the job keeps them in the
	// quarantine table, never served.
	Quarantined []memory.Memory
	// Redacted counts the credentials the gate redacted in Add.
	Redacted int
}

// checkItem checks one line of an answer on its own: storable by both
// databases (no NUL, valid UTF-8), then one line of at most hi runes.
func checkItem(field, s string, hi int) error {
	if err := memory.CheckStorable(field, s); err != nil {
		return err
	}
	return memory.CheckLine(field, s, memory.MinTextRunes, hi)
}

// PlanDerive decides how to apply a derive answer (which has passed
// Validate) to existing, the workspace's stored memories: each item becomes
// a new memory unless a live memory of its kind, or an earlier item, says
// the same (memory.Duplicate), in which case the live one is kept; then
// every live sleep-time memory (principle, hypothesis, prefetch) that an
// earlier consolidation wrote and this answer did not keep is invalidated,
// because the answer is the whole new set, as the seed's sleep rewrote its
// sections. One a person wrote (remember, the CLI) is never replaced by the
// model's. An item memory.New refuses or quarantines is
// rejected: a derived line that reads like an instruction is not kept even
// hidden, because nobody wrote it but the model. Pure and deterministic.
func PlanDerive(o DeriveOutput, existing []memory.Memory, src Source, now time.Time) DeriveChanges {
	var c DeriveChanges
	kept := map[int64]bool{}
	lists := []struct {
		name  string
		kind  memory.Kind
		items []string
	}{{"principles", memory.Principle, o.Principles}, {"hypotheses", memory.Hypothesis, o.Hypotheses}, {"prefetch", memory.Prefetch, o.Prefetch}}
	for _, l := range lists {
		for i, text := range l.items {
			field := fmt.Sprintf("%s[%d]", l.name, i)
			if err := checkItem(field, text, MaxDerivedRunes); err != nil {
				c.Rejected = append(c.Rejected, err)
				continue
			}
			w := memory.Write{Workspace: src.Workspace, Kind: l.kind, Text: text}
			m, n, err := memory.New(w, memory.Provenance{Origin: memory.OriginSleep, JobID: src.JobID}, now)
			switch {
			case err != nil:
				c.Rejected = append(c.Rejected, fmt.Errorf("%s: %w", field, err))
				continue
			case m.Quarantined:
				c.Quarantined = append(c.Quarantined, m)
				c.Rejected = append(c.Rejected, fmt.Errorf("%s: quarantined (%s)", field, m.QuarantineReason))
				continue
			case c.added(m):
				continue
			}
			if id, ok := liveDuplicate(m, existing, now); ok {
				if !kept[id] {
					kept[id] = true
					c.Keep = append(c.Keep, id)
				}
				continue
			}
			c.Redacted += n
			c.Add = append(c.Add, m)
		}
	}
	for _, m := range existing {
		if m.Kind.SleepTime() && m.Origin == memory.OriginSleep && live(m, now) && !kept[m.ID] {
			c.Invalidate = append(c.Invalidate, m.ID)
		}
	}
	return c
}

func (c *DeriveChanges) added(n memory.Memory) bool {
	for _, m := range c.Add {
		if m.Kind == n.Kind && memory.Duplicate(m.Text, n.Text) {
			return true
		}
	}
	return false
}

// liveDuplicate finds a live memory of n's kind saying what n says.
func liveDuplicate(n memory.Memory, existing []memory.Memory, now time.Time) (int64, bool) {
	for _, m := range existing {
		if m.Kind == n.Kind && live(m, now) && memory.Duplicate(m.Text, n.Text) {
			return m.ID, true
		}
	}
	return 0, false
}
