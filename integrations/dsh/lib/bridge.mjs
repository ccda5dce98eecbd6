// The bridge: DSH's events in, mull's memory out. It holds the per-session
// state and the handlers plugin.mjs attaches to ctx. Every handler returns
// at once (network work runs in the background) and never throws into DSH.

import { MullClient } from './client.mjs'
import { Ledger } from './ledger.mjs'
import { realClock } from './clock.mjs'
import { EventQueue } from './queue.mjs'
import { DigestCache } from './digest.mjs'
import { Harness } from './harness.mjs'
import { Notices, noticeMessage } from './notices.mjs'
import { toolSpecs } from './tools.mjs'
import { Steer, steerToolSpecs } from './steer.mjs'
import { commandSpecs } from './commands.mjs'
import { benchmarkToolSpec } from './bench.mjs'
import { failureDetail, mapTitle, mapUsage } from './usage.mjs'
import {
  MAX_TEXT, cutBytes, cutMiddle, errorCode, errorMessage, mapSessionEvent, messageFeedbackEvents, mullEvent, sessionEndId, sessionStartId, stableId
} from './mapping.mjs'

/** Sessions tracked at once; the least recently active is forgotten first. */
const MAX_SESSIONS = 64
/** A session quiet this long gets no more background refreshes. */
const IDLE_MS = 15 * 60 * 1000
/** tool/call rows remembered per session, to name the tool of a tool/result. */
const MAX_CALLS = 256
/** Feedback revisions remembered as sent, so an unchanged item is not sent again. */
const MAX_FEEDBACK_SENT = 1024
/**
 * How long an agent/error waits for the turn/end that records the same
 * failure: when one comes, the error goes out with the id the importer
 * derives from that row, so the failure is stored once.
 */
const ERROR_SETTLE_MS = 2000

export class Bridge {
  /**
   * @param {object} o
   * @param {ReturnType<import('./config.mjs').normalizeConfig>} o.config
   * @param {(level: string, msg: string) => void} o.log
   * @param {string} [o.pluginName]
   * @param {string} [o.workspace] - the default workspace (DSH's cwd)
   * @param {typeof fetch} [o.fetch]
   * @param {{minBackoffMs?: number, maxBackoffMs?: number}} [o.backoff] - for tests
   * @param {import('./clock.mjs').realClock} [o.clock] - for tests
   * @param {{follow?: number, poll?: number[]}} [o.harnessTiming] - for tests (lib/harness.mjs)
   */
  constructor ({ config, log, pluginName = 'mull', workspace = process.cwd(), fetch, backoff, clock = realClock, harnessTiming }) {
    this.config = config
    this.log = log
    this.pluginName = pluginName
    this.workspace = workspace
    const downNote = config.ledger.mode === 'off' ? '' : '; the negative ledger meanwhile lets tracked calls run (warn mode) or denies them (block mode, fail-closed)'
    this.client = new MullClient({ baseUrl: config.baseUrl, apiToken: config.apiToken, timeoutMs: config.timeoutMs, log, fetch, clock, downNote, ...backoff })
    this.clock = clock
    this.queue = new EventQueue({ client: this.client, queueMax: config.queueMax, batchMax: config.batchMax, flushMs: config.flushMs, log })
    this.notices = new Notices({ client: this.client, log })
    this.digest = new DigestCache({
      client: this.client, log, clock, onNotices: (session, list) => { if (config.notices) this.notices.add(session, list) }
    })
    this.ledger = new Ledger({ config: config.ledger, client: this.client, log, workspace, pluginName, clock })
    // mull serves a session's harness only once it knows the session: its
    // session_start goes out first (sessionSent).
    this.harness = config.harness
      ? new Harness({ client: this.client, log, clock, pluginName, skillsDir: config.skillsDir, ready: id => this.sessionSent(id), timing: harnessTiming })
      : null
    // memory_status shows the bridge's own state next to mull's.
    this.steer = new Steer({
      client: this.client,
      local: () => ({ queued: this.queue.length, sent: this.queue.stats.sent, dropped: this.queue.stats.dropped, rejected: this.queue.stats.rejected })
    })
    this.sessions = new Map()
    this.feedbackSent = new Set()
    this.timer = null
    this.warned = new Set()
  }

