// Seed 004's benchmark on the DSH side, in two parts.
//
// The harness_benchmark tool: the seed's one action-dispatched tool (new,
// add-case, freeze, capture-reference, status, run) with its argument and
// output names, carried to mull's POST /v1/harness/benchmark. mull keeps
// the cases, snapshots and runs, and a run is a durable workflow there, so
// `run` answers at once with a run_id and `status` with that run_id follows
// it. Like the task tools it never throws into DSH: a bad argument, a
// refusal (the seed's benchmark:<action>:<code>) or mull down comes back as
// {action, ok: false, error} and the agent's turn goes on.
//
// The benchmark cell mode (config benchSnapshot): a DSH run mull starts for
// one cell of a run (bench.executor = dsh) must see exactly its side's
// snapshot and nothing live, so the plugin serves GET
// /v1/bench/snapshots/{id}/inject instead of the digest, the notices and the
// projection, and does nothing else: no events, no tools, no ledger, no
// skills. The snapshot is immutable, so it is fetched once. A cell that
// cannot get it does not run without it: its first step fails with one line.

import { MullClient } from './client.mjs'
import { realClock } from './clock.mjs'
import { escapeBraces } from './digest.mjs'
import { etagAttr, harnessMessage, surfaceOf, visibleBlock } from './harness.mjs'

/** The seed's actions; `reset` is deliberately not one (never model-called). */
export const BENCH_ACTIONS = Object.freeze(['new', 'add-case', 'freeze', 'capture-reference', 'status', 'run'])
/** mull's benchmark route. */
export const BENCH_ROUTE = '/v1/harness/benchmark'
/**
 * The bound of one benchmark request (at least; timeoutMs when longer): a
 * capture reads the merged harness, a run derives and checks the candidate
 * and stores its workflow, and a model waits for the answer anyway.
 */
export const BENCH_REQUEST_MS = 10000
/** The pauses between a cell's attempts to fetch its snapshot: 7 attempts, about 16 s of pauses. */
export const SNAPSHOT_RETRY_MS = Object.freeze([250, 500, 1000, 2000, 4000, 8000])
/** A snapshot id the plugin puts in a path: mull's id grammar, never a dot segment. */
export const SNAPSHOT_ID_RE = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,128}$/

/** The actions that act for the calling session (the seed's "requires a live agent"). */
const NEEDS_AGENT = new Set(['capture-reference', 'run'])

export const BENCHMARK_DESCRIPTION = 'Run explicit continual-harness benchmark actions in mull: `new` makes sure the benchmark store is ready, ' +
  '`add-case` adds a draft case, `freeze` freezes a draft (a frozen case never changes), `capture-reference` persists a ' +
  'pre-refinement snapshot of the merged harness state (capture it BEFORE applying the refinement you want to validate), ' +
  '`status` lists cases/snapshots/recent runs (with run_id: that run\'s progress and decision), and `run` evaluates one named ' +
  'refinement A/B: the candidate is derived as the captured reference plus exactly that refinement delta, both sides run the ' +
  'same frozen cases/runs/model, the decision is aggregated in code, and the record (every cell with its evidence, and the ' +
  'decision) is kept by mull. `run` returns at once with a run_id, because the run is a durable workflow in mull; call `status` ' +
  'with that run_id for its progress and, once decided, ACCEPTED or REJECTED. A benchmark run never auto-triggers a refinement ' +
  'and a REJECTED decision never auto-rolls back. `reset` is intentionally not exposed to model callers.'

const PARAMETERS = Object.freeze({
  action: { type: 'string', required: true, enum: BENCH_ACTIONS, description: 'The benchmark operation to run.' },
  case_id: { type: 'string', description: 'add-case/freeze: the benchmark case id.' },
  title: { type: 'string', description: 'add-case: the case title.' },
  statement: { type: 'string', description: 'add-case: the task statement the executor completes.' },
  rubric: { type: 'string', description: 'add-case: the plaintext rubric the reviewer scores against.' },
  capability: { type: 'string', description: 'add-case: optional capability tag.' },
  snapshot_id: { type: 'string', description: 'capture-reference: snapshot id to persist.' },
  reference_snapshot_id: { type: 'string', description: 'run: reference snapshot id captured before the refinement.' },
  refinement_id: { type: 'string', description: 'run: the refinement id to validate.' },
  runs: { type: 'integer', description: 'run: iterations per case per side (defaults to mull\'s bench.default_runs, at most bench.max_runs).' },
  run_id: { type: 'string', description: 'status: the run_id `run` returned, for that run\'s progress and decision.' }
})

