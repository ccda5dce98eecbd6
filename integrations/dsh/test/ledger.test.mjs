// The negative ledger's DSH side (lib/ledger.mjs) against the fake mull's
// ledger (testkit/fake-mull.mjs FakeLedger): tools/pre-execute,
// tools/post-execute and fs/observed as DSH calls them.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, existsSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

import { createBridge } from '../plugin.mjs'
import { DENY_PREFIX, FAIL_CLOSED, STDERR_MAX_BYTES, isOwnDeny, outcomeOf } from '../lib/ledger.mjs'
import { normalizeConfig } from '../lib/config.mjs'
import { FakeMull } from '../testkit/fake-mull.mjs'
import { FakeCtx, fakeAgent, fakeSession, until } from '../testkit/helpers.mjs'
import { TestClock } from '../testkit/clock.mjs'

const WS = '/home/dev/app'
const SESSION = fakeSession('session-aaaaaaaa-2222-4333-8444-555555555555', WS)
const AGENT = fakeAgent(SESSION)

async function startedFake (t) {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  return fake
}

/**
 * The plugin's listeners on a fake ctx, against the fake mull, with the
 * ledger's policy for WS already fetched (unless policy: false).
 */
async function plugged (t, fake, config = {}, { policy = true } = {}) {
  const ctx = new FakeCtx()
  const clock = new TestClock()
  const bridge = createBridge(ctx, { baseUrl: fake.url, flushMs: 60000, timeoutMs: 300, tools: false, ...config }, {
    workspace: WS, backoff: { minBackoffMs: 50, maxBackoffMs: 200 }, clock
  })
  t.after(() => { const closed = bridge.close(); clock.expire(); return closed })
  if (policy && !bridge.ledger.disabled) await bridge.ledger.refreshPolicy(WS, { force: true })
  return { ctx, bridge, clock }
}

let calls = 0
function bash (command, extra = {}) {
  return { name: 'bash', arguments: { command, ...extra }, callId: `call_${++calls}`, agent: AGENT }
}
function read (path) {
  return { name: 'read', arguments: { file_path: path }, callId: `call_${++calls}`, agent: AGENT }
}
const exited = (code, stderr = '') => ({
  isError: false, value: { exitCode: code, signal: null, stdout: { text: '', truncated: false }, stderr: { text: stderr, truncated: false } }, content: [{ type: 'text', text: `[exit code: ${code}]` }]
})
const notFound = path => ({ isError: true, error: { message: `cannot read "${path}": not found`, info: { name: 'FsError', code: 'FS_NOT_FOUND' } }, content: [] })
const readOk = { isError: false, value: { path: `${WS}/notes.md`, lines: [] }, content: [{ type: 'text', text: 'hello' }] }

/**
 * One tool call through the plugin as DSH runs it: pre-execute; when
 * allowed, the body (ran counts it) and its result; when denied, the
 * error DSH makes of the reason. Then post-execute.
 */
async function run (ctx, exec, result) {
  let ran = false
  const gate = await ctx.waterfall('tools/pre-execute', [exec], () => Promise.resolve({ kind: 'allow' }))
  let outcome = result
  if (gate.kind === 'deny') outcome = { isError: true, error: { message: gate.reason }, content: [{ type: 'text', text: `Error: ${gate.reason}` }] }
  else ran = true
  const post = await ctx.waterfall('tools/post-execute', [exec, outcome], () => Promise.resolve({ kind: 'accept' }))
  return { gate, post, ran }
}

const ledgerRequests = (fake, path) => fake.requests.filter(r => r.path === `/v1/ledger/${path}`)

