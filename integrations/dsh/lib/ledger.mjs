// The negative ledger's DSH side (seed 003): before a tracked tool runs
// (tools/pre-execute) mull is asked whether it repeats a path already
// proven not to work (POST /v1/ledger/check); after it ran
// (tools/post-execute) mull is told how it ended (POST /v1/ledger/observe);
// file states DSH observed (fs/observed) go to POST /v1/ledger/fs. The
// rules, the facts and the leases are mull's; this file only carries the
// calls, and it never rewrites a tool's result.
//
// Every call is bounded by the ledger's timeout (ledger.client_timeout at
// mull, 250 ms). When mull does not answer, warn mode lets the call run and
// block mode denies it with FAIL_CLOSED, as the seed says; the outage is
// logged once (by the shared client), not per call. Block mode denies on
// any check answer but a 200 (a refusal, a 413, a contested fact's 503):
// it never lets a call run that mull has not cleared. A check that timed
// out may still have granted a lease at mull; block mode, which denies
// that call, releases it at once (best effort) so the lease does not hold
// every other agent off for lease_ttl. Every ledger call carries the
// session: mull refuses one without.

import { randomUUID } from 'node:crypto'

import { realClock } from './clock.mjs'

/** The prefix of every reason this plugin denies a call with. */
export const DENY_PREFIX = 'blocked by negative-ledger'
/**
 * The seed's fail-closed reason (seed003/src/plugin.ts), word for word; it
 * is also learn/ledger's, and a test keeps the two equal.
 */
export const FAIL_CLOSED = 'blocked by negative-ledger: store unavailable (fail-closed)'
/** How much of a command's stderr goes to mull (it keeps 200 characters). */
export const STDERR_MAX_BYTES = 2048
/** Calls remembered between pre- and post-execute (an unsettled lease expires at mull). */
const MAX_PENDING = 1024
/** Observations per POST /v1/ledger/fs. */
const FS_BATCH_MAX = 100

export class Ledger {
  /**
   * @param {object} o
   * @param {ReturnType<import('./config.mjs').normalizeConfig>['ledger']} o.config
   * @param {import('./client.mjs').MullClient} o.client - shared with the bridge: one view of whether mull is up
   * @param {(level: string, msg: string) => void} o.log
   * @param {string} o.workspace - the default workspace (DSH's cwd)
   * @param {string} [o.pluginName]
   * @param {typeof realClock} [o.clock]
   */
  constructor ({ config, client, log, workspace, pluginName = 'mull', clock = realClock }) {
    this.config = config
    this.client = client
    this.log = log
    this.workspace = workspace
    this.pluginName = pluginName
    this.clock = clock
    /** workspace → {mode, commandTools, readTools, timeoutMs, fetchedAt, fetching} */
    this.policies = new Map()
    /** callId → what its check answered, for its post-execute */
    this.pending = new Map()
    /** fs observations waiting for their POST, as {group, obs}, oldest first */
    this.fsQueue = []
    this.fsTimer = null
    /**
     * The one drain of fsQueue under way (a promise), or null: one POST
     * /v1/ledger/fs in flight at a time, in order, since mull keeps the
     * last observation it stored for a path (a later batch overtaking an
     * earlier one would leave the older state in force).
     */
    this.fsSending = null
    this.fsDropped = 0
    /** best-effort releases in flight (close awaits them) */
    this.background = new Set()
    this.warned = new Set()
  }

  /** Off in the plugin's config: the ledger makes no call at all. */
  get disabled () {
    return this.config.mode === 'off'
  }

  /** Fetches the default workspace's policy (background). */
  start () {
    if (!this.disabled) this.refreshPolicy(this.workspace)
  }

  /** agent/session-start: the session's workspace policy, fresh (background). */
  onSessionStart (workspace) {
    if (!this.disabled) this.refreshPolicy(workspace, { force: true })
  }

  /** Sends what fs observations are queued, within the timeout. */
  async close () {
    if (this.fsTimer) this.clock.clearTimeout(this.fsTimer)
    this.fsTimer = null
    await Promise.all([this.flushFs(), ...this.background])
  }

  /**
   * The policy in force for a workspace: mull's last answer, else the
   * plugin's config. Starts a background refresh when it is older than
   * policyRefreshMs.
   */
  policy (workspace) {
    const p = this.policies.get(workspace)
    if (!p || this.clock.now() - p.fetchedAt >= this.config.policyRefreshMs) this.refreshPolicy(workspace)
    return p ?? this.defaults()
  }