/** The arguments each action sends (the seed's), in the order it checks them. */
const ACTION_ARGS = Object.freeze({
  new: [],
  'add-case': ['case_id', 'title', 'statement', 'rubric', 'capability'],
  freeze: ['case_id'],
  'capture-reference': ['snapshot_id'],
  status: ['run_id'],
  run: ['reference_snapshot_id', 'refinement_id']
})

/** A non-empty string argument as given (the seed's stringArg: statements are hashed as written), or undefined. */
const stringArg = v => typeof v === 'string' && v.trim() !== '' ? v : undefined
const isPlain = v => v !== null && typeof v === 'object' && !Array.isArray(v)

/** A refusal in the tool's shape: the seed's structured message, `benchmark:<code>: <message>`. */
function refused (action, code, message) {
  const full = `benchmark:${code}`
  return { action: String(action ?? ''), ok: false, code: full, error: `${full}: ${message}` }
}

/**
 * The seed's checks of the arguments, made before anything is sent: the
 * action, then each action's required arguments, in the seed's order and
 * with its codes. Resolves to {body} (the action and its arguments) or
 * {refusal}.
 */
export function benchmarkRequest (args, session) {
  const action = args?.action
  if (typeof action !== 'string') return { refusal: refused('', 'unknown-action', 'action is required') }
  if (!BENCH_ACTIONS.includes(action)) return { refusal: refused(action, 'unknown-action', `unknown action: ${action}`) }
  if (NEEDS_AGENT.has(action) && !session) return { refusal: refused(action, `${action}:no-agent`, `harness_benchmark ${action} requires a live agent`) }
  const body = { action }
  for (const k of ACTION_ARGS[action]) {
    const v = stringArg(args[k])
    if (v !== undefined) body[k] = v
  }
  const missing = keys => keys.some(k => body[k] === undefined)
  switch (action) {
    case 'add-case':
      if (missing(['case_id', 'title', 'statement', 'rubric'])) return { refusal: refused(action, 'add-case:missing-argument', 'add-case requires case_id, title, statement, and rubric') }
      break
    case 'freeze':
      if (missing(['case_id'])) return { refusal: refused(action, 'freeze:missing-argument', 'freeze requires case_id') }
      break
    case 'capture-reference':
      if (missing(['snapshot_id'])) return { refusal: refused(action, 'capture-reference:missing-argument', 'capture-reference requires snapshot_id') }
      break
    case 'run':
      if (missing(['reference_snapshot_id'])) return { refusal: refused(action, 'run:missing-argument', 'run requires reference_snapshot_id') }
      if (missing(['refinement_id'])) return { refusal: refused(action, 'run:missing-argument', 'run requires refinement_id') }
      if (args.runs !== undefined) {
        if (!Number.isInteger(args.runs) || args.runs < 1) return { refusal: refused(action, 'run:runs-invalid', 'runs must be a positive integer') }
        body.runs = args.runs
      }
      break
  }
  if (session) body.session = session
  return { body }
}

/**
 * The harness_benchmark tool's defineTool options.
 * @param {object} o
 * @param {import('./client.mjs').MullClient} o.client
 * @param {(agent: any) => {workspace: string, session?: string}} o.where
 * @param {(agent: any) => Promise<void>} [o.sendQueued] - sends the queued events first: mull serves a session it knows
 */
export function benchmarkToolSpec ({ client, where, sendQueued = async () => {} }) {
  return {
    name: 'harness_benchmark',
    description: BENCHMARK_DESCRIPTION,
    parameters: PARAMETERS,
    isConcurrencySafe: () => false,
    output: {
      schema: { type: 'object', additionalProperties: true },
      render: (_args, v) => [{ type: 'text', text: JSON.stringify(v) }]
    },
    async execute (args, exec) {
      const { session } = where(exec?.agent)
      const { body, refusal } = benchmarkRequest(args, session)
      if (refusal) return refusal
      if (session) await sendQueued(exec?.agent)
      let failure = ''
      const res = await client.request('POST', BENCH_ROUTE, {
        body, force: true, timeoutMs: Math.max(client.timeoutMs, BENCH_REQUEST_MS), onFail: kind => { failure = kind }
      })
      if (res === null) return unavailable(body.action, failure)
      if (res.status >= 200 && res.status < 300) return answered(body.action, res.body)
      return refusedByMull(body.action, res)
    }
  }
}

