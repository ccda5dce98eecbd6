// The slash commands (issue 16, seed 002's 快速上手): /memory, /forget,
// /retro, /promote, /proposals and /mull (alias /selfip), as definitions for
// DSH's commands capability (@deepseek-ai/dsh-commands:
// ctx.commands.register({name, description, input, handler})). A handler
// gets {agent, rawInput, signal} and answers {kind: 'success' | 'error',
// text}, which DSH shows to the person and never to the model. None throws:
// mull down or refusing is an error result saying so.
//
// The commands capability has no confirm or prompt step, so /forget shows
// the matches and `/forget --yes` confirms them: mull's confirm token from
// that preview is kept per session and binds exactly the ids shown, so a
// confirmation never invalidates more than the person saw (mull answers
// 409 when the matches changed, and the new ones are shown instead).

import { SCOPES, guarded } from './steer.mjs'

const USAGE = {
  memory: '/memory <keywords>',
  forget: '/forget <keywords>, then /forget --yes to invalidate what it showed',
  promote: '/promote [id…]',
  proposals: '/proposals [pending|accepted|rejected|all] | /proposals accept ID [note] | /proposals reject ID note',
  mull: '/mull | /mull status | /mull config | /mull scope workspace|global|both'
}

/** Previews of /forget kept per session at most (the oldest forgotten first). */
const MAX_PENDING = 64

/**
 * The command definitions.
 * @param {object} o
 * @param {import('./steer.mjs').Steer} o.steer
 * @param {(agent: any) => {workspace: string, session?: string}} o.where
 * @param {(agent: any) => Promise<void>} [o.sendQueued] - sends the session's queued events (before /retro)
 */