test('block mode: a repeat is denied before it runs, counted once, and allowed again after the retry time', async (t) => {
  const fake = await startedFake(t)
  fake.ledger.mode = 'block'
  const { ctx } = await plugged(t, fake)

  const first = await run(ctx, bash('make test'), exited(2, 'FAIL: TestX'))
  assert.equal(first.gate.kind, 'allow')
  assert.ok(first.ran)
  assert.equal(fake.ledger.facts.length, 1, 'the failure is a fact')
  const [checked] = ledgerRequests(fake, 'check')
  assert.deepEqual(Object.keys(checked.body).sort(), ['args', 'cwd', 'session', 'tool', 'tool_call_id', 'workspace'])
  assert.deepEqual(checked.body.args, { command: 'make test' })
  assert.equal(checked.body.cwd, WS)
  assert.equal(checked.body.workspace, WS)
  assert.equal(checked.body.session, SESSION.id)
  const [observed] = ledgerRequests(fake, 'observe')
  assert.deepEqual(observed.body.outcome, { status: 'failed', exit_code: 2, stderr: 'FAIL: TestX' })
  assert.match(observed.body.checked_at, /^\d{4}-\d\d-\d\dT/, 'the check time goes back with the outcome')

  const second = await run(ctx, bash('make test'), exited(2))
  assert.equal(second.gate.kind, 'deny')
  assert.equal(second.ran, false, 'denied before it runs')
  assert.ok(second.gate.reason.startsWith('blocked by negative-ledger (command_failed): command exited 2 (bash) [make test] — retry condition not met'), second.gate.reason)
  assert.match(second.gate.reason, /retry allowed at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)$/, 'the reason says when a retry is allowed')
  assert.equal(ledgerRequests(fake, 'observe').length, 1, 'the denied call is not observed: its deny was counted at the check')
  assert.deepEqual(fake.ledger.stats(), { duplicate_failures_observed: 0, warnings_emitted: 0, calls_denied: 1 })
  assert.deepEqual(second.post, { kind: 'accept' }, 'nothing added to a denied call')

  // A different command is not the same action.
  assert.equal((await run(ctx, bash('make  test'), exited(0))).gate.kind, 'allow', 'inner whitespace is part of the command')

  fake.ledger.advance(fake.ledger.commandRetryAfterMs) // the retry time passes (the fake's clock: no wait)
  const third = await run(ctx, bash('make test'), exited(0))
  assert.equal(third.gate.kind, 'allow')
  assert.ok(third.ran)
  const last = ledgerRequests(fake, 'observe').at(-1)
  assert.match(last.body.lease_id, /^lease-/, 'the verify-retry holds the lease and settles it')
  assert.deepEqual(last.body.outcome, { status: 'succeeded', exit_code: 0 })
  assert.equal(fake.ledger.facts[0].status, 'resolved')
  assert.deepEqual(fake.ledger.stats(), { duplicate_failures_observed: 0, warnings_emitted: 0, calls_denied: 1 })
  assert.deepEqual(ctx.warnings(), [])
})

test('a denied call is never observed, by its memory or by the reason prefix alone', async (t) => {
  const fake = await startedFake(t)
  fake.ledger.mode = 'block'
  const { ctx } = await plugged(t, fake)
  await run(ctx, bash('cargo build'), exited(101))
  const before = ledgerRequests(fake, 'observe').length
  // The deny of another plugin instance (a reload): only the prefix says it.
  const exec = bash('cargo build')
  const denied = { isError: true, error: { message: `${DENY_PREFIX} (command_failed): command exited 101 (bash) — retry condition not met` }, content: [] }
  const post = await ctx.waterfall('tools/post-execute', [exec, denied], () => Promise.resolve({ kind: 'accept' }))
  assert.deepEqual(post, { kind: 'accept' })
  assert.equal(ledgerRequests(fake, 'observe').length, before)
  assert.ok(isOwnDeny(denied))
  assert.ok(!isOwnDeny({ isError: true, error: { message: 'denied by the permission preset' } }))
  // Someone else's deny is a call that did not run: with no lease it settles nothing, so nothing is sent.
  const other = await run(ctx, bash('ls'), { isError: true, error: { message: 'denied by the permission preset' }, content: [] })
  assert.equal(other.gate.kind, 'allow')
  assert.equal(ledgerRequests(fake, 'observe').length, before)
})

test('warn mode: the call runs, a repeat failure gets the seed\'s warning as additional context, the result untouched', async (t) => {
  const fake = await startedFake(t)
  const { ctx } = await plugged(t, fake) // mull's default mode: warn
  const first = await run(ctx, bash('npm test', { workdir: `${WS}/web` }), exited(1))
  assert.deepEqual(first.post, { kind: 'accept' }, 'a first failure has no note')
  const second = await run(ctx, bash('npm test', { workdir: `${WS}/web` }), exited(1))
  assert.equal(second.gate.kind, 'allow', 'warn mode never blocks')
  assert.ok(second.ran)
  assert.equal(second.post.kind, 'accept')
  assert.equal(second.post.content, undefined, 'the result is not rewritten')
  assert.equal(second.post.value, undefined, 'the result is not rewritten')
  const [note] = second.post.additionalContexts
  assert.equal(note.role, 'user')
  const text = note.content[0].text
  assert.match(text, /^Negative-ledger: this exact action previously failed; no dependency evidence: cooldown only, retry allowed at \S+\.\n- claim: command exited 1 \(bash\)\n- action preview: npm test\nA retry will likely fail the same way; prefer a different approach\.$/)
  assert.deepEqual(note.source, { kind: 'plugin', plugin: 'mull', form: 'notice', summary: text.split('\n')[0].replace('Negative-ledger: ', '').slice(0, 79) + '…' },
    'the summary is the note\'s first line, cut to 80 characters')
  assert.deepEqual(fake.ledger.stats(), { duplicate_failures_observed: 1, warnings_emitted: 1, calls_denied: 0 })

  // A downstream decision keeps what it had; the note comes first.
  const exec = bash('npm test', { workdir: `${WS}/web` })
  await ctx.waterfall('tools/pre-execute', [exec], () => Promise.resolve({ kind: 'allow' }))
  const mine = { role: 'user', content: [{ type: 'text', text: 'other' }], source: { kind: 'plugin', plugin: 'x', form: 'notice', summary: 'x' } }
  const blocked = await ctx.waterfall('tools/post-execute', [exec, exited(1)], () => Promise.resolve({ kind: 'block', feedback: [{ type: 'text', text: 'no' }], additionalContexts: [mine] }))
  assert.equal(blocked.kind, 'block')
  assert.deepEqual(blocked.feedback, [{ type: 'text', text: 'no' }])
  assert.equal(blocked.additionalContexts.length, 2)
  assert.equal(blocked.additionalContexts[1], mine)
})

