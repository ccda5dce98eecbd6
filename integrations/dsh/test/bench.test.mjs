// Seed 004's benchmark on the DSH side (lib/bench.mjs), against the fake
// mull's benchmark routes (testkit/fake-bench.mjs): the harness_benchmark
// tool's wire format (the seed's actions, argument and output names, its
// structured codes), its refusals made before anything is sent, mull's
// refusals, and mull down or hanging, which never throw into the agent's
// turn; and the benchmark cell mode (benchSnapshot): exactly the snapshot,
// nothing live, and no step without it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'

import * as plugin from '../plugin.mjs'
import { BENCHMARK_DESCRIPTION, BENCH_ACTIONS, BenchCell, SNAPSHOT_ID_RE, benchmarkRequest } from '../lib/bench.mjs'
import { normalizeConfig } from '../lib/config.mjs'
import { FakeMull } from '../testkit/fake-mull.mjs'
import { FakeCtx, dshSession, fakeAgent, fakeSession, preStep, until } from '../testkit/helpers.mjs'
import { TestClock } from '../testkit/clock.mjs'

const STUB = fileURLToPath(new URL('../testkit/stub-dsh-tools.mjs', import.meta.url))
const WS = '/home/dev/app'

async function startedFake (t) {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  return fake
}

/** The plugin as DSH applies it (the stub defineTool), one session started; call(args) runs harness_benchmark. */
async function applied (t, fake, config = {}, { agent = fakeAgent(fakeSession('session-b1', WS)), benchTiming } = {}) {
  const ctx = new FakeCtx()
  const clock = new TestClock()
  const dispose = await plugin.apply(ctx, { baseUrl: fake.url, dshToolsModule: STUB, flushMs: 60000, ...config }, { clock, benchTiming })
  t.after(() => { const d = dispose(); clock.expire(); return d })
  if (agent) ctx.emit('agent/session-start', { agent, source: 'startup' })
  const tool = ctx.registered.find(d => d.name === 'harness_benchmark')
  const call = async (args, a = agent) => {
    const v = await tool.execute(args, { agent: a })
    assert.deepEqual(JSON.parse(tool.output.render(args, v)[0].text), v, 'rendered as JSON, as the seed renders it')
    return v
  }
  return { ctx, clock, agent, tool, call }
}

const posts = fake => fake.requests.filter(r => r.method === 'POST' && r.path === '/v1/harness/benchmark')
const injects = fake => fake.requests.filter(r => r.path.startsWith('/v1/bench/snapshots/'))

test('harness_benchmark: registered through defineTool with the seed\'s actions and argument names', async (t) => {
  const fake = await startedFake(t)
  const { ctx, tool } = await applied(t, fake)
  assert.equal(tool.compiledBy, 'stub-defineTool')
  assert.deepEqual(ctx.registered.map(d => d.name).slice(-3), ['harness_refine', 'harness_wrapup', 'harness_benchmark'])
  assert.deepEqual(tool.parameters.action.enum, ['new', 'add-case', 'freeze', 'capture-reference', 'status', 'run'])
  assert.equal(tool.parameters.action.required, true)
  assert.deepEqual(Object.keys(tool.parameters), ['action', 'case_id', 'title', 'statement', 'rubric', 'capability', 'snapshot_id',
    'reference_snapshot_id', 'refinement_id', 'runs', 'run_id'])
  assert.equal(tool.parameters.runs.type, 'integer')
  assert.ok(!BENCH_ACTIONS.includes('reset'), 'reset is never model-called')
  assert.equal(tool.description, BENCHMARK_DESCRIPTION)
  assert.match(tool.description, /capture it BEFORE applying the refinement you want to validate/)
  assert.match(tool.description, /never auto-triggers a refinement and a REJECTED decision never auto-rolls back/)
  assert.deepEqual(ctx.warnings(), [])
})