  /** Starts background work: the first digest fetch and the periodic refresh. */
  start () {
    this.digest.refresh(this.workspace, '')
    this.ledger.start()
    this.timer = this.clock.setInterval(() => this.refreshAll(), this.config.digestRefreshMs)
  }

  /**
   * Stops background work, ends the sessions this process ran and flushes
   * what is queued, within timeoutMs. DSH disposes its plugins when it
   * exits (a headless run right after its task), and its logs have no end
   * row, so this is where a session's end is known: each session seen gets
   * its session_end (reason "disposed"), after its other events, and mull
   * runs the session-end jobs (retro_session) at once instead of after
   * ingest.idle_timeout.
   */
  async close () {
    if (this.timer) this.clock.clearInterval(this.timer)
    this.timer = null
    for (const s of this.sessions.values()) {
      this.settleErrors(s)
      this.queue.push(mullEvent(sessionEndId(s.id), 'session_end', s.id, s.workspace, this.clock.now(), { reason: 'disposed' }))
    }
    this.queue.close()
    await Promise.all([this.queue.drain(this.config.timeoutMs), this.ledger.close()])
  }

  refreshAll () {
    if (!this.client.available()) return
    if (this.sessions.size === 0) this.digest.refresh(this.workspace, '')
    const since = this.clock.now() - IDLE_MS
    for (const s of this.sessions.values()) {
      if (s.seenAt < since) continue
      this.digest.refresh(s.workspace, s.id)
      if (this.config.notices) this.notices.poll(s.workspace, s.id)
      // Cheap: both answer 304 while nothing changed.
      if (this.harness) this.harness.refresh(s.id)
    }
  }

  /**
   * The tools' defineTool options. A task's start and end first send the
   * events queued so far (bounded by timeoutMs), the calling session's
   * session_start included, so mull knows the session and records the
   * boundary after what came before it, not before events still queued.
   */
  toolSpecs () {
    const o = {
      client: this.client,
      where: agent => this.where(agent),
      sendQueued: agent => {
        this.guard('task-boundary', () => this.track(agent?.session))
        return this.queue.drain(this.config.timeoutMs)
      }
    }
    return [...toolSpecs(o), ...steerToolSpecs({ steer: this.steer, where: o.where }), ...(this.harness ? [...this.harness.toolSpecs(o), benchmarkToolSpec(o)] : [])]
  }

  /**
   * The slash commands' definitions (lib/commands.mjs), for DSH's commands
   * capability. /retro first sends the session's queued events, as the
   * task tools do, so mull retros what happened up to now.
   */
  commandSpecs () {
    return commandSpecs({
      steer: this.steer,
      where: agent => this.where(agent),
      sendQueued: agent => {
        this.guard('retro', () => this.track(agent?.session))
        return this.queue.drain(this.config.timeoutMs)
      }
    })
  }

  /**
   * Resolves once a session's session_start has left the queue (mull knows
   * the session): at once when it has; else after the queue's usual delay
   * (at most timeoutMs, so a title arriving meanwhile still rides on it),
   * with a drain bounded by timeoutMs. Never rejects.
   */
  async sessionSent (id) {
    const s = this.sessions.get(id)
    if (!s) return
    const queued = () => this.queue.items.includes(s.start)
    if (!queued() && !this.queue.flushing) return
    if (queued()) await new Promise(resolve => this.clock.setTimeout(resolve, Math.min(this.config.flushMs, this.config.timeoutMs)))
    await this.queue.drain(this.config.timeoutMs)
  }

  where (agent) {
    const s = agent?.id ? this.sessions.get(agent.id) : undefined
    return { workspace: s?.workspace ?? cwdOf(agent?.session) ?? this.workspace, session: agent?.id }
  }