export function commandSpecs ({ steer, where, sendQueued = async () => {} }) {
  const pending = new Map() // session (or workspace) → {workspace, keywords, token, count}
  const done = r => r.ok ? { kind: 'success', text: r.text } : { kind: 'error', text: r.text || 'failed' }
  const handler = fn => async invocation => done(await guarded(() => fn(invocation.rawInput.trim(), invocation.agent)))

  const memory = async (kw, agent) => {
    if (!kw) return { ok: false, text: `Usage: ${USAGE.memory}` }
    const { workspace, session } = where(agent)
    const path = '/v1/memories/search'
    const r = await steer.call('GET', path, { query: { workspace, session, q: kw, limit: 10 } })
    if (r.res?.status !== 200) return { ok: false, text: steer.failure(r, 'GET', path, 'the search') }
    const results = Array.isArray(r.res.body?.results) ? r.res.body.results : []
    if (results.length === 0) return { ok: true, text: `No memory matches "${kw}".` }
    return { ok: true, text: [`${results.length} memor${results.length === 1 ? 'y' : 'ies'} matching "${kw}":`, ...results.map(line)].join('\n') }
  }

  const forget = async (input, agent) => {
    const { workspace, session } = where(agent)
    const key = session || workspace
    const yes = /^--yes(\s|$)/.exec(input)
    const kw = yes ? input.slice(5).trim() : input
    if (!yes) {
      if (!kw) return { ok: false, text: `Usage: ${USAGE.forget}` }
      return preview(workspace, key, kw)
    }
    const p = pending.get(key)
    if (!p) return { ok: false, text: `Nothing to confirm: run /forget <keywords> first to see what it would invalidate${kw ? ` (then /forget --yes ${kw})` : ''}.` }
    if (kw && kw !== p.keywords) return { ok: false, text: `The last /forget here showed the matches of "${p.keywords}", not "${kw}": run /forget ${kw} first.` }
    const path = '/v1/memories/forget'
    const r = await steer.call('POST', path, { body: { workspace: p.workspace, keywords: p.keywords, confirm: true, confirm_token: p.token } })
    if (r.res?.status === 409) {
      // mull's 409 carries the new dry run; an answer without it is asked again.
      pending.delete(key)
      const again = Array.isArray(r.res.body?.matches) ? plan(p.workspace, key, p.keywords, r.res.body) : await preview(p.workspace, key, p.keywords)
      return { ok: false, text: `Nothing invalidated: the memories matching "${p.keywords}" changed since the preview.\n${again.text}` }
    }
    if (r.res?.status !== 200) return { ok: false, text: steer.failure(r, 'POST', path, 'the invalidation') }
    pending.delete(key)
    const ids = Array.isArray(r.res.body?.invalidated) ? r.res.body.invalidated : []
    return {
      ok: true,
      text: `Invalidated ${r.res.body?.count ?? ids.length} memor${ids.length === 1 ? 'y' : 'ies'} matching "${p.keywords}"${ids.length ? ` (${ids.join(', ')})` : ''}: ` +
        'they are marked invalid, no longer injected or found, and kept in the history.'
    }
  }

  const preview = async (workspace, key, kw) => {
    const path = '/v1/memories/forget'
    const r = await steer.call('POST', path, { body: { workspace, keywords: kw, confirm: false } })
    if (r.res?.status !== 200) return { ok: false, text: steer.failure(r, 'POST', path, 'the search for what to forget') }
    return plan(workspace, key, kw, r.res.body ?? {})
  }

  /** A dry run shown, and its confirm token kept for /forget --yes. */
  const plan = (workspace, key, kw, body) => {
    const matches = Array.isArray(body.matches) ? body.matches : []
    const kept = Array.isArray(body.kept_lessons) ? body.kept_lessons : []
    const keptLines = kept.length
      ? [`${kept.length} structured lesson${kept.length === 1 ? '' : 's'} match${kept.length === 1 ? 'es' : ''} too and ${kept.length === 1 ? 'is' : 'are'} kept (a lesson changes by a revise or an operator's command):`, ...kept.map(line)]
      : []
    pending.delete(key)
    if (matches.length === 0 || !body.confirm_token) return { ok: true, text: [`No memory matches "${kw}"; nothing to forget.`, ...keptLines].join('\n') }
    pending.set(key, { workspace, keywords: kw, token: body.confirm_token, count: matches.length })
    while (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value)
    return {
      ok: true,
      text: [`${matches.length} memor${matches.length === 1 ? 'y matches' : 'ies match'} "${kw}":`, ...matches.map(line), ...keptLines,
        `To invalidate ${matches.length === 1 ? 'it' : `these ${matches.length}`} (marked invalid, history kept): /forget --yes`].join('\n')
    }
  }

  const retro = async (input, agent) => {
    const { session } = where(agent)
    if (!session) return { ok: false, text: '/retro needs a DSH session to look back on.' }
    await sendQueued(agent)
    const path = `/v1/sessions/${encodeURIComponent(session)}/retro`
    const r = await steer.call('POST', path, { body: {} })
    if (r.res?.status === 202 || r.res?.status === 200) {
      const b = r.res.body ?? {}
      const job = b.job_id != null ? ` (job ${b.job_id}${b.state ? `, ${b.state}` : ''})` : ''
      return { ok: true, text: `${b.message || (r.res.status === 202 ? 'Retro of this session queued.' : 'Nothing to retro.')}${job}` }
    }
    return { ok: false, text: steer.failure(r, 'POST', path, 'the retro') }
  }

  const promote = async (input, agent) => {
    const { workspace } = where(agent)
    // mull's memory ids are integers (as /memory shows them); anything else
    // goes as written, for mull to refuse by name.
    const ids = input.split(/[\s,]+/).filter(Boolean).map(id => /^[1-9]\d{0,15}$/.test(id) ? Number(id) : id)
    const path = '/v1/memories/promote'
    const r = await steer.call('POST', path, { body: { workspace, ids } })
    if (r.res?.status !== 200) return { ok: false, text: steer.failure(r, 'POST', path, 'the promotion') }
    const promoted = Array.isArray(r.res.body?.promoted) ? r.res.body.promoted : []
    const refused = Array.isArray(r.res.body?.refused) ? r.res.body.refused : []
    const out = [promoted.length ? `Promoted to the global library: ${promoted.map(p => `${p.id} → ${p.global_id}`).join(', ')}.` : 'Nothing promoted.']
    for (const x of refused) out.push(`- ${x.id}: not promoted, ${x.reason}`)
    if (!ids.length && !promoted.length && !refused.length) out.push('No memory of this workspace is a candidate under the promotion rules.')
    return { ok: true, text: out.join('\n') }
  }

  const proposals = async (input, agent) => {
    const [verb, id, ...rest] = input.split(/\s+/).filter(Boolean)
    if (verb === 'accept' || verb === 'reject') return steer.decide(id, verb, rest.join(' '), where(agent).workspace)
    if (verb && !['pending', 'accepted', 'rejected', 'all'].includes(verb)) return { ok: false, text: `Usage: ${USAGE.proposals}` }
    return steer.proposals(where(agent).workspace, verb ?? 'pending')
  }

  const mull = async (input, agent) => {
    const { workspace } = where(agent)
    const [verb, arg, extra] = input.split(/\s+/).filter(Boolean)
    if (verb === 'scope') {
      if (!SCOPES.includes(arg) || extra) return { ok: false, text: `Usage: /mull scope ${SCOPES.join('|')}` }
      return steer.setScope(workspace, arg)
    }
    if (verb === 'status') return steer.status(workspace)
    if (verb === 'config') return steer.config(workspace)
    if (verb) return { ok: false, text: `Usage: ${USAGE.mull}` }
    const [config, status] = await Promise.all([steer.config(workspace), steer.status(workspace)])
    return { ok: config.ok || status.ok, text: `${config.text}\n\n${status.text}` }
  }

  const mullDef = {
    name: 'mull',
    description: 'mull memory: status and where its config lives; /mull scope workspace|global|both switches what this workspace reads',
    input: { hint: '[status | config | scope workspace|global|both]' },
    handler: handler(mull)
  }
  return [
    { name: 'memory', description: 'search mull\'s memory of this workspace', input: { hint: '<keywords>' }, handler: handler(memory) },
    { name: 'forget', description: 'show the memories matching the keywords; /forget --yes then invalidates them (history kept)', input: { hint: '<keywords> | --yes' }, handler: handler(forget) },
    { name: 'retro', description: 'ask mull to retro this session now', handler: handler(retro) },
    { name: 'promote', description: 'promote memories of this workspace to mull\'s global library (no id: the best candidates)', input: { hint: '[id…]' }, handler: handler(promote) },
    { name: 'proposals', description: 'list mull\'s improvement proposals, or accept or reject one', input: { hint: '[accept|reject ID note]' }, handler: handler(proposals) },
    mullDef,
    { ...mullDef, name: 'selfip', description: `${mullDef.description} (the seed's name for /mull)` }
  ]
}

const line = m => `- ${m.id ?? '?'} (${m.kind ?? '?'}${m.library ? `, ${m.library}` : ''}) ${m.text ?? ''}`

/** The names, for the one line logged when the host has no commands capability. */
export const COMMAND_NAMES = ['memory', 'forget', 'retro', 'promote', 'proposals', 'mull', 'selfip']