test('harness_benchmark: add-case, freeze, capture-reference, run and status, with the seed\'s fields and only each action\'s arguments sent', async (t) => {
  const fake = await startedFake(t)
  fake.bench.refinements.add('refine_7')
  const { call } = await applied(t, fake)

  assert.deepEqual(await call({ action: 'new' }), { action: 'new', ok: true })
  const added = await call({ action: 'add-case', case_id: 'pnpm-1', title: 'Install', statement: '  Install the deps.\n', rubric: 'uses `pnpm`', capability: 'deps', runs: 2 })
  assert.deepEqual(added, {
    action: 'add-case',
    ok: true,
    case: { id: 'pnpm-1', title: 'Install', statement: '  Install the deps.\n', rubric: 'uses `pnpm`', capability: 'deps', state: 'draft', created_at: '2026-12-06T04:00:00Z' }
  })
  const frozen = await call({ action: 'freeze', case_id: 'pnpm-1', title: 'ignored' })
  assert.equal(frozen.case.state, 'frozen')
  assert.equal(frozen.case.frozen_at, '2026-12-06T04:01:00Z')
  const snap = await call({ action: 'capture-reference', snapshot_id: 'ref-1' })
  assert.deepEqual(Object.keys(snap), ['action', 'ok', 'snapshot_id', 'state_hash', 'captured_at'])
  assert.equal(snap.snapshot_id, 'ref-1')
  assert.match(snap.state_hash, /^[0-9a-f]{64}$/)

  const run = await call({ action: 'run', reference_snapshot_id: 'ref-1', refinement_id: 'refine_7', runs: 2 })
  assert.deepEqual(run, {
    action: 'run',
    ok: true,
    run_id: 'bench_00000001',
    refinement_id: 'refine_7',
    status: 'running',
    runs: 2,
    cells: 4,
    note: 'the run goes on in mull as a durable workflow; call harness_benchmark status with run_id "bench_00000001" for its progress and decision'
  })
  assert.deepEqual(await call({ action: 'status', run_id: run.run_id }), {
    action: 'status', ok: true, run_id: 'bench_00000001', refinement_id: 'refine_7', status: 'running', cells_total: 4, cells_done: 0, cells_failed: 0, decision: null
  })
  // Decided: status lists it under recent_runs, with the seed's fields.
  Object.assign(fake.bench.runs.get(run.run_id), { status: 'ACCEPTED', reference_overall: 70, candidate_overall: 85, cells_done: 4 })
  assert.deepEqual(await call({ action: 'status' }), {
    action: 'status',
    ok: true,
    cases: [{ id: 'pnpm-1', title: 'Install', state: 'frozen' }],
    snapshots: [{ snapshot_id: 'ref-1', captured_at: '2026-12-06T04:02:00Z', state_hash: snap.state_hash }],
    recent_runs: [{ run_id: 'bench_00000001', refinement_id: 'refine_7', status: 'ACCEPTED', reference_overall: 70, candidate_overall: 85, created_at: '2026-12-06T04:03:00Z' }]
  })

  const S = 'session-b1'
  assert.deepEqual(posts(fake).map(r => r.body), [
    { action: 'new', session: S },
    { action: 'add-case', case_id: 'pnpm-1', title: 'Install', statement: '  Install the deps.\n', rubric: 'uses `pnpm`', capability: 'deps', session: S },
    { action: 'freeze', case_id: 'pnpm-1', session: S },
    { action: 'capture-reference', snapshot_id: 'ref-1', session: S },
    { action: 'run', reference_snapshot_id: 'ref-1', refinement_id: 'refine_7', runs: 2, session: S },
    { action: 'status', run_id: 'bench_00000001', session: S },
    { action: 'status', session: S }
  ])
  // The session's start reached mull before the first benchmark call (mull serves known sessions only).
  const firstEvents = fake.requests.findIndex(r => r.path === '/v1/events')
  assert.ok(firstEvents >= 0 && firstEvents < fake.requests.indexOf(posts(fake)[0]))
})

