import { test } from 'node:test'
import assert from 'node:assert/strict'

import {
  MAX_OUTPUT, cutMiddle, cutBytes, dshId, feedbackId, feedbackRating, mapSessionEvent, messageFeedbackEvents, parseExitCode, sessionStartId, stableId,
  toolResultPayload, turnReason
} from '../lib/mapping.mjs'
import { checkEvent } from '../testkit/fake-mull.mjs'
import { fixtureLogs } from '../testkit/helpers.mjs'

const SID = 'session-618f3e2a-04f1-4c07-ae0d-228954177258'
const state = (calls = {}) => ({ id: SID, workspace: '/home/dev/invoice-utils', turn: 1, callOf: id => calls[id] })

function toolResult (seq, callId, text, isError = false, error) {
  const data = {
    turn: 1,
    step: 1,
    message: {
      source: { kind: 'tool', callId },
      content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }], isError }],
      role: 'user',
      id: 'd1d9d525-fcb4-421c-b035-3540488c6a3e'
    }
  }
  if (error) data.error = error
  return { type: 'tool/result', seq, time: 1795977440003, data, sourceEventSeqs: [seq - 1], surfaceOp: 'append' }
}

test('ids: a log row is dsh:<session>:<seq>, the same id the importer derives', () => {
  assert.equal(dshId(SID, 45), `dsh:${SID}:45`)
  assert.equal(dshId(SID, 45, 'x'), `dsh:${SID}:45:x`)
  assert.equal(sessionStartId(SID), `dsh:${SID}:session_start`)
  const [e] = mapSessionEvent(state(), { type: 'turn/end', seq: 74, time: 1795977440003, data: { turn: 1, reason: { kind: 'completed' } } })
  assert.equal(e.id, `dsh:${SID}:74`)
})

test('ids: events without a row get a stable hash id', () => {
  const a = stableId(SID, 'error', 1, 3, 'boom')
  assert.equal(a, stableId(SID, 'error', 1, 3, 'boom'))
  assert.notEqual(a, stableId(SID, 'error', 1, 4, 'boom'))
  assert.match(a, new RegExp(`^dsh:${SID}:error:[0-9a-f]{16}$`))
})

test('bash exit codes: the trailing marker, none means 0', () => {
  assert.equal(parseExitCode('FAILED (failures=2)\n\n[exit code: 1]'), 1)
  assert.equal(parseExitCode('x\n[exit code: 127]\n'), 127)
  assert.equal(parseExitCode('all good\n'), undefined)
  assert.equal(parseExitCode('[exit code: 2] in the middle\nmore'), undefined)
})

test('tool_result: a failing bash run has isError false and a non-zero exit marker', () => {
  const call = { name: 'bash', arguments: '{"command":"python3 -m unittest -v","description":"Run the invoice unit tests"}' }
  const p = toolResultPayload(toolResult(45, 'call_00_X', '[stderr]\nFAIL: test_apply_discount\n\nFAILED (failures=2)\n\n[exit code: 1]').data, call)
  assert.deepEqual(p, {
    call_id: 'call_00_X',
    tool: 'bash',
    command: 'python3 -m unittest -v',
    exit_code: 1,
    is_error: true,
    output: '[stderr]\nFAIL: test_apply_discount\n\nFAILED (failures=2)\n\n[exit code: 1]',
    turn: 1
  })
})

test('tool_result: a bash run without a marker exited 0', () => {
  const p = toolResultPayload(toolResult(155, 'c', 'Ran 3 tests\n\nOK\n').data, { name: 'bash', arguments: '{"command":"pnpm test"}' })
  assert.equal(p.exit_code, 0)
  assert.equal(p.is_error, false)
})

