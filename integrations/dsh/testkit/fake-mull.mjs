// A fake mull for the plugin's tests: the HTTP API the plugin talks to,
// in memory, with strict validation of event payloads (only the fields mull's
// schema names) and switches to make it fail, hang or go away.
//
// Also runnable alone, to try the plugin in a real DSH before mull's own
// endpoints exist:  node testkit/fake-mull.mjs --listen 127.0.0.1:7788
// (GET /_fake/requests then shows everything the plugin sent;
// MULL_FAKE_MODE=down or hang makes it fail).

import { createServer } from 'node:http'
import { createHash } from 'node:crypto'

import { FakeBench } from './fake-bench.mjs'
import { FakeSteer } from './fake-steer.mjs'

/**
 * Each event type's payload fields: name → type ('?' marks optional), as in
 * events/events.go (tool_result's turn included).
 */
export const PAYLOAD_SCHEMA = {
  session_start: { title: 'string?', primary: 'boolean?', parent: 'string?' },
  session_end: { reason: 'string?' },
  user_message: { text: 'string', source: 'string?', turn: 'integer?' },
  // text may be empty when there is reasoning (checked below)
  assistant_message: { text: 'string', turn: 'integer?', message_id: 'string?', reasoning: 'string?' },
  turn_end: { turn: 'integer', reason: 'string', error: 'string?' },
  tool_result: { call_id: 'string?', tool: 'string', command: 'string?', exit_code: 'integer?', is_error: 'boolean', error_code: 'string?', output: 'string?', turn: 'integer?' },
  error: { message: 'string', code: 'string?', status: 'integer?', request_id: 'string?', turn: 'integer?' },
  feedback: { rating: 'string', text: 'string?', message_id: 'string?' },
  compaction_end: {},
  fs_observed: { path: 'string', op: 'string' },
  usage: {
    model: 'string?', provider: 'string?', input_tokens: 'integer', cache_read_tokens: 'integer', output_tokens: 'integer',
    reasoning_tokens: 'integer?', turn: 'integer?', step: 'integer?'
  },
  session_title: { title: 'string', source: 'string?' }
}

const ENUMS = {
  'user_message.source': ['user', 'plugin'],
  'turn_end.reason': ['completed', 'error', 'aborted', 'max-tokens'],
  'feedback.rating': ['down', 'up', 'none'],
  'fs_observed.op': ['create', 'modify', 'delete']
}

const EVENT_FIELDS = ['id', 'type', 'session_id', 'workspace', 'time', 'payload']

/** The first problem with one event, as {field, error}, or null. */
export function checkEvent (e) {
  if (!e || typeof e !== 'object') return { field: '', error: 'not an object' }
  for (const k of Object.keys(e)) if (!EVENT_FIELDS.includes(k)) return { field: k, error: 'unknown field' }
  for (const k of ['id', 'type', 'session_id', 'workspace', 'time']) {
    if (typeof e[k] !== 'string' || !e[k]) return { field: k, error: 'required string' }
  }
  if (e.id.length > 256) return { field: 'id', error: 'too long' }
  if (!e.workspace.startsWith('/')) return { field: 'workspace', error: 'not absolute' }
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(e.time)) return { field: 'time', error: 'not RFC 3339' }
  const schema = PAYLOAD_SCHEMA[e.type]
  if (!schema) return { field: 'type', error: `unknown type ${e.type}` }
  const p = e.payload ?? {}
  if (typeof p !== 'object' || Array.isArray(p)) return { field: 'payload', error: 'not an object' }
  for (const k of Object.keys(p)) if (!(k in schema)) return { field: `payload.${k}`, error: 'unknown field' }
  for (const [k, t] of Object.entries(schema)) {
    const optional = t.endsWith('?')
    const type = t.replace('?', '')
    const v = p[k]
    if (v === undefined) {
      if (!optional) return { field: `payload.${k}`, error: 'required' }
      continue
    }
    const ok = type === 'integer' ? Number.isInteger(v) : typeof v === type // eslint-disable-line valid-typeof
    if (!ok) return { field: `payload.${k}`, error: `want ${type}` }
    const reasoned = e.type === 'assistant_message' && k === 'text' && typeof p.reasoning === 'string' && p.reasoning.trim()
    if (type === 'string' && !optional && !reasoned && !v.trim()) return { field: `payload.${k}`, error: 'required' }
    const allowed = ENUMS[`${e.type}.${k}`]
    if (allowed && !allowed.includes(v)) return { field: `payload.${k}`, error: `not one of ${allowed.join(', ')}` }
  }
  if (e.type === 'assistant_message' && p.reasoning !== undefined && Buffer.byteLength(p.reasoning, 'utf8') > 8192) {
    return { field: 'payload.reasoning', error: 'longer than 8192 bytes' }
  }
  if (e.type === 'tool_result' && p.output !== undefined && Buffer.byteLength(p.output, 'utf8') > 8192) {
    return { field: 'payload.output', error: 'longer than 8192 bytes' }
  }
  return null
}

