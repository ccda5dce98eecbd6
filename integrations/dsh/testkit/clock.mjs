// TestClock: real timers for the plugin's short delays (a flush after
// flushMs, an interval), but deadlines (a request's timeoutMs, drain's
// bound) that pass only when the test says so, with expire(). So a test of
// "gives up at its deadline" is not a race with a busy machine, and no
// other test can time out by accident.

import { realClock } from '../lib/clock.mjs'

export class TestClock {
  constructor () {
    this.pending = new Set()
    this.waiters = []
    this.offset = 0
  }

  now () { return Date.now() + this.offset }
  setTimeout (fn, ms) { return realClock.setTimeout(fn, ms) }
  clearTimeout (h) { realClock.clearTimeout(h) }
  setInterval (fn, ms) { return realClock.setInterval(fn, ms) }
  clearInterval (h) { realClock.clearInterval(h) }

  /** A signal that aborts with a TimeoutError at the next expire(). */
  deadline (ms) {
    const c = new AbortController()
    const d = { c, ms }
    this.pending.add(d)
    c.signal.addEventListener('abort', () => this.pending.delete(d), { once: true })
    for (const w of this.waiters.splice(0)) w()
    return c.signal
  }

  /** Resolves once at least n deadlines are pending (n defaults to 1). */
  async deadlines (n = 1) {
    while (this.pending.size < n) await new Promise(resolve => this.waiters.push(resolve))
  }

  /** Passes every pending deadline, and moves now() past the longest one. */
  expire () {
    let longest = 0
    for (const d of [...this.pending]) {
      longest = Math.max(longest, d.ms)
      d.c.abort(new DOMException(`deadline of ${d.ms} ms passed`, 'TimeoutError'))
    }
    this.offset += longest
  }
}
