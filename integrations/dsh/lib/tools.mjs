// The remember, memory_search and playbook_use tools (and the task tools of
// lib/tasks.mjs), as plain defineTool
// options: data plus an execute function, with no import of DSH. plugin.mjs
// passes them through DSH's own defineTool (loaded at runtime from the
// running DSH, see loadDefineTool) before ctx.tools.register; tests call
// execute directly.

import { realpathSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

import { taskToolSpecs } from './tasks.mjs'

export const MEMORY_KINDS = ['fact', 'preference', 'lesson', 'resource', 'method']

const text = s => [{ type: 'text', text: s }]

/**
 * The tools' defineTool options.
 * @param {object} o
 * @param {import('./client.mjs').MullClient} o.client
 * @param {(agent: any) => {workspace: string, session?: string}} o.where - the workspace and session of a call
 * @param {(agent: any) => Promise<void>} [o.sendQueued] - sends the queued events first (task boundaries)
 */
export function toolSpecs ({ client, where, sendQueued }) {
  const remember = {
    name: 'remember',
    description: 'Save one durable memory for this workspace in mull, so later sessions know it: a fact about the project, ' +
      'a preference the user stated, a lesson learned from a failure, a useful resource, or a method that worked. ' +
      'One self-contained sentence; no secrets.',
    parameters: {
      text: { type: 'string', description: 'The memory, one self-contained sentence.', required: true },
      kind: { type: 'string', enum: MEMORY_KINDS, description: 'What it is. Defaults to fact.' },
      importance: { type: 'integer', description: '1 (trivia) to 10 (must never be forgotten). Optional.' }
    },
    output: {
      schema: { type: 'object', additionalProperties: true },
      render: (_args, v) => text(v.saved
        ? `Saved to mull memory (${v.kind}${v.id ? ', id ' + v.id : ''}).`
        : `Not saved: ${v.reason}`)
    },
    async execute (args, exec) {
      const { workspace, session } = where(exec?.agent)
      const body = { workspace, kind: args.kind || 'fact', text: String(args.text ?? '').trim(), src: 'agent' }
      if (Number.isInteger(args.importance)) body.importance = Math.min(10, Math.max(1, args.importance))
      if (session) body.session_id = session
      if (!body.text) throw new Error('remember: text is empty')
      const res = await client.request('POST', '/v1/memories', { body, force: true })
      if (res === null) throw new Error('mull is unavailable; the memory was not saved')
      if (res.status === 201 || res.status === 200) {
        const m = res.body?.memory ?? {}
        return { saved: true, id: m.id != null ? String(m.id) : '', kind: m.kind || body.kind }
      }
      if (res.status === 422 && res.body?.quarantined) {
        return { saved: false, quarantined: true, reason: `mull refused it as instruction-like (${res.body.error ?? 'quarantined'})` }
      }
      throw new Error(`mull answered HTTP ${res.status} to POST /v1/memories${res.body?.error ? ': ' + res.body.error : ''}`)
    }
  }

  const memorySearch = {
    name: 'memory_search',
    description: 'Search mull\'s memory of this workspace (facts, preferences, lessons, resources, methods learned in earlier sessions). ' +
      'Use it before repeating work or when the user refers to something decided before.',
    parameters: {
      query: { type: 'string', description: 'What to look for.', required: true },
      limit: { type: 'integer', description: 'How many results, 1 to 20. Defaults to 8.' }
    },
    isConcurrencySafe: () => true,
    output: {
      schema: { type: 'object', additionalProperties: true },
      render: (_args, v) => text(v.results.length === 0
        ? 'No matching memories.'
        : v.results.map(r => `- (${r.kind}) ${r.text}`).join('\n'))
    },
    async execute (args, exec) {
      const { workspace, session } = where(exec?.agent)
      const q = String(args.query ?? '').trim()
      if (!q) throw new Error('memory_search: query is empty')
      const limit = Number.isInteger(args.limit) ? Math.min(20, Math.max(1, args.limit)) : 8
      // session: a lesson is found only where its scope shows it
      const query = session ? { workspace, session, q, limit } : { workspace, q, limit }
      const res = await client.request('GET', '/v1/memories/search', { query, force: true })
      if (res === null) throw new Error('mull is unavailable; memory cannot be searched now')
      if (res.status !== 200) throw new Error(`mull answered HTTP ${res.status} to GET /v1/memories/search${res.body?.error ? ': ' + res.body.error : ''}`)
      const results = (Array.isArray(res.body?.results) ? res.body.results : [])
        .filter(r => typeof r?.text === 'string')
        .map(r => ({ id: String(r.id ?? ''), kind: String(r.kind ?? ''), text: r.text, score: Number(r.score) || 0 }))
      return { results }
    }
  }

  const playbookUse = {
    name: 'playbook_use',
    description: 'Report to mull that you followed one of this workspace\'s playbooks (the procedures listed under ' +
      '"Playbooks" in mull\'s memory section) and whether it worked. Call it once when you are done with the playbook: ' +
      'successes verify it and rank it higher for later sessions, failures rank it lower.',
    parameters: {
      slug: { type: 'string', description: 'The playbook\'s slug, as the memory section lists it (before the colon).', required: true },
      success: { type: 'boolean', description: 'true if following the playbook worked, false if it did not.', required: true }
    },
    output: {
      schema: { type: 'object', additionalProperties: true },
      render: (_args, v) => text(v.recorded
        ? `Recorded ${v.success ? 'a success' : 'a failure'} of playbook ${v.slug}: ${v.successes} ok, ${v.fails} failed in ${v.uses} uses.`
        : `Not recorded: ${v.reason}`)
    },
    // Never throws: a use that was not recorded is only reported, so the
    // agent carries on with its task.
    async execute (args, exec) {
      const slug = String(args?.slug ?? '').trim()
      const notRecorded = reason => ({ recorded: false, slug, reason })
      if (!slug) return notRecorded('slug is empty; give the playbook\'s slug as the memory section lists it')
      if (typeof args.success !== 'boolean') return notRecorded('success must be true or false')
      const { workspace, session } = where(exec?.agent)
      const path = `/v1/playbooks/${encodeURIComponent(slug)}/use`
      const body = { workspace, success: args.success }
      if (session) body.session_id = session // mull's use log links it
      const res = await client.request('POST', path, { body, force: true })
      if (res === null) return notRecorded('mull is unavailable; the use was not recorded')
      const p = res.body ?? {}
      if (res.status === 200) {
        return { recorded: true, slug, success: args.success, uses: num(p.uses), successes: num(p.successes), fails: num(p.fails), stale: p.stale === true }
      }
      if (res.status === 404) return notRecorded(`mull has no playbook "${slug}" in this workspace`)
      return notRecorded(`mull answered HTTP ${res.status} to POST ${path}${p.error ? ': ' + p.error : ''}`)
    }
  }

  return [remember, memorySearch, playbookUse, ...taskToolSpecs({ client, where, sendQueued })]
}

const num = v => Number.isFinite(v) ? v : 0

/**
 * DSH's defineTool, from the running DSH. The plugin file usually lives
 * outside DSH's node_modules, so a bare import of @deepseek-ai/dsh-tools may
 * not resolve from here; then it is resolved from DSH's own entry script
 * (process.argv[1], e.g. …/@deepseek-ai/dsh/lib/bin.js), which depends on it.
 * A module path in config.dshToolsModule comes first. Resolves to undefined
 * when none works.
 */
export async function loadDefineTool (modulePath) {
  const tries = []
  if (modulePath) tries.push(() => import(modulePath.startsWith('/') ? pathToFileURL(modulePath).href : modulePath))
  tries.push(() => import('@deepseek-ai/dsh-tools'))
  tries.push(() => {
    const entry = realpathSync(process.argv[1])
    return import(pathToFileURL(createRequire(entry).resolve('@deepseek-ai/dsh-tools')).href)
  })
  for (const t of tries) {
    try {
      const mod = await t()
      if (typeof mod?.defineTool === 'function') return mod.defineTool
    } catch {}
  }
  return undefined
}