test('a missing file: denied in block mode until an fs observation shows it, then a verify-retry resolves the fact', async (t) => {
  const fake = await startedFake(t)
  fake.ledger.mode = 'block'
  const { ctx } = await plugged(t, fake)
  const first = read('notes.md')
  ctx.emit('fs/observed', { targetKey: 'k', displayPath: `${WS}/notes.md` }, { kind: 'absent' }, first)
  await run(ctx, first, notFound(`${WS}/notes.md`))
  assert.equal(fake.ledger.facts[0].claim, 'file does not exist: notes.md')
  const denied = await run(ctx, read('notes.md'), notFound(`${WS}/notes.md`))
  assert.equal(denied.gate.kind, 'deny')
  assert.equal(denied.gate.reason, 'blocked by negative-ledger (file_missing): file does not exist: notes.md — evidence unchanged')

  // The file is written: DSH observes it present. The next check waits for that observation to reach mull.
  const write = { name: 'write', arguments: { file_path: 'notes.md', content: 'hi' }, callId: `call_${++calls}`, agent: AGENT }
  const emitted = ctx.emit('fs/observed', { targetKey: 'k', displayPath: `${WS}/notes.md` }, { kind: 'present', version: 'v1' }, write)
  assert.deepEqual(emitted, [undefined], 'the fs/observed listener returns nothing (DSH does not await it)')
  const retry = await run(ctx, read('notes.md'), readOk)
  assert.equal(retry.gate.kind, 'allow', 'the evidence changed: stale-allow, a verify-retry')
  const fsPosts = ledgerRequests(fake, 'fs')
  const lastFs = fake.requests.indexOf(fsPosts.at(-1))
  const lastCheck = fake.requests.indexOf(ledgerRequests(fake, 'check').at(-1))
  assert.ok(lastFs < lastCheck, 'the observation reached mull before the check')
  assert.deepEqual(fsPosts.at(-1).body, {
    session: SESSION.id, workspace: WS, cwd: WS,
    observations: [{ display_path: `${WS}/notes.md`, observed: 'present', path: 'notes.md', version: 'v1', tool_call_id: write.callId }]
  })
  assert.match(ledgerRequests(fake, 'observe').at(-1).body.lease_id, /^lease-/)
  assert.equal(fake.ledger.facts[0].status, 'resolved')
  assert.deepEqual(fake.ledger.stats(), { duplicate_failures_observed: 0, warnings_emitted: 0, calls_denied: 1 })
  // The holder's settlement of a stale fact: mull's stale note, the one notice.
  assert.equal(retry.post.additionalContexts?.length, 1, 'one notice')
  assert.equal(retry.post.additionalContexts[0].content[0].text,
    'Negative-ledger: a previous failure no longer applies because its evidence changed; a retry is allowed.\n- claim: file does not exist: notes.md\n')
})

test('fs observations are batched: one POST for a burst; bad input is ignored, never thrown into DSH', async (t) => {
  const fake = await startedFake(t)
  const { ctx, bridge } = await plugged(t, fake)
  const actor = read('a.txt')
  for (let i = 0; i < 5; i++) ctx.emit('fs/observed', { displayPath: `${WS}/f${i}` }, { kind: 'present', version: `v${i}` }, actor)
  assert.doesNotThrow(() => ctx.emit('fs/observed', undefined, undefined, undefined))
  assert.doesNotThrow(() => ctx.emit('fs/observed', { displayPath: '' }, { kind: 'present', version: 'x' }, null))
  assert.doesNotThrow(() => ctx.emit('fs/observed', { displayPath: `${WS}/g` }, { kind: 'weird' }, actor))
  await until(() => ledgerRequests(fake, 'fs').length >= 1, 'the fs batch')
  await bridge.ledger.flushFs()
  const posts = ledgerRequests(fake, 'fs')
  assert.equal(posts.length, 1)
  assert.deepEqual(posts[0].body.observations.map(o => o.display_path), [0, 1, 2, 3, 4].map(i => `${WS}/f${i}`))
  assert.deepEqual(ctx.warnings(), [])
})

