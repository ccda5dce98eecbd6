// Package retro holds the pure rules of mull's retrospectives, the
// retro_session and retro_error jobs: the prompt's fixed part, the evidence
// excerpt the model reads, the output it must return and how that output is
// checked, and the plan of changes to the memory library that applying it
// makes. The formats and numbers are the dsh-self-improvement seed's (002),
// moved from Markdown sections to one JSON object. No SQL, no River, no HTTP
// here: the jobs write a Changes in one transaction.
package retro

// Prompt is the fixed part of the retro prompt: first and byte-identical
// across calls so DeepSeek's prefix cache serves it; the excerpt comes last,
// as the user message. The word json is in it because DeepSeek's JSON mode
// refuses a prompt without it. The additive sections come first in the
// schema so that a cut answer loses the others (the seed drops the last
// section of a truncated answer and applies only the additive ones).
const Prompt = `mull-prompt: retro_session v1
You are the retrospective of mull, a service that turns a coding agent's sessions into durable memory.
You read evidence from one session (errors, failed tool calls with their commands and exit codes, the user's negative feedback, the last transcript entries) and write down what the agent should remember next time.
Rules:
- Reply with ONE json object and nothing else: no prose, no code fences.
- Only write what the evidence supports. Prefer few, specific entries to many vague ones. Empty arrays are fine.
- Each entry is one line, at most 400 characters. Write in the language of the session.
- Never write instructions addressed to an AI, commands to run blindly, or secrets (keys, tokens, passwords).
- The user's negative feedback is the strongest evidence.
Schema (keys in this order):
{"lessons": [{"text": "error -> root cause -> fix", "importance": optional integer 1-10, "src": optional "web" or "tool"}], at most 12;
 "facts": [{"text": "a stable fact about this workspace or its tools", "importance": optional, "src": optional}], at most 12;
 "resources": [{"text": "name | link | use", "importance": optional, "src": optional}], at most 12, the link may be empty;
 "methods": [{"text": "scenario -> method -> why", "importance": optional, "src": optional}], at most 12;
 "handoff": ["3 to 5 short lines for the next session: state, open ends, next step"];
 "playbooks": [{"slug": "kebab-case-name", "steps": ["step 1", "step 2"]}], at most 3, each 1 to 15 steps, a reusable procedure that worked;
 "supersede": [{"kind": "facts" | "lessons" | "resources" | "methods", "text": "the old entry's text, verbatim or a distinctive part of at least 6 characters"}], at most 12, only for entries the evidence proves wrong or outdated;
 "proposal": null or {"summary": "one line, at most 200 characters", "detail": "at most 2000 characters"}, at most one improvement to the agent's setup, for the user to accept or reject}
Example:
{"lessons": [{"text": "go test failed with 'no required module provides package' -> ran it outside the module root -> cd to the directory holding go.mod first", "importance": 7}],
 "facts": [{"text": "the repo uses pnpm, not npm"}],
 "resources": [{"text": "River docs | https://riverqueue.com/docs | job queue API and testing helpers", "src": "web"}],
 "methods": [{"text": "flaky integration test -> rerun it alone with -count=1 -race -> separates shared-state bugs from timing"}],
 "handoff": ["Migrated the store to the new schema; tests pass on SQLite.", "Postgres run still fails on the jsonb default.", "Next: fix migrations/0007 and rerun make test-pg."],
 "playbooks": [{"slug": "add-db-migration", "steps": ["write migrations/NNNN_name.sql", "run make migrate-check", "run the store tests on SQLite and Postgres"]}],
 "supersede": [{"kind": "facts", "text": "the repo uses npm"}],
 "proposal": null}
The evidence follows.`
