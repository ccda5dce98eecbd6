// Steering mull from inside DSH (issue 16, seed 002): the status, config and
// proposal calls behind the memory_status, memory_config and memory_proposal
// tools (and the seed's names, selfip_status, selfip_config and
// selfip_proposal, as aliases) and behind the slash commands of
// lib/commands.mjs. Every call answers {ok, text}: text is what a person or
// the model reads, mull's own words when it refused, and never a throw, so
// neither a tool nor a command breaks DSH when mull is down, slow, older
// than these routes, or says no.

export const SCOPES = ['workspace', 'global', 'both']

/** A steering call is one a person or the model asked for: it may take longer than a background fetch. */
const MIN_TIMEOUT_MS = 5000

/** `{ws}` in a route: the workspace path escaped as ONE path segment. */
export const wsSegment = ws => encodeURIComponent(ws)

export class Steer {
  /**
   * @param {object} o
   * @param {import('./client.mjs').MullClient} o.client
   * @param {() => object} [o.local] - the bridge's own state for memory_status
   *   ({queued, dropped, sent, ...}); the client's counters are added here
   */
  constructor ({ client, local = () => ({}) }) {
    this.client = client
    this.local = local
  }

  /**
   * One request: {res} with mull's answer, or {res: null, kind} with the
   * client's reason (timeout, network, http).
   */
  async call (method, path, opts = {}) {
    let kind = ''
    const timeoutMs = Math.max(this.client.timeoutMs, MIN_TIMEOUT_MS)
    const res = await this.client.request(method, path, { ...opts, force: true, timeoutMs, onFail: k => { kind = k } })
    return { res, kind }
  }

  /**
   * Why a call did not do what it was asked, in one readable line: mull
   * down, no answer in time (it may have acted anyway), a mull without the
   * route, or mull's own refusal with its message.
   */
  failure ({ res, kind }, method, path, undone) {
    if (res === null) {
      const why = this.client.stats.lastError.replace(/^[A-Z]+ \S+: /, '')
      if (kind === 'timeout') return `mull did not answer ${method} ${path} in time; ${undone} may or may not have been done: look again before repeating it`
      if (kind === 'http') return `mull failed on ${method} ${path} (${why}); ${undone} was not done`
      return `mull is unavailable at ${this.client.baseUrl} (${why || 'no answer'}); ${undone} was not done`
    }
    const msg = typeof res.body?.error === 'string' ? res.body.error : ''
    if (res.status === 404 && !msg) return `this mull does not serve ${method} ${path} (HTTP 404); it may be older than the steering routes (issue 16), so ${undone} was not done`
    const field = typeof res.body?.field === 'string' && res.body.field && !msg.includes(res.body.field) ? ` (field ${res.body.field})` : ''
    return `mull refused (HTTP ${res.status}): ${msg || 'no message'}${field}`
  }

  /** GET /v1/memory/status merged with the bridge's own counters. */
  async status (workspace) {
    const path = '/v1/memory/status'
    const r = await this.call('GET', path, { query: { workspace } })
    const own = renderLocal(this.localState())
    if (r.res?.status === 200 && r.res.body) return { ok: true, text: `${renderStatus(r.res.body, workspace)}\n${own}` }
    return { ok: false, text: `${this.failure(r, 'GET', path, 'the status')}.\n${own}` }
  }

  localState () {
    const c = this.client
    let local = {}
    try { local = this.local() ?? {} } catch {}
    return { ...local, baseUrl: c.baseUrl, down: c.down, downSince: c.downSince, ...c.stats }
  }

  /** GET /v1/workspaces/{ws}/config: each effective value and where it came from. */
  async config (workspace) {
    const path = `/v1/workspaces/${wsSegment(workspace)}/config`
    const r = await this.call('GET', path)
    if (r.res?.status === 200 && r.res.body) return { ok: true, text: renderConfig(r.res.body, workspace) }
    return { ok: false, text: this.failure(r, 'GET', path, 'reading the config') }
  }