test('off: in the plugin config no ledger listener and no call at all; off in mull\'s policy, no call for that workspace', async (t) => {
  const fake = await startedFake(t)
  const { ctx, bridge } = await plugged(t, fake, { ledger: { mode: 'off' } })
  assert.ok(!ctx.listeners.has('tools/pre-execute'))
  assert.ok(!ctx.listeners.has('tools/post-execute'))
  assert.ok(!ctx.listeners.has('fs/observed'))
  ctx.emit('agent/session-start', { agent: AGENT })
  await bridge.close()
  assert.deepEqual(fake.requests.filter(r => r.path.startsWith('/v1/ledger/')), [])

  const fake2 = await startedFake(t)
  fake2.ledger.mode = 'off'
  const { ctx: ctx2, bridge: bridge2 } = await plugged(t, fake2)
  assert.equal(ledgerRequests(fake2, 'policy').length, 1)
  await run(ctx2, bash('make'), exited(2))
  await run(ctx2, read('x'), notFound('x'))
  ctx2.emit('fs/observed', { displayPath: `${WS}/x` }, { kind: 'absent' }, read('x'))
  await bridge2.ledger.flushFs()
  assert.deepEqual(fake2.requests.filter(r => r.path.startsWith('/v1/ledger/') && r.path !== '/v1/ledger/policy'), [])
})

test('untracked tools and calls without a command or path are not sent; the policy names the tools', async (t) => {
  const fake = await startedFake(t)
  fake.ledger.commandTools = ['sh']
  const { ctx } = await plugged(t, fake)
  await run(ctx, bash('make'), exited(2)) // bash is not a command tool in this mull's policy
  await run(ctx, { name: 'edit', arguments: { file_path: 'x' }, callId: 'c-edit', agent: AGENT }, readOk)
  await run(ctx, { name: 'sh', arguments: { command: '   ' }, callId: 'c-blank', agent: AGENT }, exited(2))
  await run(ctx, { name: 'sh', arguments: 'not an object', callId: 'c-str', agent: AGENT }, exited(2))
  assert.equal(ledgerRequests(fake, 'check').length, 0)
  await run(ctx, { name: 'sh', arguments: { command: 'make' }, callId: 'c-sh', agent: AGENT }, exited(2))
  assert.equal(ledgerRequests(fake, 'check').length, 1)
  assert.equal(ledgerRequests(fake, 'observe').length, 1)
})

test('mull unreachable: warn mode lets calls run, block mode denies them fail-closed; one line each way', async (t) => {
  for (const mode of ['warn', 'block']) {
    const fake = await startedFake(t)
    fake.ledger.mode = mode
    const { ctx, bridge } = await plugged(t, fake)
    await fake.stop()
    for (let i = 0; i < 3; i++) {
      const r = await run(ctx, bash('make'), exited(2))
      if (mode === 'warn') {
        assert.equal(r.gate.kind, 'allow', 'warn mode proceeds')
        assert.ok(r.ran)
      } else {
        assert.deepEqual(r.gate, { kind: 'deny', reason: FAIL_CLOSED }, 'block mode fails closed')
        assert.equal(r.ran, false)
      }
      assert.deepEqual(r.post, { kind: 'accept' })
    }
    const lines = ctx.warnings()
    assert.equal(lines.length, 1, `${mode}: one line for the outage, got ${JSON.stringify(lines)}`)
    assert.match(lines[0].msg, /is unavailable .*the negative ledger meanwhile lets tracked calls run \(warn mode\) or denies them \(block mode, fail-closed\)/)
    // Back: the next call goes through, and one line says so. In block
    // mode the check goes out even while the client backs off: a deny
    // needs mull's word, not a guess that it is still down.
    await fake.start()
    if (mode === 'warn') await until(() => bridge.client.available(), 'the backoff passes')
    else assert.equal(bridge.client.available(), false, 'still backing off')
    const back = await run(ctx, bash('make'), exited(0))
    assert.equal(back.gate.kind, 'allow')
    assert.equal(ctx.warnings().length, 1)
    assert.equal(ctx.logs.filter(l => l.level === 'info' && /is back after/.test(l.msg)).length, 1)
  }
})