test('tool_result: a typed tool error keeps its code and the call arguments as the command', () => {
  const args = '{"file_path":"/home/dev/docs-site/docs/config.md"}'
  const p = toolResultPayload(toolResult(30, 'c2', 'Error: cannot read "/home/dev/docs-site/docs/config.md": not found', true,
    { name: 'FsError', code: 'FS_NOT_FOUND' }).data, { name: 'read', arguments: args })
  assert.deepEqual(p, {
    call_id: 'c2',
    tool: 'read',
    command: args,
    is_error: true,
    error_code: 'FS_NOT_FOUND',
    output: 'Error: cannot read "/home/dev/docs-site/docs/config.md": not found',
    turn: 1
  })
})

test('tool_result: a result whose call was not seen still names a tool', () => {
  const p = toolResultPayload(toolResult(9, 'c9', 'ok').data, undefined)
  assert.equal(p.tool, 'unknown')
  assert.equal('command' in p, false)
})

test('tool_result: output is cut to 8192 bytes, keeping head and tail, never splitting a character', () => {
  const big = 'é'.repeat(5000) + 'MIDDLE' + '€'.repeat(5000) + '\n[exit code: 3]'
  const p = toolResultPayload(toolResult(1, 'c', big).data, { name: 'bash', arguments: '{"command":"make"}' })
  assert.ok(Buffer.byteLength(p.output, 'utf8') <= MAX_OUTPUT, `${Buffer.byteLength(p.output)} bytes`)
  assert.ok(Buffer.byteLength(p.output, 'utf8') > MAX_OUTPUT - 100)
  assert.ok(p.output.startsWith('é'))
  assert.ok(p.output.endsWith('[exit code: 3]'))
  assert.match(p.output, /\n…\[\d+ bytes cut\]…\n/)
  const headBytes = Buffer.byteLength(p.output.slice(0, p.output.indexOf('\n…[')))
  assert.ok(headBytes > 1900 && headBytes <= 2048, `a quarter for the head, as the importer cuts: ${headBytes}`)
  assert.ok(!p.output.includes('\ufffd'), 'no broken character')
  assert.equal(p.exit_code, 3) // parsed before cutting
  assert.equal(cutMiddle('short', 10), 'short')
  assert.equal(cutBytes('ééé', 5), 'éé')
})

test('turn_end: reasons map to mull\'s four; an error turn also gives the error event, as the importer does', () => {
  assert.equal(turnReason('disposed'), 'aborted')
  assert.equal(turnReason('max-tokens'), 'max-tokens')
  const out = mapSessionEvent(state(), {
    type: 'turn/end',
    seq: 74,
    time: 1795977440003,
    data: { turn: 1, reason: { kind: 'error', error: { message: 'Internal server error: upstream model worker unavailable', code: 'SERVER', status: 500 } } }
  })
  assert.deepEqual(out.map(e => [e.id, e.type, e.payload]), [
    [`dsh:${SID}:74`, 'turn_end', { turn: 1, reason: 'error', error: 'Internal server error: upstream model worker unavailable' }],
    [`dsh:${SID}:74:error`, 'error', { message: 'Internal server error: upstream model worker unavailable', code: 'SERVER', status: 500, turn: 1 }]
  ])
  assert.equal(out[0].time, new Date(1795977440003).toISOString())
  const [aborted, ...rest] = mapSessionEvent(state(), { type: 'turn/end', seq: 9, time: 1, data: { turn: 2, reason: { kind: 'aborted', reason: 'user' } } })
  assert.deepEqual(aborted.payload, { turn: 2, reason: 'aborted', error: 'user' })
  assert.deepEqual(rest, [])
  const [disposed] = mapSessionEvent(state(), { type: 'turn/end', seq: 9, time: 1, data: { turn: 2, reason: { kind: 'disposed' } } })
  assert.deepEqual(disposed.payload, { turn: 2, reason: 'aborted' })
})

test('feedback: /feedback is free text, rated none, never guessed from its words', () => {
  assert.equal(feedbackRating('that broke the build'), 'none')
  assert.equal(feedbackRating('👍 nice fix'), 'none')
  assert.equal(feedbackRating('meh', 'up'), 'up', 'a rating DSH gives wins')
  const [e] = mapSessionEvent(state(), { type: 'feedback/record', seq: 80, time: 1, data: { text: ' use pnpm, not npm ' } })
  assert.deepEqual(e.payload, { rating: 'none', text: 'use pnpm, not npm' })
})