  defaults () {
    return {
      mode: this.config.mode,
      commandTools: new Set(this.config.commandTools),
      readTools: new Set(this.config.readTools),
      timeoutMs: this.config.timeoutMs,
      fetchedAt: -Infinity
    }
  }

  /** GET /v1/ledger/policy?workspace=W, in the background; one at a time per workspace. */
  refreshPolicy (workspace, { force = false } = {}) {
    const known = this.policies.get(workspace)
    if (known?.fetching) return known.fetching
    if (!known) this.policies.set(workspace, { ...this.defaults(), fetching: null })
    const p = this.policies.get(workspace)
    if (!force && this.clock.now() - p.fetchedAt < this.config.policyRefreshMs) return Promise.resolve()
    p.fetching = (async () => {
      try {
        // In the background, off the tool call's path: the client's own
        // timeout, not the ledger's tight one (DSH's start keeps its event
        // loop busy well past 250 ms, and a late answer here costs nothing).
        const res = await this.client.request('GET', '/v1/ledger/policy', { query: { workspace } })
        if (!res) return
        if (res.status !== 200 || !res.body || typeof res.body !== 'object') {
          this.warnOnce(`policy-${res.status}`, `mull plugin: GET /v1/ledger/policy answered HTTP ${res.status}${res.status === 404 ? ' (a mull without the negative ledger?)' : ''}; the ledger assumes mode ${p.mode} from the plugin config`)
          p.fetchedAt = this.clock.now()
          return
        }
        const b = res.body
        if (isMode(b.mode)) p.mode = b.mode
        if (isNames(b.command_tools)) p.commandTools = new Set(b.command_tools)
        if (isNames(b.read_tools)) p.readTools = new Set(b.read_tools)
        if (Number.isInteger(b.client_timeout_ms) && b.client_timeout_ms > 0) p.timeoutMs = b.client_timeout_ms
        p.fetchedAt = this.clock.now()
      } catch (err) {
        this.warnOnce('policy-error', `mull plugin: the ledger policy could not be read (${err?.message ?? err})`)
      } finally {
        p.fetching = null
      }
    })()
    return p.fetching
  }

  /**
   * The call as mull's wire types have it (negledger.Call), with the
   * policy in force, or null when the ledger does not track it.
   */
  callOf (exec) {
    if (this.disabled || !exec || typeof exec.name !== 'string') return null
    const session = exec.agent?.session
    const cwd = cwdOf(session)
    const workspace = cwd ?? this.workspace
    const policy = this.policy(workspace)
    if (policy.mode === 'off') return null
    const command = policy.commandTools.has(exec.name)
    const read = policy.readTools.has(exec.name)
    if (!command && !read) return null
    const args = exec.arguments
    if (!args || typeof args !== 'object' || Array.isArray(args)) return null
    if (command && (typeof args.command !== 'string' || !args.command.trim())) return null
    if (!command && (typeof args.file_path !== 'string' || !args.file_path)) return null
    if (typeof exec.callId !== 'string' || !exec.callId) return null
    return {
      policy,
      command,
      body: {
        tool_call_id: exec.callId,
        tool: exec.name,
        args,
        cwd: cwd ?? workspace,
        session: session?.id ?? exec.agent?.id ?? '',
        workspace
      }
    }
  }