test('a retry another call is verifying: denied in block mode, advised after the call in warn mode', async (t) => {
  for (const mode of ['block', 'warn']) {
    const fake = await startedFake(t)
    fake.ledger.mode = mode
    const { ctx } = await plugged(t, fake)
    await run(ctx, bash('make'), exited(2))
    fake.ledger.advance(fake.ledger.commandRetryAfterMs)
    const holder = bash('make')
    const held = await ctx.waterfall('tools/pre-execute', [holder], () => Promise.resolve({ kind: 'allow' }))
    assert.equal(held.kind, 'allow', 'the first retry holds the lease')
    const advice = `Negative-ledger: another agent is verifying this path (owner ${holder.callId} until `
    if (mode === 'block') {
      const loser = await run(ctx, bash('make'), exited(2))
      assert.equal(loser.gate.kind, 'deny')
      assert.ok(loser.gate.reason.startsWith(`${DENY_PREFIX}: verification retry already in progress by ${holder.callId} (until `), loser.gate.reason)
      assert.deepEqual(loser.post, { kind: 'accept' }, 'a denied call gets no note')
    } else {
      // One notice per call. A loser mull has nothing to say about gets
      // the check's advice alone.
      const quiet = await run(ctx, bash('make'), exited(0))
      assert.equal(quiet.gate.kind, 'allow')
      assert.ok(quiet.ran)
      assert.equal(quiet.post.additionalContexts.length, 1, 'one notice')
      assert.ok(quiet.post.additionalContexts[0].content[0].text.startsWith(advice), quiet.post.additionalContexts[0].content[0].text)
      // A loser that failed again gets mull's warning for the repeat,
      // not the advice as well.
      const loser = await run(ctx, bash('make'), exited(2))
      assert.equal(loser.gate.kind, 'allow')
      assert.ok(loser.ran)
      assert.equal(loser.post.additionalContexts.length, 1, 'one notice')
      assert.ok(loser.post.additionalContexts[0].content[0].text.startsWith('Negative-ledger: this exact action previously failed'), loser.post.additionalContexts[0].content[0].text)
    }
    const settled = await ctx.waterfall('tools/post-execute', [holder, exited(0)], () => Promise.resolve({ kind: 'accept' }))
    assert.equal(settled.kind, 'accept')
    assert.equal(fake.ledger.facts[0].status, 'resolved', `${mode}: the holder's success resolves the fact`)
  }
})

test('mull\'s mode from a check answer holds from then on, also when mull goes down', async (t) => {
  const fake = await startedFake(t)
  const { ctx } = await plugged(t, fake) // the policy said warn
  fake.ledger.mode = 'block' // mull's config changed since
  await run(ctx, bash('make'), exited(0))
  await fake.stop()
  const r = await run(ctx, bash('make'), exited(2))
  assert.deepEqual(r.gate, { kind: 'deny', reason: FAIL_CLOSED })
})

test('before mull\'s first answer the plugin config\'s mode holds: block denies fail-closed with mull down', async (t) => {
  const fake = await startedFake(t)
  await fake.stop()
  const { ctx } = await plugged(t, fake, { ledger: { mode: 'block' } }, { policy: false })
  const r = await run(ctx, bash('make'), exited(2))
  assert.deepEqual(r.gate, { kind: 'deny', reason: FAIL_CLOSED })
  assert.equal(ctx.warnings().length, 1)
})

test('every ledger call is bounded by mull\'s client timeout: a hanging mull gives up at the deadline', async (t) => {
  for (const mode of ['warn', 'block']) {
    const fake = await startedFake(t)
    fake.ledger.mode = mode
    fake.ledger.clientTimeoutMs = 180 // mull's ledger.client_timeout, from the policy
    const { ctx, clock } = await plugged(t, fake)
    fake.ledger.fault = 'hang'
    let settled = false
    const pending = run(ctx, bash('make'), exited(2)).finally(() => { settled = true })
    await fake.waitFor(r => r.path === '/v1/ledger/check')
    await until(() => [...clock.pending].some(d => d.ms === 180), 'the check\'s deadline')
    assert.equal(settled, false, 'the call waits for mull, up to the deadline')
    clock.expire() // the deadline passes (the clock's, no real wait)
    // post-execute's observe hangs too, with the same bound
    await until(() => settled || [...clock.pending].some(d => d.ms === 180), 'the observe\'s deadline')
    clock.expire()
    const r = await pending
    if (mode === 'warn') assert.equal(r.gate.kind, 'allow')
    else assert.deepEqual(r.gate, { kind: 'deny', reason: FAIL_CLOSED })
    assert.equal(ctx.warnings().length, 1)
    assert.match(ctx.warnings()[0].msg, /no answer within 180 ms/)
  }
})