test('message feedback: one event per item revision, the importer\'s id, newest last; foreign items left out', () => {
  const row = {
    session: { createdAt: 1, cwd: '/home/dev/app' },
    items: [
      { messageId: 'm2', rating: 'positive', version: 'v2', createdAt: 20, updatedAt: 30 },
      { messageId: 'm1', rating: 'negative', note: ' wrong file ', version: 'v1', createdAt: 10, updatedAt: 10 },
      { messageId: 'm3', rating: 'meh', version: 'v3', createdAt: 5, updatedAt: 5 },
      { messageId: '', rating: 'negative', version: 'v4', createdAt: 5, updatedAt: 5 }
    ]
  }
  const out = messageFeedbackEvents('session-x', '/home/dev/app', row)
  assert.deepEqual(out.map(e => [e.id, e.time, e.payload]), [
    ['dsh:session-x:feedback:m1:v1', new Date(10).toISOString(), { rating: 'down', text: 'wrong file', message_id: 'm1' }],
    ['dsh:session-x:feedback:m2:v2', new Date(30).toISOString(), { rating: 'up', message_id: 'm2' }]
  ])
  for (const e of out) assert.equal(checkEvent(e), null)
  assert.equal(feedbackId('s', 'm', 'v'), 'dsh:s:feedback:m:v')
})

test('assistant messages carry DSH\'s message id, which message feedback names', () => {
  const [e] = mapSessionEvent(state(), { type: 'assistant/message', seq: 43, time: 1, data: { turn: 1, message: { id: 'e529ff55', role: 'assistant', content: [{ type: 'text', text: 'Done.' }] } } })
  assert.deepEqual(e.payload, { text: 'Done.', turn: 1, message_id: 'e529ff55' })
})

test('messages: prompts, harness context and assistant text are forwarded; mull\'s own recall is not', () => {
  const human = { type: 'user/message', seq: 7, time: 1, data: { content: [{ type: 'text', text: 'always use pnpm' }], source: { kind: 'user' }, role: 'user', id: 'x' } }
  const plugin = { type: 'user/message', seq: 8, time: 1, data: { content: [{ type: 'text', text: 'Current runtime context.' }], source: { kind: 'plugin', plugin: '@deepseek-ai/dsh-system-prompt', form: 'snapshot' }, role: 'user', id: 'y' } }
  const recall = { type: 'user/message', seq: 9, time: 1, data: { content: [{ type: 'text', text: 'New in mull memory' }], source: { kind: 'plugin', plugin: 'mull', form: 'recall' }, role: 'user', id: 'z' } }
  const toolOnly = { type: 'assistant/message', seq: 42, time: 1, data: { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'tool-call', id: 'c', name: 'read', arguments: '{}' }] } } }
  const answer = { type: 'assistant/message', seq: 190, time: 1, data: { turn: 1, step: 6, message: { role: 'assistant', content: [{ type: 'reasoning', text: 'think' }, { type: 'text', text: 'Done.' }, { type: 'text', text: ' ' }, { type: 'text', text: 'Bye.' }] } } }
  assert.deepEqual(mapSessionEvent(state(), human)[0].payload, { text: 'always use pnpm', source: 'user', turn: 1 })
  assert.deepEqual(mapSessionEvent(state(), plugin)[0].payload, { text: 'Current runtime context.', source: 'plugin', turn: 1 })
  assert.deepEqual(mapSessionEvent(state(), recall), [])
  assert.deepEqual(mapSessionEvent(state(), toolOnly), [])
  assert.deepEqual(mapSessionEvent(state(), answer)[0].payload, { text: 'Done.\nBye.', turn: 1, reasoning: 'think' })
  assert.deepEqual(mapSessionEvent(state(), human, { forwardMessages: false }), [])
})