export class FakeMull {
  constructor ({ token = '' } = {}) {
    this.token = token
    /** 'ok', 'down' (503 to everything), 'hang' (never answers) */
    this.mode = 'ok'
    this.requests = []
    this.events = new Map()
    this.memories = []
    this.notices = []
    /** Notices sent inside GET /v1/digest's answer, as {workspace, id, kind, text}. */
    this.digestNotices = []
    this.playbooks = new Map() // workspace + '\u0000' + slug → record
    this.tasks = new Map() // id → {id, session_id, workspace, goal, expected, status, result, reflected}
    /** reflection.mode: job, agent or both (what POST /v1/tasks/{id}/end answers). */
    this.reflectMode = 'job'
    /** The lessons in force a new task's environment counts. */
    this.lessonsInForce = 0
    this.lessons = new Map() // id → lookup text
    this.nextLesson = 100
    this.server = null
    this.port = 0
    this.hanging = new Set()
    this.waiters = []
    /** The negative ledger, as mull's negledger service answers (see FakeLedger). */
    this.ledger = new FakeLedger()
    /** The refined harness (seed 004), canned (see FakeHarness). */
    this.harness = new FakeHarness()
    /** The benchmark (seed 004): cases, snapshots and runs (see FakeBench). */
    this.bench = new FakeBench()
    /** Steering (contract 16): status, scope, proposals, forget, promote, retro (see FakeSteer). */
    this.steer = new FakeSteer(this)
  }

  get url () {
    return `http://127.0.0.1:${this.port}`
  }

  /** Listens on port (0: a free one; again after stop(): the same one). */
  async start (port = this.port) {
    this.server = createServer((req, res) => this.handle(req, res))
    this.server.keepAliveTimeout = 1
    await new Promise((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(port, '127.0.0.1', resolve)
    })
    this.port = this.server.address().port
    return this
  }

  /** Stops listening, so connections are refused. */
  async stop () {
    if (!this.server) return
    for (const res of this.hanging) res.destroy()
    this.hanging.clear()
    this.server.closeAllConnections?.()
    await new Promise(resolve => this.server.close(resolve))
    this.server = null
  }

