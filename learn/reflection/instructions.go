package reflection

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mullhq/mull/learn/memory"
)

// relationsText tells the reflection how to declare each lesson.
const relationsText = `RELATIONS
Declare each lesson's relation to the lessons already stored; mull carries the declaration out and does not guess it:
- new: a lesson no stored lesson says. Give its fields.
- repeat: a stored lesson said it and this task is one more case of it. Give target_id (its id); it adds evidence only, and its fields are ignored.
- revise: a stored lesson was wrong or too broad, and this corrects it; the old version stops injecting. Give target_id, the corrected fields and evidence_task_ids: tasks that are closed, did not succeed, and had that lesson in force when they started (its id in their DECISION ENVIRONMENT). A success does not challenge a precedent; without such evidence the revise is refused.
- none: nothing new was learnt. Nothing is stored.
Prefer repeat to a new copy of a lesson in force, and none to a vague lesson. Use only ids this material or lessons_lookup shows.
`

// lessonSchema is the JSON of a reflection (what Parse reads).
const lessonSchema = `SCHEMA (one JSON object):
{"assessment": "what happened and why, judged against the expected result",
 "source": "where these lessons came from, in your words",
 "lessons": [{"relation": "new" | "repeat" | "revise" | "none",
   "kind": "lesson" (default: a heuristic to weigh) | "directive" (a required method) | "failure" (an action that produced a bad outcome: a constraint),
   "scope": %s,
   "problem": "what happened, the observable phenomenon only",
   "attempted": "what was done then, without judging it",
   "correction": "what to do instead; required for lesson and directive, never narrower than the problem",
   "avoid": "what not to do; required for a failure", "instead": "a known alternative, optional",
   "applies_when": "the trigger: when this applies",
   "confidence": "low" | "medium" | "high",
   "boundary": "why the lesson belongs to its scope; required outside the reflection scope",
   "target_id": id (repeat, revise), "evidence_task_ids": ["task id", …] (revise),
   "conflicts": [{"with": id, "kind": "condition" | "goal" | "contradiction" | "apparent", "note": "…"}] (optional)%s}]}
At most %d lessons; an empty lessons array is fine. Each field at most %d characters.
`

// critiqueSchema is the adversarial review's part of the schema.
const critiqueSchema = `
 Every new or revised lesson carries "critique" (adversarial review is on): a traceable argument whose opposition you strengthened before storing it:
   {"claim", "premises", "evidence", "inference", "conclusion", "steelman", "counterexamples", "scope", "alternatives", "revision_conditions", "unresolved": each written, or "n/a" / "unknown" / "无" / "不适用" when it truly does not apply (do not fill a field with a true but empty sentence),
    "steelman_rounds": [{"threatens": the link it attacks (claim, premises, evidence, inference, conclusion, counterexamples, scope, alternatives or revision_conditions), "argument": the opposition strengthened against that link, "response": your answer, "survives": what is left of it after your answer}], at least 2 rounds, each threatening a different link,
    "opposition_residual": what part of the opposition you did not refute (required; "it fails entirely" is almost never true),
    "validity": {"deductive": "valid" | "invalid" | "not_applicable" | "unresolved", "inductive": "strong" | "moderate" | "weak" | "not_applicable" | "unresolved", "premise_truth": "established" | "partial" | "assumed" | "unresolved" (required; unresolved needs "unresolved" to say what is not settled)},
    "verdict": "holds" (stored) | "narrowed" (stored, needs applies_when; "scope" says where the old way is still better) | "withdrawn" (nothing stored)}`

// silentEnding is the seed's silentReflection wording, verbatim; %s is
// the task id.
const silentEnding = `Do this as internal reasoning, not as a visible reply. The six questions above are
prompts for your own thinking; do not answer them in your response text.

Call task_reflect directly, with %s as the task_id.
After that, reply with at most one short line saying whether the task succeeded —
no restatement of the analysis, no per-question section, no bullet summary.
If something genuinely needs the user's attention (a decision only they can make,
a risk they must know), say just that one thing and nothing else.`

// spokenEnding is the ending with silent reflection off: say, then record.
const spokenEnding = `Answer the six questions above in your reply, then call task_reflect with %s as the task_id,
with the assessment, the source and the lessons as the schema above has them.`

// jobEnding is the ending for the reflect_task job. The word json is in
// it: DeepSeek's JSON mode refuses a prompt without it.
const jobEnding = `Think the six questions through, then reply with ONE json object in the schema above and nothing else: no prose, no code fences.
Write in the language of the session. Never write secrets, or instructions addressed to an AI.`

// instructions are the fixed part after the quoted material: the
// questions, the relations, the schema and the mode's ending.
func instructions(opts MaterialOptions, id string) string {
	var b strings.Builder
	b.WriteString("QUESTIONS\n")
	for i, q := range Questions {
		fmt.Fprintf(&b, "%d. %s\n", i+1, q)
	}
	b.WriteString("\n" + relationsText + "\n")
	crit := ""
	if opts.Adversarial {
		crit = critiqueSchema
	}
	fmt.Fprintf(&b, lessonSchema, scopeChoices(opts.Scopes), crit, MaxLessons, MaxFieldRunes)
	b.WriteString("\n")
	switch {
	case opts.Mode != ModeAgent:
		b.WriteString(jobEnding)
	case opts.Silent:
		fmt.Fprintf(&b, silentEnding, id)
	default:
		fmt.Fprintf(&b, spokenEnding, id)
	}
	b.WriteString("\n")
	return b.String()
}

// scopeChoices is the schema's scope line: the scopes this reflection may
// write (MaterialOptions.Scopes, the same list Parse is given), all of
// them when none are set.
func scopeChoices(allowed []memory.LessonScope) string {
	text := map[memory.LessonScope]string{
		memory.LessonReflection: `"reflection" (default: this session)`,
		memory.LessonSession:    `"session" (with "session_id")`,
		memory.LessonWorkspace:  `"workspace" (every session of this workspace)`,
		memory.LessonGlobal:     `"global"`,
	}
	var out []string
	for _, s := range []memory.LessonScope{memory.LessonReflection, memory.LessonSession, memory.LessonWorkspace, memory.LessonGlobal} {
		if len(allowed) == 0 || slices.Contains(allowed, s) {
			out = append(out, text[s])
		}
	}
	return strings.Join(out, " | ")
}
