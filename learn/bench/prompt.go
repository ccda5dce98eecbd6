package bench

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/learn/trust"
)

// ExecutorSystem is the executor phase's system prompt, the seed's
// EXECUTOR_SYSTEM_PROMPT verbatim. It holds no rubric: the executor must
// not be able to aim at the judge's criteria.
const ExecutorSystem = `You are the executor of a benchmark cell. Complete the statement against the harness state overview, then report structured evidence of what you did.

You only see the statement and the harness state — no scoring rubric.

Respond with ONLY a JSON object:
{"completed":true|false,"summary":"one line","actions":["..."],"observations":["..."],"artifacts":[{"name":"...","content":"..."}]}`

// JudgeSystem is the judge phase's system prompt, the seed's
// REVIEWER_SYSTEM_PROMPT verbatim.
const JudgeSystem = `You are the reviewer of one benchmark cell. Given the statement, the rubric, and the executor's evidence, score the executor's completion on a 0..100 scale and give one concrete piece of actionable feedback.

Respond with ONLY a JSON object:
{"score":82,"feedback":"specific improvement"}`

// NoMemory stands for the memory side's empty digest, so the executor is
// told there is none rather than shown an empty section.
const NoMemory = "(no memory)"

// ExecutorPrompt is the executor's user prompt (the seed's
// buildExecutorPrompt): the case's statement and what the side is shown,
// nothing else. A harness snapshot is shown as the seed's overview
// (harness.Overview, the port of src/render.ts overviewForPrompt, every
// entry through the render-time gate); a memory snapshot as its digest,
// or NoMemory. The statement and the digest pass the render-time gate too
// (gateBlock, gateDigest): the store may hold anything.
func ExecutorPrompt(c Case, s Snapshot) string {
	head := []string{"# Benchmark case", gateBlock(c.Statement), ""}
	if s.Kind == MemorySnapshot {
		return strings.Join(append(head, "# Memory (captured snapshot)", gateDigest(s.Digest)), "\n")
	}
	return strings.Join(append(head, "# Harness state overview (captured snapshot)", harness.Overview(s.Entries)), "\n")
}

// JudgePrompt is the judge's user prompt (the seed's buildReviewerPrompt):
// the statement, the rubric and this cell's evidence as JSON indented by
// two spaces, nothing else (not the snapshot: the judge scores what was
// done, blind to which side did it). Every evidence text passes the
// gate first (GateEvidence): the executor may have copied anything it was
// shown into its report.
func JudgePrompt(c Case, ev Evidence) string {
	return strings.Join([]string{
		"# Benchmark case",
		gateBlock(c.Statement),
		"",
		"# Rubric",
		gateBlock(c.Rubric),
		"",
		"# Executor evidence",
		evidenceJSON(GateEvidence(ev)),
	}, "\n")
}

// evidenceJSON is JSON.stringify(evidence, null, 2): the seed's key order
// (the struct's), no HTML escaping, arrays never null.
func evidenceJSON(ev Evidence) string {
	ev.Actions, ev.Observations = nonNil(ev.Actions), nonNil(ev.Observations)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ev); err != nil {
		// Strings and booleans always encode.
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// GateEvidence passes every text of ev through the write-time gate
// (trust.Check): credentials redacted, and a text that reads as an
// instruction to an agent replaced by harness.Hidden. The jobs store what
// it returns and the judge reads it, so an executor echoing an injection
// it was shown reaches neither the store nor the judge.
func GateEvidence(ev Evidence) Evidence {
	out := Evidence{Completed: ev.Completed, Summary: GateText(ev.Summary)}
	for _, s := range ev.Actions {
		out.Actions = append(out.Actions, GateText(s))
	}
	for _, s := range ev.Observations {
		out.Observations = append(out.Observations, GateText(s))
	}
	for _, a := range ev.Artifacts {
		out.Artifacts = append(out.Artifacts, Artifact{Name: GateText(a.Name), Content: GateText(a.Content)})
	}
	out.Actions, out.Observations = nonNil(out.Actions), nonNil(out.Observations)
	return out
}

// GateText is one model-written text (evidence, a judge's feedback)
// through trust.Check: the redacted text, or harness.Hidden when the gate
// quarantines it.
func GateText(s string) string {
	if s == "" {
		return ""
	}
	v := trust.Check(s)
	if v.Quarantined {
		return harness.Hidden
	}
	return v.Text
}

// gateBlock is a stored multi-line text as a prompt shows it: the gate on
// the whole (harness.Hidden when withheld), then each line neutralized so
// it cannot open a heading, quote or fence that would pass for one of the
// prompt's own sections. Unlike trust.Block it keeps blank lines and
// indentation: a statement's layout is part of the task.
func gateBlock(s string) string {
	v := trust.Check(s)
	if v.Quarantined {
		return harness.Hidden
	}
	lines := strings.Split(v.Text, "\n")
	for i, l := range lines {
		lines[i] = trust.Neutralize(l)
	}
	return strings.Join(lines, "\n")
}

// gateDigest is a memory snapshot's digest as the executor is shown it.
// The digest is mull's own rendering (its headings and notes are the
// renderer's fixed lines, every stored text in it already gated at
// render), so it is gated line by line: a fixed line is kept as written,
// any other line through trust.Check, a withheld one replaced by
// harness.Hidden. Gating it whole would quarantine it, since its fixed
// lines are exactly what a forged digest would imitate.
func gateDigest(d string) string {
	if strings.TrimSpace(d) == "" {
		return NoMemory
	}
	return GateDigest(d)
}

// GateDigest gates a rendered digest line by line, as gateDigest says:
// the renderer's fixed lines kept, any other line through trust.Check, a
// quarantined one replaced by harness.Hidden. The executor's prompt and
// the DSH plugin's benchmark injection both use it; gating a real digest
// whole would withhold it every time.
func GateDigest(d string) string {
	lines := strings.Split(d, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" || trust.FixedLine(l) {
			continue
		}
		v := trust.Check(l)
		if v.Quarantined {
			lines[i] = harness.Hidden
		} else {
			lines[i] = v.Text
		}
	}
	return strings.Join(lines, "\n")
}