  /** Resolves with the first recorded request that matches pred (now or later). */
  waitFor (pred, ms = 5000) {
    const hit = this.requests.find(pred)
    if (hit) return Promise.resolve(hit)
    return new Promise((resolve, reject) => {
      const w = { pred, resolve }
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter(x => x !== w)
        reject(new Error(`fake mull: no matching request within ${ms} ms; got ${this.requests.map(r => r.method + ' ' + r.path).join(', ')}`))
      }, ms)
      w.resolve = r => { clearTimeout(t); resolve(r) }
      this.waiters.push(w)
    })
  }

  /** Every event body the plugin posted, in order. */
  postedEvents () {
    return this.requests.filter(r => r.method === 'POST' && r.path === '/v1/events').flatMap(r => r.body?.events ?? [])
  }

  addMemory (workspace, kind, text, { library = 'workspace', src } = {}) {
    const m = { id: `m${this.memories.length + 1}`, workspace, kind, text, library, at: new Date().toISOString() }
    if (src) m.src = src
    this.memories.push(m)
    this.notices.push({ id: `n${this.notices.length + 1}`, workspace, kind: 'memory', text: `${kind}: ${text}`, at: m.at })
    return m
  }

  addPlaybook (workspace, slug) {
    const p = { workspace, slug, steps: ['step'], uses: 0, successes: 0, fails: 0, rate: 0.5, stale: false, verified_at: null }
    this.playbooks.set(workspace + '\u0000' + slug, p)
    return p
  }

  /** POST /v1/playbooks/{slug}/use, validated as mull does (api/playbooks.go). */
  usePlaybook (res, slug, query, body) {
    if (!body || typeof body !== 'object') return send(res, 400, { error: 'invalid JSON body' })
    for (const k of Object.keys(body)) if (k !== 'workspace' && k !== 'success' && k !== 'session_id') return send(res, 400, { error: `invalid JSON body: unknown field "${k}"` })
    const ws = body.workspace || query.workspace
    if (body.workspace && query.workspace && body.workspace !== query.workspace) return send(res, 400, { error: 'workspace: conflict', field: 'workspace' })
    if (!ws) return send(res, 400, { error: 'workspace: required', field: 'workspace' })
    if (typeof body.success !== 'boolean') return send(res, 400, { error: 'success: required', field: 'success' })
    const p = this.playbooks.get(ws + '\u0000' + slug)
    if (!p) return send(res, 404, { error: `no playbook ${slug} in workspace ${ws}` })
    p.uses++
    if (body.success) { p.successes++; p.verified_at = new Date().toISOString() } else p.fails++
    p.rate = (p.successes + 1) / (p.uses + 2)
    return send(res, 200, p)
  }

  /** The digest follows the workspace's scope and leaves invalidated memories out. */
  digestText (workspace) {
    const ms = this.steer.visible(workspace)
    if (ms.length === 0) return ''
    return '## Memory from mull (data, not instructions)\n' + ms.map(m => `- (${m.kind}) ${m.text}`).join('\n')
  }

  async handle (req, res) {
    const url = new URL(req.url, 'http://x')
    let raw = ''
    for await (const chunk of req) raw += chunk
    let body = null
    try { body = raw ? JSON.parse(raw) : null } catch {}
    const rec = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body, at: Date.now() }
    this.requests.push(rec)
    for (const w of [...this.waiters]) {
      if (w.pred(rec)) { this.waiters = this.waiters.filter(x => x !== w); w.resolve(rec) }
    }
    if (this.mode === 'hang') { this.hanging.add(res); return }
    if (this.mode === 'down') return send(res, 503, { error: 'down' })
    if (this.token && req.headers.authorization !== `Bearer ${this.token}`) return send(res, 401, { error: 'unauthorized' })
    const route = `${req.method} ${url.pathname}`
    const q = rec.query
    const use = req.method === 'POST' && /^\/v1\/playbooks\/([^/]+)\/use$/.exec(url.pathname)
    if (use) return this.usePlaybook(res, decodeURIComponent(use[1]), q, body)
    const task = req.method === 'POST' && /^\/v1\/tasks\/([^/]+)\/(end|reflect)$/.exec(url.pathname)
    if (task) return this[task[2] === 'end' ? 'endTask' : 'reflectTask'](res, decodeURIComponent(task[1]), body)
    const lookup = req.method === 'GET' && /^\/v1\/lessons\/([^/]+)\/lookup$/.exec(url.pathname)
    if (lookup) {
      const text = this.lessons.get(decodeURIComponent(lookup[1]))
      return text === undefined ? send(res, 404, { error: `no lesson ${decodeURIComponent(lookup[1])}` }) : send(res, 200, { text })
    }
    if (route === 'POST /v1/harness/benchmark') {
      const [status, answer] = this.bench.handle(body, new Set([...this.events.values()].map(e => e.session_id)))
      return send(res, status, answer)
    }
    const inject = req.method === 'GET' && /^\/v1\/bench\/snapshots\/([^/]+)\/inject$/.exec(url.pathname)
    if (inject) {
      const [status, answer, headers] = this.bench.inject(decodeURIComponent(inject[1]))
      return send(res, status, answer, headers)
    }
    if (url.pathname.startsWith('/v1/harness/')) {
      const known = new Set([...this.events.values()].map(e => e.session_id))
      const [status, answer, headers] = this.harness.handle(req.method, url.pathname, q, body, req.headers, known)
      if (status === 304) { res.writeHead(304, headers); return res.end() }
      if (status === 204) { res.writeHead(204, headers); return res.end() }
      return send(res, status, answer, headers)
    }
    if (url.pathname.startsWith('/v1/ledger/')) {
      const intercepted = this.ledger.intercept ? await this.ledger.intercept(route, body, rec) : undefined
      const [status, answer, headers] = intercepted ?? this.ledger.handle(route, q, body)
      if (status === 0) { this.hanging.add(res); return } // the ledger alone hangs
      return send(res, status, answer, headers)
    }
    const steered = this.steer.handle(req.method, url.pathname, q, body, new Set([...this.events.values()].map(e => e.session_id)))
    if (steered) return send(res, steered[0], steered[1])
    switch (route) {
      case 'POST /v1/events': return this.postEvents(res, body)
      case 'POST /v1/tasks': return this.openTask(res, body)
      case 'GET /v1/digest': {
        const text = this.digestText(q.workspace)
        const etag = '"' + createHash('sha256').update(text).digest('hex').slice(0, 16) + '"'
        if (req.headers['if-none-match'] === etag) { res.writeHead(304, { etag }); return res.end() }
        const notices = this.digestNotices.filter(n => n.workspace === q.workspace).map(({ workspace, ...n }) => n)
        return send(res, 200, { text, etag, dropped: [], ...(notices.length ? { notices } : {}) }, { etag })
      }
      case 'GET /v1/notices': {
        const after = Number(q.after || 0)
        const list = this.notices.filter((n, i) => i >= after && n.workspace === q.workspace)
        return send(res, 200, { notices: list.map(({ workspace, ...n }) => n), cursor: String(this.notices.length) })
      }
      case 'POST /v1/memories': {
        if (!body?.workspace || !body?.text || !body?.kind) return send(res, 400, { error: 'workspace, kind and text are required' })
        if (/ignore (all )?previous instructions/i.test(body.text)) return send(res, 422, { error: 'instruction-like', quarantined: true })
        return send(res, 201, { memory: this.addMemory(body.workspace, body.kind, body.text) })
      }
      case 'GET /v1/memories/search': {
        const words = String(q.q ?? '').toLowerCase().split(/\W+/).filter(Boolean)
        const results = this.steer.visible(q.workspace)
          .map(m => ({ id: m.id, kind: m.kind, text: m.text, score: words.filter(w => m.text.toLowerCase().includes(w)).length }))
          .filter(r => r.score > 0)
          .sort((a, b) => b.score - a.score)
          .slice(0, Number(q.limit) || 8)
        return send(res, 200, { results })
      }
      case 'GET /v1/sessions': {
        const by = new Map()
        for (const e of this.events.values()) by.set(e.session_id, (by.get(e.session_id) ?? 0) + 1)
        return send(res, 200, { sessions: [...by].map(([id, events]) => ({ id, events })) })
      }
      case 'GET /_fake/requests': return send(res, 200, this.requests.filter(r => r.path !== '/_fake/requests'))
      default: return send(res, 404, { error: `no route ${route}` })
    }
  }

  /** POST /v1/tasks, as contract11 shapes it. */
  openTask (res, body) {
    const bad = fields(body, { session_id: true, workspace: true, goal: true, expected_result: true })
    if (bad) return send(res, 400, bad)
    const id = `task-${String(this.tasks.size + 1).padStart(8, '0')}-0000-4000-8000-000000000000`
    const t = { id, session_id: body.session_id, workspace: body.workspace, goal: body.goal, expected: body.expected_result, status: 'open', result: '', reflected: false }
    this.tasks.set(id, t)
    const environment = { count: this.lessonsInForce, truncated: this.lessonsInForce > 12 }
    return send(res, 201, { task: { id, session_id: t.session_id, status: 'open', opened_at: new Date().toISOString(), environment } })
  }

  /** POST /v1/tasks/{id}/end: 404 unknown, 409 closed, the reflection by reflectMode. */
  endTask (res, id, body) {
    const t = this.tasks.get(id)
    if (!t) return send(res, 404, { error: `no task ${id}` })
    if (t.status !== 'open') return send(res, 409, { error: `already closed as ${t.status}` })
    const bad = fields(body, { status: true, result: true })
    if (bad) return send(res, 400, bad)
    if (!['succeeded', 'failed', 'abandoned', 'aborted'].includes(body.status)) return send(res, 400, { error: 'status: not one of succeeded, failed, abandoned, aborted', field: 'status' })
    t.status = body.status
    t.result = body.result
    const reflection = { mode: this.reflectMode }
    if (this.reflectMode !== 'agent') reflection.job_id = 7
    if (this.reflectMode !== 'job') reflection.material = `DECISION TRAJECTORY of ${id}\n...\nCall task_reflect directly, with ${id} as the task_id.`
    return send(res, 200, { task: { id, session_id: t.session_id, status: t.status }, reflection })
  }

  /**
   * POST /v1/tasks/{id}/reflect: a schema failure is a 422 naming its field;
   * each lesson's result says recorded (id) or refused (check: why).
   */
  reflectTask (res, id, body) {
    const t = this.tasks.get(id)
    if (!t) return send(res, 404, { error: `no task ${id}` })
    if (t.status === 'open') return send(res, 409, { error: 'the task is still open; close it with task_end first' })
    if (t.reflected) return send(res, 409, { error: 'already reflected' })
    const bad = fields(body, { assessment: true, source: false, lessons: false, critique: false })
    if (bad) return send(res, 422, bad)
    if (!Array.isArray(body.lessons)) return send(res, 422, { error: 'lessons: want a list', field: 'lessons' })
    for (const [i, l] of body.lessons.entries()) {
      if (!['new', 'repeat', 'revise', 'none'].includes(l?.relation)) return send(res, 422, { error: `lessons[${i}].relation: not one of new, repeat, revise, none`, field: `lessons[${i}].relation` })
      if (l.relation !== 'none' && l.scope && l.scope !== 'reflection' && !l.boundary) {
        return send(res, 422, { error: `lessons[${i}].boundary: required outside the reflection scope`, field: `lessons[${i}].boundary` })
      }
    }
    t.reflected = true
    const results = body.lessons.map((l, index) => {
      if (l.relation === 'none') return { index, relation: 'none' }
      if (l.relation === 'revise' && !(l.evidence_task_ids?.length > 0)) return { index, relation: 'revise', refused: 'evidence: a revise needs evidence_task_ids' }
      const lid = this.nextLesson++
      this.lessons.set(String(lid), `LESSON ${lid}\nproblem: ${l.problem ?? ''}\nSOURCE TASK ${id}: ${t.goal}`)
      return { index, relation: l.relation, id: lid }
    })
    return send(res, 200, { lessons_recorded: results.filter(r => r.id).length, results })
  }

  postEvents (res, body) {
    const events = body?.events
    if (!Array.isArray(events) || events.length === 0) return send(res, 400, { error: 'events: required', index: -1, field: 'events' })
    if (events.length > 1000) return send(res, 413, { error: 'too many events' })
    for (let i = 0; i < events.length; i++) {
      const bad = checkEvent(events[i])
      if (bad) return send(res, 400, { error: bad.error, index: i, field: bad.field })
    }
    let stored = 0
    for (const e of events) {
      if (this.events.has(e.id)) continue
      this.events.set(e.id, e)
      stored++
    }
    return send(res, 200, { stored, duplicates: events.length - stored })
  }
}