  /**
   * The session's state, created on first sight. A new session also queues
   * its session_start, whichever DSH event shows it first.
   */
  track (session) {
    const id = session?.id
    if (typeof id !== 'string' || !id) return undefined
    let s = this.sessions.get(id)
    if (s) {
      s.seenAt = this.clock.now()
      this.sessions.delete(id) // re-insert: most recently active last
      this.sessions.set(id, s)
      return s
    }
    const header = session.header ?? {}
    s = {
      id,
      workspace: cwdOf(session) ?? this.workspace,
      primary: !(header.delegationDepth > 0),
      turn: 0,
      seenAt: this.clock.now(),
      calls: new Map(),
      start: null,
      errors: [], // agent/error reports waiting for their turn/end
      errorTimer: null,
      erroredTurns: new Set() // turns whose turn/end row gave the error event
    }
    this.sessions.set(id, s)
    while (this.sessions.size > MAX_SESSIONS) {
      const [oldest, gone] = this.sessions.entries().next().value
      this.sessions.delete(oldest)
      this.notices.forget(oldest)
      this.harness?.forget(oldest)
      this.settleErrors(gone)
    }
    const parent = typeof header.parentSession === 'string' && header.parentSession ? header.parentSession : undefined
    s.start = mullEvent(sessionStartId(id), 'session_start', id, s.workspace, header.createdAt ?? this.clock.now(), { primary: s.primary, parent })
    this.queue.push(s.start)
    return s
  }

  // agent/session-start: {agent, source}
  onSessionStart (payload) {
    this.guard('session-start', () => {
      const s = this.track(payload?.agent?.session ?? payload?.agent)
      if (!s) return
      this.digest.refresh(s.workspace, s.id)
      if (this.config.notices) this.notices.poll(s.workspace, s.id)
      if (this.harness) this.harness.start(s.id)
      this.ledger.onSessionStart(s.workspace)
    })
  }

  // session/event: (session, event)
  onSessionEvent (session, event) {
    this.guard('session-event', () => {
      const s = this.track(session)
      if (!s || !event) return
      const data = event.data ?? {}
      switch (event.type) {
        case 'turn/start':
          if (Number.isInteger(data.turn)) s.turn = data.turn
          return
        case 'tool/call':
          if (typeof data.callId === 'string') {
            s.calls.set(data.callId, { name: data.name, arguments: data.arguments })
            if (s.calls.size > MAX_CALLS) s.calls.delete(s.calls.keys().next().value)
          }
          return
        case 'session/title':
          // The title often comes while session_start still waits in the queue.
          if (typeof data.title === 'string' && data.title.trim()) s.start.payload.title = cutBytes(data.title.trim(), 512)
          for (const e of mapTitle(s, event)) this.queue.push(e)
          return
      }
      const state = { id: s.id, workspace: s.workspace, turn: s.turn, callOf: callId => s.calls.get(callId) }
      const out = [...mapSessionEvent(state, event, { forwardMessages: this.config.forwardMessages }), ...mapUsage(s, event)]
      if (out.some(e => e.type === 'error')) { // the row says it
        s.erroredTurns.add(data.turn)
        s.errors = s.errors.filter(e => e.payload.turn !== data.turn)
      }
      for (const e of out) {
        // A turn's end is a natural batch boundary, and a headless run exits soon after it.
        this.queue.push(e, { soon: e.type === 'turn_end' || e.type === 'error' })
      }
      if (event.type === 'turn/end') this.settleErrors(s)
      if (event.type === 'tool/result') s.calls.delete(data.message?.source?.callId)
    })
  }

  // domain/changed: {domain, table, key, operation, value} from DSH's
  // storage domains. DSH's message-feedback (the 👍/👎 and note on one
  // assistant message, web profile) lives in domain "message_feedback",
  // table "sessions", keyed by session id; every change puts the session's
  // whole row. Each item revision not sent yet goes out as a feedback
  // event, with the id the importer gives it.
  onDomainChanged (change) {
    this.guard('domain-changed', () => {
      if (change?.domain !== 'message_feedback' || change.table !== 'sessions' || change.operation !== 'put') return
      const id = change.key
      if (typeof id !== 'string' || !id) return
      const s = this.sessions.get(id)
      const cwd = change.value?.session?.cwd
      const workspace = s?.workspace ?? (typeof cwd === 'string' && cwd.startsWith('/') ? cwd : this.workspace)
      for (const e of messageFeedbackEvents(id, workspace, change.value)) {
        if (this.feedbackSent.has(e.id)) continue
        this.feedbackSent.add(e.id)
        if (this.feedbackSent.size > MAX_FEEDBACK_SENT) this.feedbackSent.delete(this.feedbackSent.values().next().value)
        this.queue.push(e, { soon: true })
      }
    })
  }

