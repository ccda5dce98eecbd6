// The plugin's notices: at most 10 per step (notices.mjs MAX_PER_STEP),
// the rest kept, in order, for the next steps. No network, no timers: the
// client is a stub that answers at once.
import { test } from 'node:test'
import assert from 'node:assert/strict'

import { Notices, noticeMessage } from '../lib/notices.mjs'

function stubClient (count) {
  const notices = Array.from({ length: count }, (_, i) => ({ id: i + 1, kind: 'fact', text: `notice ${i + 1}` }))
  return { request: async () => ({ status: 200, body: { notices, cursor: count } }) }
}

test('notices: 10 per step, the rest wait for the next steps in order', async () => {
  const n = new Notices({ client: stubClient(25), log: () => {} })
  assert.equal(await n.poll('/home/dev/app', 's1'), 25)
  const steps = [n.take('s1'), n.take('s1'), n.take('s1'), n.take('s1')]
  assert.deepEqual(steps.map(s => s.length), [10, 10, 5, 0])
  assert.deepEqual(steps.flat().map(x => x.id), Array.from({ length: 25 }, (_, i) => String(i + 1)))
})

test('notices: exactly 10 waiting all go in one step, 11 do not', async () => {
  for (const [count, first] of [[10, 10], [11, 10]]) {
    const n = new Notices({ client: stubClient(count), log: () => {} })
    await n.poll('/home/dev/app', 's1')
    const step = n.take('s1')
    assert.equal(step.length, first, `${count} waiting`)
    const text = noticeMessage(step, 'mull').content[0].text
    assert.equal(text.split('\n').filter(l => l.startsWith('- (fact) ')).length, first)
    assert.equal(n.take('s1').length, count - first)
  }
})