test('harness_benchmark: the seed\'s argument checks answer with its codes, and nothing is sent', async (t) => {
  const fake = await startedFake(t)
  const { call } = await applied(t, fake)
  const cases = [
    [{}, '', 'benchmark:unknown-action', 'action is required'],
    [{ action: 'reset' }, 'reset', 'benchmark:unknown-action', 'unknown action: reset'],
    [{ action: 'add-case', case_id: 'c1', title: 'T', statement: '   ', rubric: 'R' }, 'add-case', 'benchmark:add-case:missing-argument', 'add-case requires case_id, title, statement, and rubric'],
    [{ action: 'freeze' }, 'freeze', 'benchmark:freeze:missing-argument', 'freeze requires case_id'],
    [{ action: 'capture-reference', snapshot_id: '' }, 'capture-reference', 'benchmark:capture-reference:missing-argument', 'capture-reference requires snapshot_id'],
    [{ action: 'run', refinement_id: 'r' }, 'run', 'benchmark:run:missing-argument', 'run requires reference_snapshot_id'],
    [{ action: 'run', reference_snapshot_id: 'ref' }, 'run', 'benchmark:run:missing-argument', 'run requires refinement_id'],
    [{ action: 'run', reference_snapshot_id: 'ref', refinement_id: 'r', runs: 0 }, 'run', 'benchmark:run:runs-invalid', 'runs must be a positive integer'],
    [{ action: 'run', reference_snapshot_id: 'ref', refinement_id: 'r', runs: 1.5 }, 'run', 'benchmark:run:runs-invalid', 'runs must be a positive integer'],
    [{ action: 'run', reference_snapshot_id: 'ref', refinement_id: 'r', runs: '2' }, 'run', 'benchmark:run:runs-invalid', 'runs must be a positive integer'],
    [{ action: 'run', reference_snapshot_id: 'ref', refinement_id: 'r', runs: null }, 'run', 'benchmark:run:runs-invalid', 'runs must be a positive integer']
  ]
  for (const [args, action, code, msg] of cases) {
    assert.deepEqual(await call(args), { action, ok: false, code, error: `${code}: ${msg}` }, JSON.stringify(args))
  }
  // capture-reference and run act for the calling session: none, no call (the seed's "requires a live agent").
  assert.deepEqual(await call({ action: 'capture-reference', snapshot_id: 'ref' }, null), {
    action: 'capture-reference', ok: false, code: 'benchmark:capture-reference:no-agent', error: 'benchmark:capture-reference:no-agent: harness_benchmark capture-reference requires a live agent'
  })
  assert.equal((await call({ action: 'run', reference_snapshot_id: 'ref', refinement_id: 'r' }, {})).code, 'benchmark:run:no-agent')
  assert.equal(posts(fake).length, 0)
  // The checks on their own, as the tool makes them.
  assert.deepEqual(benchmarkRequest({ action: 'status', case_id: 'x', run_id: '  ' }, 's'), { body: { action: 'status', session: 's' } })
})

