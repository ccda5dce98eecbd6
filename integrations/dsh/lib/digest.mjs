// The memory digest: fetched from GET /v1/digest in the background with
// If-None-Match, cached per (workspace, session), and served synchronously
// to DSH's system-prompt section.

/**
 * Breaks every `{{` and `}}` apart. DSH interpolates `{{name}}` in section
 * text and throws on a malformed group, so memory text must never contain
 * one. mull escapes braces itself; this is the plugin's own guard.
 */
export function escapeBraces (text) {
  return text.replace(/\{(?=\{)/g, '{ ').replace(/\}(?=\})/g, '} ')
}

export class DigestCache {
  /**
   * @param {object} o
   * @param {import('./client.mjs').MullClient} o.client
   * @param {(level: string, msg: string) => void} o.log
   * @param {number} [o.maxEntries]
   * @param {(session: string, notices: any[]) => void} [o.onNotices] - a session digest's `notices`, when mull sends them with it
   */
  constructor ({ client, log, maxEntries = 64, clock = client.clock, onNotices = () => {} }) {
    this.client = client
    this.onNotices = onNotices
    this.clock = clock
    this.log = log
    this.maxEntries = maxEntries
    this.entries = new Map() // key → {text, etag, fetchedAt}
    this.inflight = new Map() // key → promise
    this.warned = new Set()
  }

  static key (workspace, session) {
    return `${workspace}\u0000${session ?? ''}`
  }

  /**
   * The cached digest for a session, else the one fetched for its workspace
   * before the session was known, else ''. Synchronous: no I/O.
   */
  text (workspace, session) {
    const e = this.entries.get(DigestCache.key(workspace, session)) ??
      (session ? this.entries.get(DigestCache.key(workspace, '')) : undefined)
    return e?.text ?? ''
  }

  /**
   * Refreshes one entry in the background. Resolves when done (true when the
   * text changed); never rejects. One request per key at a time.
   */
  refresh (workspace, session) {
    if (!workspace) return Promise.resolve(false)
    const key = DigestCache.key(workspace, session)
    const running = this.inflight.get(key)
    if (running) return running
    const p = this.fetch(key, workspace, session).catch(() => false).finally(() => this.inflight.delete(key))
    this.inflight.set(key, p)
    return p
  }

  async fetch (key, workspace, session) {
    const old = this.entries.get(key)
    const headers = old?.etag ? { 'if-none-match': old.etag } : {}
    const res = await this.client.request('GET', '/v1/digest', { query: { workspace, session }, headers })
    if (res === null) return false
    if (res.status === 304) {
      if (old) old.fetchedAt = this.clock.now()
      return false
    }
    if (res.status !== 200 || typeof res.body?.text !== 'string') {
      this.warnOnce(`digest:${res.status}`, `mull answered HTTP ${res.status} to GET /v1/digest; no memory is injected until it serves one`)
      return false
    }
    if (session && Array.isArray(res.body.notices)) this.onNotices(session, res.body.notices)
    const text = escapeBraces(res.body.text.trim())
    const etag = res.headers?.get?.('etag') || res.body.etag || ''
    this.entries.delete(key) // re-insert: the map's order is least recently refreshed first
    this.entries.set(key, { text, etag, fetchedAt: this.clock.now() })
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value)
    return !old || old.text !== text
  }

  warnOnce (key, msg) {
    if (this.warned.has(key)) return
    this.warned.add(key)
    this.log('warn', msg)
  }
}