test('assistant reasoning: the reasoning blocks, cut to 8 KiB as the importer cuts; reasoning with no text still goes out', () => {
  const quiet = { type: 'assistant/message', seq: 153, time: 1, data: { turn: 1, step: 4, message: { id: 'm4', role: 'assistant', content: [{ type: 'reasoning', text: 'Edit applied. Re-run the same test command to verify.' }, { type: 'tool-call', id: 'c', name: 'bash', arguments: '{}' }] } } }
  const [e] = mapSessionEvent(state(), quiet)
  // the importer's payload for the same row (dshlog TestMapFixtures, S1 seq 153)
  assert.deepEqual(e.payload, { text: '', turn: 1, message_id: 'm4', reasoning: 'Edit applied. Re-run the same test command to verify.' })
  assert.equal(checkEvent(e), null)
  const blank = { type: 'assistant/message', seq: 2, time: 1, data: { turn: 1, message: { id: 'm1', role: 'assistant', content: [{ type: 'reasoning', text: '  ' }, { type: 'tool-call', id: 'c', name: 'bash', arguments: '{}' }] } } }
  assert.deepEqual(mapSessionEvent(state(), blank), [])
  // the same row as dshlog's TestMapRows: 4000 h then 6000 t
  const long = { type: 'assistant/message', seq: 3, time: 1, data: { turn: 1, message: { id: 'm2', role: 'assistant', content: [{ type: 'reasoning', text: 'h'.repeat(4000) + 't'.repeat(6000) }] } } }
  const [l] = mapSessionEvent(state(), long)
  assert.equal(l.payload.reasoning, 'h'.repeat(2041) + '\n…[1833 bytes cut]…\n' + 'h'.repeat(126) + 't'.repeat(6000))
  assert.equal(checkEvent(l), null)
  assert.deepEqual(checkEvent({ ...l, payload: { ...l.payload, reasoning: 'r'.repeat(8193) } }), { field: 'payload.reasoning', error: 'longer than 8192 bytes' })
})

test('rows mull does not take map to nothing', () => {
  for (const type of ['step/start', 'assistant/chunk', 'request/header', 'todo/write', 'llm/retry', 'session/title']) {
    assert.deepEqual(mapSessionEvent(state(), { type, seq: 3, time: 1, data: {} }), [])
  }
  assert.deepEqual(mapSessionEvent(state(), { type: 'compaction/end', seq: 3, time: 1, data: { compactionId: 'c', turn: 1, error: 'x' } }), [])
  assert.deepEqual(mapSessionEvent(state(), { type: 'compaction/end', seq: 3, time: 1, data: { compactionId: 'c', turn: 1 } })[0].payload, {})
  assert.deepEqual(mapSessionEvent(state(), { type: 'text-chunks', seq0: 3, time0: 1, data: {} }), []) // packed storage row: no seq
})

test('real DSH logs: every event mapped from the fixtures passes mull\'s schema', (t) => {
  const logs = fixtureLogs()
  if (logs.length === 0) return t.skip('shared/fixtures/dsh not found')
  let n = 0
  const byType = {}
  for (const { header, rows } of logs) {
    const calls = {}
    const s = { id: header.id, workspace: header.cwd, turn: 1, callOf: id => calls[id] }
    for (const row of rows) {
      if (row.type === 'tool/call') calls[row.data.callId] = row.data
      for (const e of mapSessionEvent(s, row)) {
        assert.equal(checkEvent(e), null, `${JSON.stringify(e).slice(0, 300)}`)
        assert.equal(e.id, `dsh:${header.id}:${row.seq}${e.type === 'error' ? ':error' : ''}`)
        byType[e.type] = (byType[e.type] ?? 0) + 1
        if (e.type === 'tool_result') assert.notEqual(e.payload.tool, 'unknown')
        n++
      }
    }
  }
  assert.ok(n > 0)
  assert.ok(byType.tool_result > 0 && byType.turn_end > 0 && byType.user_message > 0 && byType.error > 0, JSON.stringify(byType))
  t.diagnostic(`${logs.length} logs, ${n} events: ${JSON.stringify(byType)}`)
})