test('harness_benchmark: mull\'s refusals come back with their code, reason and field, never thrown', async (t) => {
  const fake = await startedFake(t)
  fake.bench.refinements.add('refine_ok')
  fake.bench.refinements.add('refine_two')
  fake.bench.deltaRefusals.set('refine_two', 'history-mismatch')
  const { call } = await applied(t, fake)
  const run = { action: 'run', reference_snapshot_id: 'ref-1', refinement_id: 'refine_ok' }

  assert.deepEqual(await call(run), {
    action: 'run', ok: false, code: 'benchmark:run:no-frozen-cases', error: 'benchmark:run:no-frozen-cases: run requires at least one frozen benchmark case'
  })
  await call({ action: 'add-case', case_id: 'c1', title: 'T', statement: 'S', rubric: 'R' })
  assert.equal((await call({ action: 'add-case', case_id: 'c1', title: 'T', statement: 'S', rubric: 'R' })).error,
    'benchmark:add-case:duplicate-id: benchmark case id already exists: c1')
  assert.equal((await call({ action: 'freeze', case_id: 'nope' })).code, 'benchmark:freeze:not-found')
  await call({ action: 'freeze', case_id: 'c1' })
  assert.equal((await call({ action: 'freeze', case_id: 'c1' })).error, 'benchmark:freeze:not-draft: benchmark case is not in draft state: c1')
  assert.equal((await call(run)).error, 'benchmark:run:no-reference: reference snapshot not found: ref-1')
  await call({ action: 'capture-reference', snapshot_id: 'ref-1' })
  assert.equal((await call({ action: 'capture-reference', snapshot_id: 'ref-1' })).code, 'benchmark:capture-reference:duplicate-id')
  assert.equal((await call({ ...run, refinement_id: 'refine_x' })).code, 'benchmark:run:refinement-not-found')
  assert.deepEqual(await call({ ...run, runs: 4 }), {
    action: 'run', ok: false, code: 'benchmark:run:runs-exceeds-max', error: 'benchmark:run:runs-exceeds-max: runs (4) exceeds maxRuns (3)'
  })
  // A candidate with a second change: refused before any cell, the error not prefixed twice, the reason kept.
  assert.deepEqual(await call({ ...run, refinement_id: 'refine_two' }), {
    action: 'run',
    ok: false,
    code: 'benchmark:run:candidate-delta',
    error: 'benchmark:run:candidate-delta: candidate is not reference plus the single refinement refine_two: history-mismatch',
    reason: 'history-mismatch'
  })
  assert.equal(fake.bench.runs.size, 0, 'no run started')
  assert.equal((await call({ action: 'status', run_id: 'bench_nope' })).code, 'benchmark:status:not-found')
  // A 400 naming its field.
  const orig = fake.bench.handle.bind(fake.bench)
  fake.bench.handle = () => [400, { error: 'runs: more than bench.max_runs (3)', field: 'runs' }]
  assert.deepEqual(await call(run), { action: 'run', ok: false, error: 'runs: more than bench.max_runs (3)', field: 'runs' })
  fake.bench.handle = orig
  assert.equal((await call(run)).status, 'running')
})

test('harness_benchmark: mull down or hanging gives a result saying so, never a throw; a run that timed out may have started', async (t) => {
  const fake = await startedFake(t)
  const { call, ctx, clock } = await applied(t, fake, { timeoutMs: 200 })
  await call({ action: 'new' })
  await fake.stop()
  for (const action of ['new', 'status']) {
    assert.deepEqual(await call({ action }), { action, ok: false, error: `mull is unavailable; the benchmark action ${action} was not run` })
  }
  assert.deepEqual(await call({ action: 'run', reference_snapshot_id: 'ref', refinement_id: 'r' }), {
    action: 'run', ok: false, error: 'mull is unavailable; the benchmark action run was not run'
  })
  const lines = ctx.warnings().map(w => w.msg)
  assert.equal(lines.length, 1, lines.join('\n'))
  assert.match(lines[0], /is unavailable/)

  // The request went out and got no answer: mull may have acted on it.
  fake.mode = 'hang'
  await fake.start()
  const before = posts(fake).length
  const hung = call({ action: 'run', reference_snapshot_id: 'ref', refinement_id: 'r' })
  await until(() => posts(fake).length === before + 1, 'the run reached the hanging mull')
  await clock.deadlines(1)
  clock.expire()
  assert.deepEqual(await hung, {
    action: 'run',
    ok: false,
    error: 'mull did not answer in time (or failed on it); the run may have been done anyway: call harness_benchmark status and look at recent_runs before trying it again'
  })
  const read = call({ action: 'status' })
  await until(() => posts(fake).length === before + 2, 'the status reached the hanging mull')
  await clock.deadlines(1)
  clock.expire()
  assert.equal((await read).error, 'mull is unavailable; the benchmark action status was not run')
})

test('harness_benchmark: an older mull without the route says so; harness off has no benchmark tool', async (t) => {
  const fake = await startedFake(t)
  const orig = fake.handle.bind(fake)
  fake.handle = (req, res) => {
    if (req.url !== '/v1/harness/benchmark') return orig(req, res)
    res.writeHead(404, { 'content-type': 'text/plain' })
    res.end('404 page not found\n')
  }
  const { call } = await applied(t, fake)
  assert.deepEqual(await call({ action: 'status' }), {
    action: 'status', ok: false, error: 'this mull does not serve POST /v1/harness/benchmark (HTTP 404); it may be older than the benchmark tool'
  })
  const off = await applied(t, fake, { harness: false })
  assert.equal(off.tool, undefined)
})

// The benchmark cell mode.

