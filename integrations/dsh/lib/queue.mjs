// A bounded in-memory queue of mull events, flushed in the background in
// batches to POST /v1/events. push() never waits and never throws; when the
// queue is full the oldest event is dropped and counted. Its timers and its
// drain deadline come from the client's clock.

import { aborted } from './clock.mjs'

export class EventQueue {
  /**
   * @param {object} o
   * @param {import('./client.mjs').MullClient} o.client
   * @param {number} o.queueMax - events held at most
   * @param {number} o.batchMax - events per POST at most
   * @param {number} o.flushMs - delay between a push and its flush
   * @param {(level: string, msg: string) => void} o.log
   */
  constructor ({ client, queueMax, batchMax, flushMs, log }) {
    this.client = client
    this.clock = client.clock
    this.queueMax = queueMax
    this.batchMax = batchMax
    this.batchSize = batchMax // halved after a 413
    this.flushMs = flushMs
    this.log = log
    this.items = []
    this.timer = null
    this.flushing = null
    this.closed = false
    this.stats = { queued: 0, sent: 0, stored: 0, duplicates: 0, dropped: 0, rejected: 0 }
    this.warned = new Set()
  }

  get length () {
    return this.items.length
  }

  /** Queues one event and schedules a flush. soon: flush without the usual delay. */
  push (event, { soon = false } = {}) {
    if (this.closed) return
    this.items.push(event)
    this.stats.queued++
    this.trim()
    this.schedule(soon ? 0 : this.flushMs)
  }

  trim () {
    const over = this.items.length - this.queueMax
    if (over <= 0) return
    this.items.splice(0, over)
    this.stats.dropped += over
    if (this.client.down) this.client.droppedWhileDown += over
    else this.warnOnce('full', `mull event queue is full (${this.queueMax}); dropping the oldest events`)
  }

  schedule (delay) {
    if (this.closed || this.flushing || this.items.length === 0) return
    delay = Math.max(delay, this.client.waitMs())
    if (this.timer) {
      if (this.timer.at <= this.clock.now() + delay) return
      this.clock.clearTimeout(this.timer.handle)
    }
    const handle = this.clock.setTimeout(() => {
      this.timer = null
      this.flush()
    }, delay)
    this.timer = { handle, at: this.clock.now() + delay }
  }

  /** Sends queued events until the queue is empty or mull is unavailable. Never rejects. */
  flush () {
    if (this.flushing) return this.flushing
    if (this.timer) { this.clock.clearTimeout(this.timer.handle); this.timer = null }
    this.flushing = this.run().catch(err => {
      this.warnOnce('bug', `mull plugin flush failed: ${err?.stack || err}`)
    }).finally(() => {
      this.flushing = null
      if (this.items.length > 0) this.schedule(this.flushMs)
    })
    return this.flushing
  }

  async run () {
    while (this.items.length > 0 && this.client.available()) {
      const batch = this.items.splice(0, this.batchSize)
      const res = await this.client.request('POST', '/v1/events', { body: { events: batch } })
      if (!this.settle(batch, res)) return
    }
  }

  /** Handles one batch's answer; false stops this flush. */
  settle (batch, res) {
    if (res === null) { // mull is down: hold the batch, bounded
      this.items.unshift(...batch)
      this.trim()
      return false
    }
    const { status, body } = res
    if (status === 200 || status === 201) {
      this.stats.sent += batch.length
      this.stats.stored += Number(body?.stored) || 0
      this.stats.duplicates += Number(body?.duplicates) || 0
      return true
    }
    if (status === 400 && Number.isInteger(body?.index) && body.index >= 0 && body.index < batch.length) {
      const [bad] = batch.splice(body.index, 1)
      this.reject(1, `mull refused event ${bad.type} ${bad.id}: ${body.field ?? ''} ${body.error ?? ''}`.trim(), `400:${bad.type}:${body.field}`)
      this.items.unshift(...batch) // the rest of the batch is fine: send it again
      return true
    }
    if (status === 413 && batch.length > 1) {
      this.batchSize = Math.max(1, Math.floor(batch.length / 2))
      this.items.unshift(...batch)
      return true
    }
    this.reject(batch.length, `mull answered HTTP ${status} to POST /v1/events${body?.error ? ': ' + body.error : ''}; ${batch.length} events dropped`, `http:${status}`)
    return true
  }

  reject (n, msg, key) {
    this.stats.rejected += n
    this.warnOnce(key, msg)
  }

  warnOnce (key, msg) {
    if (this.warned.has(key)) return
    this.warned.add(key)
    this.log('warn', msg)
  }

  /**
   * Flushes what is left, giving up after ms: for shutdown. Resolves, never
   * rejects; events still queued at the deadline are lost.
   */
  async drain (ms) {
    const deadline = this.clock.deadline(ms)
    const passed = aborted(deadline)
    while (this.items.length > 0 || this.flushing) {
      if (!this.client.available() && !this.flushing) break
      if (deadline.aborted) break
      await Promise.race([this.flush(), passed])
    }
  }

  close () {
    this.closed = true
    if (this.timer) { this.clock.clearTimeout(this.timer.handle); this.timer = null }
  }
}