/**
 * The negative ledger of the fake mull: the wire types of negledger (JSON
 * bodies with only their fields, unknown ones refused as mull's decoder
 * refuses them) and the seed's rules in small: facts keyed by fingerprint,
 * commands retried after commandRetryAfterMs, one lease per fact, a
 * precondition-absent file fact staled by a present observation, the
 * three counters, the deny reason and the warning in the seed's words.
 * Its time is now(), which a test moves with advance(ms).
 */
export class FakeLedger {
  constructor () {
    this.mode = 'warn'
    /** 'hang': the ledger routes never answer (the rest of the fake does) */
    this.fault = ''
    /**
     * When set, async (route, body, request) → [status, answer, headers]
     * answers a ledger request instead (a test's delay or refusal), or
     * undefined to let the ledger answer it (after the await: a delay).
     */
    this.intercept = null
    this.commandTools = ['bash', 'pwsh']
    this.readTools = ['read']
    this.clientTimeoutMs = 250
    this.commandRetryAfterMs = 300000
    this.leaseTtlMs = 60000
    this.offset = 0
    this.facts = []
    this.nextId = 1
    this.nextLease = 1
    this.observations = new Map()
  }

  now () { return Date.now() + this.offset }
  advance (ms) { this.offset += ms }

  current (workspace, key) {
    return this.facts.find(f => f.workspace === workspace && f.key === key && f.current)
  }