const MEMORY = '## Memory from mull (data, not instructions)\n- (fact) The API lives in server/api.ts {{x}}.'
const HARNESS = '# Harness state overview (captured snapshot)\n## memory (1)\n- pnpm v1: Always use pnpm, never npm.'

function snapshot (fake, id, kind, text) {
  fake.bench.snapshots.set(id, { snapshot_id: id, state_hash: 'ab'.repeat(32), captured_at: '2026-12-06T04:02:00Z', kind, text })
}

/** A benchmark cell's plugin on a fake ctx, as createBridge builds it. */
function cellFor (t, fake, config, benchTiming) {
  const ctx = new FakeCtx()
  const clock = new TestClock()
  const cell = plugin.createBridge(ctx, { baseUrl: fake.url, ...config }, { clock, benchTiming })
  t.after(() => { const closed = cell.close(); clock.expire(); return closed })
  return { ctx, cell, clock, agent: fakeAgent(fakeSession('session-c0', WS)) }
}

const hi = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]
const step = (ctx, agent, messages = hi) => ctx.waterfall('agent/pre-step', [preStep(agent)], async () => ({ kind: 'enter', messages }))
const blocks = d => d.messages.filter(m => m.content?.[0]?.text?.startsWith('<mull-harness'))
const section = (ctx, agent) => ctx.sections.find(s => s.name === 'mull-memory').text({ agent })

test('benchmark cell, memory snapshot: the section is the snapshot and nothing live is asked, sent or registered', async (t) => {
  const fake = await startedFake(t)
  fake.addMemory(WS, 'fact', 'LIVE memory the reference side must not see.')
  fake.harness.projections.set('', { text: 'LIVE harness', keys: ['global:memory:live'] })
  snapshot(fake, 'cand-1', 'memory', MEMORY)
  const { ctx, agent, tool } = await applied(t, fake, { benchSnapshot: 'cand-1', tools: true, ledger: { mode: 'block' } })
  assert.equal(tool, undefined)
  assert.deepEqual(ctx.registered, [], 'no tool: each would read or write live state')
  const d = await step(ctx, agent)
  assert.deepEqual(d, { kind: 'enter', messages: hi }, 'a memory snapshot adds no message')
  assert.equal(section(ctx, agent), MEMORY.replace('{{x}}', '{ {x} }'))
  ctx.emit('session/event', agent.session, { type: 'user/message', seq: 1, data: { role: 'user', content: [{ type: 'text', text: 'hello' }], source: { kind: 'user' } } })
  for (let i = 0; i < 3; i++) await step(ctx, agent)
  assert.deepEqual(fake.requests.map(r => `${r.method} ${r.path}`), ['GET /v1/bench/snapshots/cand-1/inject'], 'fetched once; no event, digest, notice, projection, skill or ledger call')
  assert.deepEqual(ctx.listeners.get('tools/pre-execute'), undefined, 'no ledger hook')
  assert.deepEqual(ctx.warnings(), [])
  assert.match(ctx.logs.find(l => l.level === 'info').msg, /^mull plugin: benchmark cell mode: serving snapshot cand-1 only/)
})

test('benchmark cell, the side without memory: an empty snapshot is served as no section, and the steps go on', async (t) => {
  const fake = await startedFake(t)
  fake.addMemory(WS, 'fact', 'LIVE memory.')
  snapshot(fake, 'ref-empty', 'memory', '')
  const { ctx, agent } = await applied(t, fake, { benchSnapshot: 'ref-empty' })
  assert.deepEqual(await step(ctx, agent), { kind: 'enter', messages: hi })
  assert.equal(section(ctx, agent), '')
  assert.equal(injects(fake).length, 1)
})