  /** PUT /v1/workspaces/{ws}/config {scope}: echoes mull's message (what becomes hidden, how many, how to get it back). */
  async setScope (workspace, scope) {
    if (!SCOPES.includes(scope)) return { ok: false, text: `scope must be one of ${SCOPES.join(', ')}; got ${JSON.stringify(scope ?? '')}` }
    const path = `/v1/workspaces/${wsSegment(workspace)}/config`
    const r = await this.call('PUT', path, { body: { scope } })
    if (r.res?.status === 200 && r.res.body) return { ok: true, text: renderScope(r.res.body, workspace, scope) }
    return { ok: false, text: this.failure(r, 'PUT', path, `the switch to scope ${scope}`) }
  }

  /** GET /v1/proposals. */
  async proposals (workspace, status) {
    const path = '/v1/proposals'
    const query = status && status !== 'all' ? { workspace, status } : { workspace }
    const r = await this.call('GET', path, { query })
    if (r.res?.status === 200 && r.res.body) return { ok: true, text: renderProposals(r.res.body, status) }
    return { ok: false, text: this.failure(r, 'GET', path, 'listing the proposals') }
  }

  /** POST /v1/proposals/{id}/accept|reject {note}; mull's 403 (agent_may_decide false) is shown as it says it. */
  async decide (id, action, note, workspace) {
    id = String(id ?? '').trim()
    note = String(note ?? '').trim()
    if (!id) return { ok: false, text: `${action} needs the proposal's id (list them first)` }
    if (action === 'reject' && !note) return { ok: false, text: 'reject needs a note saying why (mull keeps it as a lesson)' }
    // The workspace lets mull refuse another workspace's proposal.
    const path = `/v1/proposals/${encodeURIComponent(id)}/${action}${workspace ? `?workspace=${encodeURIComponent(workspace)}` : ''}`
    const r = await this.call('POST', path, { body: note ? { note } : {} })
    if (r.res?.status === 200) {
      const p = r.res.body?.proposal ?? r.res.body ?? {}
      return { ok: true, text: `Proposal ${id} ${action === 'accept' ? 'accepted' : 'rejected'}${p.status ? ` (status ${p.status})` : ''}${note ? `, note: ${note}` : ''}.` }
    }
    return { ok: false, text: this.failure(r, 'POST', path, `the ${action} of proposal ${id}`) }
  }
}

const n = v => Number.isFinite(v) ? v : 0
/** Live first, then the other states as mull names them; an unknown one last. */
const STATES = ['live', 'superseded', 'quarantined', 'deprecated', 'invalidated']
const rank = state => STATES.includes(state) ? STATES.indexOf(state) : STATES.length
const when = t => typeof t === 'string' && t ? t : 'never'

/** The status answer as lines: one per library, then the queue, the budget and mull's errors. */
export function renderStatus (s, workspace) {
  const out = [`mull memory for ${s.workspace || workspace} (scope ${s.scope || '?'}):`]
  for (const lib of Array.isArray(s.libraries) ? s.libraries : []) {
    const totals = Object.entries(lib.totals ?? {})
      .filter(([, c]) => n(c) > 0)
      .sort(([a], [b]) => rank(a) - rank(b))
      .map(([state, c]) => `${n(c)} ${state}`).join(', ') || 'empty'
    const kinds = Object.entries(lib.counts ?? {})
      .map(([kind, by]) => [kind, n(by?.live)])
      .filter(([, live]) => live > 0)
      .map(([kind, live]) => `${kind} ${live}`).join(', ')
    const name = lib.library === 'global' ? 'global library' : `workspace library${lib.name && lib.name !== (s.workspace || workspace) ? ` (${lib.name})` : ''}`
    const unread = lib.read === false ? ` [not read under scope ${s.scope || '?'}]` : ''
    out.push(`- ${name}${unread}: ${totals}${kinds ? ` (live by kind: ${kinds})` : ''}; quarantined ${n(lib.quarantined)}, redacted ${n(lib.redacted)}`)
    out.push(`  last retro ${when(lib.last_retro_at)}, last consolidation ${when(lib.last_consolidation_at)}, last error ${when(lib.last_error_at)}`)
  }
  const q = s.queue
  if (q) out.push(`- jobs: ${n(q.available)} waiting, ${q.scheduled ? `${n(q.scheduled)} scheduled, ` : ''}${n(q.running)} running, ${n(q.retryable)} to retry, ${n(q.dead)} dead${q.paused ? `; PAUSED${q.paused_reason ? ': ' + q.paused_reason : ''}` : ''}`)
  const b = s.budget
  if (b) out.push(`- budget${b.key ? ` ${b.key}` : ''}: ${n(b.spent)} of ${n(b.limit)} tokens spent, ${n(b.remaining)} left`)
  const e = s.errors
  if (e) out.push(`- mull's read errors ${n(e.read)}, write errors ${n(e.write)}${e.last ? `; last: ${e.last}` : ''}`)
  return out.join('\n')
}