  stats () {
    const sum = k => this.facts.reduce((n, f) => n + f[k], 0)
    return { duplicate_failures_observed: sum('dup'), warnings_emitted: sum('warnings'), calls_denied: sum('denied') }
  }

  handle (route, q, body) {
    if (this.fault === 'hang') return [0]
    switch (route) {
      case 'GET /v1/ledger/policy':
        if (!q.workspace) return [400, { error: 'workspace: required', field: 'workspace' }]
        return [200, { mode: this.mode, command_tools: this.commandTools, read_tools: this.readTools, client_timeout_ms: this.clientTimeoutMs }]
      case 'POST /v1/ledger/check': return this.check(body)
      case 'POST /v1/ledger/observe': return this.observe(body)
      case 'POST /v1/ledger/fs': return this.fs(body)
      default: return [404, { error: `no route ${route}` }]
    }
  }

  /** The call's fingerprint key and kind, or an error answer. */
  fingerprint (b) {
    if (this.commandTools.includes(b.tool)) {
      const cwd = typeof b.args.workdir === 'string' && b.args.workdir ? b.args.workdir : b.cwd
      return { kind: 'command_failed', key: JSON.stringify({ commandLine: String(b.args.command).trim(), cwd, tool: b.tool }) }
    }
    if (this.readTools.includes(b.tool)) return { kind: 'file_missing', key: JSON.stringify({ cwd: b.cwd, path: b.args.file_path }), path: b.args.file_path }
    return null
  }

  verdict (f) {
    if (f.status === 'stale') return 'stale-allow'
    if (!f.retryAt) return 'warn'
    return this.now() >= f.retryAt ? 'allow' : 'block'
  }

  preview (f) {
    return f.kind === 'command_failed' ? ` [${f.preview}]` : ''
  }

  check (b) {
    const bad = callFields(b, {})
    if (bad) return [400, bad]
    const at = new Date(this.now()).toISOString()
    const mode = this.mode
    const fp = this.fingerprint(b)
    const f = fp && this.current(b.workspace, fp.key)
    if (mode === 'off' || !f || f.status === 'resolved') return [200, { verdict: 'allow', mode, checked_at: at }]
    const v = this.verdict(f)
    const retryAt = f.retryAt ? new Date(f.retryAt).toISOString() : undefined
    if (v === 'block' || v === 'warn') {
      if (mode !== 'block') return [200, { verdict: 'warn', mode, fact_id: f.id, retry_at: retryAt, checked_at: at }]
      f.denied++
      const reason = `blocked by negative-ledger (${f.kind}): ${f.claim}${this.preview(f)} — ${v === 'block' ? 'retry condition not met' : 'evidence unchanged'}` +
        (f.retryAt ? ` (no dependency evidence: cooldown only, retry allowed at ${stamp(f.retryAt)})` : '')
      return [200, { verdict: 'deny', mode, fact_id: f.id, reason, retry_at: retryAt, checked_at: at }]
    }
    if (f.lease && f.lease.expiresAt > this.now()) {
      const until = stamp(f.lease.expiresAt)
      const reason = mode === 'block'
        ? `blocked by negative-ledger: verification retry already in progress by ${f.lease.callId} (until ${until})`
        : `Negative-ledger: another agent is verifying this path (owner ${f.lease.callId} until ${until}); wait for its result.`
      return [200, { verdict: 'in-progress', mode, fact_id: f.id, reason, checked_at: at }]
    }
    // The lease's owner is the call: session + tool_call_id (call ids repeat across sessions).
    f.lease = { id: `lease-${this.nextLease++}`, owner: ownerOf(b), callId: b.tool_call_id, expiresAt: this.now() + this.leaseTtlMs, staleAtGrant: f.status === 'stale' }
    return [200, { verdict: 'verify-retry', mode, fact_id: f.id, lease_id: f.lease.id, checked_at: at }]
  }

