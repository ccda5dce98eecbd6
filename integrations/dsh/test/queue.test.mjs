import { test } from 'node:test'
import assert from 'node:assert/strict'

import { MullClient } from '../lib/client.mjs'
import { EventQueue } from '../lib/queue.mjs'
import { mullEvent } from '../lib/mapping.mjs'
import { FakeMull, checkEvent } from '../testkit/fake-mull.mjs'
import { until } from '../testkit/helpers.mjs'
import { TestClock } from '../testkit/clock.mjs'

const SID = 'session-aaaaaaaa-0000-4000-8000-000000000001'

function ev (i) {
  return mullEvent(`dsh:${SID}:${i}`, 'turn_end', SID, '/home/dev/app', 1795977440003, { turn: 1, reason: 'completed' })
}

function setup (t, fake, over = {}) {
  const logs = []
  const log = (level, msg) => logs.push({ level, msg })
  const clock = new TestClock()
  const client = new MullClient({ baseUrl: fake.url, timeoutMs: 300, log, minBackoffMs: 50, maxBackoffMs: 200, clock, ...over.client })
  const queue = new EventQueue({ client, queueMax: 1000, batchMax: 100, flushMs: 20, log, ...over.queue })
  t.after(() => { queue.close(); clock.expire() })
  return { client, queue, logs, clock }
}

const posts = fake => fake.requests.filter(r => r.path === '/v1/events')

test('events are batched and flushed in the background', async (t) => {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  const { queue } = setup(t, fake)
  for (let i = 0; i < 250; i++) queue.push(ev(i))
  assert.equal(posts(fake).length, 0, 'push does not send')
  await until(() => queue.stats.stored === 250, '250 events stored')
  assert.deepEqual(posts(fake).map(r => r.body.events.length), [100, 100, 50])
  assert.equal(queue.stats.stored, 250)
  assert.equal(queue.length, 0)
  for (const e of fake.postedEvents()) assert.equal(checkEvent(e), null)
})

test('a replayed event is a duplicate at mull, not an error', async (t) => {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  const { queue } = setup(t, fake)
  queue.push(ev(1))
  await until(() => queue.stats.sent === 1)
  queue.push(ev(1))
  await until(() => queue.stats.sent === 2)
  assert.equal(queue.stats.stored, 1)
  assert.equal(queue.stats.duplicates, 1)
})

test('the queue is bounded: the oldest events are dropped and counted', async (t) => {
  const fake = await new FakeMull().start()
  const { queue, client } = setup(t, fake, { queue: { queueMax: 10 } })
  await fake.stop() // nothing listens: connection refused
  for (let i = 0; i < 25; i++) queue.push(ev(i))
  assert.equal(queue.length, 10)
  assert.equal(queue.stats.dropped, 15)
  assert.deepEqual(queue.items.map(e => e.id), Array.from({ length: 10 }, (_, i) => `dsh:${SID}:${i + 15}`))
  await until(() => client.down, 'mull marked down')
  for (let i = 25; i < 30; i++) queue.push(ev(i))
  assert.equal(queue.length, 10, 'still bounded while down, after the failed batch came back')
  assert.equal(queue.items.at(-1).id, `dsh:${SID}:29`)
})

test('a refused event is dropped and the rest of its batch is sent', async (t) => {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  const { queue, logs } = setup(t, fake)
  const bad = mullEvent(`dsh:${SID}:bad`, 'turn_end', SID, '/home/dev/app', 1, { turn: 1, reason: 'exploded' })
  queue.push(ev(1)); queue.push(bad); queue.push(ev(2))
  await until(() => queue.stats.sent === 2)
  assert.deepEqual([...fake.events.keys()], [`dsh:${SID}:1`, `dsh:${SID}:2`])
  assert.equal(queue.stats.rejected, 1)
  assert.equal(logs.filter(l => l.level === 'warn').length, 1)
  assert.match(logs[0].msg, /refused event turn_end .*payload\.reason/)
})

test('413: the batch is split until it fits', async (t) => {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  const { queue } = setup(t, fake, { queue: { batchMax: 1000 } })
  const orig = fake.postEvents.bind(fake)
  fake.postEvents = (res, body) => body.events.length > 30
    ? (res.writeHead(413, { 'content-type': 'application/json' }), res.end('{"error":"too large"}'))
    : orig(res, body)
  for (let i = 0; i < 100; i++) queue.push(ev(i))
  await until(() => queue.stats.sent === 100)
  assert.ok(queue.batchSize <= 30)
})

test('a hanging mull does not hold up push; the request times out', async (t) => {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  fake.mode = 'hang'
  const { queue, client, logs, clock } = setup(t, fake, { client: { timeoutMs: 100 } })
  for (let i = 0; i < 10; i++) assert.equal(queue.push(ev(i)), undefined, 'push returns at once, not a promise')
  await clock.deadlines(1) // the first batch's request is out, and hangs
  assert.equal(client.down, false)
  clock.expire()
  await until(() => client.down, 'timed out and marked down')
  assert.equal(logs.length, 1)
  assert.match(logs[0].msg, /no answer within 100 ms/)
  assert.equal(queue.length, 10, 'the batch is held')
})

test('drain sends what is left, and gives up at its deadline', async (t) => {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  const { queue } = setup(t, fake, { queue: { flushMs: 60000 } })
  for (let i = 0; i < 5; i++) queue.push(ev(i))
  queue.close()
  await queue.drain(1000)
  assert.equal(fake.events.size, 5)

  fake.mode = 'hang'
  const { queue: q2, clock } = setup(t, fake, { client: { timeoutMs: 5000 }, queue: { flushMs: 60000 } })
  q2.push(ev(9))
  const drained = q2.drain(150)
  await clock.deadlines(2) // drain's own and its request's
  clock.expire()
  await drained // resolves at the deadline, though mull never answers
  await until(() => q2.length === 1, 'the event that did not go out is queued again')
})
