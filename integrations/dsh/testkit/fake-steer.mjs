// The fake mull's steering routes (contract 16): memory status, the
// workspace config's scope, proposals, forget, promote and a session's
// retro, in memory, shaped as the contract says, over the fake mull's own
// memories (FakeMull.memories, each with a library: 'workspace' by
// default, or 'global'), so the fake digest and search follow the scope
// and the invalidations.

import { createHash } from 'node:crypto'

export const SCOPES = ['workspace', 'global', 'both']
const HOW = 'mull proposals accept ID | the panel /proposals'

export class FakeSteer {
  /** @param {import('./fake-mull.mjs').FakeMull} mull */
  constructor (mull) {
    this.mull = mull
    /** workspace → scope set through PUT /v1/workspaces/{ws}/config. */
    this.scopes = new Map()
    /** The global default scope (config file). */
    this.defaultScope = 'workspace'
    /** env MULL_MEMORY_SCOPE, when a test pins it. */
    this.envScope = ''
    this.proposals = [] // {id, workspace, kind, status, summary, created_at, decided_at?, note?}
    this.agentMayDecide = false
    this.retros = [] // session ids a retro was asked for
    this.nextJob = 1
    this.nextGlobal = 1
    /** route ("METHOD /path") → [status, body]: a canned answer instead of the real one. */
    this.fail = new Map()
  }

  /** The scope a workspace reads, and where it came from. */
  scopeOf (ws) {
    if (this.envScope) return { value: this.envScope, source: 'env MULL_MEMORY_SCOPE' }
    if (this.scopes.has(ws)) return { value: this.scopes.get(ws), source: 'workspace (api)' }
    return { value: this.defaultScope, source: 'default' }
  }

  /** The libraries a scope reads. */
  static reads (scope) {
    return scope === 'both' ? ['workspace', 'global'] : [scope]
  }

  /** The live memories a workspace sees under its scope. */
  visible (ws) {
    const libs = FakeSteer.reads(this.scopeOf(ws).value)
    return this.mull.memories.filter(m => !m.invalid && libs.includes(m.library ?? 'workspace') && ((m.library ?? 'workspace') === 'global' || m.workspace === ws))
  }

  library (ws, lib) {
    return this.mull.memories.filter(m => (m.library ?? 'workspace') === lib && (lib === 'global' || m.workspace === ws))
  }

  addProposal (workspace, summary, kind = 'memory') {
    const p = { id: `p${this.proposals.length + 1}`, workspace, kind, status: 'pending', summary, created_at: new Date().toISOString() }
    this.proposals.push(p)
    return p
  }

  /** [status, body] for a steering route, or undefined when the route is not one of them. */
  handle (method, path, q, body, knownSessions) {
    const route = `${method} ${path.replace(/^\/v1\/workspaces\/[^/]+\/config$/, '/v1/workspaces/{ws}/config').replace(/^\/v1\/proposals\/[^/]+\/(accept|reject)$/, '/v1/proposals/{id}/$1').replace(/^\/v1\/sessions\/[^/]+\/retro$/, '/v1/sessions/{id}/retro')}`
    if (this.fail.has(route)) return this.fail.get(route)
    const ws = /^\/v1\/workspaces\/([^/]+)\/config$/.exec(path)
    if (ws) {
      const w = decodeURIComponent(ws[1])
      if (method === 'GET') return [200, this.config(w)]
      if (method === 'PUT') return this.putScope(w, body)
    }
    const decide = method === 'POST' && /^\/v1\/proposals\/([^/]+)\/(accept|reject)$/.exec(path)
    if (decide) return this.decide(decodeURIComponent(decide[1]), decide[2], body)
    const retro = method === 'POST' && /^\/v1\/sessions\/([^/]+)\/retro$/.exec(path)
    if (retro) {
      const id = decodeURIComponent(retro[1])
      if (!knownSessions.has(id)) return [404, { error: `no session ${id}` }]
      this.retros.push(id)
      return [202, { job_id: this.nextJob++, state: 'available', message: `retro of session ${id} queued; its lessons reach the digest when it is done` }]
    }
    switch (route) {
      case 'GET /v1/memory/status': return q.workspace ? [200, this.status(q.workspace)] : [400, { error: 'workspace: required', field: 'workspace' }]
      case 'GET /v1/proposals': {
        const list = this.proposals.filter(p => p.workspace === q.workspace && (!q.status || p.status === q.status))
        return [200, { proposals: list.map(({ workspace, ...p }) => p), agent_may_decide: this.agentMayDecide, how: HOW }]
      }
      case 'POST /v1/memories/forget': return this.forget(body)
      case 'POST /v1/memories/promote': return this.promote(body)
    }
    return undefined
  }