/** mull's answer as the tool's value: its fields (the seed's names) as mull sent them. */
function answered (action, b) {
  const out = { ...(isPlain(b) ? b : {}) }
  out.action = typeof out.action === 'string' && out.action ? out.action : action
  out.ok = out.ok !== false
  if (action === 'run' && typeof out.run_id === 'string' && out.run_id && out.note === undefined && !['ACCEPTED', 'REJECTED'].includes(out.status)) {
    out.note = `the run goes on in mull as a durable workflow; call harness_benchmark status with run_id "${out.run_id}" for its progress and decision`
  }
  return out
}

/**
 * A refusal mull answered: its code (the seed's benchmark:<action>:<code>)
 * and message, the candidate-delta reason and the field when it names them.
 */
function refusedByMull (action, res) {
  const b = isPlain(res.body) ? res.body : {}
  const code = typeof b.code === 'string' ? b.code.trim() : ''
  let error = typeof b.error === 'string' ? b.error.trim() : ''
  if (!error && !code) {
    error = res.status === 404 || res.status === 405
      ? `this mull does not serve POST ${BENCH_ROUTE} (HTTP ${res.status}); it may be older than the benchmark tool`
      : `mull answered HTTP ${res.status} to POST ${BENCH_ROUTE}`
  } else if (code && !error.startsWith(code)) {
    error = error ? `${code}: ${error}` : code
  }
  const out = { action, ok: false }
  if (code) out.code = code
  out.error = error
  if (typeof b.reason === 'string' && b.reason) out.reason = b.reason
  if (typeof b.field === 'string' && b.field) out.field = b.field
  return out
}

/**
 * No answer. A request that went out and timed out (or that mull failed
 * on) may still have been acted on: a run may have started, so the agent
 * is told to look before it tries again.
 */
function unavailable (action, failure) {
  const readOnly = action === 'status' || action === 'new'
  if ((failure === 'timeout' || failure === 'http') && !readOnly) {
    return {
      action,
      ok: false,
      error: `mull did not answer in time (or failed on it); the ${action} may have been done anyway: call harness_benchmark status` +
        `${action === 'run' ? ' and look at recent_runs' : ''} before trying it again`
    }
  }
  return { action, ok: false, error: `mull is unavailable; the benchmark action ${action} was not run` }
}

/**
 * The benchmark cell mode: the plugin of a DSH run mull starts for one
 * cell, serving that side's snapshot and nothing else (see the top of this
 * file). The memory snapshot is the system-prompt section the digest
 * would be; a harness snapshot is the <mull-harness> block the live
 * projection would be, in the first step of each session.
 */
export class BenchCell {
  /**
   * @param {object} o
   * @param {ReturnType<import('./config.mjs').normalizeConfig>} o.config
   * @param {(level: string, msg: string) => void} o.log
   * @param {typeof fetch} [o.fetch]
   * @param {{minBackoffMs?: number, maxBackoffMs?: number}} [o.backoff]
   * @param {typeof realClock} [o.clock]
   * @param {{retry?: number[]}} [o.timing] - the pauses between attempts (tests)
   */
  constructor ({ config, log, pluginName = 'mull', fetch, backoff, clock = realClock, timing = {} }) {
    this.config = config
    this.log = log
    this.pluginName = pluginName
    this.clock = clock
    this.id = config.benchSnapshot
    this.client = new MullClient({
      baseUrl: config.baseUrl,
      apiToken: config.apiToken,
      timeoutMs: Math.max(config.timeoutMs, BENCH_REQUEST_MS),
      log,
      fetch,
      clock,
      downNote: `; this benchmark cell needs its snapshot ${this.id} and does not run without it`,
      ...backoff
    })
    this.retryMs = timing.retry ?? SNAPSHOT_RETRY_MS
    /** {text, etag, kind} once mull served it. */
    this.snapshot = null
    /** Why the snapshot is not here (the last attempt's). */
    this.problem = 'not fetched yet'
    this.loading = null
    /** Sessions shown the harness block, for a DSH without the session surface. */
    this.shown = new Set()
    this.warned = new Set()
  }

  start () {
    this.log('info', `mull plugin: benchmark cell mode: serving snapshot ${this.id} only (no live memory, harness, events, tools or ledger)`)
    this.ready()
  }

  close () {
    return Promise.resolve()
  }

  /** Resolves true once the snapshot is here; a load that failed is tried again on the next call. Never rejects. */
  ready () {
    if (this.snapshot) return Promise.resolve(true)
    if (!this.loading) {
      this.loading = this.load().catch(err => {
        this.problem = `plugin error: ${err?.message ?? err}`
        return false
      }).finally(() => { if (!this.snapshot) this.loading = null })
    }
    return this.loading
  }