test('outcomes: a command fails on a non-zero exit, a read on FS_NOT_FOUND; the rest settles nothing', () => {
  const cases = [
    ['bash exit 0', true, exited(0), { status: 'succeeded', exit_code: 0 }],
    ['bash exit 1', true, exited(1, 'boom'), { status: 'failed', exit_code: 1, stderr: 'boom' }],
    ['bash exit 2, no stderr', true, exited(2), { status: 'failed', exit_code: 2 }],
    ['bash killed (no exit code)', true, { isError: false, value: { exitCode: null, signal: 'SIGKILL' } }, { status: 'released' }],
    ['bash in the background', true, { isError: false, value: { kind: 'background', jobId: 'j1' } }, { status: 'released' }],
    ['bash aborted (a tool error)', true, { isError: true, error: { message: 'aborted', info: { code: 'ABORTED' } } }, { status: 'released' }],
    ['read ok', false, readOk, { status: 'succeeded' }],
    ['read not found', false, notFound('x'), { status: 'failed', error_code: 'FS_NOT_FOUND' }],
    ['read not a file', false, { isError: true, error: { message: 'dir', info: { code: 'FS_NOT_REGULAR_FILE' } } }, { status: 'released' }]
  ]
  for (const [name, isCommand, result, want] of cases) assert.deepEqual(outcomeOf(isCommand, result), want, name)
  const long = outcomeOf(true, exited(1, 'é'.repeat(STDERR_MAX_BYTES)))
  assert.equal(Buffer.byteLength(long.stderr, 'utf8'), STDERR_MAX_BYTES, 'stderr is cut to 2 KiB, on a character boundary')
})

test('the ledger config: defaults, and a bad value falls back to its default with one warning', () => {
  const d = normalizeConfig({}).ledger
  assert.deepEqual(d, { mode: 'warn', commandTools: ['bash', 'pwsh'], readTools: ['read'], timeoutMs: 250, policyRefreshMs: 300000, fsBatchMs: 5, fsQueueMax: 1000 })
  const warnings = []
  const c = normalizeConfig({ ledger: { mode: 'deny', commandTools: ['sh', ''], readTools: ['cat'], timeoutMs: 5, fsBatchMs: 20, nope: 1 } }, w => warnings.push(w)).ledger
  assert.equal(c.mode, 'warn')
  assert.deepEqual(c.commandTools, ['bash', 'pwsh'])
  assert.deepEqual(c.readTools, ['cat'])
  assert.equal(c.timeoutMs, 250)
  assert.equal(c.fsBatchMs, 20)
  assert.deepEqual(warnings, [
    'mull plugin config: ledger.mode="deny" is not valid; using "warn"',
    'mull plugin config: ledger.commandTools=["sh",""] is not valid; using ["bash","pwsh"]',
    'mull plugin config: ledger.timeoutMs=5 is not valid; using 250',
    'mull plugin config: ledger.nope is not a key the plugin knows; ignored'
  ])
  assert.equal(normalizeConfig({ ledger: { mode: 'block' } }).ledger.mode, 'block')
})

test('the fail-closed reason is the seed\'s, word for word, and learn/ledger\'s', (t) => {
  // seed003/src/plugin.ts: 'blocked by negative-ledger: store unavailable (fail-closed)'
  assert.equal(FAIL_CLOSED, 'blocked by negative-ledger: store unavailable (fail-closed)')
  assert.ok(FAIL_CLOSED.startsWith(DENY_PREFIX))
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'learn', 'ledger')
  const sources = existsSync(dir) ? readdirSync(dir).filter(f => f.endsWith('.go') && !f.endsWith('_test.go')) : []
  const consts = goStringConsts(sources.map(f => readFileSync(join(dir, f), 'utf8')).join('\n'))
  if (!('UnavailableReason' in consts)) return t.skip('learn/ledger has no UnavailableReason (yet)')
  assert.equal(consts.UnavailableReason, FAIL_CLOSED, 'learn/ledger.UnavailableReason differs from the plugin\'s FAIL_CLOSED')
  assert.equal(consts.DenyPrefix, DENY_PREFIX, 'learn/ledger.DenyPrefix differs from the plugin\'s DENY_PREFIX')
})

/**
 * Go string constants of the form `Name = "lit"` or `Name = Other + "lit"`
 * (a const line or a const block's), evaluated in order.
 */
