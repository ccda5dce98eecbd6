import { test } from 'node:test'
import assert from 'node:assert/strict'

import { mapSessionEvent } from '../lib/mapping.mjs'
import { failureDetail, mapTitle, mapUsage, newUsageState, usageId } from '../lib/usage.mjs'
import { checkEvent } from '../testkit/fake-mull.mjs'
import { fixtureLogs } from '../testkit/helpers.mjs'

const SID = 'session-618f3e2a-04f1-4c07-ae0d-228954177258'
const s = { id: SID, workspace: '/home/dev/invoice-utils' }

const ctxRow = { type: 'request/context', seq: 11, time: 1795977438892, data: { provider: 'deepseek-official', model: 'deepseek-v4-flash', contextWindow: 1000000 } }
const usage = { inputTokens: 537, outputTokens: 72, cacheReadTokens: 8576, reasoningTokens: 37 }
const chunk = { type: 'assistant/chunk', seq: 78, time: 1795977440753, data: { turn: 1, step: 2, chunk: { type: 'usage', usage } } }
const message = {
  type: 'assistant/message',
  seq: 80,
  time: 1795977440755,
  data: { turn: 1, step: 2, message: { role: 'assistant', content: [], source: { kind: 'model', provider: 'deepseek-official', model: 'deepseek-v4-flash' } }, usage }
}
// What the importer (dshlog) maps S1's step 2 to: the same id and payload.
const importedStep2 = {
  id: `dsh:${SID}:usage:1.2`,
  type: 'usage',
  payload: { model: 'deepseek-v4-flash', provider: 'deepseek-official', input_tokens: 537, cache_read_tokens: 8576, output_tokens: 72, reasoning_tokens: 37, turn: 1, step: 2 }
}

test('usage: the chunk and the message copy of one step give one event, with the importer\'s id', () => {
  const u = newUsageState()
  assert.deepEqual(mapUsage(s, u, ctxRow), [])
  const [e, ...rest] = mapUsage(s, u, chunk)
  assert.deepEqual(rest, [])
  assert.deepEqual({ id: e.id, type: e.type, payload: e.payload }, importedStep2)
  assert.equal(checkEvent(e), null)
  assert.deepEqual(mapUsage(s, u, message), [])
  assert.equal(usageId(SID, 1, 2), importedStep2.id)
})

test('usage: a message without its chunk still counts, with the message\'s model', () => {
  const [e] = mapUsage(s, newUsageState(), message)
  assert.deepEqual({ id: e.id, type: e.type, payload: e.payload }, importedStep2)
})

test('usage: counts mull would refuse are zeroed, not sent', () => {
  const bad = { ...chunk, data: { turn: 1, step: 3, chunk: { type: 'usage', usage: { inputTokens: -1, outputTokens: 5, cacheReadTokens: 1.5, reasoningTokens: 9 } } } }
  const [e] = mapUsage(s, newUsageState(), bad)
  assert.deepEqual(e.payload, { input_tokens: 0, cache_read_tokens: 0, output_tokens: 5, reasoning_tokens: 5, turn: 1, step: 3 })
  assert.equal(checkEvent(e), null)
  assert.deepEqual(mapUsage(s, newUsageState(), { ...chunk, data: { turn: 1, step: 1, chunk: { type: 'finish', reason: { kind: 'stop' } } } }), [])
})

test('session title: one event per session/title row, none for a blank title', () => {
  const [e] = mapTitle(s, { type: 'session/title', seq: 20, time: 1795977439000, data: { title: ' Fix failing invoice discount tests ', source: { kind: 'provider' } } })
  assert.equal(e.id, `dsh:${SID}:20`)
  assert.deepEqual(e.payload, { title: 'Fix failing invoice discount tests', source: 'provider' })
  assert.equal(checkEvent(e), null)
  assert.deepEqual(mapTitle(s, { type: 'session/title', seq: 21, data: { title: '  ' } }), [])
})

test('provider error: status and request id kept when valid', () => {
  const turnEnd = {
    type: 'turn/end',
    seq: 74,
    time: 1795977465410,
    data: { turn: 1, reason: { kind: 'error', error: { message: 'Internal server error: upstream model worker unavailable', code: 'SERVER', status: 500, requestId: '579750bd-b726-470e-b881-43848e70aa38' } } }
  }
  const err = mapSessionEvent({ ...s, turn: 1, callOf: () => undefined }, turnEnd).find(e => e.type === 'error')
  assert.deepEqual(err.payload, {
    message: 'Internal server error: upstream model worker unavailable', code: 'SERVER', status: 500, request_id: '579750bd-b726-470e-b881-43848e70aa38', turn: 1
  })
  assert.equal(checkEvent(err), null)
  assert.deepEqual(failureDetail({ status: 42, requestId: 'a\nb' }), { status: undefined, request_id: undefined })
})

test('usage on the fixture logs: one per step, the numbers FORMAT.md tabulates', (t) => {
  const logs = fixtureLogs()
  if (logs.length === 0) return t.skip('shared/fixtures/dsh not found')
  const totals = {}
  for (const { header, rows } of logs) {
    const u = newUsageState()
    const sess = { id: header.id, workspace: header.cwd }
    const evs = rows.flatMap(r => mapUsage(sess, u, r))
    assert.equal(new Set(evs.map(e => e.id)).size, evs.length)
    for (const e of evs) assert.equal(checkEvent(e), null)
    totals[header.id] = evs.reduce((a, e) => [a[0] + 1, a[1] + e.payload.input_tokens, a[2] + e.payload.cache_read_tokens], [0, 0, 0])
  }
  assert.deepEqual(totals[SID], [5, 10027, 36736])
  assert.deepEqual(totals['session-293a9768-7a49-469f-a49b-03ee04ee1add'], [6, 1463, 54016])
})