  status (ws) {
    const read = FakeSteer.reads(this.scopeOf(ws).value)
    const libs = ['workspace', 'global'].map(lib => {
      const counts = {}
      const totals = {}
      for (const m of this.library(ws, lib)) {
        const state = m.invalid ? 'deprecated' : 'live'
        counts[m.kind] ??= { live: 0, superseded: 0, quarantined: 0, deprecated: 0 }
        counts[m.kind][state]++
        totals[state] = (totals[state] ?? 0) + 1
      }
      return { library: lib, name: lib === 'global' ? 'global' : ws, read: read.includes(lib), counts, totals, quarantined: 0, redacted: 0, last_retro_at: null, last_consolidation_at: null, last_error_at: null }
    })
    return {
      workspace: ws,
      scope: this.scopeOf(ws).value,
      libraries: libs,
      queue: { available: 0, running: 0, retryable: 0, dead: 0, paused: false, paused_reason: '' },
      budget: { key: `workspace:${ws}`, limit: 400000, spent: 1200, remaining: 398800 },
      errors: { read: 0, write: 0, last: '' }
    }
  }

  config (ws) {
    const scope = this.scopeOf(ws)
    return {
      workspace: ws,
      settings: [{ key: 'memory.scope', value: scope.value, source: scope.source }, { key: 'llm.budget', value: 400000, source: 'default' }],
      config_file: '/etc/mull/config.toml',
      how: `[workspaces."${ws}"] in /etc/mull/config.toml, PUT /v1/admin/workspaces/{ws}/config, or mull config set --workspace`
    }
  }

  putScope (ws, body) {
    if (!body || typeof body !== 'object' || Array.isArray(body)) return [400, { error: 'invalid JSON body' }]
    for (const k of Object.keys(body)) if (k !== 'scope') return [403, { error: `${k}: only scope may be set with the API token; use PUT /v1/admin/workspaces/{ws}/config`, field: k }]
    if (!SCOPES.includes(body.scope)) return [400, { error: `scope: ${JSON.stringify(body.scope)} is not one of workspace, global, both`, field: 'scope' }]
    const from = this.scopeOf(ws).value
    this.scopes.set(ws, body.scope)
    const to = this.envScope || body.scope
    const now = FakeSteer.reads(to)
    const hidden = FakeSteer.reads(from).filter(lib => !now.includes(lib)).map(lib => {
      const by = {}
      const live = this.library(ws, lib).filter(m => !m.invalid)
      for (const m of live) by[m.kind] = (by[m.kind] ?? 0) + 1
      return { library: lib, count: live.length, by_kind: by }
    })
    // wsconfig's wording (message in wsconfig/scope.go), shortened.
    const message = `Scope of ${ws}: ${from} → ${body.scope} (from the next digest and search; no restart). ` +
      (hidden.length === 0 ? 'Nothing becomes hidden: every library read before is still read. ' : '') +
      hidden.map(h => `Hidden now: ${h.library === 'global' ? 'the global library' : 'this workspace\'s own library'}, ${h.count} live memories; they leave the injected digest and search at once. `).join('') +
      (hidden.length ? `To see them again, switch back: /mull scope ${from === 'both' ? 'both' : from + ' or both'} (or PUT the scope). ` : '') +
      'No data was moved or deleted: switching scope changes only what is read.'
    return [200, {
      workspace: ws,
      scope: { from, to: body.scope, source: 'workspace (api)' },
      hidden,
      message: this.envScope ? `Stored scope "${body.scope}" for ${ws}, but MULL_MEMORY_SCOPE is set and wins. ${message}` : message,
      overridden_by_env: !!this.envScope
    }]
  }