function goStringConsts (src) {
  const out = {}
  const re = /^\s*(?:const\s+)?([A-Z]\w*)\s*=\s*((?:(?:"(?:[^"\\]|\\.)*"|[A-Za-z_]\w*)\s*\+?\s*)+)$/gm
  for (const [, name, expr] of src.matchAll(re)) {
    const parts = expr.split(/\s*\+\s*/).map(p => p.trim()).filter(Boolean)
    const vals = parts.map(p => p.startsWith('"') ? JSON.parse(p) : out[p])
    if (vals.every(v => typeof v === 'string')) out[name] = vals.join('')
  }
  return out
}

/** A promise and its resolve, for a test to release a delayed answer. */
function deferred () {
  let resolve
  const promise = new Promise(r => { resolve = r })
  return { promise, resolve }
}

test('fs observations go out one POST at a time, in order: a later batch waits for the earlier one', async (t) => {
  const fake = await startedFake(t)
  const { ctx, bridge } = await plugged(t, fake)
  const gate = deferred()
  let first = true
  fake.ledger.intercept = async (route) => {
    if (route !== 'POST /v1/ledger/fs' || !first) return undefined
    first = false
    await gate.promise // the first batch is slow to answer
    return undefined
  }
  const actor = read('notes.md')
  ctx.emit('fs/observed', { displayPath: `${WS}/notes.md` }, { kind: 'absent' }, actor)
  const flushed = bridge.ledger.flushFs()
  await fake.waitFor(r => r.path === '/v1/ledger/fs')
  ctx.emit('fs/observed', { displayPath: `${WS}/notes.md` }, { kind: 'present', version: 'v2' }, actor)
  const again = bridge.ledger.flushFs()
  // Give the plugin every chance to send the second batch early.
  await new Promise(resolve => setImmediate(resolve))
  await new Promise(resolve => setTimeout(resolve, 0))
  assert.equal(ledgerRequests(fake, 'fs').length, 1, 'the second batch waits while the first is in flight')
  gate.resolve()
  await Promise.all([flushed, again])
  const posts = ledgerRequests(fake, 'fs')
  assert.deepEqual(posts.map(p => p.body.observations.map(o => o.observed)), [['absent'], ['present']])
  assert.equal(fake.ledger.observations.get(`${WS}\u0000${WS}/notes.md`).observed, 'present', 'the later observation is the stored one')
  assert.ok(posts.every(p => p.body.session === SESSION.id), 'every fs POST names the session')
})

test('block mode: a check that timed out after mull granted the lease is denied and the lease released at once', async (t) => {
  for (const mode of ['block', 'warn']) {
    const fake = await startedFake(t)
    fake.ledger.mode = mode
    fake.ledger.clientTimeoutMs = 180
    const { ctx, bridge, clock } = await plugged(t, fake)
    await run(ctx, bash('make'), exited(2))
    fake.ledger.advance(fake.ledger.commandRetryAfterMs)
    // mull grants the lease, but its answer never reaches the plugin in time.
    let granted
    fake.ledger.intercept = async (route, body) => {
      if (route !== 'POST /v1/ledger/check') return undefined
      granted = fake.ledger.handle(route, {}, body)[1]
      return [0]
    }
    const exec = bash('make')
    const gate = ctx.waterfall('tools/pre-execute', [exec], () => Promise.resolve({ kind: 'allow' }))
    await fake.waitFor(r => r.path === '/v1/ledger/check' && r.body.tool_call_id === exec.callId)
    await until(() => [...clock.pending].some(d => d.ms === 180), 'the check\'s deadline')
    clock.expire()
    const decided = await gate
    fake.ledger.intercept = null
    assert.equal(granted.verdict, 'verify-retry', 'mull granted the call the lease')
    if (mode === 'block') {
      assert.deepEqual(decided, { kind: 'deny', reason: FAIL_CLOSED })
      const post = await ctx.waterfall('tools/post-execute', [exec, { isError: true, error: { message: FAIL_CLOSED }, content: [] }], () => Promise.resolve({ kind: 'accept' }))
      assert.deepEqual(post, { kind: 'accept' })
      await bridge.ledger.close() // the best-effort release is in the background
    } else {
      assert.equal(decided.kind, 'allow', 'warn mode: the call runs')
      // It ran, and was cut short: no outcome, but the lease is released by its observe.
      await ctx.waterfall('tools/post-execute', [exec, { isError: true, error: { message: 'aborted' }, content: [] }], () => Promise.resolve({ kind: 'accept' }))
    }
    const release = ledgerRequests(fake, 'observe').at(-1)
    assert.equal(release.body.tool_call_id, exec.callId)
    assert.equal(release.body.session, SESSION.id, 'the holder is known by its session and call')
    assert.deepEqual(release.body.outcome, { status: 'released' })
    assert.equal(release.body.lease_id, undefined, 'the plugin never learned the lease id')
    assert.equal(fake.ledger.facts[0].lease, null, `${mode}: the lease is free for the next agent`)
    const next = await ctx.waterfall('tools/pre-execute', [bash('make')], () => Promise.resolve({ kind: 'allow' }))
    assert.equal(next.kind, 'allow', `${mode}: the next retry gets the lease, not in-progress`)
  }
})

test('block mode denies on any check answer but 200, naming the status; warn mode lets the call run', async (t) => {
  const answers = [
    [400, { error: 'session: required', field: 'session' }, {}],
    [413, { error: 'request body too large' }, {}],
    [503, { error: 'the fact kept changing; retry' }, { 'retry-after': '1' }]
  ]
  for (const mode of ['block', 'warn']) {
    for (const [status, answer, headers] of answers) {
      const fake = await startedFake(t)
      fake.ledger.mode = mode
      const { ctx, bridge } = await plugged(t, fake)
      fake.ledger.intercept = async route => route === 'POST /v1/ledger/check' ? [status, answer, headers] : undefined
      const r = await run(ctx, bash('make'), exited(2))
      if (mode === 'block') {
        assert.equal(r.gate.kind, 'deny', `${status}: denied`)
        assert.equal(r.gate.reason, `${DENY_PREFIX}: mull answered the check with HTTP ${status}: ${answer.error} (fail-closed)`)
        assert.equal(r.ran, false)
        assert.equal(ledgerRequests(fake, 'observe').length, 0, 'a denied call is not observed')
      } else {
        assert.equal(r.gate.kind, 'allow', `${status}: warn mode runs it`)
        assert.ok(r.ran)
      }
      assert.equal(bridge.client.down, false, `${status}: mull is not marked down (it answered)`)
      assert.ok(bridge.client.available(), `${status}: ingest and the digest carry on`)
      const lines = ctx.warnings()
      assert.equal(lines.length, 1, JSON.stringify(lines))
      assert.match(lines[0].msg, new RegExp(`POST /v1/ledger/check answered HTTP ${status}`))
    }
  }
})

test('a 503 without Retry-After is an outage: mull is marked down, block mode fails closed', async (t) => {
  const fake = await startedFake(t)
  fake.ledger.mode = 'block'
  const { ctx, bridge } = await plugged(t, fake)
  fake.ledger.intercept = async route => route === 'POST /v1/ledger/check' ? [503, { error: 'down' }] : undefined
  const r = await run(ctx, bash('make'), exited(2))
  assert.deepEqual(r.gate, { kind: 'deny', reason: FAIL_CLOSED })
  assert.equal(bridge.client.down, true)
  assert.equal(ledgerRequests(fake, 'observe').length, 0, 'nothing to release: no timeout')
})

test('every ledger call names the session; a call without one is denied in block mode, run in warn mode, never sent', async (t) => {
  for (const mode of ['block', 'warn']) {
    const fake = await startedFake(t)
    fake.ledger.mode = mode
    const { ctx, bridge } = await plugged(t, fake)
    await run(ctx, bash('make'), exited(2))
    await run(ctx, bash('make'), exited(2))
    await run(ctx, read('gone.md'), notFound('gone.md'))
    ctx.emit('fs/observed', { displayPath: `${WS}/gone.md` }, { kind: 'absent' }, read('gone.md'))
    await bridge.ledger.flushFs()
    const sent = fake.requests.filter(r => r.path.startsWith('/v1/ledger/') && r.path !== '/v1/ledger/policy')
    assert.ok(sent.length >= 4, JSON.stringify(sent.map(r => r.path)))
    for (const r of sent) assert.equal(r.body.session, SESSION.id, `${r.path} names the session`)

    const before = fake.requests.length
    const anonymous = { session: { header: { cwd: WS } } }
    const r = await run(ctx, { name: 'bash', arguments: { command: 'make' }, callId: `call_${++calls}`, agent: anonymous }, exited(2))
    ctx.emit('fs/observed', { displayPath: `${WS}/x` }, { kind: 'absent' }, { arguments: { file_path: 'x' }, callId: 'c', agent: anonymous })
    await bridge.ledger.flushFs()
    assert.deepEqual(fake.requests.slice(before).map(r => r.path), [], 'nothing sent without a session')
    if (mode === 'block') assert.equal(r.gate.reason, `${DENY_PREFIX}: the call has no session id, so mull cannot check it (fail-closed)`)
    else assert.ok(r.ran)
    assert.equal(ctx.warnings().length, 2, JSON.stringify(ctx.warnings()))
  }
})
