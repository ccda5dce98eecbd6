import { test } from 'node:test'
import assert from 'node:assert/strict'

import { mapSessionEvent } from '../lib/mapping.mjs'
import { failureDetail, mapTitle, mapUsage } from '../lib/usage.mjs'
import { checkEvent } from '../testkit/fake-mull.mjs'
import { fixtureLogs } from '../testkit/helpers.mjs'

const SID = 'session-618f3e2a-04f1-4c07-ae0d-228954177258'
const s = { id: SID, workspace: '/home/dev/invoice-utils' }

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
  id: `dsh:${SID}:80:usage`,
  type: 'usage',
  payload: { model: 'deepseek-v4-flash', provider: 'deepseek-official', input_tokens: 537, cache_read_tokens: 8576, output_tokens: 72, reasoning_tokens: 37, turn: 1, step: 2 }
}

test('usage: the message copy gives the event, with the importer\'s id and payload; the chunk nothing', () => {
  assert.deepEqual(mapUsage(s, chunk), [])
  const [e, ...rest] = mapUsage(s, message)
  assert.deepEqual(rest, [])
  assert.deepEqual({ id: e.id, type: e.type, payload: e.payload }, importedStep2)
  assert.equal(checkEvent(e), null)
})

test('usage: counts and names mull would refuse are zeroed or left out, not sent', () => {
  const bad = {
    ...message,
    data: { ...message.data, message: { ...message.data.message, source: { kind: 'model', model: 'x\ny' } }, usage: { inputTokens: -1, outputTokens: 5, cacheReadTokens: 1.5, reasoningTokens: 9 } }
  }
  const [e] = mapUsage(s, bad)
  assert.deepEqual(e.payload, { input_tokens: 0, cache_read_tokens: 0, output_tokens: 5, reasoning_tokens: 5, turn: 1, step: 2 })
  assert.equal(checkEvent(e), null)
  assert.deepEqual(mapUsage(s, { ...message, data: { ...message.data, usage: undefined } }), [])
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

test('usage on the fixture logs: one per step, the importer\'s numbers', (t) => {
  const logs = fixtureLogs()
  if (logs.length === 0) return t.skip('shared/fixtures/dsh not found')
  const totals = {}
  for (const { header, rows } of logs) {
    const sess = { id: header.id, workspace: header.cwd }
    const evs = rows.flatMap(r => mapUsage(sess, r))
    assert.equal(new Set(evs.map(e => e.id)).size, evs.length)
    for (const e of evs) assert.equal(checkEvent(e), null)
    totals[header.id] = evs.reduce((a, e) => [a[0] + 1, a[1] + e.payload.input_tokens, a[2] + e.payload.cache_read_tokens], [0, 0, 0])
  }
  assert.deepEqual(totals[SID], [5, 10027, 36736])
  assert.deepEqual(totals['session-293a9768-7a49-469f-a49b-03ee04ee1add'], [6, 1463, 54016])
})