  // agent/error: {agent, turn, step, error}
  // A turn that fails also ends with a turn/end row of reason error, which
  // gives the error event (as the importer does); so the report waits for
  // that row a moment, and goes out on its own only when none comes.
  onAgentError (payload) {
    this.guard('agent-error', () => {
      const s = this.track(payload?.agent?.session ?? payload?.agent)
      if (!s) return
      const message = cutMiddle(errorMessage(payload.error), MAX_TEXT)
      const turn = Number.isInteger(payload.turn) && payload.turn > 0 ? payload.turn : undefined
      if (turn && s.erroredTurns.has(turn)) return
      const id = stableId(s.id, 'error', payload.turn, payload.step, message)
      const detail = failureDetail(payload.error?.failure ?? payload.error)
      s.errors.push(mullEvent(id, 'error', s.id, s.workspace, this.clock.now(), { message, code: errorCode(payload.error), ...detail, turn }))
      if (!s.errorTimer) {
        s.errorTimer = this.clock.setTimeout(() => this.settleErrors(s), ERROR_SETTLE_MS)
      }
    })
  }

  /** Sends the agent/error reports no turn/end has covered. */
  settleErrors (s) {
    if (s.errorTimer) this.clock.clearTimeout(s.errorTimer)
    s.errorTimer = null
    for (const e of s.errors.splice(0)) this.queue.push(e, { soon: true })
  }

  /**
   * agent/pre-step (waterfall). Lets the rest of the chain decide first,
   * then appends one plugin message with the notices fetched since the last
   * step and, when its ETag changed, mull's harness projection: a first
   * block appended to the step's messages, a later one replacing the
   * session's visible block in place (lib/harness.mjs take), and starts
   * the next fetches in the background. Never awaits mull but
   * once: a session's first step waits for its first harness fetch, at
   * most timeoutMs, before the chain runs, so mull's skills are on disk
   * when DSH lists its skill catalog (later in this same chain).
   */
  async onPreStep (payload, next) {
    const s = this.sessions.get(payload?.agent?.id)
    if (s && this.harness) {
      try { await this.harness.settle(s.id, this.config.timeoutMs) } catch {}
    }
    const decision = await next()
    if (!s || (!this.config.notices && !this.harness)) return decision
    try {
      const open = decision?.kind === 'enter' && Array.isArray(decision.messages)
      const extra = []
      if (this.config.notices) {
        const ready = open ? this.notices.take(s.id) : []
        this.notices.poll(s.workspace, s.id)
        if (ready.length > 0) extra.push(noticeMessage(ready, this.pluginName))
      }
      if (this.harness) {
        const m = open ? this.harness.take(s.id, payload.agent, decision.messages.length + extra.length) : null
        this.harness.refreshProjection(s.id)
        if (m) extra.push(m)
      }
      if (extra.length === 0) return decision
      return { ...decision, messages: [...decision.messages, ...extra] }
    } catch (err) {
      this.warnOnce('pre-step', `mull plugin: pre-step failed (${err?.message ?? err}); the step goes on without notices`)
      return decision
    }
  }

  /** The digest section's text for one prompt assembly. Synchronous. */
  sectionText (assembleContext) {
    try {
      const agent = assembleContext?.agent
      const s = agent?.id ? this.sessions.get(agent.id) : undefined
      return this.digest.text(s?.workspace ?? cwdOf(agent?.session) ?? this.workspace, agent?.id)
    } catch {
      return ''
    }
  }

  guard (what, fn) {
    try {
      fn()
    } catch (err) {
      this.warnOnce(what, `mull plugin: ${what} handler failed (${err?.message ?? err}); ignored`)
    }
  }

  warnOnce (key, msg) {
    if (this.warned.has(key)) return
    this.warned.add(key)
    this.log('warn', msg)
  }
}

function cwdOf (session) {
  const cwd = session?.header?.cwd
  return typeof cwd === 'string' && cwd ? cwd : undefined
}