/** The bridge's own state: reachability, its request errors and the events it holds. */
export function renderLocal (l) {
  const iso = ms => new Date(ms).toISOString()
  const up = l.down ? `unreachable since ${iso(l.downSince)}` : 'reachable'
  const lines = [`bridge (this DSH's plugin): mull at ${l.baseUrl} ${up}; requests ${n(l.reads)} reads, ${n(l.writes)} writes; errors: read ${n(l.readErrors)}, write ${n(l.writeErrors)}, skipped while down ${n(l.skipped)}`]
  if (l.lastError) lines.push(`  last error: ${l.lastError}${l.lastErrorAt ? ` at ${iso(l.lastErrorAt)}` : ''}`)
  if (l.queued !== undefined) lines.push(`  events: ${n(l.queued)} waiting to be sent, ${n(l.sent)} sent, ${n(l.dropped)} dropped (queue full), ${n(l.rejected)} refused by mull`)
  return lines.join('\n')
}

export function renderConfig (c, workspace) {
  const out = [`mull config for ${c.workspace || workspace}:`]
  for (const s of Array.isArray(c.settings) ? c.settings : []) {
    out.push(`- ${s.key} = ${typeof s.value === 'string' ? s.value : JSON.stringify(s.value)} (${s.source || '?'})`)
  }
  out.push(c.config_file ? `config file: ${c.config_file}` : 'config file: none (defaults, env and API settings only)')
  if (c.how) out.push(`how to change: ${c.how}`)
  return out.join('\n')
}

export function renderScope (a, workspace, scope) {
  // mull's message says it all (the switch, what becomes hidden, how many,
  // how to get it back, that no data moved); the rest is for one without it.
  if (typeof a.message === 'string' && a.message.trim()) {
    const env = a.overridden_by_env && !a.message.includes('MULL_MEMORY_SCOPE') ? '\nNote: an environment variable pins the scope, so it wins over this setting until it is unset.' : ''
    return a.message.trim() + env
  }
  const from = a.scope?.from
  const out = [`Scope of ${a.workspace || workspace}: ${from ? `${from} → ` : ''}${a.scope?.to ?? scope}${a.scope?.source ? ` (${a.scope.source})` : ''}.`]
  for (const h of Array.isArray(a.hidden) ? a.hidden : []) {
    out.push(`Hidden now: the ${h.library} library, ${n(h.count)} items; no data moved${from ? `, /mull scope ${from} shows them again` : ''}.`)
  }
  if (a.overridden_by_env) out.push('Note: an environment variable pins the scope, so it wins over this setting until it is unset.')
  return out.join('\n')
}

export function renderProposals (p, status) {
  const list = Array.isArray(p.proposals) ? p.proposals : []
  const out = [list.length === 0
    ? `No ${status && status !== 'all' ? status + ' ' : ''}proposals.`
    : `${list.length} ${status && status !== 'all' ? status + ' ' : ''}proposal${list.length === 1 ? '' : 's'}:`]
  for (const x of list) {
    out.push(`- ${x.id} [${x.status ?? '?'}] (${x.kind ?? '?'}) ${x.summary ?? ''}${x.created_at ? ` — ${x.created_at}` : ''}${x.note ? `; note: ${x.note}` : ''}`)
  }
  out.push(p.agent_may_decide
    ? 'proposals.agent_may_decide is true: accept or reject them here.'
    : `A person decides: ${p.how || 'mull proposals accept ID | the panel /proposals'} (proposals.agent_may_decide is false).`)
  return out.join('\n')
}