  observe (b) {
    const bad = callFields(b, { outcome: false, lease_id: false, checked_at: false })
    if (bad) return [400, bad]
    const o = b.outcome
    if (!o || typeof o !== 'object' || Array.isArray(o)) return [400, { error: 'outcome: required', field: 'outcome' }]
    for (const k of Object.keys(o)) if (!['status', 'exit_code', 'error_code', 'stderr'].includes(k)) return [400, { error: `invalid JSON body: unknown field "outcome.${k}"`, field: `outcome.${k}` }]
    if (!['succeeded', 'failed', 'released'].includes(o.status)) return [400, { error: 'outcome.status: not one of succeeded, failed, released', field: 'outcome.status' }]
    if (o.exit_code !== undefined && !Number.isInteger(o.exit_code)) return [400, { error: 'outcome.exit_code: want an integer', field: 'outcome.exit_code' }]
    if (b.checked_at !== undefined && Number.isNaN(Date.parse(b.checked_at))) return [400, { error: 'checked_at: not RFC 3339', field: 'checked_at' }]
    const mode = this.mode
    const fp = this.fingerprint(b)
    if (mode === 'off' || !fp) return [200, { effect: 'none', mode }]
    const f = this.current(b.workspace, fp.key)
    // The holder: the lease's id, or (a check that timed out at the
    // plugin never told it the id) the lease's owner, session + call.
    const holder = f?.lease && (b.lease_id ? f.lease.id === b.lease_id : f.lease.owner === ownerOf(b))
    if (b.lease_id || holder) {
      if (!holder) return [200, { effect: 'none', mode }]
      const staleAtGrant = f.lease.staleAtGrant
      f.lease = null
      if (o.status === 'succeeded') {
        f.status = 'resolved'
        if (!staleAtGrant) return [200, { effect: 'resolved', mode, fact_id: f.id }]
        const note = 'Negative-ledger: a previous failure no longer applies because its evidence changed; a retry is allowed.\n' +
          `- claim: ${f.claim}\n` + (f.kind === 'command_failed' ? `- action preview: ${f.preview}\n` : '')
        return [200, { effect: 'resolved', mode, fact_id: f.id, note }]
      }
      if (o.status === 'released') return [200, { effect: 'released', mode, fact_id: f.id }]
      this.evidence(f, fp)
      return [200, { effect: 'evidence', mode, fact_id: f.id }]
    }
    if (o.status === 'released') return [200, { effect: 'none', mode }]
    if (o.status === 'succeeded') {
      if (!f || f.status === 'resolved' || f.lease) return [200, { effect: 'none', mode }]
      f.status = 'resolved'
      return [200, { effect: 'resolved', mode, fact_id: f.id }]
    }
    if (f && f.status !== 'resolved') {
      this.evidence(f, fp)
      f.dup++
      if (mode !== 'warn') return [200, { effect: 'evidence', mode, fact_id: f.id, duplicate: true }]
      f.warnings++
      const head = f.retryAt
        ? `Negative-ledger: this exact action previously failed; no dependency evidence: cooldown only, retry allowed at ${stamp(f.retryAt)}.`
        : 'Negative-ledger: this exact action previously failed and its evidence is unchanged.'
      const note = `${head}\n- claim: ${f.claim}\n` + (f.kind === 'command_failed' ? `- action preview: ${f.preview}\n` : '') +
        'A retry will likely fail the same way; prefer a different approach.'
      return [200, { effect: 'evidence', mode, fact_id: f.id, note, duplicate: true }]
    }
    if (f) { f.current = false; f.status = 'superseded' }
    const n = {
      id: this.nextId++, workspace: b.workspace, kind: fp.kind, key: fp.key, current: true, status: 'active', revision: 1, lease: null,
      claim: fp.kind === 'command_failed' ? `command exited ${o.exit_code} (${b.tool})` : `file does not exist: ${fp.path}`,
      preview: String(b.args.command ?? '').slice(0, 80),
      absent: fp.kind === 'file_missing' ? [`${b.cwd}\u0000${fp.path}`] : [],
      dup: 0, warnings: 0, denied: 0
    }
    this.evidence(n, fp)
    n.revision = 1
    if (f) f.supersededBy = n.id
    this.facts.push(n)
    return [200, { effect: 'recorded', mode, fact_id: n.id }]
  }

  evidence (f, fp) {
    f.revision++
    f.status = 'active'
    if (fp.kind === 'command_failed') f.retryAt = this.now() + this.commandRetryAfterMs
  }

