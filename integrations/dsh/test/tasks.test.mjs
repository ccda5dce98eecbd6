// The task tools (lib/tasks.mjs) against the fake mull, through the plugin
// as DSH applies it: each tool's happy path, mull's refusals (422 naming its
// field, 404, 409), bad arguments, and mull down or hanging, which must
// never throw into the agent's turn. And the task-boundary hint.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'

import * as plugin from '../plugin.mjs'
import { TASK_HINT } from '../lib/tasks.mjs'
import { FakeMull } from '../testkit/fake-mull.mjs'
import { FakeCtx, fakeAgent, fakeSession, until } from '../testkit/helpers.mjs'
import { TestClock } from '../testkit/clock.mjs'

const STUB = fileURLToPath(new URL('../testkit/stub-dsh-tools.mjs', import.meta.url))
const WS = '/home/dev/shop'

async function startedFake (t) {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  return fake
}

async function applied (t, fake, config = {}) {
  const ctx = new FakeCtx()
  const clock = new TestClock()
  const dispose = await plugin.apply(ctx, { baseUrl: fake.url, dshToolsModule: STUB, flushMs: 60000, ...config }, { clock })
  t.after(() => { const d = dispose(); clock.expire(); return d })
  const agent = fakeAgent(fakeSession('session-t', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  const tool = name => ctx.registered.find(d => d.name === name)
  const call = async (name, args, a = agent) => {
    const v = await tool(name).execute(args, { agent: a })
    return { v, out: tool(name).output.render(args, v)[0].text }
  }
  return { ctx, clock, agent, tool, call }
}

/** Opens and closes a task through the tools; returns its id. */
async function closedTask (call, status = 'failed') {
  const { v } = await call('task_start', { goal: 'Fix the flaky checkout test', expected_result: 'npm test passes 3 times in a row' })
  await call('task_end', { task_id: v.task_id, status, result: 'The test still fails on CI.' })
  return v.task_id
}

test('task tools: registered through defineTool with their parameters, and the schema compiles', async (t) => {
  const fake = await startedFake(t)
  const { ctx, tool } = await applied(t, fake)
  assert.deepEqual(ctx.registered.map(d => [d.name, d.compiledBy]).slice(3, 7), [
    ['task_start', 'stub-defineTool'], ['task_end', 'stub-defineTool'], ['task_reflect', 'stub-defineTool'], ['lessons_lookup', 'stub-defineTool']])
  assert.deepEqual(Object.keys(tool('task_start').parameters), ['goal', 'expected_result'])
  assert.deepEqual(tool('task_end').parameters.status.enum, ['succeeded', 'failed', 'abandoned', 'aborted'])
  const lesson = tool('task_reflect').parameters.lessons.items
  assert.deepEqual(lesson.properties.relation.enum, ['new', 'repeat', 'revise', 'none'])
  assert.deepEqual(Object.keys(lesson.properties), ['relation', 'kind', 'scope', 'problem', 'attempted', 'correction', 'applies_when',
    'confidence', 'avoid', 'instead', 'boundary', 'target_id', 'evidence_task_ids', 'conflicts', 'critique'])
  assert.deepEqual(lesson.properties.kind.enum, ['lesson', 'directive', 'failure'])
  assert.deepEqual(lesson.properties.scope.enum, ['global', 'workspace', 'session', 'reflection'])
  assert.equal(tool('lessons_lookup').parameters.lesson_id.required, true)
  assert.deepEqual(ctx.warnings(), [])
})

test('task_start posts the task for the calling session and workspace, after the events queued before it', async (t) => {
  const fake = await startedFake(t)
  fake.lessonsInForce = 3
  const { ctx, agent, call } = await applied(t, fake)
  ctx.emit('session/event', agent.session, { type: 'user/message', seq: 7, time: 1, data: { content: [{ type: 'text', text: 'fix the checkout test' }], source: { kind: 'user' }, role: 'user', id: 'u' } })
  const { v, out } = await call('task_start', { goal: ' Fix the flaky checkout test ', expected_result: 'npm test passes 3 times in a row' })
  assert.equal(v.recorded, true)
  assert.match(v.task_id, /^task-/)
  const req = fake.requests.find(r => r.path === '/v1/tasks')
  assert.deepEqual(req.body, { session_id: 'session-t', workspace: WS, goal: 'Fix the flaky checkout test', expected_result: 'npm test passes 3 times in a row' })
  const order = fake.requests.map(r => r.path).filter(p => p === '/v1/events' || p === '/v1/tasks')
  assert.deepEqual(order, ['/v1/events', '/v1/tasks'], 'the session and its user message reach mull before the task opens (flushMs is a minute)')
  assert.deepEqual(fake.postedEvents().map(e => e.type), ['session_start', 'user_message'])
  assert.equal(out, `Task ${v.task_id} started (3 lessons in force recorded as its decision environment). When its result is known, call task_end with task_id "${v.task_id}".`)
})

test('task_start: bad arguments and a call without a session send nothing', async (t) => {
  const fake = await startedFake(t)
  const { call } = await applied(t, fake)
  assert.equal((await call('task_start', { goal: ' ', expected_result: 'x' })).out,
    'Task not recorded: goal is empty; say what the task is to achieve. Carry on with the work; there is no task to end.')
  assert.match((await call('task_start', { goal: 'x' })).v.reason, /^expected_result is empty/)
  assert.match((await call('task_start', { goal: 'x', expected_result: 'y' }, null)).v.reason, /no DSH session/)
  assert.equal(fake.requests.filter(r => r.path === '/v1/tasks').length, 0)
})

test('task_end in job mode: closed, the reflection runs at mull, nothing more to do', async (t) => {
  const fake = await startedFake(t)
  const { call } = await applied(t, fake)
  const { v: started } = await call('task_start', { goal: 'g', expected_result: 'e' })
  const { v, out } = await call('task_end', { task_id: started.task_id, status: 'failed', result: ' The test still fails on CI. ' })
  assert.deepEqual(fake.requests.find(r => r.path.endsWith('/end')).body, { status: 'failed', result: 'The test still fails on CI.' })
  assert.equal(v.closed, true)
  assert.equal(out, `Task ${started.task_id} closed (failed). mull reflects on it in the background (job 7); nothing more is needed.`)
})

test('task_end in agent and both mode returns the reflection material as its output', async (t) => {
  for (const mode of ['agent', 'both']) {
    const fake = await startedFake(t)
    fake.reflectMode = mode
    const { call } = await applied(t, fake)
    const { v: started } = await call('task_start', { goal: 'g', expected_result: 'e' })
    const { out } = await call('task_end', { task_id: started.task_id, status: 'succeeded', result: 'done' })
    assert.equal(out, `Task ${started.task_id} closed (succeeded).\n\nDECISION TRAJECTORY of ${started.task_id}\n...\nCall task_reflect directly, with ${started.task_id} as the task_id.`, mode)
  }
})

test('task_end: 404 unknown task, 409 already closed, bad arguments, each said and not thrown', async (t) => {
  const fake = await startedFake(t)
  const { call } = await applied(t, fake)
  assert.equal((await call('task_end', { task_id: 'task-nope', status: 'failed', result: 'r' })).out,
    'Task not closed: mull has no task "task-nope" (no task task-nope); use the task_id task_start returned.')
  const id = await closedTask(call)
  assert.equal((await call('task_end', { task_id: id, status: 'succeeded', result: 'r' })).out,
    `Task not closed: task ${id} is already closed (already closed as failed).`)
  const before = fake.requests.length
  assert.match((await call('task_end', { task_id: id, status: 'done', result: 'r' })).v.reason, /^status must be one of succeeded, failed, abandoned, aborted$/)
  assert.match((await call('task_end', { task_id: '', status: 'failed', result: 'r' })).v.reason, /^task_id is empty/)
  assert.match((await call('task_end', { task_id: id, status: 'failed' })).v.reason, /^result is empty/)
  assert.equal(fake.requests.length, before, 'bad arguments send nothing')
})

test('task_reflect posts the body as given and renders each lesson\'s result', async (t) => {
  const fake = await startedFake(t)
  const { call } = await applied(t, fake)
  const id = await closedTask(call)
  const lessons = [
    { relation: 'new', kind: 'failure', scope: 'workspace', problem: 'Declared done before running the test', avoid: 'reporting done untested', boundary: 'this repo\'s CI', confidence: 'high', conflicts: [{ with: 4, kind: 'goal' }] },
    { relation: 'revise', target_id: 12, problem: 'p', correction: 'c' },
    { relation: 'none' }
  ]
  const { v, out } = await call('task_reflect', { task_id: id, assessment: 'I skipped the test.', source: 'this task', lessons, critique: { claim: 'x' } })
  assert.deepEqual(fake.requests.find(r => r.path.endsWith('/reflect')).body, { assessment: 'I skipped the test.', lessons, source: 'this task', critique: { claim: 'x' } })
  assert.equal(v.recorded, true)
  assert.equal(out, [
    `Reflection on ${id} recorded: 1 lesson recorded.`,
    '- lessons[0] (new): recorded as lesson 100',
    '- lessons[1] (revise): refused, evidence: a revise needs evidence_task_ids',
    '- lessons[2] (none): nothing stored',
    'A refused lesson can be fixed and sent again in a new task_reflect call.'
  ].join('\n'))
})

test('task_reflect: a 422 names its field so the agent can fix it and retry', async (t) => {
  const fake = await startedFake(t)
  const { call } = await applied(t, fake)
  const id = await closedTask(call)
  const lessons = [{ relation: 'new', problem: 'p', correction: 'c' }, { relation: 'new', scope: 'global', problem: 'p', correction: 'c' }]
  const { v, out } = await call('task_reflect', { task_id: id, assessment: 'a', lessons })
  assert.deepEqual(v, { recorded: false, task_id: id, field: 'lessons[1].boundary', reason: 'mull refused it (HTTP 422): lessons[1].boundary: required outside the reflection scope' })
  assert.equal(out, 'Reflection not recorded: mull refused it (HTTP 422): lessons[1].boundary: required outside the reflection scope. Fix lessons[1].boundary and call task_reflect again.')
  lessons[1].boundary = 'true of every repo'
  const retry = await call('task_reflect', { task_id: id, assessment: 'a', lessons })
  assert.equal(retry.v.recorded, true)
  assert.equal(retry.v.lessons_recorded, 2)
})

test('task_reflect: 404, 409 (open, already reflected) and bad arguments, each said and not thrown', async (t) => {
  const fake = await startedFake(t)
  const { call } = await applied(t, fake)
  assert.match((await call('task_reflect', { task_id: 'task-nope', assessment: 'a', lessons: [] })).out, /^Reflection not recorded: mull has no task "task-nope"/)
  const { v: open } = await call('task_start', { goal: 'g', expected_result: 'e' })
  assert.equal((await call('task_reflect', { task_id: open.task_id, assessment: 'a', lessons: [] })).v.reason,
    `task ${open.task_id} cannot take a reflection now (the task is still open; close it with task_end first)`)
  const id = await closedTask(call)
  assert.equal((await call('task_reflect', { task_id: id, assessment: 'a', lessons: [] })).out, `Reflection on ${id} recorded: 0 lessons recorded.`)
  assert.match((await call('task_reflect', { task_id: id, assessment: 'a', lessons: [] })).v.reason, /already reflected/)
  const before = fake.requests.length
  assert.equal((await call('task_reflect', { task_id: id, assessment: 'a' })).out,
    'Reflection not recorded: lessons must be a list (empty when there is nothing to keep). Fix lessons and call task_reflect again.')
  assert.equal((await call('task_reflect', { task_id: id, assessment: 'a', lessons: [{ relation: 'new' }, 'x'] })).v.field, 'lessons[1]')
  assert.equal((await call('task_reflect', { task_id: id, assessment: ' ', lessons: [] })).v.field, 'assessment')
  assert.equal(fake.requests.length, before, 'bad arguments send nothing')
})

test('lessons_lookup returns mull\'s text; an unknown lesson is said', async (t) => {
  const fake = await startedFake(t)
  fake.lessons.set('41', 'LESSON 41\nproblem: p\nSOURCE TASK task-1: goal')
  const { call, tool } = await applied(t, fake)
  assert.equal((await call('lessons_lookup', { lesson_id: 41 })).out, 'LESSON 41\nproblem: p\nSOURCE TASK task-1: goal')
  assert.equal((await call('lessons_lookup', { lesson_id: ' 41 ' })).v.found, true)
  assert.equal((await call('lessons_lookup', { lesson_id: 42 })).out, 'Not found: mull has no lesson 42 (no lesson 42)')
  assert.equal((await call('lessons_lookup', {})).out, 'Not found: lesson_id is empty; give the lesson\'s id as mull shows it')
  assert.equal(tool('lessons_lookup').isConcurrencySafe(), true)
})

test('task tools with mull down or hanging: a clear result, never a throw', async (t) => {
  const fake = await startedFake(t)
  const { call, clock } = await applied(t, fake, { timeoutMs: 200 })
  const id = await closedTask(call)
  await fake.stop()
  const down = {
    task_start: [{ goal: 'g', expected_result: 'e' }, 'Task not recorded: mull is unavailable; the task was not recorded. Carry on with the work; there is no task to end.'],
    task_end: [{ task_id: id, status: 'failed', result: 'r' }, 'Task not closed: mull is unavailable; the task was not closed.'],
    task_reflect: [{ task_id: id, assessment: 'a', lessons: [] }, 'Reflection not recorded: mull is unavailable; the reflection was not recorded.'],
    lessons_lookup: [{ lesson_id: 1 }, 'Not found: mull is unavailable; the lesson cannot be looked up now']
  }
  for (const [name, [args, want]] of Object.entries(down)) assert.equal((await call(name, args)).out, want, name)

  fake.mode = 'hang'
  await fake.start()
  const hung = call('task_start', { goal: 'g', expected_result: 'e' })
  await until(() => fake.requests.filter(r => r.path === '/v1/tasks').length === 2, 'the task reached the hanging mull')
  clock.expire()
  assert.match((await hung).out, /^Task not recorded: mull is unavailable/)
})

test('an older mull without the task routes: said so, not thrown', async (t) => {
  const fake = await startedFake(t)
  const orig = fake.handle.bind(fake)
  fake.handle = (req, res) => {
    if (!req.url.startsWith('/v1/tasks')) return orig(req, res)
    res.writeHead(404, { 'content-type': 'text/plain' })
    res.end('404 page not found\n')
  }
  const { call } = await applied(t, fake)
  assert.equal((await call('task_start', { goal: 'g', expected_result: 'e' })).v.reason,
    'this mull does not serve POST /v1/tasks (HTTP 404); it may be older than the task tools')
})

test('the task-boundary hint: a fixed section before the memory section, the same text every turn', async (t) => {
  const fake = await startedFake(t)
  fake.addMemory(WS, 'fact', 'The API lives in server/api.ts.')
  const { ctx, agent } = await applied(t, fake)
  const hint = ctx.sections.find(s => s.name === 'mull-memory-tasks')
  const memory = ctx.sections.find(s => s.name === 'mull-memory')
  assert.ok(hint && memory)
  assert.ok(hint.order < memory.order, 'stable text first, for the prompt cache')
  const text = s => typeof s.text === 'function' ? s.text({ agent }) : s.text
  await until(() => text(memory).includes('server/api.ts'), 'the first digest')
  const turn1 = text(hint)
  fake.addMemory(WS, 'lesson', 'A new lesson changes the digest, not the hint.')
  ctx.emit('agent/session-start', { agent, source: 'resume' }) // a refresh now, not in digestRefreshMs
  await until(() => text(memory).includes('A new lesson'), 'the next digest')
  assert.equal(text(hint), turn1)
  assert.equal(turn1, TASK_HINT)
  assert.match(turn1, /call task_start as its first action/)
  assert.match(turn1, /call task_end/)
  assert.match(turn1, /call task_reflect/)
  assert.doesNotMatch(turn1, /\{\{|\}\}/, 'nothing DSH would interpolate')
})

test('the task-boundary hint: off with taskHints false, and left out with the tools', async (t) => {
  const fake = await startedFake(t)
  for (const config of [{ taskHints: false }, { tools: false }, { dshToolsModule: '/nonexistent/dsh-tools.mjs' }]) {
    const { ctx } = await applied(t, fake, config)
    assert.deepEqual(ctx.sections.map(s => s.name), ['mull-memory'], JSON.stringify(config))
  }
})

test('taskHints: a value that is not a boolean falls back to on, with a warning', async (t) => {
  const fake = await startedFake(t)
  const { ctx } = await applied(t, fake, { taskHints: 'no' })
  assert.deepEqual(ctx.sections.map(s => s.name), ['mull-memory', 'mull-memory-tasks'])
  assert.match(ctx.warnings()[0].msg, /taskHints="no" is not valid; using true/)
})

test('task_start from a session the plugin has not seen yet: its session_start reaches mull first', async (t) => {
  const fake = await startedFake(t)
  const { call } = await applied(t, fake)
  const other = fakeAgent(fakeSession('session-new', '/home/dev/other'))
  const { v } = await call('task_start', { goal: 'g', expected_result: 'e' }, other)
  assert.equal(v.recorded, true)
  const starts = fake.postedEvents().filter(e => e.type === 'session_start').map(e => [e.session_id, e.workspace])
  assert.deepEqual(starts, [['session-t', WS], ['session-new', '/home/dev/other']])
  assert.deepEqual(fake.requests.find(r => r.path === '/v1/tasks').body.workspace, '/home/dev/other')
  const last = fake.requests.findLastIndex(r => r.path === '/v1/events')
  assert.ok(last < fake.requests.findIndex(r => r.path === '/v1/tasks'), 'events first')
})