const text = s => [{ type: 'text', text: s }]
const ANSWER = { schema: { type: 'object', additionalProperties: true }, render: (_args, v) => text(v.text) }

/**
 * The three steering tools and the seed's names for them, as defineTool
 * options. Each resolves to {ok, text}, never throws.
 * @param {object} o
 * @param {Steer} o.steer
 * @param {(agent: any) => {workspace: string, session?: string}} o.where
 */
export function steerToolSpecs ({ steer, where }) {
  const status = {
    name: 'memory_status',
    description: 'mull\'s self-diagnosis for this workspace: per memory library the counts by kind and state, quarantined and redacted ' +
      'counts, the last retro, consolidation and error times, the job queue and the token budget, read and write errors, and this ' +
      'plugin\'s own state (whether mull is reachable, its request errors, events waiting to be sent).',
    parameters: {},
    isConcurrencySafe: () => true,
    output: ANSWER,
    async execute (_args, exec) {
      return guarded(() => steer.status(where(exec?.agent).workspace))
    }
  }
  const config = {
    name: 'memory_config',
    description: 'Read the effective mull config of this workspace (each value and where it comes from: env, workspace, global ' +
      'file or default, and where the config file is), or set this workspace\'s memory scope: workspace (only this workspace\'s ' +
      'memories), global (one library shared by every workspace) or both (this workspace\'s, then the global library). ' +
      'Switching hides a layer (no data moves); the answer says what and how to get it back. Only set it when the user asks.',
    parameters: {
      action: { type: 'string', enum: ['get', 'set'], description: 'get (the default) reads the config; set changes scope.' },
      scope: { type: 'string', enum: SCOPES, description: 'With set: the new scope.' }
    },
    output: ANSWER,
    async execute (args, exec) {
      const action = args?.action ?? (args?.scope ? 'set' : 'get')
      if (action === 'set') return guarded(() => steer.setScope(where(exec?.agent).workspace, args?.scope))
      if (action !== 'get') return { ok: false, text: `action must be get or set; got ${JSON.stringify(action)}` }
      return guarded(() => steer.config(where(exec?.agent).workspace))
    }
  }
  const proposal = {
    name: 'memory_proposal',
    description: 'List mull\'s improvement proposals for this workspace, or accept or reject one with a note. mull lets the agent ' +
      'decide only when proposals.agent_may_decide is true; otherwise it refuses and says how a person decides. ' +
      'Never accept a proposal on your own initiative: only when the user told you to.',
    parameters: {
      action: { type: 'string', enum: ['list', 'accept', 'reject'], description: 'list (the default), accept or reject.' },
      id: { type: 'string', description: 'accept and reject: the proposal\'s id, as list shows it.' },
      note: { type: 'string', description: 'Why; required to reject.' },
      status: { type: 'string', enum: ['pending', 'accepted', 'rejected', 'all'], description: 'list: which ones; pending by default.' }
    },
    output: ANSWER,
    async execute (args, exec) {
      const action = args?.action ?? 'list'
      if (action === 'list') return guarded(() => steer.proposals(where(exec?.agent).workspace, args?.status ?? 'pending'))
      if (action !== 'accept' && action !== 'reject') return { ok: false, text: `action must be list, accept or reject; got ${JSON.stringify(action)}` }
      return guarded(() => steer.decide(args?.id, action, args?.note, where(exec?.agent).workspace))
    }
  }
  const alias = (spec, seedName) => ({ ...spec, name: seedName, description: `${spec.description} (The seed's name for ${spec.name}.)` })
  return [status, config, proposal, alias(status, 'selfip_status'), alias(config, 'selfip_config'), alias(proposal, 'selfip_proposal')]
}

/** Runs fn; anything it throws becomes {ok: false, text}, so DSH never sees a throw. */
export async function guarded (fn) {
  try {
    return await fn()
  } catch (err) {
    return { ok: false, text: `mull plugin: ${err?.message ?? err}` }
  }
}