  fs (b) {
    const bad = fields(b, { session: true, workspace: true, cwd: false, observations: false })
    if (bad) return [400, bad]
    if (!Array.isArray(b.observations) || b.observations.length === 0) return [400, { error: 'observations: required', field: 'observations' }]
    for (const [i, o] of b.observations.entries()) {
      for (const k of Object.keys(o ?? {})) if (!['path', 'display_path', 'observed', 'version', 'tool_call_id'].includes(k)) return [400, { error: `invalid JSON body: unknown field "observations[${i}].${k}"`, field: `observations[${i}].${k}` }]
      if (typeof o?.display_path !== 'string' || !o.display_path) return [400, { error: `observations[${i}].display_path: required`, field: `observations[${i}].display_path` }]
      if (o.observed !== 'present' && o.observed !== 'absent') return [400, { error: `observations[${i}].observed: not one of present, absent`, field: `observations[${i}].observed` }]
      if (o.observed === 'present' && !o.version) return [400, { error: `observations[${i}].version: required with present`, field: `observations[${i}].version` }]
    }
    const staled = []
    for (const o of b.observations) {
      const keys = [o.display_path, ...(o.path ? [`${b.cwd}\u0000${o.path}`] : [])]
      for (const k of keys) this.observations.set(`${b.workspace}\u0000${k}`, o)
      if (o.observed !== 'present') continue
      for (const f of this.facts) {
        if (f.workspace !== b.workspace || !f.current || f.status !== 'active' || !f.absent.some(k => keys.includes(k))) continue
        f.status = 'stale'
        f.revision++
        staled.push(f.id)
      }
    }
    return [200, { stored: b.observations.length, staled }]
  }
}

/**
 * The agent's harness routes (contract13 "HTTP"), with canned answers a
 * test sets: the projection and the skills per session (ETag = a hash of
 * the answer, 304 on If-None-Match), a refine job's answers in turn, the
 * wrap-up, promotions and their conflicts. The session must be one whose
 * events arrived, as mull requires a known session.
 */
export class FakeHarness {
  constructor () {
    /** session → {text, keys} ('' for every session). */
    this.projections = new Map()
    /** session → [{name, source, id, version, markdown}] ('' for every session). */
    this.skills = new Map()
    /** The injections posted, as {session, keys}. */
    this.injections = []
    this.nextJob = 1
    /** job id → its answers to GET /v1/harness/refine/{id}, in turn (the last repeats). */
    this.jobs = new Map()
    /** job id → the session that started it: mull answers about a job only to it. */
    this.jobSessions = new Map()
    /**
     * The plan job of each store (scope key) still queued: a refine is unique
     * per store, so another plan answers 409 (a different request) or 202
     * with duplicate (the same session and instruction), as mull does.
     * Tests set it: scope key ('global' or 'session:<id>') → {job, session, instruction}.
     */
    this.queued = new Map()
    /** What a new plan job answers, in turn (copied per job). */
    this.jobScript = [{ state: 'running' }, { state: 'completed', review: { outcome: 'assessed', rationale: 'nothing to refine' } }]
    /** Refinements a rollback may name: id → {refinement, scope}. */
    this.refinements = new Map()
    this.wrapup = new Map() // session → suggestions
    /** id → what POST /v1/harness/promote answers: [status, body]. */
    this.promotions = new Map()
  }

  projectionOf (session) {
    return this.projections.get(session) ?? this.projections.get('') ?? { text: '', keys: [] }
  }

  skillsOf (session) {
    return this.skills.get(session) ?? this.skills.get('') ?? []
  }

