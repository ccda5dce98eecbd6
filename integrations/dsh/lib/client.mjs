// The HTTP side: every call to mull goes through MullClient.request, which
// bounds it with a timeout and keeps one shared view of whether mull is up.
//
// When a call fails (network error, timeout, 5xx, 401) mull is marked down
// (a 503 with Retry-After is an answer for a caller that says so):
// one line is logged, and further calls are skipped until a backoff
// (1s, 2s, 4s … up to maxBackoffMs) has passed; then the next call is the
// probe. A success marks mull up again. Nothing here throws.

import { realClock } from './clock.mjs'

export class MullClient {
  /**
   * @param {object} o
   * @param {string} o.baseUrl
   * @param {string} [o.apiToken]
   * @param {number} o.timeoutMs - every request is aborted after this long
   * @param {(level: string, msg: string) => void} o.log
   * @param {typeof fetch} [o.fetch]
   * @param {typeof realClock} [o.clock] - timestamps and request deadlines
   */
  constructor ({ baseUrl, apiToken, timeoutMs, log, fetch: f = globalThis.fetch, clock = realClock, minBackoffMs = 1000, maxBackoffMs = 60000, downNote = '' }) {
    this.baseUrl = baseUrl
    this.apiToken = apiToken
    this.timeoutMs = timeoutMs
    this.log = log
    this.fetch = f
    this.clock = clock
    this.minBackoffMs = minBackoffMs
    this.maxBackoffMs = maxBackoffMs
    /** Appended to the one line logged when mull goes down (what else carries on, and how). */
    this.downNote = downNote
    this.down = false
    this.backoffMs = 0
    this.retryAt = 0
    this.downSince = 0
    /** Events dropped while down, reported when mull is back. */
    this.droppedWhileDown = 0
    /**
     * The bridge's own read (GET) and write (other methods) errors: a
     * request that got no usable answer (network, timeout, 5xx, 401), and
     * calls skipped during a backoff; memory_status shows them.
     */
    this.stats = { reads: 0, writes: 0, readErrors: 0, writeErrors: 0, skipped: 0, lastError: '', lastErrorAt: 0 }
  }

  now () {
    return this.clock.now()
  }

  /** Whether a call may go out now: mull is up, or its backoff has passed. */
  available () {
    return !this.down || this.now() >= this.retryAt
  }

  /** Milliseconds until a call may go out (0 when it may now). */
  waitMs () {
    return this.available() ? 0 : this.retryAt - this.now()
  }

  /**
   * One request. Resolves to {status, headers, body} for any HTTP answer mull
   * gave (body is the parsed JSON, or null), or to null when mull is down or
   * did not answer in time. With force the call goes out even during a
   * backoff (a tool the model called explicitly, a ledger check in block
   * mode). timeoutMs overrides the client's for this call.
   *
   * With busyIsAnswer a 503 carrying Retry-After is mull's answer, not an
   * outage: it is returned like any other status and mull stays up (the
   * negative ledger answers so when one fact kept changing under
   * concurrent writers; the rest of mull is fine). onFail, when given,
   * learns why a null came back: 'skipped' (backing off), 'timeout' (the
   * request went out and got no answer in time: mull may have acted on
   * it), 'network', 'http' (5xx or 401).
   */
  async request (method, path, { query, body, headers = {}, force = false, timeoutMs = this.timeoutMs, busyIsAnswer = false, onFail } = {}) {
    const write = method !== 'GET' && method !== 'HEAD'
    const fail = (kind, why = '') => {
      if (kind === 'skipped') this.stats.skipped++
      else {
        this.stats[write ? 'writeErrors' : 'readErrors']++
        this.stats.lastError = `${method} ${path}: ${why}`
        this.stats.lastErrorAt = this.now()
      }
      if (onFail) onFail(kind)
      return null
    }
    if (!force && !this.available()) return fail('skipped')
    this.stats[write ? 'writes' : 'reads']++
    const url = new URL(this.baseUrl + path)
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v))
    const h = { accept: 'application/json', ...headers }
    if (body !== undefined) h['content-type'] = 'application/json'
    if (this.apiToken) h.authorization = `Bearer ${this.apiToken}`
    let res
    let text
    try {
      res = await this.fetch(url, {
        method,
        headers: h,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: this.clock.deadline(timeoutMs)
      })
      text = await res.text()
    } catch (err) {
      const timedOut = err?.name === 'TimeoutError' || err?.name === 'AbortError'
      const why = timedOut ? `no answer within ${timeoutMs} ms` : describe(err)
      this.markDown(timedOut ? `${why} to ${method} ${path}` : why)
      return fail(timedOut ? 'timeout' : 'network', why)
    }
    const busy = busyIsAnswer && res.status === 503 && res.headers.has('retry-after')
    if (res.status >= 500 && !busy) {
      this.markDown(`HTTP ${res.status} from ${method} ${path}`)
      return fail('http', `HTTP ${res.status}`)
    }
    if (res.status === 401) {
      this.markDown('HTTP 401: mull wants a token; set apiToken in the plugin config')
      return fail('http', 'HTTP 401 (no or wrong apiToken)')
    }
    this.markUp()
    let parsed = null
    if (text) {
      try { parsed = JSON.parse(text) } catch { parsed = null }
    }
    return { status: res.status, headers: res.headers, body: parsed }
  }

  markDown (reason) {
    const now = this.now()
    this.backoffMs = this.down ? Math.min(this.maxBackoffMs, this.backoffMs * 2) : this.minBackoffMs
    this.retryAt = now + this.backoffMs
    if (this.down) return
    this.down = true
    this.downSince = now
    this.log('warn', `mull at ${this.baseUrl} is unavailable (${reason}); DSH carries on without it, events wait in a bounded queue, retrying with backoff up to ${Math.round(this.maxBackoffMs / 1000)}s${this.downNote}`)
  }

  markUp () {
    if (!this.down) return
    this.down = false
    this.backoffMs = 0
    this.retryAt = 0
    const dropped = this.droppedWhileDown
    this.droppedWhileDown = 0
    this.log('info', `mull at ${this.baseUrl} is back after ${Math.round((this.now() - this.downSince) / 1000)}s${dropped ? `; ${dropped} events were dropped meanwhile` : ''}`)
  }
}

function describe (err) {
  const cause = err?.cause
  const code = cause?.code || err?.code
  const msg = cause?.message || err?.message || String(err)
  return code && !msg.includes(code) ? `${code}: ${msg}` : msg
}