  /**
   * tools/pre-execute (waterfall). A deny of mull's (block mode: a repeat
   * whose retry condition is not met, or a retry another agent is
   * verifying) or the fail-closed deny ends the chain; anything else is
   * next()'s to decide.
   */
  async preExecute (exec, next) {
    let call
    try {
      call = this.callOf(exec)
    } catch (err) {
      this.warnOnce('pre-execute', `mull plugin: ledger pre-execute failed (${err?.message ?? err}); the call runs unchecked`)
    }
    if (!call) return next()
    const { policy, body } = call
    const block = policy.mode === 'block'
    if (!body.session) {
      // mull refuses a ledger call without a session; DSH's calls have one.
      this.warnOnce('no-session', `mull plugin: a tracked call came without a DSH session id; mull cannot check it, so such calls ${block ? 'are denied (block mode)' : 'run unchecked'}`)
      if (!block) return next()
      this.remember(body.tool_call_id, { denied: true })
      return { kind: 'deny', reason: `${DENY_PREFIX}: the call has no session id, so mull cannot check it (fail-closed)` }
    }
    // An fs observation made before this call must reach mull first: a
    // declared dependency counts only when observed before the check.
    if (this.fsQueue.length || this.fsSending) await this.flushFs()
    let failure = ''
    const res = await this.client.request('POST', '/v1/ledger/check', {
      body, timeoutMs: policy.timeoutMs, force: block, busyIsAnswer: true, onFail: k => { failure = k }
    })
    if (!res) {
      if (!block) {
        // It runs; a lease mull may have granted unseen is settled by
        // post-execute's observe (mull knows its holder by session and call).
        if (failure === 'timeout') this.remember(body.tool_call_id, { timedOut: true })
        return next()
      }
      this.remember(body.tool_call_id, { denied: true })
      if (failure === 'timeout') this.release(call)
      return { kind: 'deny', reason: FAIL_CLOSED }
    }
    if (res.status !== 200 || !res.body || typeof res.body !== 'object') {
      const what = res.status === 200 ? 'an unreadable answer' : `HTTP ${res.status}`
      this.warnOnce(`check-${res.status}`, `mull plugin: POST /v1/ledger/check answered ${what}${detail(res)}; such calls ${block ? 'are denied (block mode)' : 'run unchecked'}`)
      if (!block) return next()
      this.remember(body.tool_call_id, { denied: true })
      return { kind: 'deny', reason: `${DENY_PREFIX}: mull answered the check with ${what}${detail(res)} (fail-closed)` }
    }
    const answer = res.body
    if (isMode(answer.mode)) policy.mode = answer.mode
    const state = {
      verdict: answer.verdict,
      factId: answer.fact_id,
      leaseId: typeof answer.lease_id === 'string' && answer.lease_id ? answer.lease_id : undefined,
      checkedAt: typeof answer.checked_at === 'string' ? answer.checked_at : undefined,
      reason: typeof answer.reason === 'string' ? answer.reason : ''
    }
    if (answer.verdict === 'deny' || (answer.verdict === 'in-progress' && policy.mode === 'block')) {
      state.denied = true
      this.remember(body.tool_call_id, state)
      return { kind: 'deny', reason: denyText(state.reason) }
    }
    this.remember(body.tool_call_id, state)
    return next()
  }

  /**
   * A best-effort release of the lease a timed-out check may have been
   * granted (block mode denied the call, so no outcome will follow): an
   * observe with outcome released and no lease_id, which mull applies
   * when the call (session + tool_call_id) holds the fact's lease and
   * ignores otherwise. In the background, with the client's timeout.
   */
  release (call) {
    const sent = this.client.request('POST', '/v1/ledger/observe', {
      body: { ...call.body, outcome: { status: 'released' } }, force: true, busyIsAnswer: true
    }).then(res => {
      if (res && res.status !== 200) this.warnOnce(`release-${res.status}`, `mull plugin: releasing a timed-out check's lease answered HTTP ${res.status}${detail(res)}; mull frees it after ledger.lease_ttl`)
    }, () => {}).finally(() => this.background.delete(sent))
    this.background.add(sent)
  }

  /**
   * tools/post-execute (waterfall). Lets the rest of the chain decide
   * first, then tells mull how the call ended and adds one notice as
   * additional context: mull's note when it answers with one (warn mode:
   * the seed's warning for a repeat failure; a verify-retry's stale note),
   * else the in-progress advice its check got (warn mode: it lost the
   * lease, and ran). The result itself is never rewritten. A call this
   * plugin denied is skipped: its deny was already counted.
   */
  async postExecute (exec, result, next) {
    const downstream = await next()
    try {
      return await this.settle(exec, result, downstream)
    } catch (err) {
      this.warnOnce('post-execute', `mull plugin: ledger post-execute failed (${err?.message ?? err}); the result goes on as it is`)
      return downstream
    }
  }