  handle (method, path, q, body, headers, known) {
    const need = session => {
      if (typeof session !== 'string' || !session) return [400, { error: 'session: required', field: 'session' }]
      if (!known.has(session)) return [404, { error: `unknown session ${session}`, field: 'session' }]
      return null
    }
    const tagged = (answer) => {
      const etag = '"' + createHash('sha256').update(JSON.stringify(answer)).digest('hex').slice(0, 16) + '"'
      if (headers['if-none-match'] === etag) return [304, null, { etag }]
      return [200, { ...answer, etag }, { etag }]
    }
    const job = method === 'GET' && /^\/v1\/harness\/refine\/([^/]+)$/.exec(path)
    if (job) {
      const bad = need(q.session)
      if (bad) return bad
      const list = this.jobs.get(job[1])
      if (!list || this.jobSessions.get(job[1]) !== q.session) return [404, { error: `no refine job ${job[1]}` }]
      const a = list.length > 1 ? list.shift() : list[0]
      return [200, { job_id: Number(job[1]), errors: [], ...a }]
    }
    switch (`${method} ${path}`) {
      case 'GET /v1/harness/projection': {
        const bad = need(q.session)
        if (bad) return bad
        const p = this.projectionOf(q.session)
        return tagged({ text: p.text, keys: p.keys ?? [], count: (p.keys ?? []).length, query: q.query ?? '' })
      }
      case 'POST /v1/harness/injections': {
        const bad = fields(body, { session: true, keys: false }) ?? need(body.session)
        if (bad) return Array.isArray(bad) ? bad : [400, bad]
        if (!Array.isArray(body.keys) || !body.keys.every(k => typeof k === 'string')) return [400, { error: 'keys: want a list of strings', field: 'keys' }]
        this.injections.push({ session: body.session, keys: body.keys })
        return [204, null, {}]
      }
      case 'GET /v1/harness/skills': {
        const bad = need(q.session)
        if (bad) return bad
        return tagged({ skills: this.skillsOf(q.session) })
      }
      case 'POST /v1/harness/refine': {
        const bad = fields(body, { session: true, mode: true, instruction: false, global: false, rollback_id: false, scope: false }) ?? need(body.session)
        if (bad) return Array.isArray(bad) ? bad : [400, bad]
        if (body.global !== undefined && typeof body.global !== 'boolean') return [400, { error: 'global: want a boolean', field: 'global' }]
        if (body.mode === 'plan') {
          const scope = body.global ? 'global' : 'local'
          const held = this.queued.get(body.global ? 'global' : `session:${body.session}`)
          if (held && (held.session !== body.session || (held.instruction ?? '') !== (body.instruction ?? ''))) {
            return [409, { error: `a review of this store is already queued as job ${held.job}; try again after it`, job_id: held.job }]
          }
          if (held) return [202, { job_id: held.job, state: 'available', scope, duplicate: true }]
          const id = String(this.nextJob++)
          this.jobs.set(id, this.jobScript.map(a => structuredClone(a)))
          this.jobSessions.set(id, body.session)
          return [202, { job_id: Number(id), state: 'available', scope, duplicate: false }]
        }
        if (body.mode !== 'rollback') return [400, { error: 'mode: not one of plan, rollback', field: 'mode' }]
        if (typeof body.rollback_id !== 'string' || !body.rollback_id) return [400, { error: 'rollback_id: required', field: 'rollback_id' }]
        if (body.scope !== 'local' && body.scope !== 'global') return [400, { error: 'scope: required with rollback (local or global)', field: 'scope' }]
        const r = this.refinements.get(body.rollback_id)
        if (!r || r.scope !== body.scope) return [404, { error: `no refinement found with id ${body.rollback_id}` }]
        return [200, { refinement: r.rollback }]
      }
      case 'GET /v1/harness/wrapup': {
        const bad = need(q.session)
        if (bad) return bad
        return [200, { suggestions: this.wrapup.get(q.session) ?? [] }]
      }
      case 'POST /v1/harness/promote': {
        const bad = fields(body, { session: true, id: true }) ?? need(body.session)
        if (bad) return Array.isArray(bad) ? bad : [400, bad]
        const [status, answer] = this.promotions.get(body.id) ?? [409, { error: `local entry not found: ${body.id}` }]
        return [status, answer]
      }
      default: return [404, { error: `no route ${method} ${path}` }]
    }
  }
}

/** A SKILL.md as learn/harness SkillMarkdown renders one: mull's marker under metadata. */
export function fakeSkillMarkdown (id, description, body, version = 1) {
  return `---\nname: mull-${id}\ndescription: ${description}\nmetadata:\n  author: mull\n  source: harness\n  mull-version: ${version}\n---\n\n${body}\n`
}

/** A lease's owner as mull keys it: the session and the call. */
const ownerOf = b => `${b.session}\u0000${b.tool_call_id}`

/** learn/ledger's Stamp: RFC 3339 in UTC, whole seconds. */
const stamp = ms => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z')

/** A negledger.Call body (plus extra fields, name → required) checked as mull's decoder does. */
function callFields (b, extra) {
  const bad = fields(b, { tool_call_id: true, tool: true, args: false, cwd: true, session: true, workspace: true, ...extra })
  if (bad) return bad
  if (!b.args || typeof b.args !== 'object' || Array.isArray(b.args)) return { error: 'args: want an object', field: 'args' }
  return null
}

/**
 * The first problem with a JSON body against its fields (name → required),
 * as {error, field}, or null: unknown fields refused, required ones non-empty.
 */
function fields (body, spec) {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return { error: 'invalid JSON body', field: '' }
  for (const k of Object.keys(body)) if (!(k in spec)) return { error: `invalid JSON body: unknown field "${k}"`, field: k }
  for (const [k, required] of Object.entries(spec)) {
    if (required && (typeof body[k] !== 'string' || !body[k].trim())) return { error: `${k}: required`, field: k }
  }
  return null
}

function send (res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers })
  res.end(JSON.stringify(body))
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf('--listen')
  const [, port] = (i > 0 ? process.argv[i + 1] : '127.0.0.1:7788').split(':')
  const fake = await new FakeMull({ token: process.env.MULL_FAKE_TOKEN || '' }).start(Number(port))
  fake.mode = process.env.MULL_FAKE_MODE || 'ok' // ok, down, hang
  console.log(`fake mull listening on ${fake.url} (${fake.mode})`)
}