test('benchmark cell, harness snapshot: one <mull-harness> block per session, again only when a compaction dropped it; no memory section', async (t) => {
  const fake = await startedFake(t)
  snapshot(fake, 'ref-h', 'harness', HARNESS)
  const { ctx } = await applied(t, fake, { benchSnapshot: 'ref-h' }, { agent: null })
  const session = dshSession('session-c1', WS)
  const agent = fakeAgent(session)
  const live = async () => {
    const d = await step(ctx, agent)
    for (const m of d.messages) session.append('user/message', m, { surfaceOp: 'append' })
    return d
  }
  const [m] = blocks(await live())
  assert.equal(m.content[0].text, `<mull-harness etag="${'ab'.repeat(8)}">\n${HARNESS}\n</mull-harness>`)
  assert.deepEqual(m.source, { kind: 'plugin', plugin: 'mull', form: 'recall' })
  assert.equal(section(ctx, agent), '')
  for (let i = 0; i < 3; i++) assert.deepEqual(blocks(await live()), [])
  const nodes = session.surface.nodes
  session.compact(nodes[0], nodes.at(-1))
  assert.equal(blocks(await live()).length, 1, 'the compaction dropped it: shown again')

  // A DSH without the session surface: once per session.
  const bare = fakeAgent(fakeSession('session-c2', WS))
  assert.equal(blocks(await step(ctx, bare, [])).length, 0, 'a step without messages of its own carries none')
  assert.equal(blocks(await step(ctx, bare)).length, 1)
  assert.equal(blocks(await step(ctx, bare)).length, 0)
  assert.equal(injects(fake).length, 1)
  assert.deepEqual(ctx.warnings(), [])
})

test('benchmark cell: mull down, the first step waits for the snapshot and fails without it, one line; mull back, the next step has it', async (t) => {
  const fake = await startedFake(t)
  snapshot(fake, 'cand-2', 'memory', MEMORY)
  await fake.stop()
  const { ctx, cell, agent } = cellFor(t, fake, { benchSnapshot: 'cand-2' }, { retry: [1, 1] })
  assert.equal(await cell.ready(), false, 'three attempts at load')
  await assert.rejects(step(ctx, agent), err => {
    assert.equal(err.message, 'mull plugin: benchmark snapshot cand-2 is not available (mull is unavailable); this benchmark cell does not run without its side\'s snapshot')
    return true
  })
  assert.equal(section(ctx, agent), '', 'no memory is made up meanwhile')
  assert.deepEqual(ctx.logs.filter(l => l.level === 'error').map(l => l.msg), [
    'mull plugin: benchmark snapshot cand-2 is not available (mull is unavailable); this benchmark cell does not run without its side\'s snapshot'
  ])
  const warns = ctx.logs.filter(l => l.level === 'warn').map(l => l.msg)
  assert.equal(warns.length, 1, warns.join('\n'))
  assert.match(warns[0], /unavailable .*; this benchmark cell needs its snapshot cand-2 and does not run without it$/)

  await fake.start()
  assert.deepEqual(await step(ctx, agent), { kind: 'enter', messages: hi })
  assert.equal(section(ctx, agent), MEMORY.replace('{{x}}', '{ {x} }'))
  assert.equal(injects(fake).length, 1)
})

test('benchmark cell: a slow mull is waited for, a request past its deadline tried again', async (t) => {
  const fake = await startedFake(t)
  snapshot(fake, 'cand-3', 'harness', HARNESS)
  fake.mode = 'hang'
  const { ctx, agent, clock } = cellFor(t, fake, { benchSnapshot: 'cand-3' }, { retry: [1, 1, 1] })
  const first = step(ctx, agent, hi)
  await until(() => injects(fake).length === 1, 'the first fetch went out')
  await clock.deadlines(1)
  fake.mode = 'ok'
  clock.expire()
  const d = await first
  assert.equal(blocks(d).length, 1)
  assert.equal(injects(fake).length, 2)
})