  async settle (exec, result, downstream) {
    const callId = exec?.callId
    const state = typeof callId === 'string' ? this.take(callId) : undefined
    if (state?.denied || isOwnDeny(result)) return downstream
    let call
    try {
      call = this.callOf(exec)
    } catch {}
    // Not tracked now (mull's policy changed since the check): a lease it
    // holds expires at mull (lease_ttl), nothing else is owed. Without a
    // session mull would refuse the observe (pre-execute said so once).
    if (!call || !call.body.session) return downstream
    let note = ''
    const outcome = outcomeOf(call.command, result)
    // A timed-out check may have made this call the lease holder unseen:
    // its outcome, even released, is mull's to apply or ignore.
    const worthSending = state?.leaseId || state?.timedOut || outcome.status === 'failed' ||
      (outcome.status === 'succeeded' && (state === undefined || state.factId))
    if (worthSending) {
      const body = { ...call.body, outcome }
      if (state?.leaseId) body.lease_id = state.leaseId
      if (state?.checkedAt) body.checked_at = state.checkedAt
      const res = await this.client.request('POST', '/v1/ledger/observe', {
        body, timeoutMs: call.policy.timeoutMs, force: Boolean(state?.leaseId || state?.timedOut) || call.policy.mode === 'block', busyIsAnswer: true
      })
      if (res && res.status !== 200) {
        this.warnOnce(`observe-${res.status}`, `mull plugin: POST /v1/ledger/observe answered HTTP ${res.status}${detail(res)}; that outcome is not in the ledger`)
      } else if (res?.body && typeof res.body === 'object') {
        if (isMode(res.body.mode)) call.policy.mode = res.body.mode
        if (typeof res.body.note === 'string' && res.body.note.trim()) note = res.body.note
      }
    }
    // One notice per call: mull's note, else the advice the check gave a
    // call that lost the lease and ran (warn mode).
    if (!note && state?.verdict === 'in-progress' && state.reason) note = state.reason
    if (!note) return downstream
    return withContexts(downstream, [this.contextMessage(note)])
  }

  /**
   * fs/observed (emit, synchronous: DSH fails the tool call when a
   * listener throws and never awaits one). Queues the observation; a
   * batch goes out fsBatchMs later.
   */
  onFsObserved (target, observation, actor) {
    try {
      if (this.disabled) return
      const displayPath = target?.displayPath
      if (typeof displayPath !== 'string' || !displayPath) return
      if (observation?.kind !== 'present' && observation?.kind !== 'absent') return
      const session = actor?.agent?.session
      const cwd = cwdOf(session)
      const workspace = cwd ?? this.workspace
      if (this.policy(workspace).mode === 'off') return
      const obs = { display_path: displayPath, observed: observation.kind }
      const filePath = actor?.arguments?.file_path
      if (typeof filePath === 'string' && filePath) obs.path = filePath
      if (observation.kind === 'present') obs.version = String(observation.version ?? '')
      if (typeof actor?.callId === 'string' && actor.callId) obs.tool_call_id = actor.callId
      const group = { session: session?.id ?? actor?.agent?.id ?? '', workspace, cwd: cwd ?? workspace }
      if (!group.session) {
        this.warnOnce('fs-no-session', 'mull plugin: a file observation came without a DSH session id; mull refuses those, so they are not sent')
        return
      }
      this.fsQueue.push({ group, obs })
      if (this.fsQueue.length > this.config.fsQueueMax) {
        this.fsQueue.shift()
        this.fsDropped++
        this.warnOnce('fs-dropped', `mull plugin: more than ${this.config.fsQueueMax} file observations waiting for mull; the oldest are dropped`)
      }
      if (this.fsQueue.length >= FS_BATCH_MAX) this.flushFs()
      else if (!this.fsTimer) this.fsTimer = this.clock.setTimeout(() => { this.fsTimer = null; this.flushFs() }, this.config.fsBatchMs)
    } catch (err) {
      this.warnOnce('fs-observed', `mull plugin: fs/observed handler failed (${err?.message ?? err}); ignored`)
    }
  }

  /**
   * Sends every queued observation, oldest first, one POST per (session,
   * workspace, cwd) run of at most FS_BATCH_MAX, ONE at a time: the next
   * goes out when the last is answered (or timed out), so mull stores
   * them in the order DSH made them. Observations queued meanwhile ride
   * the same drain (the queue stays bounded by fsQueueMax). Resolves when
   * the queue is empty; never rejects.
   */
  flushFs () {
    if (this.fsTimer) this.clock.clearTimeout(this.fsTimer)
    this.fsTimer = null
    if (!this.fsSending) {
      this.fsSending = this.drainFs().finally(() => {
        this.fsSending = null
        if (this.fsQueue.length) this.flushFs() // queued as the drain ended
      })
    }
    return this.fsSending
  }