  decide (id, action, body) {
    if (!this.agentMayDecide) {
      return [403, { error: 'proposals.agent_may_decide is false: a person decides with `mull proposals accept|reject ID` or the panel\'s /proposals' }]
    }
    const p = this.proposals.find(x => x.id === id)
    if (!p) return [404, { error: `no proposal ${id}` }]
    if (p.status !== 'pending') return [409, { error: `proposal ${id} is not pending (${p.status})` }]
    if (action === 'reject' && !body?.note) return [400, { error: 'note: required to reject', field: 'note' }]
    p.status = action === 'accept' ? 'accepted' : 'rejected'
    p.decided_at = new Date().toISOString()
    if (body?.note) p.note = body.note
    const { workspace, ...out } = p
    return [200, { proposal: out }]
  }

  /** The seed's keyword rule, simplified: every keyword in the text, case folded. */
  matches (ws, keywords) {
    const words = String(keywords ?? '').toLowerCase().split(/\s+/).filter(Boolean)
    return this.visible(ws).filter(m => words.length > 0 && words.every(w => m.text.toLowerCase().includes(w)))
  }

  forget (b) {
    if (!b?.workspace) return [400, { error: 'workspace: required', field: 'workspace' }]
    if (typeof b.keywords !== 'string' || !b.keywords.trim()) return [400, { error: 'keywords: required', field: 'keywords' }]
    const found = this.matches(b.workspace, b.keywords)
    const token = 'ft-' + createHash('sha256').update(found.map(m => m.id).sort().join(',')).digest('hex').slice(0, 12)
    if (!b.confirm) {
      return [200, { matches: found.map(m => ({ id: m.id, kind: m.kind, text: m.text, library: m.library ?? 'workspace' })), count: found.length, confirm_token: token }]
    }
    if (b.confirm_token !== token) {
      return [409, { error: 'the matches changed since the confirm token was given; look again', matches: found.map(m => ({ id: m.id, kind: m.kind, text: m.text, library: m.library ?? 'workspace' })), count: found.length, confirm_token: token }]
    }
    for (const m of found) { m.invalid = true; m.invalidReason = `forget: ${b.keywords}` }
    return [200, { invalidated: found.map(m => m.id), count: found.length }]
  }

  promote (b) {
    if (!b?.workspace) return [400, { error: 'workspace: required', field: 'workspace' }]
    const ids = Array.isArray(b.ids) ? b.ids.map(String) : []
    const own = this.library(b.workspace, 'workspace').filter(m => !m.invalid)
    const picked = ids.length ? ids : own.filter(m => !m.promoted).slice(0, 3).map(m => m.id)
    const promoted = []
    const refused = []
    for (const id of picked) {
      const m = own.find(x => x.id === id)
      if (!m) refused.push({ id, reason: 'no live memory with this id in this workspace' })
      else if (['web', 'tool', 'doc'].includes(m.src)) refused.push({ id, reason: `its source is external (${m.src})` })
      else if (m.promoted) refused.push({ id, reason: 'already promoted' })
      else {
        m.promoted = true
        const g = { id: `g${this.nextGlobal++}`, workspace: '', library: 'global', kind: m.kind, text: m.text, at: new Date().toISOString() }
        this.mull.memories.push(g)
        promoted.push({ id, global_id: g.id })
      }
    }
    return [200, { promoted, refused }]
  }
}