test('benchmark cell: an unknown snapshot is not retried, a bad id never asked for; neither falls back to live memory', async (t) => {
  const fake = await startedFake(t)
  fake.addMemory(WS, 'fact', 'LIVE memory.')
  const { ctx, cell, agent } = cellFor(t, fake, { benchSnapshot: 'nope' }, { retry: [1, 1] })
  assert.equal(await cell.ready(), false)
  assert.equal(injects(fake).length, 1, 'a 404 is final')
  await assert.rejects(step(ctx, agent), /benchmark snapshot nope is not available \(mull answered HTTP 404 to GET \/v1\/bench\/snapshots\/nope\/inject: no snapshot nope\)/)
  assert.equal(injects(fake).length, 2, 'asked again at the step')

  for (const id of ['..', '../digest', 'a b']) {
    const bad = cellFor(t, fake, { benchSnapshot: id })
    await assert.rejects(step(bad.ctx, bad.agent), err => err.message.includes(`benchSnapshot ${JSON.stringify(id)} is not a snapshot id`))
    assert.equal(section(bad.ctx, bad.agent), '')
  }
  assert.equal(injects(fake).length, 2)
  assert.equal(fake.requests.filter(r => r.path === '/v1/digest').length, 0)
  assert.ok(!SNAPSHOT_ID_RE.test('.') && SNAPSHOT_ID_RE.test('snap_01.a-b'))
})

test('benchmark cell: a snapshot mull withheld fails the cell at once, never judged as the side without memory', async (t) => {
  const fake = await startedFake(t)
  fake.addMemory(WS, 'fact', 'LIVE memory.')
  fake.bench.snapshots.set('held', { snapshot_id: 'held', state_hash: 'ab'.repeat(32), captured_at: '2026-12-06T04:02:00Z', kind: 'memory', text: '', withheld: true })
  const { ctx, cell, agent } = cellFor(t, fake, { benchSnapshot: 'held' }, { retry: [1, 1] })
  assert.equal(await cell.ready(), false)
  assert.equal(injects(fake).length, 1, 'withheld is final')
  await assert.rejects(step(ctx, agent), /mull withheld benchmark snapshot held/)
  assert.equal(section(ctx, agent), '')
  assert.equal(fake.requests.filter(r => r.path === '/v1/digest').length, 0)
})

test('benchSnapshot config: off by default; a number is its digits; any other non-string is kept so the cell refuses, with a warning', () => {
  const warnings = []
  const warn = m => warnings.push(m)
  assert.equal(normalizeConfig({}, warn).benchSnapshot, '')
  assert.equal(normalizeConfig({ benchSnapshot: '   ' }, warn).benchSnapshot, '')
  assert.equal(normalizeConfig({ benchSnapshot: ' snap_1 ' }, warn).benchSnapshot, 'snap_1')
  assert.equal(normalizeConfig({ benchSnapshot: 42 }, warn).benchSnapshot, '42')
  assert.deepEqual(warnings, [])
  assert.equal(normalizeConfig({ benchSnapshot: { id: 1 } }, warn).benchSnapshot, '{"id":1}')
  assert.deepEqual(warnings, ['mull plugin config: benchSnapshot={"id":1} is not a snapshot id; this benchmark cell will refuse to run'])
  assert.ok(!SNAPSHOT_ID_RE.test('{"id":1}'))
})

test('benchmark cell: what createBridge builds, its disposer resolving at once', async (t) => {
  const fake = await startedFake(t)
  snapshot(fake, 's', 'memory', 'm')
  const { cell } = cellFor(t, fake, { benchSnapshot: 's' })
  assert.ok(cell instanceof BenchCell)
  assert.equal(await cell.ready(), true)
  assert.equal(cell.sectionText(), 'm')
  await cell.close()
})

test('a benchmark cell carries its capability (MULL_BENCH_CAPABILITY), never MULL_API_TOKEN; a live plugin ignores the capability', (t) => {
  const saved = { cap: process.env.MULL_BENCH_CAPABILITY, tok: process.env.MULL_API_TOKEN }
  t.after(() => {
    for (const [k, v] of [['MULL_BENCH_CAPABILITY', saved.cap], ['MULL_API_TOKEN', saved.tok]]) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  })
  const warn = () => {}
  process.env.MULL_BENCH_CAPABILITY = 'mullcap1.cell'
  process.env.MULL_API_TOKEN = 'general'
  assert.equal(normalizeConfig({ benchSnapshot: 'snap_1' }, warn).apiToken, 'mullcap1.cell')
  assert.equal(normalizeConfig({}, warn).apiToken, 'general')
  delete process.env.MULL_API_TOKEN
  assert.equal(normalizeConfig({}, warn).apiToken, '')
})