  /** Fetches the snapshot, with a pause between attempts; a refusal (4xx) is final. */
  async load () {
    if (!SNAPSHOT_ID_RE.test(this.id)) {
      this.problem = `benchSnapshot ${JSON.stringify(this.id)} is not a snapshot id`
      return false
    }
    for (let i = 0; ; i++) {
      const outcome = await this.fetchOnce()
      if (outcome !== 'retry') return outcome === 'ok'
      if (i >= this.retryMs.length) return false
      // The pause holds the process (the clock's timers do not): the first step waits on it.
      await new Promise(resolve => this.clock.setTimeout(resolve, this.retryMs[i])?.ref?.())
    }
  }

  /** One attempt: 'ok', 'retry' (no answer, 5xx, 408, 429) or 'final'. */
  async fetchOnce () {
    const path = `/v1/bench/snapshots/${encodeURIComponent(this.id)}/inject`
    let failure = ''
    const res = await this.client.request('GET', path, { force: true, onFail: kind => { failure = kind } })
    if (res === null) {
      this.problem = failure === 'timeout' ? `no answer from mull within ${this.client.timeoutMs} ms` : 'mull is unavailable'
      return 'retry'
    }
    const b = isPlain(res.body) ? res.body : {}
    if (res.status !== 200 || typeof b.text !== 'string') {
      this.problem = `mull answered HTTP ${res.status} to GET ${path}${typeof b.error === 'string' && b.error ? ': ' + b.error : ''}`
      return res.status === 408 || res.status === 429 ? 'retry' : 'final'
    }
    if (b.withheld === true) {
      // mull's trust gate kept the snapshot back: judging the cell on an
      // empty side would compare nothing with nothing, so the cell fails.
      this.problem = `mull withheld benchmark snapshot ${this.id} (its trust gate refused it)`
      return 'final'
    }
    let kind = b.kind === undefined ? 'memory' : b.kind
    if (kind !== 'memory' && kind !== 'harness') {
      this.warnOnce('kind', `mull plugin: snapshot ${this.id} has kind ${JSON.stringify(b.kind)}, not memory or harness; it is served as the memory section`)
      kind = 'memory'
    }
    const etag = res.headers?.get?.('etag') || (typeof b.etag === 'string' ? b.etag : '') || this.id
    this.snapshot = { text: b.text.trim(), etag, kind }
    this.problem = ''
    return 'ok'
  }

  /** The memory section: a memory snapshot's text ('' for the side without memory, and for a harness snapshot). Synchronous. */
  sectionText () {
    const s = this.snapshot
    return s && s.kind === 'memory' ? escapeBraces(s.text) : ''
  }

  /**
   * A step: waits for the snapshot (the first step only, in practice) and
   * fails when it cannot be had, so the cell never runs without its side's
   * state; then a harness snapshot's block is added once per session.
   */
  async onPreStep (payload, next) {
    if (!await this.ready()) {
      const msg = `mull plugin: benchmark snapshot ${this.id} is not available (${this.problem}); this benchmark cell does not run without its side's snapshot`
      this.log('error', msg)
      throw new Error(msg)
    }
    const decision = await next()
    if (this.snapshot.kind !== 'harness') return decision
    try {
      const open = decision?.kind === 'enter' && Array.isArray(decision.messages)
      const m = open ? this.take(payload?.agent, decision.messages.length) : null
      return m ? { ...decision, messages: [...decision.messages, m] } : decision
    } catch (err) {
      this.warnOnce('pre-step', `mull plugin: pre-step failed (${err?.message ?? err}); the step goes on without the snapshot's block`)
      return decision
    }
  }

  /**
   * The harness block for a session's step, or null: none while the
   * session's surface shows it already (a compaction that dropped it brings
   * it back), none in a step with no message of its own (DSH would run a
   * step it meant to skip; the next one gets it), none for an empty text.
   */
  take (agent, pending) {
    const s = this.snapshot
    if (!s.text || pending === 0) return null
    const log = surfaceOf(agent?.session)
    if (log) {
      if (visibleBlock(log, this.pluginName)?.etag === etagAttr(s.etag)) return null
    } else {
      const key = agent?.id ?? ''
      if (this.shown.has(key)) return null
      this.shown.add(key)
    }
    return harnessMessage(s.text, s.etag, this.pluginName)
  }

  warnOnce (key, msg) {
    if (this.warned.has(key)) return
    this.warned.add(key)
    this.log('warn', msg)
  }
}