  async drainFs () {
    while (this.fsQueue.length) {
      const { group } = this.fsQueue[0]
      const same = []
      while (this.fsQueue.length && same.length < FS_BATCH_MAX && sameGroup(this.fsQueue[0].group, group)) same.push(this.fsQueue.shift().obs)
      try {
        const policy = this.policy(group.workspace)
        const res = await this.client.request('POST', '/v1/ledger/fs', {
          body: { ...group, observations: same }, timeoutMs: policy.timeoutMs, force: policy.mode === 'block', busyIsAnswer: true
        })
        if (res && res.status !== 200) this.warnOnce(`fs-${res.status}`, `mull plugin: POST /v1/ledger/fs answered HTTP ${res.status}${detail(res)}; those file observations are not in the ledger`)
      } catch {}
    }
  }

  /** A plugin message DSH adds after the tool result (the seed's ContextMessage). */
  contextMessage (text) {
    return {
      id: randomUUID(),
      role: 'user',
      content: [{ type: 'text', text }],
      source: { kind: 'plugin', plugin: this.pluginName, form: 'notice', summary: summaryOf(text) }
    }
  }

  remember (callId, state) {
    this.pending.delete(callId)
    this.pending.set(callId, state)
    while (this.pending.size > MAX_PENDING) this.pending.delete(this.pending.keys().next().value)
  }

  take (callId) {
    const s = this.pending.get(callId)
    this.pending.delete(callId)
    return s
  }

  warnOnce (key, msg) {
    if (this.warned.has(key)) return
    this.warned.add(key)
    this.log('warn', msg)
  }
}

/**
 * How a call ended, as mull's Outcome has it. A command failed when it
 * exited non-zero (bash's non-zero exits are results, not errors); a read
 * failed when the file was not found. A tool error of a command (aborted,
 * denied by someone else), a command without an exit code (background,
 * killed by a signal) or a read's other errors settle nothing: released.
 */
export function outcomeOf (isCommand, result) {
  if (isCommand) {
    if (result?.isError) return { status: 'released' }
    const v = result?.value
    const code = v && typeof v === 'object' ? v.exitCode : undefined
    if (!Number.isInteger(code)) return { status: 'released' }
    if (code === 0) return { status: 'succeeded', exit_code: 0 }
    const out = { status: 'failed', exit_code: code }
    const stderr = cutBytes(typeof v.stderr?.text === 'string' ? v.stderr.text : '', STDERR_MAX_BYTES)
    if (stderr) out.stderr = stderr
    return out
  }
  if (!result?.isError) return { status: 'succeeded' }
  const code = result.error?.info?.code
  if (code === 'FS_NOT_FOUND') return { status: 'failed', error_code: code }
  return { status: 'released' }
}

/** Whether a result is the error DSH made of this plugin's own deny. */
export function isOwnDeny (result) {
  return Boolean(result?.isError) && typeof result.error?.message === 'string' && result.error.message.startsWith(DENY_PREFIX)
}

/** The downstream decision with contexts added (a block keeps its feedback). */
function withContexts (decision, contexts) {
  const d = decision && typeof decision === 'object' ? decision : { kind: 'accept' }
  return { ...d, additionalContexts: [...contexts, ...(d.additionalContexts ?? [])] }
}

/** mull's reason, with the prefix post-execute recognises it by. */
function denyText (reason) {
  if (typeof reason === 'string' && reason.startsWith(DENY_PREFIX)) return reason
  return `${DENY_PREFIX}: ${reason || 'a recorded failure of this exact call'}`
}

function summaryOf (text) {
  const first = text.split('\n')[0].replace(/^Negative-ledger:\s*/i, '')
  return first.length > 80 ? first.slice(0, 79) + '…' : first
}

function detail (res) {
  const e = res?.body?.error
  return typeof e === 'string' && e ? `: ${e.slice(0, 200)}` : ''
}

function cutBytes (s, max) {
  const b = Buffer.from(s, 'utf8')
  if (b.length <= max) return s
  return b.subarray(0, max).toString('utf8').replace(/\uFFFD+$/, '')
}

function sameGroup (a, b) {
  return a.session === b.session && a.workspace === b.workspace && a.cwd === b.cwd
}

function isMode (m) {
  return m === 'off' || m === 'warn' || m === 'block'
}

function isNames (v) {
  return Array.isArray(v) && v.every(s => typeof s === 'string' && s)
}

function cwdOf (session) {
  const cwd = session?.header?.cwd
  return typeof cwd === 'string' && cwd ? cwd : undefined
}
